# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The boundary to the ``huggingface_hub`` client: its environment, its import, and its errors as plain messages.

PRIVATE to the collection. The client reads most settings at import time, so :func:`import_hf` sets the
environment first; the token goes into this process's environment only, never onto a command line or into a file.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import traceback


class HubError(Exception):
    """A Hub/mirror answer turned into an operator-facing message."""


class MissingHubClient(Exception):
    """``huggingface_hub`` cannot be imported by this interpreter; ``traceback`` is the import error's."""

    def __init__(self, traceback_text):
        super(MissingHubClient, self).__init__('huggingface_hub cannot be imported')
        self.traceback = traceback_text


def hf_env(p):
    """Client settings for this process only (huggingface_hub reads them at import time)."""
    env = {'HF_HUB_DISABLE_TELEMETRY': '1', 'HF_HUB_DISABLE_PROGRESS_BARS': '1',
           'HF_HUB_ETAG_TIMEOUT': str(p['timeout']), 'HF_HUB_DOWNLOAD_TIMEOUT': str(p['timeout'])}
    if p['high_performance']:
        env['HF_XET_HIGH_PERFORMANCE'] = '1'
    if p['token']:
        # Only this process and its threads see it: never argv, never a file.
        env['HF_TOKEN'] = p['token']
    return env


def import_hf(env):
    """Import huggingface_hub after setting its environment (it reads most settings at import time).

    Returns the pieces the collection uses; raises :class:`MissingHubClient` when the client is not installed.
    """
    os.environ.update(env)
    try:
        import huggingface_hub  # noqa: F401 pylint: disable=unused-import
        from huggingface_hub import HfApi, hf_hub_download
        from huggingface_hub import errors as hf_errors
    except ImportError:
        raise MissingHubClient(traceback.format_exc())
    return {'HfApi': HfApi, 'hf_hub_download': hf_hub_download, 'errors': hf_errors,
            'version': getattr(huggingface_hub, '__version__', None)}


def hub_message(hf, exc, repo_id, revision, endpoint, what):
    """Operator-facing text for a client exception (the token is never part of it: AnsibleModule scrubs no_log values)."""
    errs = hf['errors']
    first = (str(exc).strip().splitlines() or [''])[0]
    where = endpoint or 'the Hub'
    name = type(exc).__name__
    if isinstance(exc, getattr(errs, 'GatedRepoError', ())):
        return ('%s: %s is gated at %s: accept its license on the Hub with the account of hf_model_token (%s)'
                % (what, repo_id, where, first))
    if isinstance(exc, getattr(errs, 'RevisionNotFoundError', ())):
        return '%s: revision %r not found in %s at %s (%s)' % (what, revision, repo_id, where, first)
    if isinstance(exc, getattr(errs, 'RepositoryNotFoundError', ())):
        return ('%s: %s at revision %r not found or not accessible at %s (%s). A private repo needs hf_model_token;'
                ' a mirror such as olah answers 401 for any missing repo, revision or file.'
                % (what, repo_id, revision, where, first))
    if isinstance(exc, getattr(errs, 'RemoteEntryNotFoundError', ())) or isinstance(exc, getattr(errs, 'EntryNotFoundError', ())):
        return '%s: %s has no revision or file %r at %s (%s)' % (what, repo_id, revision, where, first)
    return '%s: %s (%s) talking to %s about %s@%s' % (what, name, first, where, repo_id, revision)
