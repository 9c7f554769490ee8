# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Syncing a model directory with the Hub (hf_snapshot state=present): list, plan, verify, download, put in place.

PRIVATE to the collection. Nothing is written before the revision, the file list, the patterns, the index and the
free space have been checked. The work happens in a staging directory next to the model under an exclusive lock;
the complete verified tree (unchanged files hard-linked) then replaces the model directory in one exchange.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import time
import traceback

from ansible_collections.llmops.inference.plugins.module_utils.common.atomic_files import (
    fsync_dir,
    fsync_paths,
    link_or_copy,
    remove_path,
    replace_dir,
    write_file_atomic,
)
from ansible_collections.llmops.inference.plugins.module_utils.common.failures import ModuleFailure
from ansible_collections.llmops.inference.plugins.module_utils.common.file_hashing import usable_cpus
from ansible_collections.llmops.inference.plugins.module_utils.common.file_lock import Lock
from ansible_collections.llmops.inference.plugins.module_utils.common.file_perms import ensure_perms, resolve_ids
from ansible_collections.llmops.inference.plugins.module_utils.common.formatting import MB, fmt_bytes, rate_mb
from ansible_collections.llmops.inference.plugins.module_utils.common.free_space import free_bytes, space_check
from ansible_collections.llmops.inference.plugins.module_utils.hf.download import download_verified
from ansible_collections.llmops.inference.plugins.module_utils.hf.hub import HubError, hf_env, import_hf
from ansible_collections.llmops.inference.plugins.module_utils.hf.ids import repo_id_error, revision_error
from ansible_collections.llmops.inference.plugins.module_utils.hf.layout import (
    HF_LOCAL_CACHE_DIR,
    lstat_regular,
    scan_tree,
    work_paths,
)
from ansible_collections.llmops.inference.plugins.module_utils.hf.marker import (
    MARKER_NAME,
    build_marker,
    marker_equivalent,
    marker_json,
    read_marker,
)
from ansible_collections.llmops.inference.plugins.module_utils.hf.download_plan import make_plan, plan_summary
from ansible_collections.llmops.inference.plugins.module_utils.hf.remote import resolve_remote
from ansible_collections.llmops.inference.plugins.module_utils.hf.tree_diff import tree_diff
from ansible_collections.llmops.inference.plugins.module_utils.hf.verify import Verifier, hash_jobs, invalid_safetensors
from ansible_collections.llmops.inference.plugins.module_utils.common.path_safety import dest_refusal
from ansible_collections.llmops.inference.plugins.module_utils.common.progress_file import Progress, ProgressWriter


def sync_model(p, check_mode, diff, started):
    """The result of state=present for the module parameters ``p``.

    Raises ModuleFailure for a refusal or error, MissingHubClient when the Hub must be asked but the client is
    not installed.
    """
    dest = p['dest']
    repo_id = p['repo_id']
    error = repo_id_error(repo_id) if repo_id else 'repo_id is required with state=present'
    error = error or revision_error(p['revision'])
    if error:
        raise ModuleFailure(error, repo_id=repo_id, revision=p['revision'])
    refusal = dest_refusal(dest, p['forbidden_paths'])
    if refusal:
        raise ModuleFailure(refusal[0], **refusal[1])
    try:
        file_mode = int(p['mode'], 8)
    except (TypeError, ValueError):
        raise ModuleFailure('mode %r is not an octal file mode' % p['mode'])
    try:
        uid, gid = resolve_ids(p['owner'], p['group'])
    except KeyError as exc:
        raise ModuleFailure('unknown owner or group: %s' % exc)

    # The progress file is written only once every check has passed (Snapshot.start_writing): a refusal leaves the
    # host exactly as it was.
    progress = Progress(path=None, label=repo_id)
    writer = ProgressWriter(progress)
    progress.start('plan', message='resolving %s' % p['revision'])
    snap = Snapshot(p, check_mode, diff, progress, writer, file_mode, uid, gid, started)
    try:
        result = snap.run()
    except HubError as exc:
        progress.start('failed', message=str(exc))
        writer.stop()
        raise ModuleFailure(str(exc), path=dest, repo_id=repo_id, revision=p['revision'])
    except (IOError, OSError) as exc:
        progress.start('failed', message=str(exc))
        writer.stop()
        raise ModuleFailure('%s: %s' % (type(exc).__name__, exc), path=dest, repo_id=repo_id, revision=p['revision'],
                            exception=traceback.format_exc())
    writer.stop()
    progress.start('done', message='changed' if result['changed'] else 'unchanged')
    return result


class Snapshot(object):
    """One state=present run: list, plan, verify, download, verify, put in place."""

    def __init__(self, p, check_mode, diff, progress, writer, file_mode, uid, gid, started):
        self.p = p
        self.check_mode = check_mode
        self.diff = diff
        self.progress = progress
        self.writer = writer
        self.file_mode = file_mode
        self.uid = uid
        self.gid = gid
        self.started = started
        self.dest = p['dest']
        self._hf = None

    def hf(self):
        if self._hf is None:
            self._hf = import_hf(hf_env(self.p))
        return self._hf

    def run(self):
        p, dest = self.p, self.dest
        repo_id = p['repo_id']
        marker_path = os.path.join(dest, MARKER_NAME)
        marker = read_marker(marker_path)
        commit, remote, source = resolve_remote(self.hf, p, marker)

        self.progress.label = '%s@%s' % (repo_id, commit[:12])
        paths = work_paths(dest, commit)
        result = dict(changed=False, path=dest, repo_id=repo_id, revision=commit, requested_revision=p['revision'],
                      source=source, files=len(remote), bytes=sum(e['size'] for e in remote.values()),
                      downloaded_files=0, downloaded_bytes=0, download_seconds=0.0, download_mb_per_s=None,
                      verified_files=0, verified_bytes=0, verify_seconds=0.0, verify_mb_per_s=None,
                      hash_workers=p['hash_workers'] or usable_cpus(), repaired=[], removed=[], replaced=None,
                      marker=marker_path)
        # Nothing is written before this point or by the plan and the space check: a refusal (revision, patterns,
        # index, space) leaves the host exactly as it was.
        plan = make_plan(remote, marker, scan_tree(dest), scan_tree(paths['staging']), p['verify'])
        result['plan'] = plan_summary(plan, remote)
        result['free_bytes'] = self.space_or_fail(repo_id, plan['download'], remote)
        if self.check_mode:
            result['changed'] = self.predict_change(plan, marker, remote, commit)
            if self.diff:
                result['diff'] = tree_diff(self.dest, plan, marker, remote, commit)
            result['total_seconds'] = round(time.time() - self.started, 3)
            return result
        if not os.path.isdir(paths['work']):
            os.makedirs(paths['work'])
        lock = Lock(paths['lock'])
        holder = lock.acquire()
        if holder:
            raise HubError('another hf_snapshot run (pid %s) is working on %s (lock %s)' % (holder, dest, paths['lock']))
        try:
            self.start_writing()
            return self.run_locked(paths, marker, remote, commit, result)
        finally:
            lock.release()

    def start_writing(self):
        """Rewrite the progress file every 2 s from now on (only after every check has passed)."""
        path = self.p['progress_file']
        if not path:
            return
        if not os.path.isdir(os.path.dirname(path)):
            os.makedirs(os.path.dirname(path))
        self.progress.path = path
        self.progress.write()
        self.writer.start()

    def predict_change(self, plan, marker, remote, commit):
        """Check mode: what a real run would report, judged by size and mtime against the marker (nothing is hashed).

        A file queued only because verify=full asked for it counts as fine: only hashing could say otherwise.
        """
        rehash = [x for x in plan['verify'] if plan['reasons'].get(x) != 'full verification requested']
        if plan['download'] or plan['verify_staged'] or plan['remove'] or rehash:
            return True
        if not os.path.isdir(self.dest):
            return False
        if ensure_perms(self.dest, list(remote), self.uid, self.gid, self.file_mode, dry_run=True):
            return True
        return not marker_equivalent(marker, self.new_marker(self.dest, remote, commit))

    def new_marker(self, root, remote, commit):
        p = self.p
        stats = dict((path, lstat_regular(os.path.join(root, path))) for path in remote)
        return build_marker(p['repo_id'], commit, p['revision'], p['endpoint'], p['allow_patterns'] or None,
                            p['ignore_patterns'] or None, remote, stats)

    def space_or_fail(self, what, paths_, remote):
        margin = self.p['free_space_margin_mb'] * MB
        need = sum(remote[x]['size'] for x in paths_)
        available = free_bytes(self.dest)
        short = space_check(need, available, margin)
        if short:
            raise HubError('not enough space on the file system of %s for %s: %d files to download need %s plus a margin'
                           ' of %s, %s is free (short by %s)' % (self.dest, what, len(paths_), fmt_bytes(need),
                                                                 fmt_bytes(margin), fmt_bytes(available), fmt_bytes(short)))
        return available

    def run_locked(self, paths, marker, remote, commit, result):
        p, dest = self.p, self.dest
        staging = paths['staging']
        remove_leftovers(paths)
        # Planned again under the lock: another run may have finished in between.
        dest_files = scan_tree(dest)
        plan = make_plan(remote, marker, dest_files, scan_tree(staging), p['verify'])
        result['plan'] = plan_summary(plan, remote)
        self.space_or_fail(result['repo_id'], plan['download'], remote)

        verifier = Verifier(remote, result['hash_workers'], self.progress)
        # Where each file of the final tree is right now, and whether this run hashed it.
        hashed = self.verify_existing(plan, verifier, staging, remote)
        result['repaired'] = sorted(x for x in plan['download'] if x in dest_files)
        downloaded, download_seconds, downloaded_bytes, downloaded_files = download_verified(
            self.hf, p, commit, sorted(plan['download']), staging, remote, self.progress, verifier)
        hashed.update((path, staging) for path in downloaded)
        # Structural check of every safetensors file this run hashed (header only, cheap).
        broken = invalid_safetensors(hashed)
        if broken:
            raise HubError('%s matches the Hub hash but is not a valid safetensors file: %s' % broken)

        result.update(downloaded_files=downloaded_files, downloaded_bytes=downloaded_bytes,
                      download_seconds=round(download_seconds, 3), download_mb_per_s=rate_mb(downloaded_bytes, download_seconds),
                      verified_files=verifier.files, verified_bytes=verifier.nbytes,
                      verify_seconds=round(verifier.seconds, 3),
                      verify_mb_per_s=rate_mb(verifier.nbytes, verifier.seconds))
        self.put_in_place(paths, plan, downloaded, remote, commit, marker, result)
        if self.diff:
            result['diff'] = tree_diff(self.dest, plan, marker, remote, commit)
        result['total_seconds'] = round(time.time() - self.started, 3)
        return result

    def verify_existing(self, plan, verifier, staging, remote):
        """1. Hash what is on disk but not vouched for by the marker, in place and in the staging directory.

        A mismatch moves the file to plan['download']; returns {path: root} of the files found good.
        """
        dest = self.dest
        hashed = {}
        jobs = ([(('dest', x), os.path.join(dest, x), kind) for x, _f, kind in hash_jobs(plan['verify'], dest, remote)]
                + [(('staged', x), os.path.join(staging, x), kind) for x, _f, kind in hash_jobs(plan['verify_staged'], staging, remote)])
        if not jobs:
            return hashed
        bad = verifier.check('verify-existing', jobs)
        for (where, path), problem in sorted(bad.items()):
            plan['reasons'][path] = problem
            plan['download'].append(path)
            if where == 'dest':
                plan['verify'].remove(path)
            else:
                plan['verify_staged'].remove(path)
                os.unlink(os.path.join(staging, path))
        for path in plan['verify']:
            hashed[path] = dest
        for path in plan['verify_staged']:
            hashed[path] = staging
        plan['ok'].extend(plan['verify'])
        plan['verify'] = []
        if bad:
            self.space_or_fail('corrupted files', plan['download'], remote)
        return hashed

    def put_in_place(self, paths, plan, downloaded, remote, commit, marker, result):
        """3. Put the verified state in place: a new tree swapped in, or owner/mode/marker fixed where it stands."""
        dest, staging = self.dest, paths['staging']
        new_files = downloaded + plan['verify_staged']
        result['removed'] = list(plan['remove'])
        self.progress.start('finalize', message='placing the verified model')
        if new_files or plan['remove']:
            fsync_paths([os.path.join(staging, x) for x in new_files])
            for path in plan['ok'] + plan['extra']:
                if not os.path.lexists(os.path.join(staging, path)):
                    link_or_copy(os.path.join(dest, path), os.path.join(staging, path))
            remove_path(os.path.join(staging, HF_LOCAL_CACHE_DIR))
            self.finish_tree(staging, remote, commit)
            parent = os.path.dirname(dest)
            if not os.path.isdir(parent):
                os.makedirs(parent, 0o755)
            result['replaced'] = replace_dir(staging, dest, paths['old'])
            remove_path(paths['old'])
            fsync_dir(parent)
            result['changed'] = True
        else:
            result['changed'] = self.finish_tree(dest, remote, commit, marker) if os.path.isdir(dest) else False
            remove_path(staging)

    def finish_tree(self, root, remote, commit, old_marker=None):
        """Owner/mode of the model files and their directories, then the marker; True when anything changed."""
        changed = ensure_perms(root, list(remote), self.uid, self.gid, self.file_mode)
        new_marker = self.new_marker(root, remote, commit)
        if not marker_equivalent(old_marker, new_marker):
            write_file_atomic(os.path.join(root, MARKER_NAME), marker_json(new_marker), self.file_mode, self.uid, self.gid)
            changed += 1
        return changed > 0


def remove_leftovers(paths):
    """Staging of other commits, a half-finished swap or removal, the client's partial files in the staging."""
    for name in os.listdir(paths['work']):
        full = os.path.join(paths['work'], name)
        if (name.startswith('partial-') and full != paths['staging']) or name in ('old', 'removing'):
            remove_path(full)
    remove_path(os.path.join(paths['staging'], HF_LOCAL_CACHE_DIR))
