# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How the dynamic loader would find the NVIDIA driver libraries (libcuda, libnvidia-ml, ...) under a root.

PRIVATE to the collection. The search path is LD_LIBRARY_PATH, then ld.so.conf (what ldconfig puts into
ld.so.cache, ``include`` globs followed), then the architecture's default directories; a SONAME resolves to the
first directory that holds a usable entry. Every driver-versioned library file found on the path or in the usual
side directories (CUDA forward-compat, /usr/local/nvidia) is inventoried too. All reads go through a ``RootFS``.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import posixpath
import re

from ansible_collections.llmops.inference.plugins.module_utils.gpu.versions import DRIVER_VERSION_RE

LIB_VERSION_RE = re.compile(r"\.so\.(\d+\.\d+(?:\.\d+)?)$")
# Driver-versioned library files worth inventorying (libnvidia-egl-wayland.so.1.1.13 and friends carry their own
# small version numbers and are excluded by the 3-digit branch).
DRIVER_LIB_FILE_RE = re.compile(r"^(libcuda|libcudadebugger|libnvidia-[A-Za-z0-9_.-]+?)\.so\.(\d{3,}\.\d+(?:\.\d+)?)$")
COMPAT_DIR_RE = re.compile(r"(?:^|/)cuda[^/]*/compat(?:/|$)")
DEFAULT_LIBRARY_DIRS = {
    "x86_64": ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"),
    "aarch64": ("/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"),
}
GENERIC_LIBRARY_DIRS = ("/lib64", "/usr/lib64", "/lib", "/usr/lib")
# Places where driver libraries live without necessarily being on the loader path (inventory only).
EXTRA_SCAN_PATTERNS = (
    "/usr/local/cuda*/compat",
    "/usr/local/nvidia/lib64",
    "/usr/local/nvidia/lib",
    "/usr/lib/nvidia",
    "/usr/lib64/nvidia",
    "/usr/lib/*-linux-gnu/nvidia/current",
)
MAX_INCLUDE_DEPTH = 16


def library_version(path):
    """Version suffix of a library file name (libcuda.so.590.48.01 -> 590.48.01); None for libcuda.so.1 etc."""
    match = LIB_VERSION_RE.search(posixpath.basename(path or ""))
    if match and DRIVER_VERSION_RE.match(match.group(1)):
        return match.group(1)
    return None


def is_compat_path(path):
    return bool(COMPAT_DIR_RE.search(path or ""))


def parse_ld_so_conf(fs, path="/etc/ld.so.conf", _depth=0, _seen=None):
    """Directories of ld.so.conf in order, following ``include`` globs (relative to the including file).

    Returns a list of (directory, conf_file). ``hwcap`` lines are ignored; legacy ``dir=TYPE`` suffixes stripped.
    """
    seen = set() if _seen is None else _seen
    if _depth > MAX_INCLUDE_DEPTH or path in seen:
        return []
    seen.add(path)
    text = fs.read_text(path)
    if text is None:
        return []
    entries = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        keyword = line.split(None, 1)
        if keyword[0] == "include" and len(keyword) == 2:
            for pattern in keyword[1].split():
                if not pattern.startswith("/"):
                    pattern = posixpath.join(posixpath.dirname(path), pattern)
                for included in fs.glob(pattern):
                    entries.extend(parse_ld_so_conf(fs, included, _depth + 1, seen))
        elif keyword[0] == "hwcap":
            continue
        else:
            for directory in re.split(r"[\s:,]+", line):
                directory = directory.split("=", 1)[0].rstrip("/") or "/"
                if directory.startswith("/"):
                    entries.append((directory, path))
    return entries


def split_library_path(value):
    """ld_library_path option (list and/or colon-separated strings) -> list of absolute directories."""
    if value is None:
        return []
    items = value if isinstance(value, (list, tuple)) else [value]
    dirs = []
    for item in items:
        for directory in str(item).split(":"):
            directory = directory.strip()
            # Empty LD_LIBRARY_PATH elements mean the current directory, which says nothing about a service.
            if directory.startswith("/"):
                dirs.append(directory.rstrip("/") or "/")
    return dirs


def loader_search_path(fs, ld_library_path=None, arch="x86_64"):
    """Directories the dynamic loader searches, in order: LD_LIBRARY_PATH, ld.so.conf (ld.so.cache), defaults.

    Only existing directories are returned, de-duplicated by their canonical path inside the root (like ldconfig
    does by inode: with merged /usr, /lib and /usr/lib are one directory). Each entry: path, resolved, source
    (ld_library_path / ld.so.conf / default) and conf_file (for ld.so.conf entries).
    """
    candidates = [(d, "ld_library_path", None) for d in split_library_path(ld_library_path)]
    candidates += [(d, "ld.so.conf", conf) for d, conf in parse_ld_so_conf(fs)]
    candidates += [(d, "default", None) for d in DEFAULT_LIBRARY_DIRS.get(arch, GENERIC_LIBRARY_DIRS)]
    search, seen = [], set()
    for directory, source, conf in candidates:
        resolved = fs.resolve(directory)
        if resolved is None or resolved in seen or not fs.isdir(directory):
            continue
        seen.add(resolved)
        search.append({"path": directory, "resolved": resolved, "source": source, "conf_file": conf})
    return search


def resolve_soname(fs, search, soname):
    """Resolve a SONAME the way the loader would: the first search directory holding a usable entry wins.

    Returns (active, others): active is a dict (soname_path, path, version, directory, source, conf_file, compat,
    index) or None; others lists the later usable entries and broken links (same keys plus broken).
    """
    active, others = None, []
    for index, entry in enumerate(search):
        candidate = posixpath.join(entry["path"], soname)
        if not fs.lexists(candidate):
            continue
        target = fs.resolve(candidate)
        record = {"soname_path": candidate, "path": target, "version": library_version(target),
                  "directory": entry["path"], "source": entry["source"], "conf_file": entry["conf_file"],
                  "compat": is_compat_path(candidate) or is_compat_path(target), "index": index,
                  "broken": target is None or not fs.exists(target)}
        if record["broken"]:
            others.append(record)
        elif active is None:
            active = record
        else:
            others.append(record)
    return active, others


def library_inventory(fs, search, extra_patterns=EXTRA_SCAN_PATTERNS):
    """Every driver-versioned NVIDIA library file in the search path and the usual side directories.

    Returns a dict keyed by canonical path: library, version, path, loader_index (index of the first search
    directory through which the file is reachable, None if none) and compat.
    """
    scan = [(entry["path"], index) for index, entry in enumerate(search)]
    for pattern in extra_patterns:
        scan.extend((directory, None) for directory in fs.glob(pattern) if fs.isdir(directory))
    inventory, scanned = {}, set()
    for directory, index in scan:
        resolved_dir = fs.resolve(directory)
        if resolved_dir is None or (resolved_dir, index) in scanned:
            continue
        scanned.add((resolved_dir, index))
        for name in fs.listdir(directory):
            if not (name.startswith("libcuda") or name.startswith("libnvidia-")):
                continue
            target = fs.resolve(posixpath.join(resolved_dir, name))
            if target is None or not fs.exists(target):
                continue
            match = DRIVER_LIB_FILE_RE.match(posixpath.basename(target))
            if not match:
                continue
            item = inventory.setdefault(target, {"library": match.group(1), "version": match.group(2), "path": target,
                                                 "loader_index": None, "compat": is_compat_path(target)})
            if index is not None and (item["loader_index"] is None or index < item["loader_index"]):
                item["loader_index"] = index
    return inventory
