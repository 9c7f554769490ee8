# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Hashing many large files in parallel: sha256 of the content or the git blob sha1, one file per thread.

PRIVATE to the collection. hashlib releases the GIL on large updates, so threads scale across cores; SHA-256 is
sequential within a file, so the speed-up is across files.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os
import time

# 1-2 MiB reads hash fastest across many threads (the copy stays in cache); 4 MiB and up lose 5-30 % (docs/hf_model.md).
READ_CHUNK = 1024 * 1024


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
