# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the nvidia_driver / cuda_compat module_utils (parsers, loader resolution, whole inspections)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import json
import os

import pytest

from ansible_collections.llmops.inference.plugins.module_utils import nvidia_driver as nd
from ansible_collections.llmops.inference.plugins.module_utils import cuda_compat as cc

FIXTURES = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures"))
SMI = os.path.join(FIXTURES, "nvidia_smi")


def _generator():
    spec = importlib.util.spec_from_file_location("build_driver_roots", os.path.join(FIXTURES, "build_driver_roots.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _generator()
FACTS = GEN.load_facts()


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    return GEN.build(str(tmp_path_factory.mktemp("driver_roots")))


def smi_text(name):
    with open(os.path.join(SMI, name)) as handle:
        return handle.read()


def captured(command):
    return FACTS["commands"][command]


def build(tmp_path, spec, name="case"):
    return GEN.build_tree(str(tmp_path / name), GEN.merge(*spec) if isinstance(spec, (list, tuple)) else spec)


def run(root, **kwargs):
    return nd.inspect(nd.RootFS(root), **kwargs)


def codes(result):
    return [finding["code"] for finding in result["findings"]]


class HostLikeRootFS(nd.RootFS):
    """A tree that the code treats as the running system (root /) while reading the tree."""

    @property
    def is_host_root(self):
        return True


# ----------------------------------------------------------------------------------------------------------------
# versions


@pytest.mark.parametrize("text, expected", [
    ("590.48.01", (590, 48, 1)), ("515.76", (515, 76)), (" 580.159.04\n", (580, 159, 4)),
    ("13.0", None), ("590", None), ("590.48.01.1", None), ("abc", None), ("", None), (None, None),
])
def test_parse_version(text, expected):
    assert nd.parse_version(text) == expected


@pytest.mark.parametrize("left, right, expected", [
    ("590.48.01", "590.48.01", 0), ("590.48.01", "565.57.01", 1), ("565.57.01", "590.48.01", -1),
    ("570.26", "570.26.0", 0), ("570.124.06", "570.26", 1), ("580.159.04", "580.95.05", 1),
])
def test_compare_versions(left, right, expected):
    assert nd.compare_versions(left, right) == expected


def test_compare_versions_rejects_junk():
    with pytest.raises(ValueError):
        nd.compare_versions("590.48.01", "latest")


@pytest.mark.parametrize("left, right, expected", [
    ("590.48.01", "590.48.01", True), ("590.48.01", "590.48.02", False), ("515.76", "515.76", True),
    ("565.57", "565.57.01", True), ("565.57.01", "565.57", True), ("565.57", "565.58.01", False),
    ("580.159", "580.159.04", True), ("580.159.04", "580.95.05", False), (None, "590.48.01", False),
])
def test_versions_match(left, right, expected):
    assert nd.versions_match(left, right) is expected


@pytest.mark.parametrize("path, expected", [
    ("/usr/lib/x86_64-linux-gnu/libcuda.so.590.48.01", "590.48.01"), ("libcuda.so.515.76", "515.76"),
    ("libcuda.so.1", None), ("libnvidia-egl-wayland.so.1.1.13", None), ("libcuda.so", None), (None, None),
])
def test_library_version(path, expected):
    assert nd.library_version(path) == expected


def test_driver_branch_and_compat_path():
    assert nd.driver_branch("590.48.01") == 590
    assert nd.driver_branch("x") is None
    assert nd.is_compat_path("/usr/local/cuda-13.0/compat/libcuda.so.1")
    assert nd.is_compat_path("/usr/local/cuda/compat")
    assert not nd.is_compat_path("/usr/local/cuda-13.0/targets/x86_64-linux/lib")
    assert not nd.is_compat_path("/usr/lib/compat-libs/libcuda.so.1")


# ----------------------------------------------------------------------------------------------------------------
# kernel side


@pytest.mark.parametrize("text, expected", [
    ("590.48.01\n", "590.48.01"), ("515.76\n", "515.76"), ("", None), (None, None), ("not-a-version\n", None),
])
def test_parse_sys_module_version(text, expected):
    assert nd.parse_sys_module_version(text) == expected


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
    parsed = nd.parse_proc_driver_version(text)
    assert (parsed["version"], parsed["flavor"], parsed["arch"], parsed["gcc"]) == (version, flavor, arch, gcc)
    assert parsed["nvrm"].startswith("NVIDIA")


def test_parse_proc_driver_version_captured_h200():
    parsed = nd.parse_proc_driver_version(FACTS["files"]["/proc/driver/nvidia/version"])
    assert parsed["version"] == "580.159.04"
    assert parsed["flavor"] == "open"
    assert parsed["arch"] == "x86_64"
    assert parsed["gcc"] == "gcc version 15.3.0 (GCC)"


@pytest.mark.parametrize("text", ["", None, "GCC version:  gcc 12\n", "something else entirely\n"])
def test_parse_proc_driver_version_without_banner(text):
    assert nd.parse_proc_driver_version(text) == {"version": None, "flavor": None, "arch": None, "nvrm": None, "gcc": None}


def test_parse_proc_driver_version_without_version_or_flavor():
    parsed = nd.parse_proc_driver_version("NVRM version: something unexpected\n")
    assert parsed["version"] is None and parsed["flavor"] is None and parsed["nvrm"] == "something unexpected"


# ----------------------------------------------------------------------------------------------------------------
# nvidia-smi


def test_parse_nvidia_smi_captured_banner():
    out = captured("nvidia-smi")
    parsed = nd.parse_nvidia_smi(out["stdout"], out["stderr"], out["rc"])
    assert parsed == {"smi_version": "580.159.04", "driver_version": "580.159.04", "cuda_version": "13.0",
                      "nvml_version": None, "format": "classic", "error": None, "error_kind": None}


def test_parse_nvidia_smi_captured_version():
    out = captured("nvidia-smi --version")
    parsed = nd.parse_nvidia_smi(out["stdout"], out["stderr"], out["rc"])
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
    parsed = nd.parse_nvidia_smi(smi_text(name), "", rc)
    for key, value in expected.items():
        assert parsed[key] == value, key


def test_parse_nvidia_smi_mismatch_on_stderr():
    parsed = nd.parse_nvidia_smi("", smi_text("mismatch_565.txt"), 18)
    assert parsed["error_kind"] == "driver_library_mismatch" and parsed["nvml_version"] == "565.57"


def test_parse_nvidia_smi_kmd_version_form():
    # Shape of --version on R610+ is unconfirmed; accept KMD/CUDA UMD names there too.
    parsed = nd.parse_nvidia_smi("NVIDIA-SMI version  : 610.43.02\nNVML version        : 610.43\n"
                                 "KMD version         : 610.43.02\nCUDA UMD Version    : 13.3\n")
    assert (parsed["driver_version"], parsed["cuda_version"], parsed["format"]) == ("610.43.02", "13.3", "version")


@pytest.mark.parametrize("stdout, rc, error", [
    ("", 1, "nvidia-smi exited with rc 1"),
    ("Segmentation fault\n", 139, "Segmentation fault"),
    ("unexpected text\n", 0, "unexpected text"),
])
def test_parse_nvidia_smi_unknown_failures(stdout, rc, error):
    parsed = nd.parse_nvidia_smi(stdout, "", rc)
    assert parsed["error_kind"] == "unknown" and parsed["error"] == error


def test_parse_gpu_query():
    gpus = nd.parse_gpu_query(smi_text("query_rtx_pro_6000.csv") + "\nNVIDIA A100-SXM4-80GB, [N/A]\n")
    assert gpus[0] == {"name": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "compute_capability": "12.0"}
    assert len(gpus) == 5
    assert gpus[4] == {"name": "NVIDIA A100-SXM4-80GB", "compute_capability": None}
    assert nd.parse_gpu_query("name, compute_cap\nNVIDIA H200, 9.0\n") == [{"name": "NVIDIA H200", "compute_capability": "9.0"}]
    assert nd.parse_gpu_query("no commas at all\n") == []
    assert nd.parse_gpu_query(None) == []


def test_nvidia_smi_record():
    skipped = nd.nvidia_smi_record(False, skipped_reason="root is not /")
    assert skipped["ran"] is False and skipped["skipped_reason"] == "root is not /" and skipped["gpus"] == []
    ran = nd.nvidia_smi_record(True, 0, smi_text("classic_590.txt"), "", query_stdout="NVIDIA H200, 9.0\n", command="nvidia-smi")
    assert ran["format"] == "classic" and ran["gpus"] == [{"name": "NVIDIA H200", "compute_capability": "9.0"}]


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
# CUDA table (cuda_compat)


@pytest.mark.parametrize("text, expected", [
    ("12.8", (12, 8, 0)), ("12.8u1", (12, 8, 1)), ("12.8U1", (12, 8, 1)), ("12.8 Update 1", (12, 8, 1)),
    ("12.8.1", (12, 8, 1)), ("13.1u1", (13, 1, 1)), ("cu128", (12, 8, 0)), ("cu130", (13, 0, 0)), ("cu118", (11, 8, 0)),
    ("12", None), ("latest", None), (None, None), (12.8, (12, 8, 0)),
])
def test_parse_cuda_version(text, expected):
    assert cc.parse_cuda_version(text) == expected


@pytest.mark.parametrize("runtime, cuda, min_driver, source", [
    ("12.8", "12.8", "570.26", "toolkit_table"),
    ("12.8u1", "12.8u1", "570.124.06", "toolkit_table"),
    ("12.8.1", "12.8u1", "570.124.06", "toolkit_table"),
    ("13.0", "13.0", "580.65.06", "toolkit_table"),
    ("13.0.2", "13.0u2", "580.95.05", "toolkit_table"),
    ("13.1u1", "13.1u1", "590.48.01", "toolkit_table"),
    ("13.2 Update 2", "13.2u2", "595.71.05", "toolkit_table"),
    ("cu128", "12.8", "570.26", "toolkit_table"),
    ("12.8u2", "12.8u2", "570.124.06", "toolkit_table_nearest_update"),
    ("12.6u1", "12.6u1", "560.28.03", "toolkit_table_nearest_update"),
    ("12.3", "12.3", "525", "minor_version_compatibility"),
    ("11.8", "11.8", "450", "minor_version_compatibility"),
    ("14.0", "14.0", None, None),
    ("junk", None, None, None),
])
def test_cuda_min_driver(runtime, cuda, min_driver, source):
    assert cc.cuda_min_driver(runtime) == {"cuda": cuda, "min_driver": min_driver, "source": source}


def test_cuda_table_is_monotonic():
    """A newer CUDA release never needs an older driver (guards typos in the data table)."""
    ordered = [cc.CUDA_TOOLKIT_MIN_DRIVER[key] for key in sorted(cc.CUDA_TOOLKIT_MIN_DRIVER)]
    for older, newer in zip(ordered, ordered[1:]):
        assert nd.compare_versions(older, newer) < 0, (older, newer)
    branches = [branch for branch, dummy in cc.DRIVER_BRANCH_CUDA_VERSION]
    assert branches == sorted(branches, reverse=True)
    for key, min_driver in cc.CUDA_TOOLKIT_MIN_DRIVER.items():
        assert cc.cuda_version_for_driver_branch(nd.driver_branch(min_driver)) == "%d.%d" % key[:2]


@pytest.mark.parametrize("branch, expected", [(580, "13.0"), (590, "13.1"), (565, "12.7"), (515, "11.7"), (999, "13.3"), (400, None)])
def test_cuda_version_for_driver_branch(branch, expected):
    assert cc.cuda_version_for_driver_branch(branch) == expected


@pytest.mark.parametrize("driver, expected", [((580, 159, 4), "13.0u2"), ((565, 57, 1), "12.6u3"), ((570, 26), "12.8"), ((400,), None)])
def test_newest_cuda_for_driver(driver, expected):
    assert cc.newest_cuda_for_driver(driver) == expected


# ----------------------------------------------------------------------------------------------------------------
# RootFS


def test_rootfs_reroots_absolute_links(tmp_path):
    root = build(tmp_path, {"files": {"/usr/lib/libreal.so.1": "x"},
                            "links": {"/usr/lib/abs.so": "/usr/lib/libreal.so.1", "/etc/escape": "/etc/passwd",
                                      "/a/b/up": "../../../../../usr/lib/libreal.so.1"}})
    fs = nd.RootFS(root)
    assert fs.resolve("/usr/lib/abs.so") == "/usr/lib/libreal.so.1"
    assert fs.read_text("/usr/lib/abs.so") == "x"
    # Never the controller's /etc/passwd, and ".." stops at the root.
    assert fs.resolve("/etc/escape") == "/etc/passwd"
    assert not fs.exists("/etc/escape") and fs.read_text("/etc/escape") is None
    assert fs.resolve("/a/b/up") == "/usr/lib/libreal.so.1" and fs.exists("/a/b/up")
    assert fs.lexists("/etc/escape") and not fs.lexists("/etc/nothing")


def test_rootfs_symlink_loop(tmp_path):
    root = build(tmp_path, {"links": {"/loop/a": "b", "/loop/b": "a"}})
    fs = nd.RootFS(root)
    assert fs.resolve("/loop/a") is None
    assert not fs.exists("/loop/a") and not fs.isdir("/loop/a") and not fs.lexists("/loop/a/x")
    assert fs.listdir("/loop/a") == [] and fs.read_text("/loop/a") is None
    assert fs.listdir("/does/not/exist") == []


def test_rootfs_glob(tmp_path):
    root = build(tmp_path, {"files": {"/d/x.conf": "", "/d/.hidden.conf": "", "/d/y.txt": "", "/e1/c/z": "", "/e2/c/z": ""},
                            "links": {"/e3": "/e1"}})
    fs = nd.RootFS(root)
    assert fs.glob("/d/*.conf") == ["/d/x.conf"]
    assert fs.glob("/d/.*.conf") == ["/d/.hidden.conf"]
    assert fs.glob("/e*/c/z") == ["/e1/c/z", "/e2/c/z", "/e3/c/z"]
    assert fs.glob("/d/nothing") == []


def test_rootfs_on_slash_is_the_real_filesystem(tmp_path):
    (tmp_path / "f").write_text("y")
    (tmp_path / "l").symlink_to(tmp_path / "f")
    fs = nd.RootFS("/")
    assert fs.is_host_root and fs.host_path(str(tmp_path / "l")) == str(tmp_path / "l")
    assert fs.resolve(str(tmp_path / "l")) == os.path.realpath(str(tmp_path / "f"))
    assert not nd.RootFS(str(tmp_path)).is_host_root


# ----------------------------------------------------------------------------------------------------------------
# loader search path


def test_parse_ld_so_conf_forms(tmp_path):
    root = build(tmp_path, {"files": {
        "/etc/ld.so.conf": "# comment\ninclude ld.so.conf.d/*.conf\ninclude /etc/extra.conf /etc/missing.conf\n"
                           "hwcap 1 nosegneg\n/opt/a:/opt/b, /opt/c\t/opt/d/\n/opt/e=libc6\nrelative/dir\ninclude\n",
        "/etc/ld.so.conf.d/10-one.conf": "/one  # trailing comment\ninclude /etc/ld.so.conf\n",
        "/etc/ld.so.conf.d/20-two.conf": "/two\n",
        "/etc/ld.so.conf.d/disabled.conf.bak": "/never\n",
        "/etc/extra.conf": "/extra\n"}})
    entries = nd.parse_ld_so_conf(nd.RootFS(root))
    assert [d for d, conf in entries] == ["/one", "/two", "/extra", "/opt/a", "/opt/b", "/opt/c", "/opt/d", "/opt/e"]
    assert entries[0] == ("/one", "/etc/ld.so.conf.d/10-one.conf")
    assert nd.parse_ld_so_conf(nd.RootFS(str(tmp_path / "empty"))) == []


def test_parse_ld_so_conf_include_depth_limit(tmp_path):
    files = dict(("/etc/c%d.conf" % i, "/d%d\ninclude /etc/c%d.conf\n" % (i, i + 1)) for i in range(30))
    files["/etc/ld.so.conf"] = "include /etc/c0.conf\n"
    assert len(nd.parse_ld_so_conf(nd.RootFS(build(tmp_path, {"files": files})))) == nd.MAX_INCLUDE_DEPTH


@pytest.mark.parametrize("value, expected", [
    (None, []), ("/a:/b", ["/a", "/b"]), (["/a:/b", "/c/"], ["/a", "/b", "/c"]), (["", "::", "rel", "/"], ["/"]),
])
def test_split_library_path(value, expected):
    assert nd.split_library_path(value) == expected


def test_loader_search_path_order_and_dedup(roots):
    fs = nd.RootFS(roots["h200_real"])
    search = nd.loader_search_path(fs, ["/usr/local/nvidia/lib", "/nonexistent"])
    paths = [entry["path"] for entry in search]
    assert paths[0] == "/usr/local/nvidia/lib" and search[0]["source"] == "ld_library_path"
    # lib -> lib64 and /lib -> usr/lib collapse like ldconfig does by inode; cuda/cuda-13/cuda-13.0 too.
    assert "/usr/local/nvidia/lib64" not in paths and "/usr/lib" not in paths and "/lib" in paths
    assert paths.count("/usr/local/cuda/targets/x86_64-linux/lib") == 1
    assert "/usr/local/cuda-13/targets/x86_64-linux/lib" not in paths
    assert search[-1] == {"path": "/lib", "resolved": "/usr/lib", "source": "default", "conf_file": None}


def test_loader_search_path_arch_defaults(roots):
    paths = [e["path"] for e in nd.loader_search_path(nd.RootFS(roots["aarch64_gh200"]), arch="aarch64")]
    assert "/lib/aarch64-linux-gnu" in paths
    generic = [e["path"] for e in nd.loader_search_path(nd.RootFS(roots["proprietary_550"]), arch="ppc64le")]
    assert generic == ["/lib64", "/lib"]


def test_resolve_soname_skips_broken_links(tmp_path):
    root = build(tmp_path, [{"links": {"/first/libcuda.so.1": "libcuda.so.999.99.99"}, "dirs": ["/first"]},
                            GEN.libs("/second", "590.48.01")])
    fs = nd.RootFS(root)
    search = [{"path": "/first", "source": "ld_library_path", "conf_file": None},
              {"path": "/second", "source": "default", "conf_file": None}]
    active, others = nd.resolve_soname(fs, search, "libcuda.so.1")
    assert active["version"] == "590.48.01" and active["index"] == 1
    assert [(o["soname_path"], o["broken"]) for o in others] == [("/first/libcuda.so.1", True)]


# ----------------------------------------------------------------------------------------------------------------
# detection helpers


@pytest.mark.parametrize("spec, expected", [
    ({"files": {"/.dockerenv": ""}}, "container"),
    ({"files": {"/run/.containerenv": ""}}, "container"),
    ({"files": {"/run/systemd/container": "lxc\n"}}, "container"),
    ({"files": {"/proc/1/environ": "container=lxc\x00PATH=/bin"}}, "container"),
    ({"files": {"/proc/1/environ": "PATH=/bin"}}, "host"),
])
def test_detect_context(tmp_path, spec, expected):
    assert nd.detect_context(HostLikeRootFS(build(tmp_path, spec))) == expected
    assert nd.detect_context(nd.RootFS(str(tmp_path / "case"))) == "rootfs"


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
    fs = HostLikeRootFS(root) if host else nd.RootFS(root)
    assert nd.detect_arch(fs, kernel_arch, machine) == expected


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
    smi = nd.nvidia_smi_record(True, banner["rc"], banner["stdout"], banner["stderr"],
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
    smi = nd.nvidia_smi_record(True, 18, smi_text("mismatch_565.txt"), "", command="nvidia-smi")
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
    smi = nd.nvidia_smi_record(True, 18, "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 595.58\n")
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
    smi = nd.nvidia_smi_record(True, 0, smi_text("classic_590.txt"))
    result, dummy = run(root, smi=smi)
    assert codes(result) == ["nvidia_smi_version_mismatch"]
    assert "nvidia-smi 590.48.01 does not match the loaded kernel module 580.159.04" in result["mismatches"]
    result, warnings = run(root, smi=nd.nvidia_smi_record(True, 9, smi_text("no_driver.txt")))
    assert result["consistent"] is True and any(w.startswith("nvidia-smi failed: NVIDIA-SMI has failed") for w in warnings)


def test_reference_from_nvidia_smi_and_nvml_without_reference(tmp_path):
    root = build(tmp_path, [GEN.ubuntu_base(), GEN.libs("/usr/lib/x86_64-linux-gnu", "590.48.01")])
    result, dummy = run(root, smi=nd.nvidia_smi_record(True, 0, smi_text("classic_590.txt")))
    assert (result["reference_version"], result["reference_source"], result["consistent"]) == ("590.48.01", "nvidia_smi", True)
    result, dummy = run(root, smi=nd.nvidia_smi_record(True, 18, smi_text("mismatch_legacy.txt")))
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
    smi = nd.nvidia_smi_record(True, 0, smi_text("classic_590.txt"), query_stdout=smi_text("query_rtx_pro_6000.csv"))
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
