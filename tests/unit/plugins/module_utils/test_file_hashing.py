# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""file_hashing: sha256 and git blob sha1 of files, hashed in parallel."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os
import subprocess
import time

from ansible_collections.llmops.inference.plugins.module_utils.common import file_hashing


def test_hash_file_sha256_and_git_sha1(tmp_path):
    data = os.urandom(3 * 1024 * 1024 + 17)
    path = tmp_path / 'f'
    path.write_bytes(data)
    seen = []
    assert file_hashing.hash_file(str(path), 'sha256', seen.append, chunk=1024 * 1024) == hashlib.sha256(data).hexdigest()
    assert sum(seen) == len(data) and len(seen) == 4
    git = hashlib.sha1(b'blob %d\0' % len(data) + data).hexdigest()
    assert file_hashing.hash_file(str(path), 'git_sha1') == git


def test_git_sha1_matches_git(tmp_path):
    path = tmp_path / 'config.json'
    path.write_text('{"a": 1}\n')
    out = subprocess.run(['git', 'hash-object', str(path)], check=True, stdout=subprocess.PIPE,
                         universal_newlines=True).stdout.strip()
    assert file_hashing.hash_file(str(path), 'git_sha1') == out


def test_hash_files_parallel(tmp_path):
    jobs, want = [], {}
    for i in range(5):
        data = os.urandom(100000 * (i + 1))
        (tmp_path / str(i)).write_bytes(data)
        jobs.append((str(i), str(tmp_path / str(i)), 'sha256'))
        want[str(i)] = hashlib.sha256(data).hexdigest()
    jobs.append(('gone', str(tmp_path / 'gone'), 'sha256'))
    results, errors, seconds, nbytes = file_hashing.hash_files(jobs, workers=3)
    assert dict((k, v) for k, v in results.items() if k != 'gone') == want
    assert results['gone'] is None and 'gone' in errors
    assert nbytes == sum(100000 * (i + 1) for i in range(5)) and seconds >= 0
    assert file_hashing.hash_files([], 2) == ({}, {}, 0.0, 0)


def test_hash_files_uses_threads_in_parallel(tmp_path, monkeypatch):
    """Files are hashed concurrently (one thread per file): two slow files overlap in time."""
    for name in 'ab':
        (tmp_path / name).write_bytes(b'x' * 10)
    spans = {}

    def slow(path, kind='sha256', progress=None, chunk=0):
        start = time.time()
        time.sleep(0.3)
        spans[path] = (start, time.time())
        return 'h'

    monkeypatch.setattr(file_hashing, 'hash_file', slow)
    file_hashing.hash_files([('a', str(tmp_path / 'a'), 'sha256'), ('b', str(tmp_path / 'b'), 'sha256')], workers=2)
    first, second = sorted(spans.values())
    assert first[0] < second[1] and second[0] < first[1]
