# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The inspected system as the NVIDIA driver sees it: the loaded kernel modules, the GPUs, host or container, arch.

PRIVATE to the collection. Read from /sys/module, /proc/driver/nvidia and a few container markers, all through a
``RootFS`` (a container rootfs inspected from the host usually has no kernel files at all).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.llmops.inference.plugins.module_utils.gpu.versions import DRIVER_VERSION_RE, parse_version
from ansible_collections.llmops.inference.plugins.module_utils.host.pci_sysfs import parse_nvidia_gpu_information

KERNEL_SUBMODULES = ("nvidia_uvm", "nvidia_modeset", "nvidia_drm")


def parse_sys_module_version(text):
    """Content of /sys/module/nvidia/version ("590.48.01\\n")."""
    if text is None:
        return None
    value = text.strip()
    return value if parse_version(value) else None


def parse_proc_driver_version(text):
    """Parse /proc/driver/nvidia/version.

    Handles the open ("NVIDIA UNIX Open Kernel Module for x86_64  590.48.01  Release Build ...") and proprietary
    ("NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue ...") banners, aarch64, vGPU, third-party Kbuild
    ("NVIDIA Open Kernel Module  <ver>") and banners wrapped onto several lines. Returns a dict with version, flavor
    (open/proprietary/None), arch, nvrm (the banner, whitespace-collapsed) and gcc.
    """
    result = {"version": None, "flavor": None, "arch": None, "nvrm": None, "gcc": None}
    if not text:
        return result
    nvrm_lines, gcc, in_nvrm = [], None, False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("NVRM version:"):
            in_nvrm = True
            nvrm_lines.append(stripped[len("NVRM version:"):])
        elif stripped.startswith("GCC version:"):
            in_nvrm = False
            gcc = stripped[len("GCC version:"):].strip() or None
        elif in_nvrm and stripped:
            # Some distro builds (Fedora akmods) wrap the banner.
            nvrm_lines.append(stripped)
    if not nvrm_lines:
        return result
    nvrm = " ".join(" ".join(nvrm_lines).split())
    result["nvrm"], result["gcc"] = nvrm, gcc
    for token in nvrm.split():
        if DRIVER_VERSION_RE.match(token):
            result["version"] = token
            break
    if "Open Kernel Module" in nvrm:
        result["flavor"] = "open"
    elif "Kernel Module" in nvrm:
        result["flavor"] = "proprietary"
    arch = re.search(r"Kernel Module for (\S+)", nvrm) or re.search(r"UNIX (\S+) Kernel Module", nvrm)
    if arch and arch.group(1) != "Open":
        result["arch"] = arch.group(1)
    return result


def read_kernel(fs):
    sys_version = parse_sys_module_version(fs.read_text("/sys/module/nvidia/version"))
    proc = parse_proc_driver_version(fs.read_text("/proc/driver/nvidia/version"))
    version, source = sys_version, "/sys/module/nvidia/version" if sys_version else None
    if version is None and proc["version"]:
        version, source = proc["version"], "/proc/driver/nvidia/version"
    submodules = {}
    for name in KERNEL_SUBMODULES:
        value = parse_sys_module_version(fs.read_text("/sys/module/%s/version" % name))
        if value:
            submodules[name] = value
    return {"version": version, "source": source, "flavor": proc["flavor"], "arch": proc["arch"], "nvrm": proc["nvrm"],
            "submodules": submodules}


def read_gpus(fs):
    gpus = []
    for path in fs.glob("/proc/driver/nvidia/gpus/*/information"):
        info = parse_nvidia_gpu_information(fs.read_text(path))
        if info["model"]:
            gpus.append({"name": info["model"], "bus_id": info["bus_location"], "compute_capability": None,
                         "source": "/proc/driver/nvidia/gpus"})
    return gpus


def detect_context(fs):
    """host, container (inspected from inside) or rootfs (inspected from outside)."""
    if not fs.is_host_root:
        return "rootfs"
    if fs.lexists("/.dockerenv") or fs.lexists("/run/.containerenv"):
        return "container"
    marker = (fs.read_text("/run/systemd/container") or "").strip()
    if marker:
        return "container"
    environ = fs.read_text("/proc/1/environ") or ""
    if "container=" in environ:
        return "container"
    return "host"


def detect_arch(fs, kernel_arch=None, machine=None):
    """Library architecture: the kernel banner's, else the local machine's (root /), else the rootfs layout."""
    for value in (kernel_arch, machine if fs.is_host_root else None):
        if value in ("x86_64", "amd64"):
            return "x86_64"
        if value in ("aarch64", "arm64"):
            return "aarch64"
    if fs.isdir("/usr/lib/aarch64-linux-gnu") and not fs.isdir("/usr/lib/x86_64-linux-gnu"):
        return "aarch64"
    return "x86_64"
