# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""make compare's layouts: the VRAM planner's own capacity, and a layout that does not fit is never ranked."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import yaml

from ansible_collections.llmops.inference.plugins.module_utils.compare import layouts as lay
from ansible_collections.llmops.inference.plugins.module_utils.compare import perf
from ansible_collections.llmops.inference.plugins.module_utils.compare import rank
from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan

from collection_paths import ROOT, release


def profile(kind, name):
    with open(os.path.join(ROOT, 'profiles', kind, name + '.yml')) as handle:
        return yaml.safe_load(handle)


M122 = profile('models', 'qwen3.5-122b-a10b')
RTX = profile('hardware', 'rtx-pro-6000-blackwell-server')
TRAFFIC = dict(isl=1024, osl=1024, rate=1.0, ttft_p99_ms=2000.0, tpot_p99_ms=50.0)
FIT = dict(kd=1.0, t_fwd=0.0, ttft_s=0.0, basis='roofline', basis_ttft='roofline')


def seed_layouts(gpus=4):
    return lay.enumerate_layouts(M122, RTX, release(), gpus, 1024, 1024)


def test_capacity_is_the_planners_own():
    rel = release()
    checked = 0
    for row in seed_layouts():
        if row['result'] is None:
            continue
        # Planned again the way plugin_utils/deployment/fits.py feeds a profile, without compare's facts cache.
        again = vram_plan.plan(model_config=M122['config'], weights_bytes=M122.get('weights_bytes'), gpu_profile=RTX,
                               tp_size=row['tp'], release=rel, kv_cache_dtype=row['kv_dtype'],
                               context_length=row['context'], **row['spec_kwargs'])
        cap = row['capacity']
        assert (cap['kv_tokens'], cap['max_running'], cap['mamba_slots'], cap['bound_by']) == (
            again['kv_cache_tokens'], again['max_running_requests'], again['mamba_cache_slots'],
            again['max_running_requests_bound_by'])
        checked += 1
    assert checked >= 4


def test_replicas_times_tp_never_exceed_the_gpus():
    rows = seed_layouts(8)
    assert rows and all(r['replicas'] * r['tp'] <= 8 for r in rows)
    assert set(r['tp'] for r in rows) == {1, 2, 4, 8}


def test_a_layout_that_does_not_fit_is_never_ranked():
    rows = seed_layouts()
    hw = perf.hardware(RTX)
    band = dict(decode=None, ttft=None)
    evaluated = [rank.evaluate(row, hw, TRAFFIC, FIT, band) for row in rows]
    unfit = [r for r in evaluated if not r['fits']]
    assert unfit, 'TP1 and TP2 of the 122B BF16 model cannot load on a 96 GB GPU'
    # Even a non-fitting row that claims the best numbers stays out of the ranking.
    fake = dict(unfit[0], meets='yes', tok_s_gpu=1e9)
    ranked = rank.rank(evaluated + [fake])
    assert ranked and all(r['fits'] for r in ranked)
    assert not any(r is fake for r in ranked)
    assert set(r['tp'] for r in ranked) == {4}


def test_speculative_options_follow_the_profile():
    rel = release()
    names = {}
    for model in ('qwen3.5-122b-a10b', 'qwen3-32b', 'qwen3-32b-eagle3'):
        data = profile('models', model)
        facts = vram_plan.model_facts_once(data['config'], rel)
        names[model] = [name for name, dummy, dummy2 in lay.spec_options(data, facts)]
    assert names == {'qwen3.5-122b-a10b': ['off', 'mtp'], 'qwen3-32b': ['off'], 'qwen3-32b-eagle3': ['off', 'eagle3']}


def test_the_traffic_context_is_offered_when_shorter_than_the_model():
    facts = dict(context=262144)
    assert lay.contexts(facts, 1024, 1024) == [None, 4096]
    assert lay.contexts(facts, 300000, 1024) == [None]
