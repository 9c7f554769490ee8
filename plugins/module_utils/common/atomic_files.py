# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Putting files and directory trees in place durably and atomically, and removing them.

PRIVATE to the collection. A file is written to a temporary name, fsynced and renamed over the target; a directory
tree is swapped in with one ``renameat2(RENAME_EXCHANGE)`` where the kernel allows it (two renames otherwise).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import shutil


def write_file_atomic(path, text, mode, uid=-1, gid=-1):
    """Write ``text`` to ``path`` through a fsynced temporary file renamed over it (mode and owner set first)."""
    tmp = '%s.tmp-%d' % (path, os.getpid())
    with open(tmp, 'w') as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(tmp, mode)
    if uid != -1 or gid != -1:
        os.chown(tmp, uid, gid)
    os.rename(tmp, path)


def fsync_paths(paths):
    """Flush the content of these files to disk."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def fsync_dir(path):
    """Flush a directory (its entries: renames and new names in it) to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def link_or_copy(src, dst):
    """Hard-link ``src`` to ``dst`` (creating the parents), copying where a link is impossible; 'link' or 'copy'."""
    parent = os.path.dirname(dst)
    if not os.path.isdir(parent):
        os.makedirs(parent)
    try:
        os.link(src, dst)
        return 'link'
    except OSError:
        shutil.copy2(src, dst)
        return 'copy'


def remove_path(path):
    """Remove a file, a symlink or a whole directory tree; nothing when ``path`` does not exist."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


RENAME_EXCHANGE = 2


def exchange_dirs(a, b):
    """Swap two directory entries atomically with renameat2(RENAME_EXCHANGE). False when not supported.

    Readers see either the old or the new tree under the name, never a missing directory.
    """
    try:
        import ctypes
        import ctypes.util
        libc = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6', use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError, ImportError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd = -100
    if renameat2(at_fdcwd, a.encode(), at_fdcwd, b.encode(), RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), a)


def replace_dir(new, dest, old):
    """Put directory ``new`` at ``dest``; the previous ``dest`` (if any) ends up at ``old`` for the caller to delete.

    Atomic exchange when the kernel and file system allow it, else two renames (a window of a few microseconds in
    which ``dest`` does not exist). Returns 'exchange', 'rename' or 'new'.
    """
    if not os.path.lexists(dest):
        os.rename(new, dest)
        return 'new'
    if os.path.lexists(old):
        raise OSError(errno.EEXIST, 'leftover directory, remove it first', old)
    if exchange_dirs(new, dest):
        os.rename(new, old)  # ``new`` now names the previous tree
        return 'exchange'
    os.rename(dest, old)
    os.rename(new, dest)
    return 'rename'
