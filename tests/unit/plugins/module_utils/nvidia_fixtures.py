# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared by the NVIDIA driver tests: the fixture-root generator (tests/fixtures/build_driver_roots.py), the
captured host facts, the recorded nvidia-smi outputs, and a RootFS that counts as the running system."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import os

from ansible_collections.llmops.inference.plugins.module_utils.host.rootfs import RootFS

FIXTURES = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures"))
SMI = os.path.join(FIXTURES, "nvidia_smi")


def _generator():
    spec = importlib.util.spec_from_file_location("build_driver_roots", os.path.join(FIXTURES, "build_driver_roots.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _generator()
FACTS = GEN.load_facts()


def smi_text(name):
    with open(os.path.join(SMI, name)) as handle:
        return handle.read()


def captured(command):
    return FACTS["commands"][command]


def build(tmp_path, spec, name="case"):
    return GEN.build_tree(str(tmp_path / name), GEN.merge(*spec) if isinstance(spec, (list, tuple)) else spec)


class HostLikeRootFS(RootFS):
    """A tree that the code treats as the running system (root /) while reading the tree."""

    @property
    def is_host_root(self):
        return True
