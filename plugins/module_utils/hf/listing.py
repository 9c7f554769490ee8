# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the Hub lists for a model: per-file size and hash, and the file selection by allow/ignore patterns.

PRIVATE to the collection. A listing entry (:func:`remote_entry`) carries the size plus the LFS sha256, or the git
blob sha1 for small files; the patterns follow ``snapshot_download``'s rules exactly.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch


def remote_entry(size, lfs_sha256=None, blob_id=None):
    """What the Hub promises for one file: size plus sha256 (LFS) or the git blob sha1 (small files)."""
    entry = {'size': int(size)}
    if lfs_sha256:
        entry['sha256'] = lfs_sha256.lower()
    elif blob_id:
        entry['git_sha1'] = blob_id.lower()
    return entry


def expected_digest(entry):
    """('sha256', hex) or ('git_sha1', hex) or (None, None) when the listing carries no hash for the file."""
    if entry.get('sha256'):
        return 'sha256', entry['sha256']
    if entry.get('git_sha1'):
        return 'git_sha1', entry['git_sha1']
    return None, None


def normalize_patterns(patterns):
    """Mirror huggingface_hub.utils.filter_repo_objects: '\\' -> '/', a trailing '/' matches the whole folder."""
    if patterns is None:
        return None
    out = []
    for pattern in patterns:
        pattern = pattern.replace('\\', '/')
        if pattern.endswith('/'):
            pattern += '*'
        out.append(pattern)
    return out


def filter_paths(paths, allow_patterns=None, ignore_patterns=None):
    """Same selection as snapshot_download(allow_patterns=..., ignore_patterns=...): fnmatchcase on repo paths."""
    allow = normalize_patterns(allow_patterns) if allow_patterns else None
    ignore = normalize_patterns(ignore_patterns) if ignore_patterns else None
    selected = []
    for path in paths:
        if allow is not None and not any(fnmatch.fnmatchcase(path, p) for p in allow):
            continue
        if ignore is not None and any(fnmatch.fnmatchcase(path, p) for p in ignore):
            continue
        selected.append(path)
    return selected


def missing_lfs_hashes(remote, lfs_paths):
    """LFS files whose listing entry carries no sha256 (cannot be verified end to end)."""
    return sorted(p for p in lfs_paths if p in remote and not remote[p].get('sha256'))
