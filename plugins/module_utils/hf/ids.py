# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Hugging Face Hub identifiers: model repo ids, revisions (branch, tag, ``refs/pr/N``) and commit shas.

PRIVATE to the collection. Checked before anything talks to the Hub, so a typo fails with a precise message.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

COMMIT_SHA_RE = re.compile(r'^[0-9a-f]{40}$')
# huggingface_hub.utils._validators.REPO_ID_REGEX, ASCII only.
_REPO_PART = r'[A-Za-z0-9_.\-]{1,96}'
REPO_ID_RE = re.compile(r'^(%s/)?%s$' % (_REPO_PART, _REPO_PART))
# Branches, tags and refs/pr/N; no whitespace, no "..", no control characters (git check-ref-format subset).
REVISION_RE = re.compile(r'^[A-Za-z0-9._/\-]{1,255}$')


def repo_id_error(repo_id):
    """None when ``repo_id`` is a valid Hub model id (``org/name`` or legacy ``name``), else the reason."""
    if not isinstance(repo_id, str) or not REPO_ID_RE.match(repo_id):
        return ("repo id %r is not valid: use 'org/name' with letters, digits, '-', '_' or '.' (at most 96 each)"
                % (repo_id,))
    for part in repo_id.split('/'):
        if part[0] in '-.' or part[-1] in '-.':
            return "repo id %r: a name cannot start or end with '-' or '.'" % repo_id
    if '--' in repo_id or '..' in repo_id:
        return "repo id %r: '--' and '..' are not allowed" % repo_id
    if repo_id.endswith('.git'):
        return "repo id %r: cannot end with '.git'" % repo_id
    return None


def is_commit_sha(revision):
    return bool(revision) and bool(COMMIT_SHA_RE.match(revision))


def revision_error(revision):
    """None when ``revision`` can be a commit sha, branch, tag or ``refs/pr/N``, else the reason."""
    if not isinstance(revision, str) or not REVISION_RE.match(revision):
        return "revision %r is not valid: use a 40-hex commit sha, a branch or a tag name" % (revision,)
    if '..' in revision or revision.startswith('/') or revision.endswith('/') or '//' in revision:
        return "revision %r is not a valid git ref name" % revision
    if re.match(r'^[0-9a-fA-F]{40}$', revision) and not is_commit_sha(revision):
        return "revision %r: write commit shas in lower case, as the Hub returns them" % revision
    return None
