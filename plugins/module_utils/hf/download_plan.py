# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The plan of a model sync: per file, whether it is fine, must be hashed, downloaded, or dropped.

PRIVATE to the collection. Pure: it compares the Hub listing, the marker and the files on disk, and reads nothing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.hf.marker import same_content


def make_plan(remote, marker, dest_files, staged_files, verify_mode='quick'):
    """Decide per file what to do. Nothing here touches the disk.

    remote:       {path: remote_entry} wanted files (after patterns) with the Hub's size and hash
    marker:       parsed marker of the destination or None
    dest_files:   {path: (size, mtime_ns)} regular files in the destination
    staged_files: {path: (size, mtime_ns)} files left in the staging directory by an interrupted run
    verify_mode:  'quick' trusts a marker entry when size and mtime are unchanged; 'full' re-hashes everything

    Returns {'ok', 'verify', 'verify_staged', 'download', 'remove', 'extra', 'reasons'}; lists are sorted.
    """
    marker_files = (marker or {}).get('files', {})
    plan = {'ok': [], 'verify': [], 'verify_staged': [], 'download': [], 'remove': [], 'extra': [], 'reasons': {}}
    for path in sorted(remote):
        want = remote[path]
        have = dest_files.get(path)
        staged = staged_files.get(path)
        if have is not None and have[0] == want['size']:
            known = marker_files.get(path)
            unchanged = verify_mode == 'quick' and bool(known) and known.get('size') == have[0] and known.get('mtime_ns') == have[1]
            if unchanged and same_content(known, want):
                plan['ok'].append(path)
                continue
            if unchanged:
                # The file is still what was verified, and that is not what the Hub lists now: no need to read it.
                plan['reasons'][path] = 'content changed at the Hub'
                plan['download'].append(path)
                continue
            plan['verify'].append(path)
            if not known:
                plan['reasons'][path] = 'not recorded as verified'
            elif not same_content(known, want):
                plan['reasons'][path] = 'content changed at the Hub'
            elif known.get('mtime_ns') != have[1]:
                plan['reasons'][path] = 'modified since verification (mtime)'
            else:
                plan['reasons'][path] = 'full verification requested'
            continue
        if have is None:
            plan['reasons'][path] = 'missing'
        else:
            plan['reasons'][path] = 'size %d, expected %d' % (have[0], want['size'])
        if staged is not None and staged[0] == want['size']:
            plan['verify_staged'].append(path)
        else:
            plan['download'].append(path)
    for path in sorted(dest_files):
        if path in remote:
            continue
        # Files an earlier verification recorded belong to an older revision or pattern set: drop them.
        # Anything else was put there by someone else and is carried over untouched.
        (plan['remove'] if path in marker_files else plan['extra']).append(path)
    return plan


def plan_summary(plan, remote):
    """Counts and byte totals for reporting."""
    def total(paths):
        return sum(remote[p]['size'] for p in paths if p in remote)
    return {
        'files_ok': len(plan['ok']),
        'files_to_verify': len(plan['verify']) + len(plan['verify_staged']),
        'bytes_to_verify': total(plan['verify']) + total(plan['verify_staged']),
        'files_to_download': len(plan['download']),
        'bytes_to_download': total(plan['download']),
        'files_to_remove': len(plan['remove']),
        'extra_files': len(plan['extra']),
    }
