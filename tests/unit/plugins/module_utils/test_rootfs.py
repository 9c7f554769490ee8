# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rootfs: a directory tree read as if it were /, symlinks re-rooted inside it."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

from ansible_collections.llmops.inference.plugins.module_utils.host import rootfs as rf
from nvidia_fixtures import build


def test_rootfs_reroots_absolute_links(tmp_path):
    root = build(tmp_path, {"files": {"/usr/lib/libreal.so.1": "x"},
                            "links": {"/usr/lib/abs.so": "/usr/lib/libreal.so.1", "/etc/escape": "/etc/passwd",
                                      "/a/b/up": "../../../../../usr/lib/libreal.so.1"}})
    fs = rf.RootFS(root)
    assert fs.resolve("/usr/lib/abs.so") == "/usr/lib/libreal.so.1"
    assert fs.read_text("/usr/lib/abs.so") == "x"
    # Never the controller's /etc/passwd, and ".." stops at the root.
    assert fs.resolve("/etc/escape") == "/etc/passwd"
    assert not fs.exists("/etc/escape") and fs.read_text("/etc/escape") is None
    assert fs.resolve("/a/b/up") == "/usr/lib/libreal.so.1" and fs.exists("/a/b/up")
    assert fs.lexists("/etc/escape") and not fs.lexists("/etc/nothing")


def test_rootfs_symlink_loop(tmp_path):
    root = build(tmp_path, {"links": {"/loop/a": "b", "/loop/b": "a"}})
    fs = rf.RootFS(root)
    assert fs.resolve("/loop/a") is None
    assert not fs.exists("/loop/a") and not fs.isdir("/loop/a") and not fs.lexists("/loop/a/x")
    assert fs.listdir("/loop/a") == [] and fs.read_text("/loop/a") is None
    assert fs.listdir("/does/not/exist") == []


def test_rootfs_glob(tmp_path):
    root = build(tmp_path, {"files": {"/d/x.conf": "", "/d/.hidden.conf": "", "/d/y.txt": "", "/e1/c/z": "", "/e2/c/z": ""},
                            "links": {"/e3": "/e1"}})
    fs = rf.RootFS(root)
    assert fs.glob("/d/*.conf") == ["/d/x.conf"]
    assert fs.glob("/d/.*.conf") == ["/d/.hidden.conf"]
    assert fs.glob("/e*/c/z") == ["/e1/c/z", "/e2/c/z", "/e3/c/z"]
    assert fs.glob("/d/nothing") == []


def test_rootfs_on_slash_is_the_real_filesystem(tmp_path):
    (tmp_path / "f").write_text("y")
    (tmp_path / "l").symlink_to(tmp_path / "f")
    fs = rf.RootFS("/")
    assert fs.is_host_root and fs.host_path(str(tmp_path / "l")) == str(tmp_path / "l")
    assert fs.resolve(str(tmp_path / "l")) == os.path.realpath(str(tmp_path / "f"))
    assert not rf.RootFS(str(tmp_path)).is_host_root
