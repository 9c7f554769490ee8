# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""CUDA <-> NVIDIA driver compatibility tables (data only, plus the lookups over them).

PRIVATE to the collection. The tables are kept here as Python constants rather than as a YAML file because
module_utils travel to the managed host inside the AnsiballZ payload, where collection data files are not
available. Edit the tables, not the functions, when NVIDIA publishes a new release.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

# CUDA toolkit release -> minimum Linux x86_64 driver ("CUDA Toolkit and Corresponding Driver Versions",
# docs.nvidia.com/cuda/cuda-toolkit-release-notes). Key: (major, minor, update); update 0 = GA.
CUDA_TOOLKIT_MIN_DRIVER = {
    (13, 2, 2): "595.71.05",
    (13, 2, 1): "595.58.03",
    (13, 2, 0): "595.45.04",
    (13, 1, 1): "590.48.01",
    (13, 1, 0): "590.44.01",
    (13, 0, 2): "580.95.05",
    (13, 0, 0): "580.65.06",
    (12, 9, 1): "575.57.08",
    (12, 8, 1): "570.124.06",
    (12, 8, 0): "570.26",
    (12, 6, 3): "560.35.05",
    (12, 6, 0): "560.28.03",
    (12, 5, 0): "555.42.02",
    (12, 4, 0): "550.54.14",
    (12, 2, 0): "535.54.03",
    (12, 0, 0): "525.60.13",
}

# Minor-version compatibility floor (docs.nvidia.com/deploy/cuda-compatibility): any CUDA <major>.x runtime
# runs (without newer-PTX JIT) on a driver of at least this branch.
MINOR_VERSION_COMPAT_MIN_DRIVER = {
    13: "580",
    12: "525",
    11: "450",
}

# Driver branch -> the CUDA driver API version its libcuda reports (nvidia-smi "CUDA Version").
DRIVER_BRANCH_CUDA_VERSION = (
    (610, "13.3"),
    (595, "13.2"),
    (590, "13.1"),
    (580, "13.0"),
    (575, "12.9"),
    (570, "12.8"),
    (565, "12.7"),
    (560, "12.6"),
    (555, "12.5"),
    (550, "12.4"),
    (545, "12.3"),
    (535, "12.2"),
    (530, "12.1"),
    (525, "12.0"),
    (520, "11.8"),
    (515, "11.7"),
    (510, "11.6"),
    (495, "11.5"),
    (470, "11.4"),
    (465, "11.3"),
    (460, "11.2"),
    (455, "11.1"),
    (450, "11.0"),
)

# Blackwell: CUDA 12.8 is the first release that supports it natively, it needs an R570+ driver, and NVIDIA
# supports only the open kernel modules on it. Compute capability 10.x (B100/B200/B300), 11.0 (Thor) and 12.x
# (RTX PRO / GeForce RTX 50).
BLACKWELL_MIN_DRIVER_BRANCH = 570
BLACKWELL_COMPUTE_CAPABILITY_MAJORS = (10, 11, 12)
BLACKWELL_NAME_RE = re.compile(r"blackwell|rtx pro \d{4}|\bg?b[123]00\b|\brtx 50[5-9]0\b", re.IGNORECASE)

_CUDA_RE = re.compile(r"^\s*(\d+)\.(\d+)(?:(?:\.|\s*(?:u|update)\s*)(\d+))?\s*$", re.IGNORECASE)
_CUDA_WHEEL_TAG_RE = re.compile(r"^\s*cu(\d{2,3})(\d)\s*$", re.IGNORECASE)


def parse_cuda_version(text):
    """Return (major, minor, update) for "12.8", "12.8u1", "12.8 Update 1", "12.8.1" or "cu128"; None if unparsable."""
    if text is None:
        return None
    text = str(text)
    match = _CUDA_RE.match(text)
    if match:
        return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)
    match = _CUDA_WHEEL_TAG_RE.match(text)
    if match:
        return int(match.group(1)), int(match.group(2)), 0
    return None


def format_cuda_version(key):
    """(12, 8, 1) -> "12.8u1", (12, 8, 0) -> "12.8"."""
    major, minor, update = key
    if update:
        return "%d.%du%d" % (major, minor, update)
    return "%d.%d" % (major, minor)


def cuda_min_driver(cuda_runtime):
    """Minimum driver for a CUDA runtime.

    Returns a dict: cuda (normalised, e.g. "12.8u1"), min_driver (str or None) and source: "toolkit_table" (exact
    release), "toolkit_table_nearest_update" (same minor, closest lower update), "minor_version_compatibility"
    (release not in the table; the major's minor-version-compatibility floor) or None (unknown CUDA major).
    """
    key = parse_cuda_version(cuda_runtime)
    if key is None:
        return {"cuda": None, "min_driver": None, "source": None}
    result = {"cuda": format_cuda_version(key), "min_driver": None, "source": None}
    if key in CUDA_TOOLKIT_MIN_DRIVER:
        result.update(min_driver=CUDA_TOOLKIT_MIN_DRIVER[key], source="toolkit_table")
        return result
    same_minor = sorted(k for k in CUDA_TOOLKIT_MIN_DRIVER if k[:2] == key[:2] and k[2] <= key[2])
    if same_minor:
        result.update(min_driver=CUDA_TOOLKIT_MIN_DRIVER[same_minor[-1]], source="toolkit_table_nearest_update")
        return result
    if key[0] in MINOR_VERSION_COMPAT_MIN_DRIVER:
        result.update(min_driver=MINOR_VERSION_COMPAT_MIN_DRIVER[key[0]], source="minor_version_compatibility")
    return result


def cuda_version_for_driver_branch(branch):
    """CUDA driver API version of a driver branch (e.g. 580 -> "13.0"); None below the oldest known branch."""
    for known_branch, cuda in DRIVER_BRANCH_CUDA_VERSION:
        if branch >= known_branch:
            return cuda
    return None


def newest_cuda_for_driver(version_tuple):
    """Newest CUDA toolkit release in the table whose minimum driver is <= the given driver (a version tuple)."""
    best = None
    for key, min_driver in CUDA_TOOLKIT_MIN_DRIVER.items():
        min_tuple = tuple(int(part) for part in min_driver.split("."))
        if _pad(min_tuple) <= _pad(version_tuple) and (best is None or key > best):
            best = key
    return format_cuda_version(best) if best else None


def _pad(version_tuple):
    return tuple(version_tuple) + (0,) * (3 - len(version_tuple))
