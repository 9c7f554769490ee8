# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The file set one run must put in place: the Hub's listing of the commit, selected, checked; or the marker's.

PRIVATE to the collection. A pinned commit that the marker already recorded for the same patterns needs no Hub
access at all; anything else is listed through the tree API and checked (safe paths, sha256 for every LFS file,
complete safetensors indexes) before a single byte is written.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import shutil
import tempfile

from ansible_collections.llmops.inference.plugins.module_utils.hf.hub import HubError, hub_message
from ansible_collections.llmops.inference.plugins.module_utils.hf.ids import is_commit_sha
from ansible_collections.llmops.inference.plugins.module_utils.hf.layout import repo_path_error
from ansible_collections.llmops.inference.plugins.module_utils.hf.listing import (
    filter_paths,
    missing_lfs_hashes,
    remote_entry,
)
from ansible_collections.llmops.inference.plugins.module_utils.hf.marker import marker_covers, remote_from_marker
from ansible_collections.llmops.inference.plugins.module_utils.model.safetensors_files import index_missing_shards


def resolve_remote(hf, p, marker):
    """(commit, {path: remote_entry}, source) for the request in the module parameters ``p``.

    ``source`` is 'marker' (a pinned re-run the marker covers) or 'hub'. ``hf()`` returns the imported client and
    is called only when the Hub has to be asked. Raises HubError for every refusal.
    """
    repo_id = p['repo_id']
    allow, ignore = p['allow_patterns'] or None, p['ignore_patterns'] or None
    if is_commit_sha(p['revision']) and p['verify'] == 'quick' and marker_covers(marker, repo_id, p['revision'], allow, ignore):
        # The marker holds the Hub's listing of this immutable commit: re-checking the files needs no network.
        return p['revision'], remote_from_marker(marker), 'marker'
    commit, listing, lfs_paths = list_remote(hf(), p)
    remote = dict((path, listing[path]) for path in filter_paths(sorted(listing), allow, ignore))
    if not remote:
        raise HubError('no files of %s@%s match allow_patterns=%s ignore_patterns=%s' % (repo_id, commit, allow, ignore))
    for path in remote:
        bad = repo_path_error(path)
        if bad:
            raise HubError(bad)
    if p['require_sha256']:
        unhashed = missing_lfs_hashes(remote, lfs_paths)
        if unhashed:
            raise HubError('the Hub listing has no sha256 for LFS files %s; they cannot be verified (set'
                           ' require_sha256=false to accept a size check only)' % ', '.join(unhashed[:5]))
    if p['check_index']:
        check_index_files(hf(), p, commit, listing, remote)
    return commit, remote, 'hub'


def list_remote(hf, p):
    """(commit, {path: remote_entry}, lfs paths) for the requested revision, straight from the Hub tree API."""
    api = hf['HfApi'](endpoint=p['endpoint'])
    repo_id, revision = p['repo_id'], p['revision']
    try:
        if is_commit_sha(revision):
            commit = revision
        else:
            info = api.repo_info(repo_id, revision=revision, repo_type='model')
            commit = info.sha
            if not is_commit_sha(commit or ''):
                raise HubError('the Hub returned no commit for %s@%s (got %r)' % (repo_id, revision, commit))
        remote, lfs_paths = {}, set()
        for item in api.list_repo_tree(repo_id, revision=commit, recursive=True, repo_type='model'):
            size = getattr(item, 'size', None)
            if size is None:  # RepoFolder
                continue
            lfs = getattr(item, 'lfs', None)
            sha256 = None
            if lfs is not None:
                lfs_paths.add(item.path)
                sha256 = lfs.get('sha256') if isinstance(lfs, dict) else getattr(lfs, 'sha256', None)
            remote[item.path] = remote_entry(size, sha256, None if lfs is not None else item.blob_id)
    except HubError:
        raise
    except Exception as exc:  # pylint: disable=broad-except
        # Every client error ends up here (HTTP, connection, validation); turn it into one clear failure.
        raise HubError(hub_message(hf, exc, repo_id, revision, p['endpoint'], 'cannot list the model files'))
    return commit, remote, lfs_paths


def check_index_files(hf, p, commit, listing, remote):
    """Every shard a selected safetensors index names must be selected too (and exist in the repo)."""
    for index in sorted(path for path in remote if path.endswith('.safetensors.index.json')):
        # A throw-away local_dir: the client's default cache (~/.cache/huggingface) stays untouched.
        tmp = tempfile.mkdtemp(prefix='hf_snapshot_index.')
        try:
            local = hf['hf_hub_download'](p['repo_id'], index, revision=commit, endpoint=p['endpoint'],
                                          etag_timeout=p['timeout'], local_dir=tmp)
            missing = index_missing_shards(index, read_text(local) or '', set(remote))
        except ValueError as exc:
            raise HubError('%s of %s@%s is not a valid safetensors index: %s' % (index, p['repo_id'], commit, exc))
        except Exception as exc:  # pylint: disable=broad-except
            raise HubError(hub_message(hf, exc, p['repo_id'], commit, p['endpoint'], 'cannot read %s' % index))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        absent = [m for m in missing if m not in listing]
        if absent:
            raise HubError('%s names shards that are not in %s@%s: %s' % (index, p['repo_id'], commit, ', '.join(absent[:5])))
        if missing:
            raise HubError('%s names shards that allow_patterns/ignore_patterns exclude: %s' % (index, ', '.join(missing[:5])))


def read_text(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None
