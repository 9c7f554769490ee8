# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The verification marker: a JSON file in the model directory that records the last verified state.

PRIVATE to the collection. It holds the repo, the commit, the patterns and, per file, the Hub's size and hash plus
the size and mtime seen right after hashing, so a re-run can trust unchanged files without reading them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import time

from ansible_collections.llmops.inference.plugins.module_utils.hf.listing import expected_digest

MARKER_NAME = '.llmops-hf-model.json'
MARKER_FORMAT = 1


def same_content(marker_entry, remote):
    """True when a marker entry vouches for exactly the content the Hub lists (size and hash)."""
    if not marker_entry or marker_entry.get('size') != remote['size']:
        return False
    kind, digest = expected_digest(remote)
    return kind is not None and marker_entry.get(kind) == digest


def parse_marker(text):
    """The marker as a dict, or None when absent, unreadable or of another format (then everything is re-hashed)."""
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get('format') != MARKER_FORMAT or not isinstance(data.get('files'), dict):
        return None
    return data


def read_marker(path):
    """The parsed marker at ``path``; None when it is absent, unreadable or not a marker."""
    try:
        with open(path) as handle:
            return parse_marker(handle.read())
    except (IOError, OSError):
        return None


def build_marker(repo_id, revision, requested_revision, endpoint, allow_patterns, ignore_patterns, remote, stats,
                 verified_at=None):
    """Marker content: what was verified (Hub listing) and the size/mtime seen right after verification.

    ``remote``: {path: remote_entry}; ``stats``: {path: (size, mtime_ns)}.
    """
    files = {}
    for path in sorted(remote):
        entry = dict(remote[path])
        size, mtime_ns = stats[path]
        entry['size'] = size
        entry['mtime_ns'] = mtime_ns
        files[path] = entry
    return {
        'format': MARKER_FORMAT,
        'repo_id': repo_id,
        'revision': revision,
        'requested_revision': requested_revision,
        'endpoint': endpoint,
        'allow_patterns': allow_patterns,
        'ignore_patterns': ignore_patterns,
        'verified_at': verified_at or time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
        'files': files,
    }


def marker_json(marker):
    return json.dumps(marker, indent=1, sort_keys=True) + '\n'


# Provenance, not state: a re-run that only asks differently (a sha instead of the tag it resolves to, another mirror)
# must not rewrite the marker or report a change.
MARKER_PROVENANCE = ('verified_at', 'requested_revision', 'endpoint')


def marker_equivalent(a, b):
    """Markers that describe the same verified state (same repo, commit, patterns, files, sizes, hashes, mtimes)."""
    if a is None or b is None:
        return False
    strip = dict((k, v) for k, v in a.items() if k not in MARKER_PROVENANCE)
    other = dict((k, v) for k, v in b.items() if k not in MARKER_PROVENANCE)
    return strip == other


def marker_covers(marker, repo_id, revision, allow_patterns, ignore_patterns):
    """True when a marker recorded this exact request, so a pinned re-run can plan without asking the Hub."""
    return (marker is not None and marker.get('repo_id') == repo_id and marker.get('revision') == revision
            and (marker.get('allow_patterns') or None) == (allow_patterns or None)
            and (marker.get('ignore_patterns') or None) == (ignore_patterns or None))


def remote_from_marker(marker):
    return dict((path, dict((k, v) for k, v in entry.items() if k != 'mtime_ns'))
                for path, entry in marker['files'].items())
