# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia_system: the kernel module banners, host/container context and library architecture."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.gpu import system as ns
from ansible_collections.llmops.inference.plugins.module_utils.host import rootfs as rf
from nvidia_fixtures import FACTS, HostLikeRootFS, build


@pytest.mark.parametrize("text, expected", [
    ("590.48.01\n", "590.48.01"), ("515.76\n", "515.76"), ("", None), (None, None), ("not-a-version\n", None),
])
def test_parse_sys_module_version(text, expected):
    assert ns.parse_sys_module_version(text) == expected


PROC_CASES = [
    # host.md: open module, two spaces around the version; the naive r"Kernel Module\s+(\d+)" fails on this one.
    ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  590.48.01  Release Build  (dvs-builder@U22-I3-AE18-23-3)"
     "  Mon Dec  8 13:05:00 UTC 2025\nGCC version:  gcc version 15.2.0 (Ubuntu 15.2.0-4ubuntu4)\n",
     "590.48.01", "open", "x86_64", "gcc version 15.2.0 (Ubuntu 15.2.0-4ubuntu4)"),
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\nGCC version:  gcc version 12.2.0\n",
     "550.54.15", "proprietary", "x86_64", "gcc version 12.2.0"),
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  515.76  Mon Sep 12 19:21:56 UTC 2022\nGCC version:  gcc version 9.4.0\n",
     "515.76", "proprietary", "x86_64", "gcc version 9.4.0"),
    ("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.173.02  Release Build  (dvs-builder@U22)  Thu Mar 12 2026\n",
     "580.173.02", "open", "aarch64", None),
    ("NVRM version: NVIDIA UNIX aarch64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n",
     "550.54.15", "proprietary", "aarch64", None),
    # vGPU guest driver
    ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  560.35.03  Release Build  (VirtualGPU)\nGCC version:  gcc 12\n",
     "560.35.03", "open", "x86_64", "gcc 12"),
    # Fedora akmods: the banner wraps onto a second line
    ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64\n  570.144  Release Build  (mockbuild@)  Wed Apr 9 2025\n"
     "GCC version:  gcc version 15.0.1 20250329 (Red Hat 15.0.1-0) (GCC)\n",
     "570.144", "open", "x86_64", "gcc version 15.0.1 20250329 (Red Hat 15.0.1-0) (GCC)"),
    # third-party Kbuild of the open modules
    ("NVRM version: NVIDIA Open Kernel Module  580.82.07  Release Build  (builder@ci)  Tue Aug 26 2025\n",
     "580.82.07", "open", None, None),
]


@pytest.mark.parametrize("text, version, flavor, arch, gcc", PROC_CASES)
def test_parse_proc_driver_version(text, version, flavor, arch, gcc):
    parsed = ns.parse_proc_driver_version(text)
    assert (parsed["version"], parsed["flavor"], parsed["arch"], parsed["gcc"]) == (version, flavor, arch, gcc)
    assert parsed["nvrm"].startswith("NVIDIA")


def test_parse_proc_driver_version_captured_h200():
    parsed = ns.parse_proc_driver_version(FACTS["files"]["/proc/driver/nvidia/version"])
    assert parsed["version"] == "580.159.04"
    assert parsed["flavor"] == "open"
    assert parsed["arch"] == "x86_64"
    assert parsed["gcc"] == "gcc version 15.3.0 (GCC)"


@pytest.mark.parametrize("text", ["", None, "GCC version:  gcc 12\n", "something else entirely\n"])
def test_parse_proc_driver_version_without_banner(text):
    assert ns.parse_proc_driver_version(text) == {"version": None, "flavor": None, "arch": None, "nvrm": None, "gcc": None}


def test_parse_proc_driver_version_without_version_or_flavor():
    parsed = ns.parse_proc_driver_version("NVRM version: something unexpected\n")
    assert parsed["version"] is None and parsed["flavor"] is None and parsed["nvrm"] == "something unexpected"


@pytest.mark.parametrize("spec, expected", [
    ({"files": {"/.dockerenv": ""}}, "container"),
    ({"files": {"/run/.containerenv": ""}}, "container"),
    ({"files": {"/run/systemd/container": "lxc\n"}}, "container"),
    ({"files": {"/proc/1/environ": "container=lxc\x00PATH=/bin"}}, "container"),
    ({"files": {"/proc/1/environ": "PATH=/bin"}}, "host"),
])
def test_detect_context(tmp_path, spec, expected):
    assert ns.detect_context(HostLikeRootFS(build(tmp_path, spec))) == expected
    assert ns.detect_context(rf.RootFS(str(tmp_path / "case"))) == "rootfs"


@pytest.mark.parametrize("dirs, kernel_arch, machine, host, expected", [
    ([], "aarch64", "x86_64", True, "aarch64"),
    ([], None, "arm64", True, "aarch64"),
    ([], None, "amd64", True, "x86_64"),
    ([], None, "aarch64", False, "x86_64"),  # the inspecting host's arch says nothing about a rootfs
    (["/usr/lib/aarch64-linux-gnu"], None, None, False, "aarch64"),
    (["/usr/lib/aarch64-linux-gnu", "/usr/lib/x86_64-linux-gnu"], None, None, False, "x86_64"),
])
def test_detect_arch(tmp_path, dirs, kernel_arch, machine, host, expected):
    root = build(tmp_path, {"dirs": dirs})
    fs = HostLikeRootFS(root) if host else rf.RootFS(root)
    assert ns.detect_arch(fs, kernel_arch, machine) == expected
