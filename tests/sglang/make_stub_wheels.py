# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write stand-in wheels for the pinned SGLang packages into a wheelhouse (TEST SEAM for the GPU-less lab).

  python3 tests/sglang/make_stub_wheels.py DIR [profiles/sglang.yml [NAME==VERSION ...]]

One pure-Python wheel per entry of ``packages:`` in profiles/sglang.yml, with the pinned name and version, so the
sglang_server role's offline install (``sglang_server_pip_wheelhouse_src``, ``pip install --no-index --find-links``)
and its pin check run for real in the molecule lab without the 11 GB of CUDA wheels. The stub ``sglang`` package only
carries ``__version__``. NAME==VERSION adds a wheel of another release (the lab's move to another supported SGLang
release: sglang==<that release>). Stdlib only.
"""
import base64
import hashlib
import os
import re
import sys
import zipfile


def pins(path):
    """name -> version of the ``packages:`` block (a flat YAML mapping; no YAML library needed)."""
    found, inside = {}, False
    with open(path) as stream:
        for line in stream:
            if re.match(r'^packages:\s*$', line):
                inside = True
            elif inside and re.match(r'^\S', line):
                inside = False
            elif inside:
                match = re.match(r'^\s+([A-Za-z0-9_.-]+):\s*"?([0-9][0-9.]*)"?', line)
                if match:
                    found[match.group(1)] = match.group(2)
    return found


def wheel(directory, name, version):
    module = re.sub(r'[-.]+', '_', name).lower()
    dist = '%s-%s' % (module, version)
    files = {
        '%s/__init__.py' % module: '__version__ = %r  # llmops lab stand-in, not SGLang\n' % version,
        '%s.dist-info/METADATA' % dist: 'Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: llmops lab stand-in\n'
                                        % (name, version),
        '%s.dist-info/WHEEL' % dist: 'Wheel-Version: 1.0\nGenerator: llmops-stub\nRoot-Is-Purelib: true\n'
                                     'Tag: py3-none-any\n',
    }
    record = []
    for path, text in sorted(files.items()):
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()
        record.append('%s,sha256=%s,%d' % (path, digest, len(text.encode())))
    record.append('%s.dist-info/RECORD,,' % dist)
    files['%s.dist-info/RECORD' % dist] = '\n'.join(record) + '\n'
    target = os.path.join(directory, '%s-py3-none-any.whl' % dist)
    with zipfile.ZipFile(target, 'w') as archive:
        for path, text in sorted(files.items()):
            info = zipfile.ZipInfo(path, date_time=(2026, 1, 1, 0, 0, 0))  # reproducible: same bytes every run
            archive.writestr(info, text)
    return target


def main(argv):
    directory = argv[0]
    profile = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..', 'profiles', 'sglang.yml')
    os.makedirs(directory, exist_ok=True)
    for name, version in sorted(pins(profile).items()) + [tuple(extra.split('==', 1)) for extra in argv[2:]]:
        print(wheel(directory, name, version))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
