# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""make compare's PD layouts: pd_check's refusals are never ranked, each side is the planner's own, the KV transfer
grows with ISL, and no PD layout uses more GPUs than given."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import yaml

from ansible_collections.llmops.inference.plugins.module_utils.compare import layouts as lay
from ansible_collections.llmops.inference.plugins.module_utils.compare import pd
from ansible_collections.llmops.inference.plugins.module_utils.compare import perf
from ansible_collections.llmops.inference.plugins.module_utils.compare import report
from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan
from ansible_collections.llmops.inference.plugins.module_utils.sglang import pd_check

from collection_paths import ROOT, release


def profile(kind, name):
    with open(os.path.join(ROOT, 'profiles', kind, name + '.yml')) as handle:
        return yaml.safe_load(handle)


M32 = profile('models', 'qwen3-32b')
M122 = profile('models', 'qwen3.5-122b-a10b')
H100 = profile('hardware', 'h100-80gb')
RTX = profile('hardware', 'rtx-pro-6000-blackwell-server')
TRAFFIC = dict(isl=1024, osl=1024, rate=1.0, ttft_p99_ms=2000.0, tpot_p99_ms=50.0)
FIT = dict(kd=1.0, t_fwd=0.0, ttft_s=0.0, basis='roofline', basis_ttft='roofline')


def evaluated(model, gpu, gpus, traffic=None):
    traffic = traffic or TRAFFIC
    rows = pd.enumerate_pd(model, gpu, release(), gpus, traffic['isl'], traffic['osl'])
    return [pd.evaluate(row, perf.hardware(gpu), traffic, FIT, {}, gpu) for row in rows]


def test_refused_layouts_are_never_ranked_and_show_their_rule():
    rows = evaluated(M32, H100, 4)
    refused = [r for r in rows if r['refusals']]
    assert refused, 'expected pd_check to refuse some qwen3-32b layouts (unequal TP, not MLA)'
    for row in refused:
        assert row['refusals'] == pd_check.check(row['check_layout'], release())
        assert not row['fits']
        for item in row['refusals']:
            assert '[%s]' % item['rule'] in row['why']
    ranked = pd.rank(rows)
    assert ranked
    names = set(r['name'] for r in ranked)
    assert not names & set(r['name'] for r in refused)
    for row in ranked:
        assert pd_check.check(row['check_layout'], release()) == []
    result = dict(knobs=dict(gpus=4), gpu=H100, pd_rows=rows, pd_ranked=ranked, ranked=[], release=release())
    text = '\n'.join(report.pd_section(result))
    for row in refused:
        for item in row['refusals']:
            assert '| %s |' % item['rule'] in text


def test_each_side_is_a_fresh_plan():
    rel = release()
    facts = vram_plan.model_facts_once(M32.get('config'), rel)
    checked = 0
    for row in pd.enumerate_pd(M32, H100, rel, 4, 1024, 1024):
        for key in ('prefill', 'decode'):
            info = row['side'][key]
            if info['capacity'] is None:
                continue
            spec = dict((name, kwargs) for name, kwargs, dummy in lay.spec_options(M32, facts))[row['spec']]
            fresh, dummy = lay.plan_one(M32, H100, rel, facts, row[key][1], spec, row['kv_dtype'],
                                        lay.contexts(facts, 1024, 1024)[-1], 4)
            assert info['capacity']['kv_tokens'] == fresh['kv_cache_tokens']
            assert info['capacity']['max_running'] == fresh['max_running_requests']
            assert info['capacity']['context'] == fresh['context_length']
            checked += 1
    assert checked


def test_kv_transfer_grows_with_isl():
    row = [r for r in pd.enumerate_pd(M32, H100, release(), 4, 1024, 1024) if r['fits']][0]
    cost = row['side']['prefill']['cost']
    times = [pd.transfer_time(cost, isl, row['backend'], H100) for isl in (256, 1024, 8192)]
    assert times[0] < times[1] < times[2]
    assert pd.transfer_bytes(cost, 1024) >= 1024 * cost['cell'] * cost['tp']
    # The transfer is part of TTFT: the same layout at a longer ISL waits longer for its first token.
    short, long_ = (pd.evaluate(row, perf.hardware(H100), dict(TRAFFIC, isl=isl), FIT, {}, H100) for isl in (256, 1024))
    assert short['transfer_ms'] < long_['transfer_ms']


def test_tcp_backend_without_infiniband():
    assert pd.transfer_backend(None)[0] in pd_check.FACTS['tcp_backends']
    assert pd.transfer_backend(dict(infiniband=True, memlock_unlimited=True))[0] in pd_check.FACTS['rdma_backends']
    assert pd.link_bytes_s('mooncake_tcp', H100) <= H100['pcie_bandwidth_gbs'] * 1e9


def test_no_layout_uses_more_gpus_than_given():
    for gpus in (2, 4, 8):
        rows = pd.enumerate_pd(M32, H100, release(), gpus, 1024, 1024)
        assert rows
        for row in rows:
            used = row['prefill'][0] * row['prefill'][1] + row['decode'][0] * row['decode'][1]
            assert row['gpus'] == used <= gpus
            assert len(row['check_layout']['prefill']) == row['prefill'][0]
            assert len(row['check_layout']['decode']) == row['decode'][0]
    assert pd.shapes(1) == []


def test_seed_on_four_gpus_has_no_pd_layout_but_eight_do():
    assert not pd.rank(evaluated(M122, RTX, 4))
    ranked = pd.rank(evaluated(M122, RTX, 8))
    assert ranked and all(r['gpus'] <= 8 for r in ranked)
    for row in ranked:
        assert row['tok_s_gpu'] == row['slo_rate'] * TRAFFIC['osl'] / row['gpus']
