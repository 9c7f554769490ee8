# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The model revision as a lock: a branch is resolved to a commit once, recorded, and used until changed explicitly.

PRIVATE to the collection. Pure functions. The lock file (default ``<inventory dir>/llmops-lock.yml``, meant to be
committed next to the inventory) records per host the repository, the revision the inventory asked for and the
40-hex commit it resolved to:

    schema: 1
    hosts:
      sglang-ct: {repo_id: Qwen/Qwen3.5-122B-A10B, requested: main, commit: 0123...cdef, locked: 2026-12-01T17:00:00Z}

``resolve()`` decides which commit a host serves: an explicit commit in the inventory wins; else the lock's commit
when the lock was made for the same repository and requested revision; else the commit the Hub resolved the branch
to in this run (``hub_commit``, then written to the lock); else the branch itself, unresolved (make plan, which
contacts no Hub, says so). Each revision gets its own model directory (``<name>@<first 12 hex>``), so a new commit
is a new ``--model-path``: the service goes through the diagnosed restart and rollback, and the old revision stays
until the new one is healthy.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

COMMIT = re.compile(r'^[0-9a-f]{40}$')
SCHEMA = 1
_ENTRY_KEYS = ('repo_id', 'requested', 'commit', 'locked')


def check_lock(data, path):
    """Problems of a parsed lock file: (where, value, rule, fix) tuples, like profile_schema."""
    out = []
    if data is None:
        return out
    if not isinstance(data, dict) or data.get('schema') != SCHEMA or not isinstance(data.get('hosts', {}), dict):
        out.append((path, data if not isinstance(data, dict) else data.get('schema'), 'must be a lock of schema %d '
                    '(schema: 1, hosts: {<host>: {repo_id, requested, commit, locked}})' % SCHEMA,
                    'restore it from version control, or delete it to lock again at the next deploy'))
        return out
    for host, entry in sorted((data.get('hosts') or {}).items()):
        where = '%s: hosts.%s' % (path, host)
        if not isinstance(entry, dict) or set(entry) - set(_ENTRY_KEYS) or not COMMIT.match(str(entry.get('commit'))):
            out.append((where, entry, 'must be {repo_id, requested, commit (40 lower-case hex), locked}',
                        'restore it from version control, or remove the entry to lock again'))
    return out


def directory_name(repo_id, revision):
    """<last part of the repository>@<first 12 hex of the commit> (or @<branch> while it is unresolved)."""
    base = (repo_id or '').split('/')[-1] or 'model'
    if COMMIT.match(revision or ''):
        return '%s@%s' % (base, revision[:12])
    return '%s@%s' % (base, re.sub(r'[^A-Za-z0-9._-]+', '_', revision or 'main'))


def resolve(host, repo_id, requested, lock=None, hub_commit=None, lock_file=None):
    """The revision a host serves: dict(revision, requested, is_commit, source, entry, write, note)."""
    entry = ((lock or {}).get('hosts') or {}).get(host)
    out = dict(requested=requested, entry=entry, write=None, note=None, lock_file=lock_file)
    if COMMIT.match(requested or ''):
        out.update(revision=requested, source='inventory (a commit)')
    elif entry and entry.get('repo_id') == repo_id and entry.get('requested') == requested:
        out.update(revision=entry['commit'], source='lock')
        if hub_commit and hub_commit != entry['commit']:
            out['note'] = ('%s of %s is now %s on the Hub; the lock keeps %s until you change it (delete the entry of '
                           '%s in %s, or pin the commit in llmops_model_revision)'
                           % (requested, repo_id, hub_commit, entry['commit'], host, lock_file))
    elif hub_commit:
        out.update(revision=hub_commit, source='hub (locked now)',
                   write=dict(repo_id=repo_id, requested=requested, commit=hub_commit))
        if entry:
            out['note'] = ('the lock of %s was %s@%s (%s); the inventory now asks for %s@%s: locked again to %s'
                           % (host, entry.get('repo_id'), entry.get('requested'), entry.get('commit'), repo_id,
                              requested, hub_commit))
    else:
        out.update(revision=requested, source='branch (not resolved yet)')
        out['note'] = ('%s of %s is a branch or tag and not locked yet: the deploy resolves it to a commit on the Hub and '
                       'records it in %s (commit that file); until then the model directory is named after the branch'
                       % (requested, repo_id, lock_file or 'the lock file'))
    out['is_commit'] = bool(COMMIT.match(out['revision'] or ''))
    return out
