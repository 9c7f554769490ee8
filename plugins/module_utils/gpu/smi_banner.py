# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What nvidia-smi says about the driver: its banner, ``nvidia-smi --version``, or the NVML error it fails with.

PRIVATE to the collection. The module runs the commands; this file only parses their output into the
``nvidia_smi`` record of nvidia_driver_info (the per-GPU CSV queries are nvidia_smi.py).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.llmops.inference.plugins.module_utils.gpu.nvidia_smi import NvidiaSmiParseError, parse_query_gpu

# The GPU query nvidia_driver_info runs (the CSV parser is nvidia_smi.parse_query_gpu).
GPU_QUERY_FIELDS = ("name", "compute_cap")
_SMI_BANNER_RE = re.compile(r"NVIDIA-SMI\s+(\S+)\s+(Driver|KMD) Version:\s+(\S+)\s+CUDA( UMD)? Version:\s+([0-9.]+)")
_SMI_KV_RE = re.compile(r"^\s*([A-Za-z][A-Za-z -]*?)\s*:\s*(\S+)\s*$")
_SMI_MISMATCH = "Driver/library version mismatch"
_SMI_NO_DRIVER = "couldn't communicate with the NVIDIA driver"


def parse_nvidia_smi(stdout, stderr="", rc=0):
    """Parse nvidia-smi output: the banner, ``nvidia-smi --version`` or an NVML failure.

    Returns smi_version, driver_version, cuda_version, nvml_version, format ("classic" for Driver/CUDA Version,
    "kmd" for the R610+ KMD/CUDA UMD Version banner, "version" for --version), error and error_kind
    (driver_library_mismatch, no_driver, nvml_init_failed, unknown).
    """
    text = "%s\n%s" % (stdout or "", stderr or "")
    result = {"smi_version": None, "driver_version": None, "cuda_version": None, "nvml_version": None,
              "format": None, "error": None, "error_kind": None}
    banner = _SMI_BANNER_RE.search(text)
    if banner:
        result.update(smi_version=banner.group(1), driver_version=banner.group(3), cuda_version=banner.group(5),
                      format="kmd" if banner.group(2) == "KMD" else "classic")
    else:
        fields = {}
        for line in text.splitlines():
            match = _SMI_KV_RE.match(line)
            if match:
                fields[" ".join(match.group(1).lower().split())] = match.group(2)
        if "nvidia-smi version" in fields:
            result["format"] = "version"
            result["smi_version"] = fields.get("nvidia-smi version")
            result["driver_version"] = fields.get("driver version") or fields.get("kmd version")
            result["cuda_version"] = fields.get("cuda version") or fields.get("cuda umd version")
            result["nvml_version"] = fields.get("nvml version")
        if "nvml library version" in fields:
            result["nvml_version"] = fields["nvml library version"]
    if _SMI_MISMATCH in text:
        result.update(error="Failed to initialize NVML: " + _SMI_MISMATCH, error_kind="driver_library_mismatch")
    elif _SMI_NO_DRIVER in text:
        result.update(error=_first_line(text, _SMI_NO_DRIVER), error_kind="no_driver")
    elif "Failed to initialize NVML" in text:
        result.update(error=_first_line(text, "Failed to initialize NVML"), error_kind="nvml_init_failed")
    elif rc not in (0, None) or result["format"] is None:
        result.update(error=_first_nonempty_line(text) or "nvidia-smi exited with rc %s" % rc, error_kind="unknown")
    return result


def nvidia_smi_record(ran, rc=None, stdout="", stderr="", skipped_reason=None, query_stdout=None, command=None):
    """The nvidia_smi return value: whether and how nvidia-smi ran plus the parsed banner and GPU list."""
    record = {"ran": ran, "rc": rc, "command": command, "skipped_reason": skipped_reason, "smi_version": None,
              "driver_version": None, "cuda_version": None, "nvml_version": None, "format": None, "error": None,
              "error_kind": None, "gpus": []}
    if ran:
        record.update(parse_nvidia_smi(stdout, stderr, rc))
        record["gpus"] = parse_gpu_query(query_stdout)
    return record


def parse_gpu_query(stdout):
    """Output of ``nvidia-smi`` + query_gpu_args(GPU_QUERY_FIELDS) -> [{name, compute_capability}]; [] if malformed."""
    try:
        rows = parse_query_gpu(stdout, GPU_QUERY_FIELDS)
    except NvidiaSmiParseError:
        return []
    return [{"name": row["name"], "compute_capability": row["compute_cap"]} for row in rows]


def _first_line(text, needle):
    return next((line.strip() for line in text.splitlines() if needle in line), None)


def _first_nonempty_line(text):
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return None
