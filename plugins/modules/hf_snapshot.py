#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: hf_snapshot
short_description: Download a Hugging Face model snapshot, verify every file, and put it in place atomically
version_added: 0.1.0
description:
  - Runs on the target with the real C(huggingface_hub) client (use a virtualenv where it is installed as the
    interpreter of this task; the M(llmops.inference.hf_snapshot) task of the C(llmops.inference.hf_model) role does).
  - Resolves O(revision) to a commit, lists the repo files with their sizes and LFS sha256 from the Hub (tree API),
    applies O(allow_patterns) and O(ignore_patterns), and checks that every shard named in a
    C(*.safetensors.index.json) is part of the selection.
  - Plans against a marker file (C(.llmops-hf-model.json)) in O(dest) that records the last verified state. A file
    whose size and mtime are unchanged since it was verified is not read again (O(verify=quick)), everything else
    is hashed (sha256 for LFS files, git blob sha1 for small files), in parallel across files.
  - Missing, truncated or corrupted files are downloaded into a staging directory next to O(dest) (same file
    system), hashed, and the complete new tree (unchanged files hard-linked) replaces O(dest) with one atomic
    directory exchange. Until then O(dest) and anything that uses it are untouched.
  - Refuses before any work when the free space of the destination file system is short of the bytes to download
    plus O(free_space_margin_mb), or when O(dest) is under one of O(forbidden_paths) after resolving symlinks and
    mount points.
  - With O(state=absent) removes the model directory, refusing while a process or an active systemd unit
    matching O(service_patterns) uses it.
  - Writes progress (phase, bytes done/total, rate, ETA, files) to O(progress_file) every 2 seconds, for
    M(llmops.inference.hf_snapshot_wait) to print on the controller while this module runs as an async task.
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: Lists the Hub files, plans against the marker and checks the free space; hashes, downloads and writes
      nothing. Files are judged by size and mtime against the marker, so damage that keeps both (found only by
      hashing) is not predicted, with O(verify=full) too.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: full
    details: One line per model file (size and sha256 or git sha1), before (what is in place, or why a file in place
      does not count) and after (what the Hub lists), plus the revision.
requirements:
  - huggingface_hub (tested with 2.4.0 and hf-xet 1.8.0) for O(state=present), unless a pinned re-run is fully
    covered by the marker.
options:
  state:
    description:
      - V(present) downloads and verifies the model; V(absent) removes O(dest) (refused while in use).
    type: str
    choices: [present, absent]
    default: present
  repo_id:
    description:
      - Model repository on the Hub, C(org/name). Required with O(state=present).
    type: str
  revision:
    description:
      - A 40-hex commit sha pins the model (a re-run covered by the marker then needs no Hub access at all).
      - A branch or tag is resolved to its commit at every run; the commit is returned and recorded.
    type: str
    default: main
  dest:
    description:
      - Model directory. It is replaced as a whole, so it must be a directory of its own (not a mount point, not a
        system directory).
    type: path
    required: true
  allow_patterns:
    description:
      - Only files matching at least one of these fnmatch patterns (same rules as C(snapshot_download)).
    type: list
    elements: str
  ignore_patterns:
    description:
      - Skip files matching any of these fnmatch patterns.
    type: list
    elements: str
  token:
    description:
      - Hugging Face access token for private or gated repos. Placed in C(HF_TOKEN) of this module's own process
        only; never on a command line and never written to a file.
    type: str
  endpoint:
    description:
      - Hub or Hub mirror base URL, for example V(http://mirror.internal:8090). Default is the client's
        (C(HF_ENDPOINT) or huggingface.co).
    type: str
  max_workers:
    description:
      - Files downloaded concurrently (one thread per file, as C(hf download --max-workers)).
    type: int
    default: 8
  high_performance:
    description:
      - Set C(HF_XET_HIGH_PERFORMANCE=1) for the client (Xet storage uses all cores and large buffers).
    type: bool
    default: false
  forbidden_paths:
    description:
      - O(dest) may not be under any of these, after resolving symlinks. A forbidden path that is a mount point also
        forbids every other view (bind mount) of its file system.
    type: list
    elements: path
    default: ['/data']
  verify:
    description:
      - V(quick) trusts files whose size and mtime match the marker; V(full) hashes every file again (a scrub).
    type: str
    choices: [quick, full]
    default: quick
  hash_workers:
    description:
      - Threads hashing files in parallel; V(0) uses every CPU the process may run on.
    type: int
    default: 0
  free_space_margin_mb:
    description:
      - Space (MB, 10^6 bytes) that must stay free on the destination file system after the download.
    type: int
    default: 1024
  require_sha256:
    description:
      - Fail when the Hub listing has no sha256 for an LFS file (it could then only be size-checked).
    type: bool
    default: true
  check_index:
    description:
      - Fail when a C(*.safetensors.index.json) names a shard that is not in the repo or is excluded by the patterns.
    type: bool
    default: true
  timeout:
    description:
      - Seconds the client waits for Hub metadata and download reads (C(HF_HUB_ETAG_TIMEOUT), C(HF_HUB_DOWNLOAD_TIMEOUT)).
    type: int
    default: 30
  download_retries:
    description:
      - Further attempts for a file whose download failed or whose hash did not match.
    type: int
    default: 2
  progress_file:
    description:
      - JSON file rewritten every 2 seconds with the progress of the current phase.
    type: path
  owner:
    description:
      - Owner of the model files and directories. Default is the user running the module.
    type: str
  group:
    description:
      - Group of the model files and directories.
    type: str
  mode:
    description:
      - Octal mode of the model files; directories get the same mode plus C(x) wherever C(r) is set.
    type: str
    default: '0644'
  service_patterns:
    description:
      - With O(state=absent), systemd units (glob) that count as using the model when active and their ExecStart,
        WorkingDirectory or Environment names O(dest). Processes are checked regardless, through C(/proc).
    type: list
    elements: str
    default: ['sglang-*.service']
  force:
    description:
      - With O(state=absent), remove O(dest) even when it has no marker (was not written by this module).
    type: bool
    default: false
notes:
  - Linux only (C(/proc) for the in-use check, C(renameat2) for the atomic exchange with a two-rename fallback).
  - Nothing is written before the revision, the file list, the patterns, the index and the free space have been
    checked; a refusal leaves the host as it was. The progress file is written from then on.
  - The marker trusts size and mtime (O(verify=quick)). Silent corruption that keeps both is found only by
    O(verify=full).
  - Only regular files are carried from the old O(dest) into the new tree; files an earlier run verified but the new
    file set no longer contains are dropped, files this module never recorded are kept.
  - An interrupted run leaves its verified and partly downloaded files in C(.<name>.hf_model/partial-<commit>) next to
    O(dest); the next run hashes the complete ones and downloads the rest (a partial file restarts from byte 0).
seealso:
  - module: llmops.inference.hf_snapshot_wait
  - name: huggingface_hub download guide
    description: Patterns, revisions and local_dir downloads.
    link: https://huggingface.co/docs/huggingface_hub/guides/download
"""

EXAMPLES = r"""
- name: Download a pinned model with progress on the controller
  llmops.inference.hf_snapshot:
    repo_id: Qwen/Qwen3.5-122B-A10B
    revision: 0123456789abcdef0123456789abcdef01234567
    dest: /srv/models/Qwen/Qwen3.5-122B-A10B
    allow_patterns: ['*.safetensors', '*.json', '*.txt', '*.jinja']
    token: "{{ vault_hf_token }}"
    progress_file: /srv/models/.Qwen3.5-122B-A10B.progress.json
  vars:
    ansible_python_interpreter: /opt/llmops/hf-venv/bin/python
  async: 7200
  poll: 0
  register: download_job

- name: Wait, printing bytes done/total, rate and ETA every 15 s
  llmops.inference.hf_snapshot_wait:
    jid: "{{ download_job.ansible_job_id }}"
    progress_file: /srv/models/.Qwen3.5-122B-A10B.progress.json
    interval: 15

- name: Remove a model that no service uses any more
  llmops.inference.hf_snapshot:
    dest: /srv/models/Qwen/Qwen3.5-122B-A10B
    state: absent
"""

RETURN = r"""
path:
  description: The model directory (as given).
  returned: always
  type: str
  sample: /srv/models/Qwen/Qwen3.5-122B-A10B
repo_id:
  description: The repository.
  returned: when state is present
  type: str
  sample: Qwen/Qwen3.5-122B-A10B
revision:
  description: The commit the model directory now holds.
  returned: when state is present
  type: str
  sample: 0123456789abcdef0123456789abcdef01234567
requested_revision:
  description: O(revision) as given (a branch or tag resolves to RV(revision)).
  returned: when state is present
  type: str
  sample: main
source:
  description: Where the file list came from, V(hub) or V(marker) (a pinned re-run that needed no Hub access).
  returned: when state is present
  type: str
  sample: hub
files:
  description: Number of model files.
  returned: when state is present
  type: int
  sample: 45
bytes:
  description: Total size of the model files.
  returned: when state is present
  type: int
  sample: 234017456128
downloaded_files:
  description: Files downloaded by this run (including re-downloads after a hash mismatch).
  returned: when state is present
  type: int
  sample: 39
downloaded_bytes:
  description: Bytes downloaded by this run.
  returned: when state is present
  type: int
  sample: 234000000000
download_seconds:
  description: Wall time of the download phase.
  returned: when state is present
  type: float
  sample: 251.3
download_mb_per_s:
  description: RV(downloaded_bytes) / RV(download_seconds) in MB/s (10^6 bytes); null when nothing was downloaded.
  returned: when state is present
  type: float
  sample: 931.2
verified_files:
  description: Files hashed by this run (existing files that the marker could not vouch for, and every download).
  returned: when state is present
  type: int
  sample: 45
verified_bytes:
  description: Bytes hashed by this run. Zero for an idempotent re-run.
  returned: when state is present
  type: int
  sample: 234017456128
verify_seconds:
  description: Wall time of the hashing phases.
  returned: when state is present
  type: float
  sample: 41.7
verify_mb_per_s:
  description: RV(verified_bytes) / RV(verify_seconds) in MB/s; null when nothing was hashed.
  returned: when state is present
  type: float
  sample: 5612.0
hash_workers:
  description: Threads used for hashing.
  returned: when state is present
  type: int
  sample: 32
repaired:
  description: Files that were present with a wrong size or hash and were downloaded again.
  returned: when state is present
  type: list
  elements: str
  sample: [model-00007-of-00039.safetensors]
removed:
  description: Files of an earlier verified state that the new file set no longer contains (state present), or the
    directories deleted (state absent).
  returned: always
  type: list
  elements: str
  sample: []
replaced:
  description: How the new tree was put in place, V(exchange) (atomic), V(rename), V(new), or null when the files
    stayed where they were.
  returned: when state is present
  type: str
  sample: exchange
plan:
  description: Counts of the plan (files ok by marker, to verify, to download, to remove, extra files kept).
  returned: when state is present
  type: dict
  sample: {files_ok: 45, files_to_verify: 0, bytes_to_verify: 0, files_to_download: 0, bytes_to_download: 0}
free_bytes:
  description: Free space on the destination file system before the download.
  returned: when state is present
  type: int
  sample: 1500000000000
marker:
  description: Path of the marker file.
  returned: when state is present
  type: str
  sample: /srv/models/Qwen/Qwen3.5-122B-A10B/.llmops-hf-model.json
total_seconds:
  description: Wall time of the module.
  returned: always
  type: float
  sample: 301.9
users:
  description: With O(state=absent), the processes and units found using the directory (the module then fails).
  returned: when state is absent and the model is in use
  type: dict
  sample: {processes: [{pid: 4242, comm: python3, unit: sglang-qwen.service, reasons: [cmdline, mmap]}], units: []}
"""

import fcntl
import os
import shutil
import tempfile
import threading
import time
import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.llmops.inference.plugins.module_utils.hf_files import (
    HF_LOCAL_CACHE_DIR,
    active_units_using,
    MARKER_NAME,
    Progress,
    ProgressWriter,
    build_marker,
    describe_users,
    expected_digest,
    filter_paths,
    fmt_bytes,
    find_path_users,
    forbidden_reason,
    free_bytes,
    hash_files,
    index_missing_shards,
    is_commit_sha,
    lstat_regular,
    make_plan,
    marker_covers,
    marker_equivalent,
    marker_json,
    missing_lfs_hashes,
    parse_marker,
    plan_summary,
    remote_entry,
    remote_from_marker,
    replace_dir,
    repo_id_error,
    repo_path_error,
    revision_error,
    safetensors_header_error,
    scan_tree,
    space_check,
    unsafe_dest_reason,
    usable_cpus,
    work_paths,
)

MB = 1000 * 1000


class HubError(Exception):
    """A Hub/mirror answer turned into an operator-facing message."""


def rate_mb(nbytes, seconds):
    if not nbytes or not seconds:
        return None
    return round(nbytes / seconds / MB, 1)


def import_hf(module, env):
    """Import huggingface_hub after setting its environment (it reads most settings at import time)."""
    os.environ.update(env)
    try:
        import huggingface_hub  # noqa: F401 pylint: disable=unused-import
        from huggingface_hub import HfApi, hf_hub_download
        from huggingface_hub import errors as hf_errors
    except ImportError:
        module.fail_json(msg=missing_required_lib('huggingface_hub', reason='to download models',
                                                  url='https://pypi.org/project/huggingface-hub/')
                         + ' Run this module with the interpreter of the hf_model virtualenv.',
                         exception=traceback.format_exc())
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


def read_text(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


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


class Lock(object):
    """Exclusive lock per destination so two runs never share a staging directory."""

    def __init__(self, path):
        self.path = path
        self.handle = None

    def acquire(self):
        self.handle = open(self.path, 'a+')
        try:
            fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except (IOError, OSError):
            self.handle.seek(0)
            holder = self.handle.read().strip()
            self.handle.close()
            self.handle = None
            return holder or '?'
        self.handle.seek(0)
        self.handle.truncate()
        self.handle.write(str(os.getpid()))
        self.handle.flush()
        return None

    def release(self):
        if self.handle is not None:
            self.handle.close()
            self.handle = None


def make_bar_class(progress, counted):
    """A tqdm stand-in for hf_hub_download(tqdm_class=...): feeds written bytes into ``progress``.

    Mirrors the interface snapshot_download's own aggregating bar offers (update, update_transfer, postfix setters).
    ``counted`` (thread-local) remembers bytes of the current attempt so a retry can take them back.
    """

    class _Bar(object):
        def __init__(self, *args, **kwargs):
            self.total = kwargs.get('total')
            self.n = 0
            initial = kwargs.get('initial') or 0
            if initial:
                self.update(initial)

        def __enter__(self):
            return self

        def __exit__(self, *args):
            return False

        def update(self, n=1):
            n = int(n or 0)
            self.n += n
            counted.bytes = getattr(counted, 'bytes', 0) + n
            progress.add(n)

        def update_transfer(self, n=1):
            pass

        def set_postfix_str(self, *args, **kwargs):
            pass

        def set_transfer_postfix_str(self, *args, **kwargs):
            pass

        def set_description(self, *args, **kwargs):
            pass

        def set_description_str(self, *args, **kwargs):
            pass

        def refresh(self, *args, **kwargs):
            pass

        def reset(self, total=None):
            self.total = total

        def close(self):
            pass

    return _Bar


def remove_path(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def download_files(hf, p, commit, paths, staging, remote, progress):
    """Download ``paths`` into ``staging`` with max_workers threads; returns {path: error} for failures."""
    from concurrent.futures import ThreadPoolExecutor

    counted = threading.local()
    bar_class = make_bar_class(progress, counted)
    errs = hf['errors']
    permanent = tuple(getattr(errs, name) for name in ('RepositoryNotFoundError', 'GatedRepoError',
                                                       'RevisionNotFoundError', 'RemoteEntryNotFoundError')
                      if hasattr(errs, name))
    local_meta = os.path.join(staging, HF_LOCAL_CACHE_DIR, 'huggingface', 'download')

    def one(path):
        target = os.path.join(staging, path)
        for attempt in range(p['download_retries'] + 1):
            # A leftover file or client metadata would make hf_hub_download return it unchecked.
            for leftover in (target, os.path.join(local_meta, path + '.metadata')):
                if os.path.lexists(leftover):
                    os.unlink(leftover)
            counted.bytes = 0
            try:
                hf['hf_hub_download'](p['repo_id'], path, revision=commit, local_dir=staging, endpoint=p['endpoint'],
                                      etag_timeout=p['timeout'], tqdm_class=bar_class)
                have = lstat_regular(target)
                if have is None or have[0] != remote[path]['size']:
                    raise IOError('downloaded %s has %s bytes, the Hub lists %d'
                                  % (path, have[0] if have else 'no', remote[path]['size']))
                progress.file_done()
                return path, None
            except Exception as exc:  # pylint: disable=broad-except
                progress.add(-counted.bytes)
                if isinstance(exc, permanent):
                    return path, hub_message(hf, exc, p['repo_id'], commit, p['endpoint'], 'download of %s failed' % path)
                if attempt == p['download_retries']:
                    return path, 'download of %s failed after %d attempts: %s: %s' % (
                        path, attempt + 1, type(exc).__name__, (str(exc).splitlines() or [''])[0])
                time.sleep(min(2 ** attempt, 10))
        return path, 'unreachable'

    failures = {}
    with ThreadPoolExecutor(max_workers=max(1, p['max_workers'])) as pool:
        # Largest first: the longest transfers start early and the tail of the run stays short.
        for path, error in pool.map(one, sorted(paths, key=lambda x: -remote[x]['size'])):
            if error:
                failures[path] = error
    return failures


def hash_jobs(paths, root, remote):
    jobs = []
    for path in paths:
        kind, _digest = expected_digest(remote[path])
        if kind:
            jobs.append((path, os.path.join(root, path), kind))
    return jobs


def fsync_paths(paths):
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def resolve_ids(module, owner, group):
    import grp
    import pwd
    uid = gid = -1
    try:
        if owner:
            uid = int(owner) if owner.isdigit() else pwd.getpwnam(owner).pw_uid
        if group:
            gid = int(group) if group.isdigit() else grp.getgrnam(group).gr_gid
    except KeyError as exc:
        module.fail_json(msg='unknown owner or group: %s' % exc)
    return uid, gid


def dir_mode_for(file_mode):
    """Directories get the file mode plus x wherever r is set (0644 -> 0755, 0640 -> 0750)."""
    return file_mode | ((file_mode & 0o444) >> 2)


def ensure_perms(root, relpaths, uid, gid, file_mode, dry_run=False):
    """Owner, group and mode of the given files, the directories leading to them and root; returns the count changed
    (with ``dry_run``: the count that would change).

    Files the module does not manage (extra files someone put into the model directory) are left alone.
    """
    entries = {root: dir_mode_for(file_mode)}
    for rel in relpaths:
        entries[os.path.join(root, rel)] = file_mode
        parent = os.path.dirname(rel)
        while parent:
            entries[os.path.join(root, parent)] = dir_mode_for(file_mode)
            parent = os.path.dirname(parent)
    changed = 0
    for path in sorted(entries):
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if os.path.islink(path):
            continue
        touched = False
        if (uid != -1 and st.st_uid != uid) or (gid != -1 and st.st_gid != gid):
            if not dry_run:
                os.chown(path, uid, gid)
            touched = True
        if (st.st_mode & 0o7777) != entries[path]:
            if not dry_run:
                os.chmod(path, entries[path])
            touched = True
        changed += touched
    return changed


def write_file_atomic(path, text, mode, uid=-1, gid=-1):
    tmp = '%s.tmp-%d' % (path, os.getpid())
    with open(tmp, 'w') as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(tmp, mode)
    if uid != -1 or gid != -1:
        os.chown(tmp, uid, gid)
    os.rename(tmp, path)


def link_or_copy(src, dst):
    parent = os.path.dirname(dst)
    if not os.path.isdir(parent):
        os.makedirs(parent)
    try:
        os.link(src, dst)
        return 'link'
    except OSError:
        shutil.copy2(src, dst)
        return 'copy'


def check_inputs(module, p):
    dest = p['dest']
    reason = unsafe_dest_reason(dest) or forbidden_reason(dest, p['forbidden_paths'])
    if reason:
        module.fail_json(msg='refusing: %s' % reason, path=dest, forbidden_paths=p['forbidden_paths'])
    if os.path.lexists(dest) and not os.path.isdir(dest):
        module.fail_json(msg='refusing: %s exists and is not a directory' % dest, path=dest)
    if os.path.isdir(dest) and os.path.ismount(dest):
        module.fail_json(msg='refusing: %s is a mount point; the model directory is replaced as a whole, so use a'
                             ' directory inside the mount, e.g. %s/<name>' % (dest, dest), path=dest)


def run_absent(module, p, started):
    dest = p['dest']
    check_inputs(module, p)
    paths = work_paths(dest, None)
    result = dict(changed=False, path=dest, removed=[])
    present = [x for x in (dest, paths['work']) if os.path.lexists(x)]
    if not present:
        result['total_seconds'] = round(time.time() - started, 3)
        module.exit_json(**result)

    processes = find_path_users(dest) if os.path.lexists(dest) else []
    units = active_units_using(module.run_command, module.get_bin_path('systemctl'), dest, p['service_patterns'])
    if processes or units:
        module.fail_json(msg='refusing to remove %s: in use by %s. Stop the service first.'
                             % (dest, describe_users(processes, units)),
                         path=dest, users={'processes': processes, 'units': units})

    if os.path.isdir(dest) and os.listdir(dest) and not os.path.exists(os.path.join(dest, MARKER_NAME)) and not p['force']:
        module.fail_json(msg='refusing to remove %s: it has no %s, so hf_snapshot did not write it; set force to remove'
                             ' it anyway' % (dest, MARKER_NAME), path=dest)
    result['changed'] = True
    result['removed'] = present
    if module._diff:
        result['diff'] = {'before': 'path %s\nstate present\n' % dest, 'after': 'path %s\nstate absent\n' % dest}
    if not module.check_mode:
        lock = None
        if os.path.isdir(paths['work']):
            lock = Lock(paths['lock'])
            holder = lock.acquire()
            if holder:
                module.fail_json(msg='another hf_snapshot run (pid %s) holds %s' % (holder, paths['lock']), path=dest)
        if os.path.lexists(dest):
            # Rename first: the model disappears at once, a crash mid-delete leaves only the work directory behind.
            if not os.path.isdir(paths['work']):
                os.makedirs(paths['work'])
            removing = paths['removing']
            remove_path(removing)
            os.rename(dest, removing)
        if lock:
            lock.release()
        remove_path(paths['work'])
    result['total_seconds'] = round(time.time() - started, 3)
    module.exit_json(**result)


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


def run_present(module, p, started):
    dest = p['dest']
    repo_id = p['repo_id']
    error = repo_id_error(repo_id) if repo_id else 'repo_id is required with state=present'
    error = error or revision_error(p['revision'])
    if error:
        module.fail_json(msg=error, repo_id=repo_id, revision=p['revision'])
    check_inputs(module, p)
    try:
        file_mode = int(p['mode'], 8)
    except (TypeError, ValueError):
        module.fail_json(msg='mode %r is not an octal file mode' % p['mode'])
    uid, gid = resolve_ids(module, p['owner'], p['group'])

    # The progress file is written only once every check has passed (Snapshot.start_writing): a refusal leaves the
    # host exactly as it was.
    progress = Progress(path=None, label=repo_id)
    writer = ProgressWriter(progress)
    progress.start('plan', message='resolving %s' % p['revision'])
    snap = Snapshot(module, p, progress, writer, file_mode, uid, gid, started)
    try:
        result = snap.run()
    except HubError as exc:
        progress.start('failed', message=str(exc))
        writer.stop()
        module.fail_json(msg=str(exc), path=dest, repo_id=repo_id, revision=p['revision'])
    except (IOError, OSError) as exc:
        progress.start('failed', message=str(exc))
        writer.stop()
        module.fail_json(msg='%s: %s' % (type(exc).__name__, exc), path=dest, repo_id=repo_id, revision=p['revision'],
                         exception=traceback.format_exc())
    writer.stop()
    progress.start('done', message='changed' if result['changed'] else 'unchanged')
    module.exit_json(**result)


class Snapshot(object):
    """One state=present run: list, plan, verify, download, verify, put in place."""

    def __init__(self, module, p, progress, writer, file_mode, uid, gid, started):
        self.module = module
        self.p = p
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
            self._hf = import_hf(self.module, hf_env(self.p))
        return self._hf

    def run(self):
        p, dest = self.p, self.dest
        repo_id = p['repo_id']
        marker_path = os.path.join(dest, MARKER_NAME)
        marker = parse_marker(read_text(marker_path))
        allow, ignore = p['allow_patterns'] or None, p['ignore_patterns'] or None
        if is_commit_sha(p['revision']) and p['verify'] == 'quick' and marker_covers(marker, repo_id, p['revision'], allow, ignore):
            # The marker holds the Hub's listing of this immutable commit: re-checking the files needs no network.
            commit, remote, source = p['revision'], remote_from_marker(marker), 'marker'
        else:
            commit, listing, lfs_paths = list_remote(self.hf(), p)
            source = 'hub'
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
                self.check_index_files(commit, listing, remote)

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
        if self.module.check_mode:
            result['changed'] = self.predict_change(plan, marker, remote, commit)
            if self.module._diff:
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

    def check_index_files(self, commit, listing, remote):
        """Every shard a selected safetensors index names must be selected too (and exist in the repo)."""
        p = self.p
        for index in sorted(path for path in remote if path.endswith('.safetensors.index.json')):
            # A throw-away local_dir: the client's default cache (~/.cache/huggingface) stays untouched.
            tmp = tempfile.mkdtemp(prefix='hf_snapshot_index.')
            try:
                local = self.hf()['hf_hub_download'](p['repo_id'], index, revision=commit, endpoint=p['endpoint'],
                                                     etag_timeout=p['timeout'], local_dir=tmp)
                missing = index_missing_shards(index, read_text(local) or '', set(remote))
            except ValueError as exc:
                raise HubError('%s of %s@%s is not a valid safetensors index: %s' % (index, p['repo_id'], commit, exc))
            except Exception as exc:  # pylint: disable=broad-except
                raise HubError(hub_message(self.hf(), exc, p['repo_id'], commit, p['endpoint'], 'cannot read %s' % index))
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            absent = [m for m in missing if m not in listing]
            if absent:
                raise HubError('%s names shards that are not in %s@%s: %s' % (index, p['repo_id'], commit, ', '.join(absent[:5])))
            if missing:
                raise HubError('%s names shards that allow_patterns/ignore_patterns exclude: %s' % (index, ', '.join(missing[:5])))

    def hash_phase(self, phase, jobs, remote):
        """Hash (key, path, kind) jobs in parallel; returns ({key: problem} for mismatches, seconds, bytes)."""
        self.progress.start(phase, sum(remote[key[1]]['size'] for key, _path, _kind in jobs), len(jobs))
        results, errors, seconds, nbytes = hash_files(jobs, self.hash_workers, self.progress.add)
        bad = {}
        for key, digest in results.items():
            kind, want = expected_digest(remote[key[1]])
            if errors.get(key):
                bad[key] = 'unreadable: %s' % errors[key]
            elif digest != want:
                bad[key] = '%s %s, the Hub lists %s' % (kind, digest, want)
        self.verify_seconds += seconds
        self.verified_bytes += nbytes
        self.verified_files += len(jobs)
        return bad

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
        # Leftovers: staging of other commits, a half-finished swap or removal, the client's partial files.
        for name in os.listdir(paths['work']):
            full = os.path.join(paths['work'], name)
            if (name.startswith('partial-') and full != staging) or name in ('old', 'removing'):
                remove_path(full)
        remove_path(os.path.join(staging, HF_LOCAL_CACHE_DIR))
        # Planned again under the lock: another run may have finished in between.
        dest_files = scan_tree(dest)
        plan = make_plan(remote, marker, dest_files, scan_tree(staging), p['verify'])
        result['plan'] = plan_summary(plan, remote)
        self.space_or_fail(result['repo_id'], plan['download'], remote)

        self.hash_workers = result['hash_workers']
        self.verify_seconds, self.verified_bytes, self.verified_files = 0.0, 0, 0
        # Where each file of the final tree is right now, and whether this run hashed it.
        hashed = {}

        # 1. Hash what is on disk but not vouched for by the marker, in place and in the staging directory.
        jobs = ([(('dest', x), os.path.join(dest, x), kind) for x, _f, kind in hash_jobs(plan['verify'], dest, remote)]
                + [(('staged', x), os.path.join(staging, x), kind) for x, _f, kind in hash_jobs(plan['verify_staged'], staging, remote)])
        if jobs:
            bad = self.hash_phase('verify-existing', jobs, remote)
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
        result['repaired'] = sorted(x for x in plan['download'] if x in dest_files)

        # 2. Download into staging and hash every download; a mismatch is fetched again (download_retries times).
        to_fetch = sorted(plan['download'])
        downloaded = []
        download_seconds, downloaded_bytes, downloaded_files, attempts = 0.0, 0, 0, 0
        while to_fetch:
            attempts += 1
            if not os.path.isdir(staging):
                os.makedirs(staging)
            fetch_bytes = sum(remote[x]['size'] for x in to_fetch)
            self.progress.start('download', fetch_bytes, len(to_fetch))
            t0 = time.time()
            failures = download_files(self.hf(), p, commit, to_fetch, staging, remote, self.progress)
            download_seconds += time.time() - t0
            if failures:
                raise HubError('; '.join(failures[k] for k in sorted(failures)))
            downloaded_bytes += fetch_bytes
            downloaded_files += len(to_fetch)
            bad = self.hash_phase('verify', [(('staged', x), f, kind) for x, f, kind in hash_jobs(to_fetch, staging, remote)],
                                  remote)
            bad = dict((key[1], problem) for key, problem in bad.items())
            for path in to_fetch:
                if path in bad:
                    os.unlink(os.path.join(staging, path))  # never leave a bad file behind
                else:
                    downloaded.append(path)
                    hashed[path] = staging
            if bad and attempts > p['download_retries']:
                raise HubError('hash mismatch after %d downloads: %s'
                               % (attempts, '; '.join('%s: %s' % (k, bad[k]) for k in sorted(bad))))
            to_fetch = sorted(bad)

        # Structural check of every safetensors file this run hashed (header only, cheap).
        for path in sorted(hashed):
            if path.endswith('.safetensors'):
                problem = safetensors_header_error(os.path.join(hashed[path], path))
                if problem:
                    raise HubError('%s matches the Hub hash but is not a valid safetensors file: %s' % (path, problem))

        result.update(downloaded_files=downloaded_files, downloaded_bytes=downloaded_bytes,
                      download_seconds=round(download_seconds, 3), download_mb_per_s=rate_mb(downloaded_bytes, download_seconds),
                      verified_files=self.verified_files, verified_bytes=self.verified_bytes,
                      verify_seconds=round(self.verify_seconds, 3),
                      verify_mb_per_s=rate_mb(self.verified_bytes, self.verify_seconds))

        # 3. Put the verified state in place.
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
        if self.module._diff:
            result['diff'] = tree_diff(self.dest, plan, marker, remote, commit)
        result['total_seconds'] = round(time.time() - self.started, 3)
        return result

    def finish_tree(self, root, remote, commit, old_marker=None):
        """Owner/mode of the model files and their directories, then the marker; True when anything changed."""
        changed = ensure_perms(root, list(remote), self.uid, self.gid, self.file_mode)
        new_marker = self.new_marker(root, remote, commit)
        if not marker_equivalent(old_marker, new_marker):
            write_file_atomic(os.path.join(root, MARKER_NAME), marker_json(new_marker), self.file_mode, self.uid, self.gid)
            changed += 1
        return changed > 0


def fsync_dir(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type='str', choices=['present', 'absent'], default='present'),
            repo_id=dict(type='str'),
            revision=dict(type='str', default='main'),
            dest=dict(type='path', required=True),
            allow_patterns=dict(type='list', elements='str'),
            ignore_patterns=dict(type='list', elements='str'),
            token=dict(type='str', no_log=True),
            endpoint=dict(type='str'),
            max_workers=dict(type='int', default=8),
            high_performance=dict(type='bool', default=False),
            forbidden_paths=dict(type='list', elements='path', default=['/data']),
            verify=dict(type='str', choices=['quick', 'full'], default='quick'),
            hash_workers=dict(type='int', default=0),
            free_space_margin_mb=dict(type='int', default=1024),
            require_sha256=dict(type='bool', default=True),
            check_index=dict(type='bool', default=True),
            timeout=dict(type='int', default=30),
            download_retries=dict(type='int', default=2),
            progress_file=dict(type='path'),
            owner=dict(type='str'),
            group=dict(type='str'),
            mode=dict(type='str', default='0644'),
            service_patterns=dict(type='list', elements='str', default=['sglang-*.service']),
            force=dict(type='bool', default=False),
        ),
        required_if=[('state', 'present', ['repo_id'])],
        supports_check_mode=True,
    )
    p = module.params
    p['dest'] = os.path.normpath(p['dest']) if p['dest'] else p['dest']
    if p['endpoint']:
        p['endpoint'] = p['endpoint'].rstrip('/')
    started = time.time()
    if p['state'] == 'absent':
        run_absent(module, p, started)
    else:
        run_present(module, p, started)


if __name__ == '__main__':
    main()
