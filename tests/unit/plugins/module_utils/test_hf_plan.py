# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""hf_plan: what a sync does with each file, from the listing, the marker and the files on disk."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.hf import listing as hf_listing
from ansible_collections.llmops.inference.plugins.module_utils.hf import marker as hf_marker
from ansible_collections.llmops.inference.plugins.module_utils.hf import download_plan as hf_plan


SHA_A = 'a' * 64
SHA_B = 'b' * 64


def remote():
    return {
        'config.json': hf_listing.remote_entry(100, None, 'c' * 40),
        'model-1.safetensors': hf_listing.remote_entry(1000, SHA_A, 'p' * 40),
        'model-2.safetensors': hf_listing.remote_entry(2000, SHA_B, 'q' * 40),
    }


def marker_for(rem, mtimes):
    return hf_marker.build_marker('o/m', 'f' * 40, 'main', None, None, None, rem,
                                  dict((p, (rem[p]['size'], mtimes[p])) for p in rem))


def test_plan_fresh_download():
    rem = remote()
    plan = hf_plan.make_plan(rem, None, {}, {})
    assert plan['download'] == sorted(rem)
    assert plan['ok'] == [] and plan['verify'] == []
    assert plan['reasons']['config.json'] == 'missing'
    summary = hf_plan.plan_summary(plan, rem)
    assert summary['bytes_to_download'] == 3100 and summary['files_to_download'] == 3


def test_plan_rerun_trusts_marker_size_and_mtime():
    rem = remote()
    disk = dict((p, (rem[p]['size'], 7)) for p in rem)
    marker = marker_for(rem, dict((p, 7) for p in rem))
    plan = hf_plan.make_plan(rem, marker, disk, {})
    assert plan['ok'] == sorted(rem)
    assert plan['verify'] == [] and plan['download'] == []
    # verify=full re-hashes everything.
    assert hf_plan.make_plan(rem, marker, disk, {}, 'full')['verify'] == sorted(rem)


def test_plan_mtime_changed_means_hash_and_size_changed_means_download():
    rem = remote()
    marker = marker_for(rem, dict((p, 7) for p in rem))
    disk = dict((p, (rem[p]['size'], 7)) for p in rem)
    disk['model-1.safetensors'] = (1000, 8)          # touched (maybe a flipped byte)
    disk['model-2.safetensors'] = (1999, 7)          # truncated
    plan = hf_plan.make_plan(rem, marker, disk, {})
    assert plan['verify'] == ['model-1.safetensors']
    assert plan['download'] == ['model-2.safetensors']
    assert plan['reasons']['model-1.safetensors'].startswith('modified since verification')
    assert plan['reasons']['model-2.safetensors'] == 'size 1999, expected 2000'


def test_plan_without_marker_hashes_what_has_the_right_size():
    rem = remote()
    disk = dict((p, (rem[p]['size'], 7)) for p in rem)
    plan = hf_plan.make_plan(rem, None, disk, {})
    assert plan['verify'] == sorted(rem)
    assert plan['reasons']['config.json'] == 'not recorded as verified'


def test_plan_new_revision_downloads_changed_content_without_reading_it():
    rem = remote()
    marker = marker_for(rem, dict((p, 7) for p in rem))
    disk = dict((p, (rem[p]['size'], 7)) for p in rem)
    new = dict(rem)
    new['model-2.safetensors'] = hf_listing.remote_entry(2000, 'c' * 64)
    plan = hf_plan.make_plan(new, marker, disk, {})
    assert plan['download'] == ['model-2.safetensors']
    assert plan['reasons']['model-2.safetensors'] == 'content changed at the Hub'
    assert plan['ok'] == ['config.json', 'model-1.safetensors']


def test_plan_staged_files_from_an_interrupted_run():
    rem = remote()
    staged = {'model-1.safetensors': (1000, 1), 'model-2.safetensors': (5, 1)}
    plan = hf_plan.make_plan(rem, None, {}, staged)
    assert plan['verify_staged'] == ['model-1.safetensors']
    assert plan['download'] == ['config.json', 'model-2.safetensors']


def test_plan_stale_and_extra_files():
    rem = remote()
    old = dict(rem)
    old['model-3.safetensors'] = hf_listing.remote_entry(10, 'd' * 64)
    marker = marker_for(old, dict((p, 7) for p in old))
    disk = dict((p, (old[p]['size'], 7)) for p in old)
    disk['my-notes.txt'] = (3, 1)
    plan = hf_plan.make_plan(rem, marker, disk, {})
    assert plan['remove'] == ['model-3.safetensors']
    assert plan['extra'] == ['my-notes.txt']
