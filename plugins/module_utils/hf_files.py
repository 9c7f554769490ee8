# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Pure logic behind the ``hf_snapshot`` module and the ``hf_model`` role (standard library only).

* input checks: repo id, revision, destination (forbidden paths resolved through symlinks and mount points);
* the plan: which files are fine (marker + size + mtime), need hashing, need a download, or are stale;
* the marker file that records a verified model (revision, per-file size, hash and mtime);
* parallel hashing: sha256 for LFS files, git blob sha1 for small ones, one file per thread, 1 MiB reads
  (hashlib releases the GIL on large updates, so threads scale across cores);
* safetensors checks: index shard completeness and header sanity;
* which processes and units use a directory (``/proc`` scan, ``systemctl show`` parsing);
* progress accounting (rate over a sliding window, ETA) and the one-line progress text the controller prints;
* the directory exchange used to put a verified model in place atomically.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import fnmatch
import hashlib
import json
import os
import re
import stat
import struct
import threading
import time

MARKER_NAME = '.llmops-hf-model.json'
MARKER_FORMAT = 1
# Written by huggingface_hub inside a local_dir (per-file metadata, locks, partial downloads); never part of a model.
HF_LOCAL_CACHE_DIR = '.cache'
# 1-2 MiB reads hash fastest across many threads (the copy stays in cache); 4 MiB and up lose 5-30 % (docs/hf_model.md).
READ_CHUNK = 1024 * 1024
COMMIT_SHA_RE = re.compile(r'^[0-9a-f]{40}$')
# huggingface_hub.utils._validators.REPO_ID_REGEX, ASCII only.
_REPO_PART = r'[A-Za-z0-9_.\-]{1,96}'
REPO_ID_RE = re.compile(r'^(%s/)?%s$' % (_REPO_PART, _REPO_PART))
# Branches, tags and refs/pr/N; no whitespace, no "..", no control characters (git check-ref-format subset).
REVISION_RE = re.compile(r'^[A-Za-z0-9._/\-]{1,255}$')
# Directories a model may never replace or be removed as (the module exchanges or deletes the whole directory).
SYSTEM_DIRS = frozenset([
    '/', '/bin', '/boot', '/dev', '/etc', '/home', '/lib', '/lib32', '/lib64', '/libx32', '/media', '/mnt', '/opt',
    '/proc', '/root', '/run', '/sbin', '/srv', '/sys', '/tmp', '/usr', '/usr/local', '/var', '/var/lib', '/var/tmp',
    '/var/log', '/var/cache', '/data',
])


# ---------------------------------------------------------------------------------------------------------------
# Input checks
# ---------------------------------------------------------------------------------------------------------------

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


def repo_path_error(path):
    """None when a repo file path is safe to create under the destination (no absolute path, no '..')."""
    if not path or path.startswith('/') or '\x00' in path:
        return 'unsafe file path in repo listing: %r' % (path,)
    parts = path.split('/')
    if any(p in ('', '.', '..') for p in parts):
        return 'unsafe file path in repo listing: %r' % (path,)
    if parts[0] in (MARKER_NAME, HF_LOCAL_CACHE_DIR):
        return 'repo file %r collides with a name the module reserves' % (path,)
    return None


# ---------------------------------------------------------------------------------------------------------------
# Paths, mount points, forbidden destinations, free space
# ---------------------------------------------------------------------------------------------------------------

def existing_ancestor(path):
    """The longest existing prefix of ``path`` (``path`` itself when it exists)."""
    path = os.path.abspath(path)
    while not os.path.lexists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def mount_point(path):
    """Mount point of the file system that holds ``path`` (or would hold it, for a path not created yet)."""
    path = os.path.realpath(existing_ancestor(path))
    while not os.path.ismount(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def _under(path, root):
    root = root.rstrip('/') or '/'
    return path == root or path.startswith(root + '/') or root == '/'


def forbidden_reason(dest, forbidden_paths):
    """Why ``dest`` is refused under ``forbidden_paths``, or None.

    ``dest`` is resolved like the kernel would when creating it: symlinks in every existing component are followed
    (a symlink /srv/models -> /data/models does not hide /data). A forbidden path that is a mount point forbids its
    whole file system, so a bind mount of it elsewhere (same device, seen through ``st_dev``) is refused too.
    """
    real_dest = os.path.realpath(dest)
    dest_dev = None
    anchor = existing_ancestor(real_dest)
    try:
        dest_dev = os.stat(anchor).st_dev
    except OSError:
        pass
    for forbidden in forbidden_paths or []:
        if not forbidden:
            continue
        real_forbidden = os.path.realpath(forbidden)
        for candidate in sorted(set([os.path.normpath(forbidden), real_forbidden])):
            if _under(real_dest, candidate):
                via = '' if real_dest == os.path.abspath(dest) else ' (%s resolves to %s)' % (dest, real_dest)
                return 'destination %s is under forbidden path %s%s' % (dest, forbidden, via)
        try:
            if dest_dev is not None and os.path.ismount(real_forbidden) and real_forbidden != '/' \
                    and os.stat(real_forbidden).st_dev == dest_dev:
                return ('destination %s is on the file system mounted at forbidden path %s (same device; a bind mount'
                        ' or another mount of it)' % (dest, forbidden))
        except OSError:
            pass
    return None


def unsafe_dest_reason(dest):
    """Refuse destinations whose replacement or removal would take a system directory with it."""
    if not os.path.isabs(dest):
        return 'destination %s must be an absolute path' % dest
    real = os.path.realpath(dest)
    for candidate in (os.path.normpath(dest), real):
        if candidate in SYSTEM_DIRS:
            return 'destination %s is a system directory; use a directory of its own, e.g. /srv/models/<org>/<name>' % dest
    if len([p for p in real.split('/') if p]) < 2:
        return 'destination %s is too close to / (%s); use a directory of its own, e.g. /srv/models/<org>/<name>' % (dest, real)
    return None


def free_bytes(path):
    """Bytes available to unprivileged writers on the file system that holds (or will hold) ``path``."""
    st = os.statvfs(existing_ancestor(path))
    return st.f_bavail * st.f_frsize


def space_check(need_bytes, available_bytes, margin_bytes):
    """None when ``need_bytes`` + margin fits into ``available_bytes``, else the shortfall in bytes."""
    short = need_bytes + margin_bytes - available_bytes
    return short if short > 0 and need_bytes > 0 else None


def work_paths(dest, revision):
    """Sibling paths used next to ``dest`` (same file system, so the final rename cannot cross devices)."""
    dest = os.path.abspath(dest)
    parent, name = os.path.split(dest)
    work = os.path.join(parent, '.%s.hf_model' % name)
    return {
        'work': work,
        'lock': os.path.join(work, 'lock'),
        'staging': os.path.join(work, 'partial-%s' % revision) if revision else None,
        'old': os.path.join(work, 'old'),
        'removing': os.path.join(work, 'removing'),
    }


# ---------------------------------------------------------------------------------------------------------------
# Remote listing, marker, plan
# ---------------------------------------------------------------------------------------------------------------

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


def lstat_regular(path):
    """(size, mtime_ns) of a regular file (symlinks are not followed and count as absent), or None."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return st.st_size, st.st_mtime_ns


def scan_tree(root, skip_top=(MARKER_NAME, HF_LOCAL_CACHE_DIR)):
    """{relative path: (size, mtime_ns)} of the regular files under ``root`` (symlinks and names in skip_top skipped)."""
    found = {}
    if not os.path.isdir(root):
        return found
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir == '.':
            dirnames[:] = [d for d in dirnames if d not in skip_top]
            filenames = [f for f in filenames if f not in skip_top]
        for name in filenames:
            rel = name if rel_dir == '.' else rel_dir + '/' + name
            st = lstat_regular(os.path.join(dirpath, name))
            if st is not None:
                found[rel] = st
    return found


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


def missing_lfs_hashes(remote, lfs_paths):
    """LFS files whose listing entry carries no sha256 (cannot be verified end to end)."""
    return sorted(p for p in lfs_paths if p in remote and not remote[p].get('sha256'))


# ---------------------------------------------------------------------------------------------------------------
# safetensors
# ---------------------------------------------------------------------------------------------------------------

def index_shards(index_text):
    """Shard file names referenced by a ``*.safetensors.index.json`` weight_map (relative to the index file)."""
    data = json.loads(index_text)
    weight_map = data.get('weight_map') if isinstance(data, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise ValueError('no weight_map in index')
    return sorted(set(str(v) for v in weight_map.values()))


def index_missing_shards(index_path, index_text, wanted_paths):
    """Shards an index names that are not in ``wanted_paths`` (the file set after patterns), as repo paths."""
    base = os.path.dirname(index_path)
    missing = []
    for shard in index_shards(index_text):
        repo_path = shard if not base else base + '/' + shard
        if repo_path not in wanted_paths:
            missing.append(repo_path)
    return missing


def safetensors_header_error(path):
    """Cheap structural check of a .safetensors file: 8-byte LE header length, JSON header, data ends at EOF."""
    try:
        size = os.path.getsize(path)
        with open(path, 'rb') as handle:
            raw = handle.read(8)
            if len(raw) < 8:
                return 'shorter than the 8-byte header length'
            header_len = struct.unpack('<Q', raw)[0]
            if header_len > size - 8 or header_len > 100 * 1024 * 1024:
                return 'header length %d does not fit the file size %d' % (header_len, size)
            header = json.loads(handle.read(header_len).decode('utf-8'))
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        return 'unreadable header: %s' % exc
    end = 0
    for name, info in header.items():
        if name == '__metadata__':
            continue
        try:
            end = max(end, int(info['data_offsets'][1]))
        except (KeyError, IndexError, TypeError, ValueError):
            return 'tensor %r has no data_offsets' % name
    if 8 + header_len + end != size:
        return 'tensor data ends at byte %d but the file has %d bytes' % (8 + header_len + end, size)
    return None


# ---------------------------------------------------------------------------------------------------------------
# Hashing
# ---------------------------------------------------------------------------------------------------------------

def usable_cpus():
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def hash_file(path, kind='sha256', progress=None, chunk=READ_CHUNK):
    """Hex digest of a file: 'sha256' of the content or 'git_sha1' (sha1 of "blob <size>\\0" + content).

    Reads into one reusable buffer (no per-chunk allocation); hashlib releases the GIL for these large updates.
    ``progress(n)`` is called after each chunk.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if hasattr(os, 'posix_fadvise'):
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
            except OSError:
                pass
        if kind == 'git_sha1':
            digest = hashlib.sha1(('blob %d\0' % size).encode('ascii'))
        else:
            digest = hashlib.new(kind)
        buf = bytearray(chunk)
        view = memoryview(buf)
        with os.fdopen(fd, 'rb', buffering=0, closefd=False) as handle:
            while True:
                n = handle.readinto(buf)
                if not n:
                    break
                digest.update(view[:n])
                if progress is not None:
                    progress(n)
        return digest.hexdigest()
    finally:
        os.close(fd)


def hash_files(jobs, workers=0, progress=None):
    """Hash many files in parallel, one file per thread, biggest first (so one huge shard does not start last).

    jobs: list of (key, path, kind). Returns ({key: hexdigest or None}, {key: error}, seconds, bytes).
    SHA-256 is sequential within a file, so the speed-up is across files, up to min(workers, len(jobs)).
    """
    from concurrent.futures import ThreadPoolExecutor

    workers = workers or usable_cpus()
    sized = []
    for key, path, kind in jobs:
        try:
            size = os.path.getsize(path)
        except OSError:
            size = 0
        sized.append((size, key, path, kind))
    sized.sort(key=lambda item: -item[0])
    results, errors = {}, {}
    started = time.time()
    if not sized:
        return results, errors, 0.0, 0

    def one(item):
        size, key, path, kind = item
        try:
            return key, hash_file(path, kind, progress), None
        except (OSError, ValueError) as exc:
            return key, None, str(exc)

    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(sized)))) as pool:
        for key, digest, error in pool.map(one, sized):
            results[key] = digest
            if error:
                errors[key] = error
    return results, errors, time.time() - started, sum(item[0] for item in sized)


# ---------------------------------------------------------------------------------------------------------------
# Who uses a directory
# ---------------------------------------------------------------------------------------------------------------

def _mentions(text, roots):
    """True when ``text`` contains one of ``roots`` as a whole path (followed by end, '/', or a separator)."""
    for root in roots:
        start = text.find(root)
        while start != -1:
            end = start + len(root)
            before_ok = start == 0 or text[start - 1] in ' =:,"\'\t'
            after_ok = end == len(text) or text[end] in '/ :,"\'\t'
            if before_ok and after_ok:
                return True
            start = text.find(root, start + 1)
    return False


def _unit_of(cgroup_text):
    for line in cgroup_text.splitlines():
        for part in reversed(line.split(':', 2)[-1].split('/')):
            if part.endswith(('.service', '.scope')):
                return part
    return None


def find_path_users(path, proc_root='/proc', skip_pids=None):
    """Processes whose cwd, exe, root, command line, memory maps or open files are under ``path``.

    Returns [{'pid', 'comm', 'unit', 'reasons'}]. Processes that vanish or cannot be read are skipped.
    """
    roots = sorted(set(p.rstrip('/') for p in (os.path.abspath(path), os.path.realpath(path))))
    skip = set(skip_pids or ()) | {os.getpid()}
    users = []
    try:
        pids = [int(p) for p in os.listdir(proc_root) if p.isdigit()]
    except OSError:
        return users
    for pid in sorted(pids):
        if pid in skip:
            continue
        base = os.path.join(proc_root, str(pid))
        reasons = []
        for link in ('cwd', 'exe', 'root'):
            try:
                target = os.readlink(os.path.join(base, link))
            except OSError:
                continue
            target = target.replace(' (deleted)', '')
            if link == 'root' and target == '/':
                continue
            if any(_under(target, r) for r in roots):
                reasons.append(link)
        try:
            with open(os.path.join(base, 'cmdline'), 'rb') as handle:
                argv = handle.read().decode('utf-8', 'replace').split('\0')
            if any(_mentions(arg, roots) for arg in argv if arg):
                reasons.append('cmdline')
        except OSError:
            pass
        try:
            with open(os.path.join(base, 'maps'), 'r') as handle:
                for line in handle:
                    fields = line.split(None, 5)
                    if len(fields) == 6 and any(_under(fields[5].strip().replace(' (deleted)', ''), r) for r in roots):
                        reasons.append('mmap')
                        break
        except (OSError, UnicodeDecodeError):
            pass
        try:
            fd_dir = os.path.join(base, 'fd')
            for fd in os.listdir(fd_dir):
                try:
                    target = os.readlink(os.path.join(fd_dir, fd)).replace(' (deleted)', '')
                except OSError:
                    continue
                if target.startswith('/') and any(_under(target, r) for r in roots):
                    reasons.append('open file')
                    break
        except OSError:
            pass
        if not reasons:
            continue
        entry = {'pid': pid, 'reasons': reasons, 'comm': None, 'unit': None}
        try:
            with open(os.path.join(base, 'comm')) as handle:
                entry['comm'] = handle.read().strip()
        except OSError:
            pass
        try:
            with open(os.path.join(base, 'cgroup')) as handle:
                entry['unit'] = _unit_of(handle.read())
        except OSError:
            pass
        users.append(entry)
    return users


def parse_systemctl_show(text):
    """``systemctl show -p A -p B u1 u2`` output -> [{prop: value}] (units separated by blank lines)."""
    units, current = [], {}
    for line in text.splitlines():
        if not line.strip():
            if current:
                units.append(current)
                current = {}
            continue
        key, _sep, value = line.partition('=')
        current[key] = value
    if current:
        units.append(current)
    return units


def units_using(units, path):
    """Active units (parsed ``systemctl show``) whose ExecStart/WorkingDirectory/Environment name ``path``."""
    roots = sorted(set(p.rstrip('/') for p in (os.path.abspath(path), os.path.realpath(path))))
    found = []
    for unit in units:
        if unit.get('ActiveState') not in ('active', 'activating', 'reloading', 'deactivating'):
            continue
        for prop in ('ExecStart', 'WorkingDirectory', 'Environment', 'RootDirectory', 'BindPaths', 'BindReadOnlyPaths'):
            if _mentions(unit.get(prop, ''), roots):
                found.append({'unit': unit.get('Id'), 'property': prop, 'main_pid': int(unit.get('MainPID') or 0)})
                break
    return found


SYSTEMCTL_SHOW_PROPS = ('Id', 'ActiveState', 'MainPID', 'ExecStart', 'WorkingDirectory', 'Environment', 'RootDirectory',
                        'BindPaths', 'BindReadOnlyPaths')


def active_units_using(run, systemctl, path, patterns):
    """Running units matching ``patterns`` whose definition names ``path``; [] without systemd.

    ``run(argv) -> (rc, stdout, stderr)`` (AnsibleModule.run_command in a module, a fake in tests).
    """
    if not systemctl or not patterns or not os.path.isdir('/run/systemd/system'):
        return []
    rc, out, _err = run([systemctl, 'list-units', '--type=service', '--state=active,activating,reloading,deactivating',
                         '--plain', '--no-legend', '--no-pager'] + list(patterns))
    names = [line.split()[0] for line in out.splitlines() if line.strip()] if rc == 0 else []
    if not names:
        return []
    argv = [systemctl, 'show', '--no-pager']
    for prop in SYSTEMCTL_SHOW_PROPS:
        argv += ['-p', prop]
    rc, out, _err = run(argv + names)
    return units_using(parse_systemctl_show(out), path) if rc == 0 else []


def describe_users(processes, units):
    parts = ['unit %s (%s names the model directory, main PID %s)' % (u['unit'], u['property'], u['main_pid'])
             for u in units]
    for proc in processes:
        parts.append('PID %d (%s%s: %s)' % (proc['pid'], proc['comm'] or '?', ', ' + proc['unit'] if proc.get('unit') else '',
                                            ', '.join(proc['reasons'])))
    return '; '.join(parts)


# ---------------------------------------------------------------------------------------------------------------
# Progress
# ---------------------------------------------------------------------------------------------------------------

def fmt_bytes(n):
    n = float(n or 0)
    for unit in ('B', 'KB', 'MB', 'GB', 'TB'):
        if abs(n) < 1000 or unit == 'TB':
            return ('%.0f %s' if unit == 'B' else '%.1f %s') % (n, unit)
        n /= 1000.0
    return '%.1f TB' % n


def fmt_duration(seconds):
    if seconds is None:
        return '?'
    seconds = int(round(seconds))
    if seconds < 60:
        return '%ds' % seconds
    if seconds < 3600:
        return '%dm%02ds' % (seconds // 60, seconds % 60)
    return '%dh%02dm' % (seconds // 3600, (seconds % 3600) // 60)


def progress_line(progress, now=None):
    """One human line from a progress dict (what the controller prints at every poll)."""
    if not progress:
        return 'waiting for the first progress report'
    now = now or time.time()
    phase = progress.get('phase', '?')
    text = '%s %s' % (phase, progress.get('label', ''))
    total = progress.get('bytes_total') or 0
    done = progress.get('bytes_done') or 0
    if total:
        text += ': %s / %s (%.1f%%)' % (fmt_bytes(done), fmt_bytes(total), 100.0 * done / total)
        rate = progress.get('rate_bps')
        if rate:
            text += ', %s/s' % fmt_bytes(rate)
        eta = progress.get('eta_s')
        # The client reports downloads in 10 MB chunks: before the first ones arrive an ETA is noise.
        if eta is not None and done < total and done >= total / 100.0 and eta < 7 * 86400:
            text += ', ETA %s' % fmt_duration(eta)
    if progress.get('files_total'):
        text += ', %d/%d files' % (progress.get('files_done', 0), progress['files_total'])
    if progress.get('message'):
        text += ' - %s' % progress['message']
    age = now - (progress.get('updated') or now)
    if age > 60:
        text += ' (no report for %s)' % fmt_duration(age)
    return text.replace('  ', ' ').strip()


class Progress(object):
    """Thread-safe byte/file counters for one phase, with a rate over the last ``window`` seconds.

    ``write()`` dumps a JSON snapshot atomically (tmp file + rename) for the controller to read.
    """

    def __init__(self, path=None, label='', window=30.0, clock=time.time):
        self.path = path
        self.label = label
        self.window = window
        self.clock = clock
        self.lock = threading.Lock()
        self.phase = 'plan'
        self.message = None
        self._reset(0, 0)

    def _reset(self, bytes_total, files_total):
        self.bytes_total = bytes_total
        self.files_total = files_total
        self.bytes_done = 0
        self.files_done = 0
        self.started = self.clock()
        self.samples = [(self.started, 0)]

    def start(self, phase, bytes_total=0, files_total=0, message=None):
        with self.lock:
            self.phase = phase
            self.message = message
            self._reset(bytes_total, files_total)
        self.write()

    def add(self, n):
        with self.lock:
            self.bytes_done += n

    def file_done(self):
        with self.lock:
            self.files_done += 1

    def snapshot(self):
        with self.lock:
            now = self.clock()
            self.samples.append((now, self.bytes_done))
            while len(self.samples) > 2 and now - self.samples[1][0] > self.window:
                self.samples.pop(0)
            t0, b0 = self.samples[0]
            rate = (self.bytes_done - b0) / (now - t0) if now - t0 > 0.5 else None
            eta = None
            if rate and self.bytes_total > self.bytes_done:
                eta = (self.bytes_total - self.bytes_done) / rate
            return {
                'label': self.label, 'phase': self.phase, 'message': self.message,
                'bytes_done': self.bytes_done, 'bytes_total': self.bytes_total,
                'files_done': self.files_done, 'files_total': self.files_total,
                'rate_bps': rate, 'eta_s': eta, 'phase_seconds': now - self.started,
                'updated': now, 'pid': os.getpid(),
            }

    def write(self):
        if not self.path:
            return
        data = json.dumps(self.snapshot())
        tmp = '%s.tmp-%d' % (self.path, os.getpid())
        try:
            with open(tmp, 'w') as handle:
                handle.write(data)
            os.rename(tmp, self.path)
        except OSError:
            pass  # progress is best effort; the download must not fail for it


class ProgressWriter(threading.Thread):
    """Background thread that writes the progress file every ``interval`` seconds until stopped."""

    def __init__(self, progress, interval=2.0):
        super(ProgressWriter, self).__init__()
        self.daemon = True
        self.progress = progress
        self.interval = interval
        self.stopped = threading.Event()

    def run(self):
        while not self.stopped.wait(self.interval):
            self.progress.write()

    def stop(self):
        self.stopped.set()
        self.progress.write()


# ---------------------------------------------------------------------------------------------------------------
# Putting a verified tree in place
# ---------------------------------------------------------------------------------------------------------------

RENAME_EXCHANGE = 2


def exchange_dirs(a, b):
    """Swap two directory entries atomically with renameat2(RENAME_EXCHANGE). False when not supported.

    Readers see either the old or the new tree under the name, never a missing directory.
    """
    try:
        import ctypes
        import ctypes.util
        libc = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6', use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError, ImportError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd = -100
    if renameat2(at_fdcwd, a.encode(), at_fdcwd, b.encode(), RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), a)


def replace_dir(new, dest, old):
    """Put directory ``new`` at ``dest``; the previous ``dest`` (if any) ends up at ``old`` for the caller to delete.

    Atomic exchange when the kernel and file system allow it, else two renames (a window of a few microseconds in
    which ``dest`` does not exist). Returns 'exchange', 'rename' or 'new'.
    """
    if not os.path.lexists(dest):
        os.rename(new, dest)
        return 'new'
    if os.path.lexists(old):
        raise OSError(errno.EEXIST, 'leftover directory, remove it first', old)
    if exchange_dirs(new, dest):
        os.rename(new, old)  # ``new`` now names the previous tree
        return 'exchange'
    os.rename(dest, old)
    os.rename(new, dest)
    return 'rename'
