# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia_loader: ld.so.conf, the loader search path, SONAME resolution, library file names."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.gpu import loader as nl
from ansible_collections.llmops.inference.plugins.module_utils.host import rootfs as rf
from nvidia_fixtures import GEN, build


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    return GEN.build(str(tmp_path_factory.mktemp("driver_roots")))


@pytest.mark.parametrize("path, expected", [
    ("/usr/lib/x86_64-linux-gnu/libcuda.so.590.48.01", "590.48.01"), ("libcuda.so.515.76", "515.76"),
    ("libcuda.so.1", None), ("libnvidia-egl-wayland.so.1.1.13", None), ("libcuda.so", None), (None, None),
])
def test_library_version(path, expected):
    assert nl.library_version(path) == expected


def test_compat_path():
    assert nl.is_compat_path("/usr/local/cuda-13.0/compat/libcuda.so.1")
    assert nl.is_compat_path("/usr/local/cuda/compat")
    assert not nl.is_compat_path("/usr/local/cuda-13.0/targets/x86_64-linux/lib")
    assert not nl.is_compat_path("/usr/lib/compat-libs/libcuda.so.1")


def test_parse_ld_so_conf_forms(tmp_path):
    root = build(tmp_path, {"files": {
        "/etc/ld.so.conf": "# comment\ninclude ld.so.conf.d/*.conf\ninclude /etc/extra.conf /etc/missing.conf\n"
                           "hwcap 1 nosegneg\n/opt/a:/opt/b, /opt/c\t/opt/d/\n/opt/e=libc6\nrelative/dir\ninclude\n",
        "/etc/ld.so.conf.d/10-one.conf": "/one  # trailing comment\ninclude /etc/ld.so.conf\n",
        "/etc/ld.so.conf.d/20-two.conf": "/two\n",
        "/etc/ld.so.conf.d/disabled.conf.bak": "/never\n",
        "/etc/extra.conf": "/extra\n"}})
    entries = nl.parse_ld_so_conf(rf.RootFS(root))
    assert [d for d, conf in entries] == ["/one", "/two", "/extra", "/opt/a", "/opt/b", "/opt/c", "/opt/d", "/opt/e"]
    assert entries[0] == ("/one", "/etc/ld.so.conf.d/10-one.conf")
    assert nl.parse_ld_so_conf(rf.RootFS(str(tmp_path / "empty"))) == []


def test_parse_ld_so_conf_include_depth_limit(tmp_path):
    files = dict(("/etc/c%d.conf" % i, "/d%d\ninclude /etc/c%d.conf\n" % (i, i + 1)) for i in range(30))
    files["/etc/ld.so.conf"] = "include /etc/c0.conf\n"
    assert len(nl.parse_ld_so_conf(rf.RootFS(build(tmp_path, {"files": files})))) == nl.MAX_INCLUDE_DEPTH


@pytest.mark.parametrize("value, expected", [
    (None, []), ("/a:/b", ["/a", "/b"]), (["/a:/b", "/c/"], ["/a", "/b", "/c"]), (["", "::", "rel", "/"], ["/"]),
])
def test_split_library_path(value, expected):
    assert nl.split_library_path(value) == expected


def test_loader_search_path_order_and_dedup(roots):
    fs = rf.RootFS(roots["h200_real"])
    search = nl.loader_search_path(fs, ["/usr/local/nvidia/lib", "/nonexistent"])
    paths = [entry["path"] for entry in search]
    assert paths[0] == "/usr/local/nvidia/lib" and search[0]["source"] == "ld_library_path"
    # lib -> lib64 and /lib -> usr/lib collapse like ldconfig does by inode; cuda/cuda-13/cuda-13.0 too.
    assert "/usr/local/nvidia/lib64" not in paths and "/usr/lib" not in paths and "/lib" in paths
    assert paths.count("/usr/local/cuda/targets/x86_64-linux/lib") == 1
    assert "/usr/local/cuda-13/targets/x86_64-linux/lib" not in paths
    assert search[-1] == {"path": "/lib", "resolved": "/usr/lib", "source": "default", "conf_file": None}


def test_loader_search_path_arch_defaults(roots):
    paths = [e["path"] for e in nl.loader_search_path(rf.RootFS(roots["aarch64_gh200"]), arch="aarch64")]
    assert "/lib/aarch64-linux-gnu" in paths
    generic = [e["path"] for e in nl.loader_search_path(rf.RootFS(roots["proprietary_550"]), arch="ppc64le")]
    assert generic == ["/lib64", "/lib"]


def test_resolve_soname_skips_broken_links(tmp_path):
    root = build(tmp_path, [{"links": {"/first/libcuda.so.1": "libcuda.so.999.99.99"}, "dirs": ["/first"]},
                            GEN.libs("/second", "590.48.01")])
    fs = rf.RootFS(root)
    search = [{"path": "/first", "source": "ld_library_path", "conf_file": None},
              {"path": "/second", "source": "default", "conf_file": None}]
    active, others = nl.resolve_soname(fs, search, "libcuda.so.1")
    assert active["version"] == "590.48.01" and active["index"] == 1
    assert [(o["soname_path"], o["broken"]) for o in others] == [("/first/libcuda.so.1", True)]
