# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Verifying model files against the Hub listing: parallel hashing with totals, and the safetensors header check.

PRIVATE to the collection. A file counts as verified only when its sha256 (LFS) or git blob sha1 (small files) is
the one the Hub lists; safetensors files that this run hashed also get a cheap structural check.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.llmops.inference.plugins.module_utils.common.file_hashing import hash_files
from ansible_collections.llmops.inference.plugins.module_utils.hf.listing import expected_digest
from ansible_collections.llmops.inference.plugins.module_utils.model.safetensors_files import safetensors_header_error


def hash_jobs(paths, root, remote):
    jobs = []
    for path in paths:
        kind, _digest = expected_digest(remote[path])
        if kind:
            jobs.append((path, os.path.join(root, path), kind))
    return jobs


class Verifier(object):
    """Hashes files of one listing (``remote``) and adds up what this run hashed (files, bytes, seconds)."""

    def __init__(self, remote, workers, progress):
        self.remote = remote
        self.workers = workers
        self.progress = progress
        self.seconds, self.nbytes, self.files = 0.0, 0, 0

    def check(self, phase, jobs):
        """Hash (key, path, kind) jobs in parallel, key = (where, repo path); returns {key: problem} for mismatches."""
        remote = self.remote
        self.progress.start(phase, sum(remote[key[1]]['size'] for key, _path, _kind in jobs), len(jobs))
        results, errors, seconds, nbytes = hash_files(jobs, self.workers, self.progress.add)
        bad = {}
        for key, digest in results.items():
            kind, want = expected_digest(remote[key[1]])
            if errors.get(key):
                bad[key] = 'unreadable: %s' % errors[key]
            elif digest != want:
                bad[key] = '%s %s, the Hub lists %s' % (kind, digest, want)
        self.seconds += seconds
        self.nbytes += nbytes
        self.files += len(jobs)
        return bad


def invalid_safetensors(hashed):
    """(path, problem) for the first ``.safetensors`` file of {path: root} whose header is broken, else None."""
    for path in sorted(hashed):
        if path.endswith('.safetensors'):
            problem = safetensors_header_error(os.path.join(hashed[path], path))
            if problem:
                return path, problem
    return None
