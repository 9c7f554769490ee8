# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The diff-mode view of a model directory: one line per file, what is in place against what the Hub lists.

PRIVATE to the collection.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.hf.listing import expected_digest


def describe_entry(entry):
    kind, digest = expected_digest(entry)
    return '%d bytes %s:%s' % (entry['size'], kind or 'no-hash', digest or '-')


def tree_diff(dest, plan, marker, remote, commit):
    """Diff-mode view of the model: one line per file, before (what is in place) and after (what the Hub lists).

    A file in place that is not what the Hub lists shows why (e.g. its size, a hash mismatch found by this run, an
    mtime changed since verification); a missing one has no line before.
    """
    marker_files = (marker or {}).get('files', {})
    before, after = {}, {}
    for path in remote:
        after[path] = describe_entry(remote[path])
        reason = plan['reasons'].get(path)
        if path in plan['ok']:
            before[path] = after[path]
        elif reason and reason != 'missing':
            before[path] = 'present, %s' % reason
    for path in plan['remove']:
        before[path] = describe_entry(marker_files[path])

    def text(revision, entries):
        lines = ['revision %s' % revision] if revision else []
        return '\n'.join(lines + ['%s  %s' % (path, entries[path]) for path in sorted(entries)]) + '\n'

    return {'before': text((marker or {}).get('revision'), before), 'after': text(commit, after),
            'before_header': '%s (in place)' % dest, 'after_header': '%s (Hub listing)' % dest}
