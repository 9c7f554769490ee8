"""Offline stand-in for the get-pip.py that ansible-test downloads (its host is unreachable here).

ansible-test runs `python get-pip.py [--disable-pip-version-check] [--no-setuptools] [--no-wheel] pip==X ...`
inside a fresh venv. ensurepip provides a pip from the interpreter's own bundle; the packages it asks for are then
installed from the index that pip is configured for (PyPI on our machines).
"""
import subprocess
import sys

GET_PIP_ONLY_FLAGS = {"--no-setuptools", "--no-wheel"}

subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade", "--default-pip"])
args = [arg for arg in sys.argv[1:] if arg not in GET_PIP_ONLY_FLAGS]
subprocess.check_call([sys.executable, "-m", "pip", "install"] + args)
