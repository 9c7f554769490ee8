# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia_smi_banner: the nvidia-smi banner, --version, NVML errors and the nvidia_smi record."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.gpu import smi_banner as sb
from nvidia_fixtures import captured, smi_text


def test_parse_nvidia_smi_captured_banner():
    out = captured("nvidia-smi")
    parsed = sb.parse_nvidia_smi(out["stdout"], out["stderr"], out["rc"])
    assert parsed == {"smi_version": "580.159.04", "driver_version": "580.159.04", "cuda_version": "13.0",
                      "nvml_version": None, "format": "classic", "error": None, "error_kind": None}


def test_parse_nvidia_smi_captured_version():
    out = captured("nvidia-smi --version")
    parsed = sb.parse_nvidia_smi(out["stdout"], out["stderr"], out["rc"])
    assert parsed == {"smi_version": "580.159.04", "driver_version": "580.159.04", "cuda_version": "13.0",
                      "nvml_version": "580.159", "format": "version", "error": None, "error_kind": None}


@pytest.mark.parametrize("name, rc, expected", [
    ("classic_590.txt", 0, {"smi_version": "590.48.01", "driver_version": "590.48.01", "cuda_version": "13.1",
                            "format": "classic", "error_kind": None}),
    ("kmd_610.txt", 0, {"smi_version": "610.43.02", "driver_version": "610.43.02", "cuda_version": "13.3",
                        "format": "kmd", "error_kind": None}),
    ("version_595.txt", 0, {"smi_version": "595.58.03", "driver_version": "595.58.03", "cuda_version": "13.2",
                            "nvml_version": "595.58", "format": "version", "error_kind": None}),
    ("mismatch_565.txt", 18, {"smi_version": None, "nvml_version": "565.57", "format": None,
                              "error": "Failed to initialize NVML: Driver/library version mismatch",
                              "error_kind": "driver_library_mismatch"}),
    ("mismatch_legacy.txt", 18, {"nvml_version": None, "error_kind": "driver_library_mismatch"}),
    ("no_driver.txt", 9, {"error_kind": "no_driver",
                          "error": "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                                   "Make sure that the latest NVIDIA driver is installed and running."}),
    ("nvml_unknown_error.txt", 255, {"error_kind": "nvml_init_failed", "error": "Failed to initialize NVML: Unknown Error"}),
])
def test_parse_nvidia_smi_fixtures(name, rc, expected):
    parsed = sb.parse_nvidia_smi(smi_text(name), "", rc)
    for key, value in expected.items():
        assert parsed[key] == value, key


def test_parse_nvidia_smi_mismatch_on_stderr():
    parsed = sb.parse_nvidia_smi("", smi_text("mismatch_565.txt"), 18)
    assert parsed["error_kind"] == "driver_library_mismatch" and parsed["nvml_version"] == "565.57"


def test_parse_nvidia_smi_kmd_version_form():
    # Shape of --version on R610+ is unconfirmed; accept KMD/CUDA UMD names there too.
    parsed = sb.parse_nvidia_smi("NVIDIA-SMI version  : 610.43.02\nNVML version        : 610.43\n"
                                 "KMD version         : 610.43.02\nCUDA UMD Version    : 13.3\n")
    assert (parsed["driver_version"], parsed["cuda_version"], parsed["format"]) == ("610.43.02", "13.3", "version")


@pytest.mark.parametrize("stdout, rc, error", [
    ("", 1, "nvidia-smi exited with rc 1"),
    ("Segmentation fault\n", 139, "Segmentation fault"),
    ("unexpected text\n", 0, "unexpected text"),
])
def test_parse_nvidia_smi_unknown_failures(stdout, rc, error):
    parsed = sb.parse_nvidia_smi(stdout, "", rc)
    assert parsed["error_kind"] == "unknown" and parsed["error"] == error


def test_parse_gpu_query():
    gpus = sb.parse_gpu_query(smi_text("query_rtx_pro_6000.csv") + "\nNVIDIA A100-SXM4-80GB, [N/A]\n")
    assert gpus[0] == {"name": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "compute_capability": "12.0"}
    assert len(gpus) == 5
    assert gpus[4] == {"name": "NVIDIA A100-SXM4-80GB", "compute_capability": None}
    assert sb.parse_gpu_query("name, compute_cap\nNVIDIA H200, 9.0\n") == [{"name": "NVIDIA H200", "compute_capability": "9.0"}]
    assert sb.parse_gpu_query("no commas at all\n") == []
    assert sb.parse_gpu_query(None) == []


def test_nvidia_smi_record():
    skipped = sb.nvidia_smi_record(False, skipped_reason="root is not /")
    assert skipped["ran"] is False and skipped["skipped_reason"] == "root is not /" and skipped["gpus"] == []
    ran = sb.nvidia_smi_record(True, 0, smi_text("classic_590.txt"), "", query_stdout="NVIDIA H200, 9.0\n", command="nvidia-smi")
    assert ran["format"] == "classic" and ran["gpus"] == [{"name": "NVIDIA H200", "compute_capability": "9.0"}]
