# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""hf_verify: hashing against the Hub listing with totals, and the safetensors check of hashed files."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib

from ansible_collections.llmops.inference.plugins.module_utils.hf import listing as hf_listing
from ansible_collections.llmops.inference.plugins.module_utils.hf import verify as hf_verify
from ansible_collections.llmops.inference.plugins.module_utils.common import progress_file


def test_verifier_reports_mismatches_and_adds_up(tmp_path):
    good, bad = b'good bytes', b'bad bytes'
    (tmp_path / 'a.bin').write_bytes(good)
    (tmp_path / 'b.bin').write_bytes(bad)
    remote = {'a.bin': hf_listing.remote_entry(len(good), hashlib.sha256(good).hexdigest()),
              'b.bin': hf_listing.remote_entry(len(bad), 'f' * 64),
              'c.bin': hf_listing.remote_entry(1)}  # no hash: nothing to check
    jobs = hf_verify.hash_jobs(sorted(remote), str(tmp_path), remote)
    assert [(path, kind) for path, _full, kind in jobs] == [('a.bin', 'sha256'), ('b.bin', 'sha256')]
    progress = progress_file.Progress()
    verifier = hf_verify.Verifier(remote, 2, progress)
    problems = verifier.check('verify', [(('dest', path), full, kind) for path, full, kind in jobs])
    assert list(problems) == [('dest', 'b.bin')] and problems[('dest', 'b.bin')].endswith('the Hub lists ' + 'f' * 64)
    assert (verifier.files, verifier.nbytes) == (2, len(good) + len(bad))
    assert progress.phase == 'verify' and progress.bytes_done == len(good) + len(bad)


def test_invalid_safetensors(tmp_path):
    (tmp_path / 'w.safetensors').write_bytes(b'\x01\x02')
    (tmp_path / 'config.json').write_text('{}')
    assert hf_verify.invalid_safetensors({'config.json': str(tmp_path)}) is None
    path, problem = hf_verify.invalid_safetensors({'config.json': str(tmp_path), 'w.safetensors': str(tmp_path)})
    assert path == 'w.safetensors' and 'shorter' in problem
