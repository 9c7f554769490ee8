# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the nvidia_driver verdict: Blackwell detection and whole inspections of the fixture roots."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.gpu import driver as nd
from ansible_collections.llmops.inference.plugins.module_utils.gpu.smi_banner import nvidia_smi_record
from ansible_collections.llmops.inference.plugins.module_utils.host.rootfs import RootFS
from nvidia_fixtures import GEN, build, captured, smi_text


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    return GEN.build(str(tmp_path_factory.mktemp("driver_roots")))


def run(root, **kwargs):
    return nd.inspect(RootFS(root), **kwargs)


def codes(result):
    return [finding["code"] for finding in result["findings"]]


# ----------------------------------------------------------------------------------------------------------------
# Blackwell


@pytest.mark.parametrize("name, cap, expected", [
    (None, "12.0", True), (None, "10.0", True), (None, "10.3", True), (None, "11.0", True), (None, "9.0", False),
    (None, "8.9", False), (None, "sm_120", True), (None, "120", True), (None, "sm_90", False),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", None, True), ("NVIDIA B200", None, True), ("NVIDIA GB200", None, True),
    ("NVIDIA GeForce RTX 5090", None, True), ("NVIDIA RTX 5000 Ada Generation", None, False),
    ("Quadro RTX 6000", None, False), ("NVIDIA H200", None, False), (None, None, False),
    ("NVIDIA RTX PRO 6000 Blackwell", "9.0", False),  # a compute capability wins over the name
])
def test_is_blackwell(name, cap, expected):
    assert nd.is_blackwell(name, cap) is expected


@pytest.mark.parametrize("hint, expected", [
    (None, None), ("", None), ("blackwell", True), ("Blackwell", True), ("hopper", False), ("12.0", True),
    ("sm_90", False), ("NVIDIA B200", True),
])
def test_is_blackwell_hint(hint, expected):
    assert nd.is_blackwell_hint(hint) is expected


# ----------------------------------------------------------------------------------------------------------------
# whole inspections on the fixture roots


def test_h200_real_is_consistent_with_compat_distractor(roots):
    result, warnings = run(roots["h200_real"], cuda_runtime="13.0.2")
    assert result["consistent"] is True and result["mismatches"] == [] and result["remediation"] is None
    assert warnings == []
    assert result["kernel_module_version"] == "580.159.04"
    assert result["kernel_module_version_source"] == "/sys/module/nvidia/version"
    assert result["kernel_module_flavor"] == "open"
    assert result["kernel_modules"] == {"nvidia": "580.159.04", "nvidia_uvm": "580.159.04"}
    assert result["reference_version"] == "580.159.04" and result["reference_source"] == "kernel_module"
    assert result["context"] == "rootfs"
    for name in ("libcuda", "libnvidia-ml", "libnvidia-ptxjitcompiler"):
        lib = result["userspace_versions"][name]
        assert lib["version"] == "580.159.04"
        assert lib["path"] == "/usr/local/nvidia/lib64/%s.so.580.159.04" % name
        assert lib["soname_path"] == "/usr/local/nvidia/lib64/%s.so.1" % name
        assert lib["source"] == "ld.so.conf" and lib["compat"] is False
    assert {"path": "/usr/local/cuda-13.0/compat/libcuda.so.580.95.05", "library": "libcuda", "version": "580.95.05",
            "reason": "cuda_compat_not_on_loader_path"} in result["inactive_libraries"]
    assert set(i["reason"] for i in result["inactive_libraries"]) == {"cuda_compat_not_on_loader_path"}
    assert all(i["version"] == "580.95.05" for i in result["inactive_libraries"])
    assert (result["cuda_driver_api_version"], result["cuda_driver_api_version_source"]) == ("13.0", "driver_branch_table")
    assert (result["cuda_runtime"], result["cuda_runtime_min_driver"], result["cuda_runtime_supported"]) == ("13.0u2", "580.95.05", True)
    assert [g["name"] for g in result["gpus"]] == ["NVIDIA H200", "NVIDIA H200"] and result["blackwell"] is False
    assert result["nvidia_smi"]["ran"] is False


def test_h200_real_with_captured_nvidia_smi_and_env(roots):
    """The captured banner and the captured LD_LIBRARY_PATH of that machine."""
    banner = captured("nvidia-smi")
    smi = nvidia_smi_record(True, banner["rc"], banner["stdout"], banner["stderr"],
                            query_stdout="NVIDIA H200, 9.0\nNVIDIA H200, 9.0\n", command="nvidia-smi")
    result, dummy = run(roots["h200_real"], smi=smi, ld_library_path="/usr/local/nvidia/lib64:/usr/local/nvidia/lib")
    assert result["consistent"] is True
    assert result["userspace_versions"]["libcuda"]["source"] == "ld_library_path"
    assert (result["cuda_driver_api_version"], result["cuda_driver_api_version_source"]) == ("13.0", "nvidia_smi")
    assert [g["compute_capability"] for g in result["gpus"]] == ["9.0", "9.0"]
    assert result["gpus"][0]["bus_id"] == "0000:00:06.0"


def test_h200_real_compat_forced_onto_the_loader_path(roots):
    """NeMo labs-molt#44: the 580.95.05 compat libcuda over a newer 580.159.04 driver gives CUDA error 803."""
    result, dummy = run(roots["h200_real"], ld_library_path=["/usr/local/cuda/compat"])
    assert result["consistent"] is False
    assert codes(result) == ["cuda_compat_on_loader_path", "cuda_compat_on_loader_path", "multiple_active_versions"]
    assert "803" in result["mismatches"][0]
    assert "remove /usr/local/cuda/compat from LD_LIBRARY_PATH" in result["remediation"]
    # allow_forward_compat does not excuse an *older* compat library
    result, dummy = run(roots["h200_real"], ld_library_path=["/usr/local/cuda/compat"], allow_forward_compat=True)
    assert result["consistent"] is False and result["forward_compat_libraries"] == {}


def test_h200_real_cuda_runtime_too_new(roots):
    result, dummy = run(roots["h200_real"], cuda_runtime="13.1u1")
    assert codes(result) == ["cuda_runtime_unsupported"] and result["cuda_runtime_supported"] is False
    assert result["cuda_runtime_min_driver"] == "590.48.01"
    assert "use a build for CUDA 13.0u2 or older" in result["remediation"]


def test_host590_container565(roots):
    result, warnings = run(roots["host590_container565"])
    assert result["consistent"] is False
    assert codes(result) == ["userspace_version_mismatch"] * 3 + ["blackwell_driver_too_old"]
    assert result["remediation"] == ("Install NVIDIA-Linux-x86_64-590.48.01.run with --no-kernel-modules inside the container "
                                     "(or the distro packages pinned to 590.48.01), then run ldconfig.")
    assert "libcuda 565.57.01" in result["mismatches"][0] and "590.48.01" in result["mismatches"][0]
    assert result["blackwell"] is True and result["cuda_driver_api_version"] == "12.7"
    assert warnings == []


def test_host590_container565_with_nvml_mismatch_output(roots):
    smi = nvidia_smi_record(True, 18, smi_text("mismatch_565.txt"), "", command="nvidia-smi")
    result, dummy = run(roots["host590_container565"], smi=smi)
    finding = [f for f in result["findings"] if f["code"] == "nvml_driver_library_mismatch"][0]
    assert finding["msg"].endswith("(NVML library 565.57, kernel module 590.48.01)")
    assert result["cuda_driver_api_version_source"] == "driver_branch_table"


def test_host_after_upgrade_without_reboot(roots, monkeypatch):
    """On a host, user space newer than the loaded module means: reboot, not reinstall."""
    monkeypatch.setattr(nd, "detect_context", lambda fs: "host")
    result, dummy = run(roots["container_rootfs"], expected_version="550.54.15")
    assert "Install NVIDIA-Linux-x86_64-550.54.15.run with --no-kernel-modules on this host" in result["remediation"]
    root = roots["host590_container565"]
    smi = nvidia_smi_record(True, 18, "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 595.58\n")
    result, dummy = run(root, smi=smi)
    assert ("The loaded kernel module (590.48.01) is older than the installed user-space driver (595.58): the driver was "
            "upgraded without reloading the module.") in result["remediation"]


def test_proprietary_550(roots):
    result, dummy = run(roots["proprietary_550"], cuda_runtime="12.4")
    assert result["consistent"] is True
    assert result["kernel_module_flavor"] == "proprietary"
    assert result["userspace_versions"]["libcuda"]["path"] == "/usr/lib64/libcuda.so.550.54.15"
    assert result["userspace_versions"]["libcuda"]["source"] == "default"
    assert (result["cuda_runtime_min_driver"], result["cuda_runtime_supported"]) == ("550.54.14", True)
    assert result["cuda_driver_api_version"] == "12.4" and result["blackwell"] is False


def test_proprietary_550_with_blackwell_hint(roots):
    result, dummy = run(roots["proprietary_550"], gpu_architecture="12.0", cuda_runtime="12.8")
    assert codes(result) == ["cuda_runtime_unsupported", "blackwell_proprietary_module", "blackwell_driver_too_old",
                             "blackwell_driver_too_old"]
    assert result["blackwell"] is True
    assert "--kernel-module-type=open" in result["remediation"]
    assert "Blackwell needs driver R570 or newer" in result["remediation"]


def test_two_part_515(roots):
    result, dummy = run(roots["two_part_515"], expected_version="515.76.00")
    assert result["consistent"] is True
    assert result["kernel_module_version"] == "515.76"
    assert set(lib["version"] for lib in result["userspace_versions"].values()) == {"515.76"}
    assert result["cuda_driver_api_version"] == "11.7"
    result, dummy = run(roots["two_part_515"], expected_version="515.65.01")
    assert codes(result) == ["kernel_expected_mismatch"]
    assert "reboot the host" in result["remediation"]


def test_stale_duplicates(roots):
    result, dummy = run(roots["stale_duplicates"])
    assert codes(result) == ["userspace_version_mismatch", "multiple_active_versions", "stale_library_on_loader_path"]
    assert result["userspace_versions"]["libnvidia-ml"]["version"] == "470.129.06"
    assert sorted((i["path"], i["reason"]) for i in result["inactive_libraries"]) == [
        ("/usr/lib/x86_64-linux-gnu/libcuda.so.470.129.06", "stale_version"),
        ("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.525.105.17", "not_soname_target")]
    assert ("/lib/x86_64-linux-gnu/libnvidia-ml.so.1 points at /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.470.129.06, but "
            "the matching /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.525.105.17 is next to it") in result["remediation"]
    assert "Remove the stale library /usr/lib/x86_64-linux-gnu/libcuda.so.470.129.06" in result["remediation"]
    assert result["findings"][1]["versions"] == ["470.129.06", "525.105.17"]


def test_compat_on_loader_path_counts(roots):
    result, dummy = run(roots["compat_on_loader_path"], allow_forward_compat=True)
    assert codes(result) == ["cuda_compat_on_loader_path", "cuda_compat_on_loader_path", "multiple_active_versions"]
    assert result["userspace_versions"]["libcuda"]["compat"] is True
    assert result["userspace_versions"]["libnvidia-ml"]["version"] == "580.95.05"
    assert result["remediation"].startswith("Take the CUDA forward-compat directory /usr/local/cuda-12.8/compat off the "
                                            "loader path: delete /etc/ld.so.conf.d/99_cuda_compat.conf")
    reasons = dict((i["path"], i["reason"]) for i in result["inactive_libraries"])
    assert reasons == {
        "/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05": "shadowed_by_earlier_directory",
        "/usr/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so.580.95.05": "shadowed_by_earlier_directory",
        "/usr/local/cuda-12.8/compat/libcudadebugger.so.570.124.06": "cuda_compat_on_loader_path",
        "/usr/local/cuda-12.8/compat/libnvidia-nvvm.so.570.124.06": "cuda_compat_on_loader_path",
    }


def test_container_rootfs_without_reference(roots):
    result, warnings = run(roots["container_rootfs"])
    assert result["consistent"] is True and result["reference_version"] is None
    assert result["kernel_module_version"] is None and result["kernel_module_flavor"] is None
    assert any("pass expected_version" in w for w in warnings)
    # Absolute SONAME links resolved inside the rootfs, not on this machine.
    lib = result["userspace_versions"]["libcuda"]
    assert (lib["soname_path"], lib["path"]) == ("/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.565.57.01")
    assert [(i["library"], i["reason"]) for i in result["inactive_libraries"]] == [
        ("libcuda", "cuda_compat_not_on_loader_path"), ("libnvidia-ptxjitcompiler", "cuda_compat_not_on_loader_path")]


def test_container_rootfs_against_host_version(roots):
    result, warnings = run(roots["container_rootfs"], expected_version="590.48.01", gpu_architecture="blackwell")
    assert result["consistent"] is False and result["reference_source"] == "expected_version"
    assert codes(result) == ["userspace_version_mismatch"] * 3 + ["blackwell_driver_too_old"]
    assert "does not match the expected version 590.48.01" in result["mismatches"][0]
    assert result["remediation"].startswith("Install NVIDIA-Linux-x86_64-590.48.01.run with --no-kernel-modules inside the container")
    assert any("flavour is unknown" in w for w in warnings)


def test_container_rootfs_ld_library_path(roots):
    result, dummy = run(roots["container_rootfs"], expected_version="565.57.01", ld_library_path=["/opt/app/lib"])
    assert codes(result) == ["userspace_version_mismatch", "multiple_active_versions"]
    assert result["userspace_versions"]["libcuda"]["source"] == "ld_library_path"
    assert result["remediation"] == ("/opt/app/lib/libcuda.so.550.54.15 shadows the matching "
                                     "/usr/lib/x86_64-linux-gnu/libcuda.so.565.57.01: remove it or take /opt/app/lib off "
                                     "the service's LD_LIBRARY_PATH.")
    assert {"path": "/usr/lib/x86_64-linux-gnu/libcuda.so.565.57.01", "library": "libcuda", "version": "565.57.01",
            "reason": "shadowed_by_earlier_directory"} in result["inactive_libraries"]


def test_container_rootfs_forward_compat(roots):
    compat = ["/usr/local/cuda-12.8/compat"]
    result, dummy = run(roots["container_rootfs"], expected_version="565.57.01", ld_library_path=compat, cuda_runtime="12.8")
    assert codes(result) == ["cuda_compat_on_loader_path", "cuda_compat_on_loader_path", "multiple_active_versions"]
    assert "CUDA error 804" in result["mismatches"][0]
    result, dummy = run(roots["container_rootfs"], expected_version="565.57", ld_library_path=compat, cuda_runtime="12.8",
                        allow_forward_compat=True)
    assert result["consistent"] is True
    assert result["forward_compat_libraries"] == {"libcuda": "570.124.06", "libnvidia-ptxjitcompiler": "570.124.06"}
    assert (result["cuda_runtime_min_driver"], result["cuda_runtime_supported"]) == ("570.26", True)
    assert result["cuda_driver_api_version"] == "12.8"


def test_blackwell_proprietary(roots):
    result, dummy = run(roots["blackwell_proprietary"])
    assert codes(result) == ["blackwell_proprietary_module"] and result["blackwell"] is True
    assert result["kernel_module_flavor"] == "proprietary"


def test_aarch64_remediation_names_the_aarch64_installer(roots):
    result, dummy = run(roots["aarch64_gh200"])
    assert result["consistent"] is False
    assert result["remediation"].startswith("Install NVIDIA-Linux-aarch64-580.173.02.run")


# ----------------------------------------------------------------------------------------------------------------
# inspections on ad-hoc trees (branches the seed cases do not reach)


KERNEL_590 = GEN.kernel("590.48.01", "NVIDIA UNIX Open Kernel Module for x86_64  590.48.01  Release Build  (b@h)  Mon Dec 8 2025")


def test_kernel_submodule_mismatch(tmp_path):
    root = build(tmp_path, [GEN.ubuntu_base(), KERNEL_590, GEN.libs("/usr/lib/x86_64-linux-gnu", "590.48.01"),
                            {"files": {"/sys/module/nvidia_uvm/version": "580.95.05\n", "/sys/module/nvidia_drm/version": "590.48.01\n"}}])
    result, dummy = run(root)
    assert codes(result) == ["kernel_submodule_mismatch"]
    assert result["kernel_modules"] == {"nvidia": "590.48.01", "nvidia_uvm": "580.95.05", "nvidia_drm": "590.48.01"}


def test_missing_libraries(tmp_path):
    root = build(tmp_path, [GEN.ubuntu_base(), KERNEL_590, GEN.libs("/usr/lib/x86_64-linux-gnu", "590.48.01", names=("libnvidia-ml",))])
    result, dummy = run(root)
    assert result["missing_libraries"] == ["libcuda", "libnvidia-ptxjitcompiler"]
    assert codes(result) == ["missing_library"]  # ptxjitcompiler is optional
    assert result["cuda_driver_api_version"] == "13.1"  # from the kernel module when libcuda is absent


def test_multiple_versions_without_reference(tmp_path):
    root = build(tmp_path, [GEN.ubuntu_base(), GEN.libs("/usr/lib/x86_64-linux-gnu", "590.48.01", names=("libcuda",)),
                            GEN.libs("/usr/lib/x86_64-linux-gnu", "565.57.01", names=("libnvidia-ml",))])
    result, dummy = run(root)
    assert codes(result) == ["multiple_active_versions"]
    assert result["remediation"].startswith("Reinstall one driver version's user-space libraries")
    # no consensus: nothing can be called stale
    assert result["inactive_libraries"] == []


def test_broken_link_and_unversioned_library(tmp_path):
    root = build(tmp_path, [GEN.ubuntu_base(), KERNEL_590, GEN.libs("/usr/lib/x86_64-linux-gnu", "590.48.01"),
                            {"dirs": ["/opt/first"], "links": {"/opt/first/libnvidia-ml.so.1": "/gone/libnvidia-ml.so.590.48.01"},
                             "files": {"/opt/second/libcuda.so.1": "copied file without a version in its name"}}])
    result, warnings = run(root, ld_library_path=["/opt/first", "/opt/second"])
    assert result["consistent"] is True
    assert {"path": "/opt/first/libnvidia-ml.so.1", "library": "libnvidia-ml", "version": None,
            "reason": "broken_symlink"} in result["inactive_libraries"]
    assert result["userspace_versions"]["libcuda"]["version"] is None
    assert any("cannot tell the version of /opt/second/libcuda.so.1" in w for w in warnings)


def test_not_on_loader_path_and_unlinked_copy(tmp_path):
    root = build(tmp_path, [GEN.ubuntu_base(), KERNEL_590, GEN.libs("/usr/lib/x86_64-linux-gnu", "590.48.01"),
                            GEN.libs("/usr/lib/nvidia", "550.54.15", names=("libcuda", "libnvidia-glcore")),
                            {"files": {"/usr/local/lib/libcuda.so.590.48.01": "copy without SONAME link",
                                       "/usr/local/lib/libnvidia-glcore.so.565.57.01": "stale companion",
                                       "/usr/local/nvidia/lib64/libnvidia-glcore.so.590.48.01": "companion off the path"}}])
    result, dummy = run(root)
    reasons = dict((i["path"], i["reason"]) for i in result["inactive_libraries"])
    assert reasons == {
        "/usr/lib/nvidia/libcuda.so.550.54.15": "not_on_loader_path",
        "/usr/lib/nvidia/libnvidia-glcore.so.550.54.15": "not_on_loader_path",
        "/usr/local/lib/libcuda.so.590.48.01": "not_soname_target",
        "/usr/local/lib/libnvidia-glcore.so.565.57.01": "stale_version",
    }
    assert result["consistent"] is True  # untracked companions are reported, not counted


def test_unlinked_matching_copy_earlier_on_the_path(tmp_path):
    root = build(tmp_path, [GEN.ubuntu_base(), KERNEL_590, GEN.libs("/usr/lib/x86_64-linux-gnu", "565.57.01", names=("libcuda",)),
                            {"files": {"/usr/local/lib/libcuda.so.590.48.01": "no SONAME link yet"}}])
    result, dummy = run(root)
    assert codes(result) == ["userspace_version_mismatch", "missing_library"]
    assert result["remediation"].startswith("The matching /usr/local/lib/libcuda.so.590.48.01 comes earlier on the loader "
                                            "path but has no libcuda.so.1 link yet: run ldconfig.")


def test_nvidia_smi_findings_and_warnings(roots):
    root = roots["h200_real"]
    smi = nvidia_smi_record(True, 0, smi_text("classic_590.txt"))
    result, dummy = run(root, smi=smi)
    assert codes(result) == ["nvidia_smi_version_mismatch"]
    assert "nvidia-smi 590.48.01 does not match the loaded kernel module 580.159.04" in result["mismatches"]
    result, warnings = run(root, smi=nvidia_smi_record(True, 9, smi_text("no_driver.txt")))
    assert result["consistent"] is True and any(w.startswith("nvidia-smi failed: NVIDIA-SMI has failed") for w in warnings)


def test_reference_from_nvidia_smi_and_nvml_without_reference(tmp_path):
    root = build(tmp_path, [GEN.ubuntu_base(), GEN.libs("/usr/lib/x86_64-linux-gnu", "590.48.01")])
    result, dummy = run(root, smi=nvidia_smi_record(True, 0, smi_text("classic_590.txt")))
    assert (result["reference_version"], result["reference_source"], result["consistent"]) == ("590.48.01", "nvidia_smi", True)
    result, dummy = run(root, smi=nvidia_smi_record(True, 18, smi_text("mismatch_legacy.txt")))
    assert codes(result) == ["nvml_driver_library_mismatch"] and result["remediation"] is None
    assert "(NVML library unknown, kernel module unknown)" in result["mismatches"][0]


def test_cuda_runtime_warnings(tmp_path, roots):
    result, warnings = run(roots["h200_real"], cuda_runtime="14.0")
    assert result["cuda_runtime_supported"] is None and any("no minimum driver known" in w for w in warnings)
    result, warnings = run(str(tmp_path / "nothing"), cuda_runtime="12.8")
    assert result["cuda_runtime_supported"] is None and any("no driver version was found" in w for w in warnings)
    assert result["cuda_runtime_min_driver"] == "570.26"


def test_result_is_json_serialisable(roots):
    for name, root in roots.items():
        result, dummy = run(root, cuda_runtime="12.8")
        json.dumps(result)


def test_kernel_version_from_proc_when_sys_is_missing(tmp_path):
    root = build(tmp_path, [GEN.ubuntu_base(), GEN.libs("/usr/lib/x86_64-linux-gnu", "550.54.15"),
                            {"files": {"/proc/driver/nvidia/version": GEN.proc_version("NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue")}}])
    result, dummy = run(root)
    assert (result["kernel_module_version"], result["kernel_module_version_source"]) == ("550.54.15", "/proc/driver/nvidia/version")
    assert result["consistent"] is True and result["kernel_modules"] == {"nvidia": "550.54.15"}


def test_gpus_from_nvidia_smi_only_and_information_without_model(tmp_path):
    root = build(tmp_path, [GEN.ubuntu_base(), KERNEL_590, GEN.libs("/usr/lib/x86_64-linux-gnu", "590.48.01"),
                            {"files": {"/proc/driver/nvidia/gpus/0000:01:00.0/information": "IRQ: 5\nno colon here\n"}}])
    smi = nvidia_smi_record(True, 0, smi_text("classic_590.txt"), query_stdout=smi_text("query_rtx_pro_6000.csv"))
    result, dummy = run(root, smi=smi)
    assert [g["source"] for g in result["gpus"]] == ["nvidia-smi"] * 4
    assert result["blackwell"] is True and result["consistent"] is True
    assert result["nvidia_smi"]["gpus"][0]["compute_capability"] == "12.0"


def test_compat_link_outside_the_compat_dir(tmp_path):
    """Someone pointed the distro's libcuda.so.1 at the compat library by hand."""
    root = build(tmp_path, [GEN.ubuntu_base(), KERNEL_590, GEN.libs("/usr/lib/x86_64-linux-gnu", "590.48.01"),
                            GEN.libs("/usr/local/cuda-13.1/compat", "590.44.01", names=("libcuda",)),
                            {"links": {"/usr/lib/x86_64-linux-gnu/libcuda.so.1": "/usr/local/cuda-13.1/compat/libcuda.so.1"}}])
    result, dummy = run(root)
    assert codes(result) == ["cuda_compat_on_loader_path", "multiple_active_versions"]
    assert result["remediation"].startswith("/lib/x86_64-linux-gnu/libcuda.so.1 links to the CUDA forward-compat library "
                                            "/usr/local/cuda-13.1/compat/libcuda.so.590.44.01: remove the link and run ldconfig")


def test_relink_remedies_by_search_path_source(tmp_path):
    # ld.so.conf: /usr/local/lib (libc.conf) comes before the multiarch dir
    root = build(tmp_path, [GEN.ubuntu_base(), KERNEL_590, GEN.libs("/usr/lib/x86_64-linux-gnu", "590.48.01"),
                            GEN.libs("/usr/local/lib", "565.57.01", names=("libcuda",))], name="conf")
    result, dummy = run(root)
    assert "(via /etc/ld.so.conf.d/libc.conf)" in result["mismatches"][0]
    assert result["remediation"].startswith("/usr/local/lib/libcuda.so.565.57.01 shadows the matching /usr/lib/x86_64-linux-gnu/"
                                            "libcuda.so.590.48.01: remove it (or take /usr/local/lib out of /etc/ld.so.conf.d/libc.conf)")
    # default directories only: /lib64 is searched before /lib
    root = build(tmp_path, [KERNEL_590, GEN.libs("/lib64", "565.57.01", names=("libcuda",)),
                            GEN.libs("/lib", "590.48.01", names=("libcuda", "libnvidia-ml"))], name="default")
    result, dummy = run(root)
    assert "default directory /lib64" in result["mismatches"][0]
    assert result["remediation"] == "/lib64/libcuda.so.565.57.01 shadows the matching /lib/libcuda.so.590.48.01: remove it and run ldconfig."


def test_distinct_versions_use_prefix_matching():
    assert nd._distinct(["565.57", "565.57.01", "590.48.01"]) == ["565.57", "590.48.01"]


def test_is_blackwell_unparsable_capability_falls_back_to_name():
    assert nd.is_blackwell("NVIDIA B200", "[N/A]") is True
    assert nd.is_blackwell("NVIDIA H100", "[N/A]") is False
