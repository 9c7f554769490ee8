# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Where a model's files live on disk: the model directory, its work directory next to it, the reserved names.

PRIVATE to the collection. The work directory ``.<name>.hf_model`` (lock, staging per commit, the previous tree
while it is swapped out) is a sibling of the model directory, so every rename stays on one file system.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat

from ansible_collections.llmops.inference.plugins.module_utils.hf.marker import MARKER_NAME

# Written by huggingface_hub inside a local_dir (per-file metadata, locks, partial downloads); never part of a model.
HF_LOCAL_CACHE_DIR = '.cache'


def repo_path_error(path):
    """None when a repo file path is safe to create under the destination (no absolute path, no '..')."""
    if not path or path.startswith('/') or '\x00' in path:
        return 'unsafe file path in repo listing: %r' % (path,)
    parts = path.split('/')
    if any(p in ('', '.', '..') for p in parts):
        return 'unsafe file path in repo listing: %r' % (path,)
    if parts[0] in (MARKER_NAME, HF_LOCAL_CACHE_DIR):
        return 'repo file %r collides with a name the module reserves' % (path,)
    return None


def work_paths(dest, revision):
    """Sibling paths used next to ``dest`` (same file system, so the final rename cannot cross devices)."""
    dest = os.path.abspath(dest)
    parent, name = os.path.split(dest)
    work = os.path.join(parent, '.%s.hf_model' % name)
    return {
        'work': work,
        'lock': os.path.join(work, 'lock'),
        'staging': os.path.join(work, 'partial-%s' % revision) if revision else None,
        'old': os.path.join(work, 'old'),
        'removing': os.path.join(work, 'removing'),
    }


def lstat_regular(path):
    """(size, mtime_ns) of a regular file (symlinks are not followed and count as absent), or None."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return st.st_size, st.st_mtime_ns


def scan_tree(root, skip_top=(MARKER_NAME, HF_LOCAL_CACHE_DIR)):
    """{relative path: (size, mtime_ns)} of the regular files under ``root`` (symlinks and names in skip_top skipped)."""
    found = {}
    if not os.path.isdir(root):
        return found
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir == '.':
            dirnames[:] = [d for d in dirnames if d not in skip_top]
            filenames = [f for f in filenames if f not in skip_top]
        for name in filenames:
            rel = name if rel_dir == '.' else rel_dir + '/' + name
            st = lstat_regular(os.path.join(dirpath, name))
            if st is not None:
                found[rel] = st
    return found
