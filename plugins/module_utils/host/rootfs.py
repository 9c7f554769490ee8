# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A read-only view of a directory tree as if it were ``/``, with chroot semantics for symlinks.

PRIVATE to the collection. The same code inspects the running system (root ``/``) or a container's root filesystem
from the host: absolute symlink targets are re-rooted under the root and ``..`` never climbs above it, so the host's
own files are never read by mistake.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import fnmatch
import os
import posixpath

MAX_SYMLINKS = 40


class RootFS(object):
    """Read-only view of a directory tree as if it were ``/`` (chroot semantics for symlinks).

    Absolute symlink targets are re-rooted under ``root`` and ``..`` never climbs above it, so inspecting a container
    rootfs from the host never reads the host's own files. Virtual paths are absolute paths inside the root.
    """

    def __init__(self, root="/"):
        self.root = os.path.abspath(root or "/")

    @property
    def is_host_root(self):
        """True when inspecting the running system itself (commands may run, context may be host/container)."""
        return self.root == "/"

    def host_path(self, vpath):
        vpath = posixpath.normpath("/" + (vpath or "").lstrip("/"))
        if self.root == "/":
            return vpath
        return os.path.join(self.root, vpath.lstrip("/")) if vpath != "/" else self.root

    def resolve(self, vpath):
        """Canonical virtual path with every symlink followed inside the root; None on a symlink loop."""
        pending = (vpath or "/").split("/")[::-1]
        resolved, links = [], 0
        while pending:
            part = pending.pop()
            if part in ("", "."):
                continue
            if part == "..":
                if resolved:
                    resolved.pop()
                continue
            candidate = "/" + "/".join(resolved + [part])
            host = self.host_path(candidate)
            if os.path.islink(host):
                links += 1
                if links > MAX_SYMLINKS:
                    return None
                target = os.readlink(host)
                if target.startswith("/"):
                    resolved = []
                pending.extend(target.split("/")[::-1])
            else:
                resolved.append(part)
        return "/" + "/".join(resolved)

    def exists(self, vpath):
        resolved = self.resolve(vpath)
        return resolved is not None and os.path.exists(self.host_path(resolved))

    def lexists(self, vpath):
        parent = self.resolve(posixpath.dirname(vpath))
        if parent is None:
            return False
        return os.path.lexists(self.host_path(posixpath.join(parent, posixpath.basename(vpath))))

    def isdir(self, vpath):
        resolved = self.resolve(vpath)
        return resolved is not None and os.path.isdir(self.host_path(resolved))

    def listdir(self, vpath):
        resolved = self.resolve(vpath)
        if resolved is None:
            return []
        try:
            return sorted(os.listdir(self.host_path(resolved)))
        except OSError:
            return []

    def read_text(self, vpath):
        resolved = self.resolve(vpath)
        if resolved is None:
            return None
        try:
            with open(self.host_path(resolved), "rb") as handle:
                return handle.read().decode("utf-8", "replace")
        except (IOError, OSError):
            return None

    def glob(self, pattern):
        """Sorted virtual paths matching a glob (wildcards in any component; hidden names need an explicit dot)."""
        matches = ["/"]
        for part in [p for p in pattern.split("/") if p]:
            expanded = []
            for base in matches:
                if any(char in part for char in "*?["):
                    for name in self.listdir(base):
                        if (part.startswith(".") or not name.startswith(".")) and fnmatch.fnmatchcase(name, part):
                            expanded.append(posixpath.join(base, name))
                else:
                    expanded.append(posixpath.join(base, part))
            matches = expanded
        return sorted(path for path in matches if self.lexists(path))
