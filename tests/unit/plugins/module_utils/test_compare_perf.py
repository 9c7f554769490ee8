# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""make compare's step model (compare/perf.py) and the hardware facts it reads."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from ansible_collections.llmops.inference.plugins.module_utils.compare import perf
from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import profile_schema

from collection_paths import ROOT, release


def profile(kind, name):
    with open(os.path.join(ROOT, 'profiles', kind, name + '.yml')) as handle:
        return yaml.safe_load(handle)


HARDWARE = sorted(n[:-4] for n in os.listdir(os.path.join(ROOT, 'profiles', 'hardware')) if n.endswith('.yml'))
M122 = profile('models', 'qwen3.5-122b-a10b')


def planned(spec, tp=4, gpu='rtx-pro-6000-blackwell-server'):
    rel = release()
    facts = vram_plan.model_facts_once(M122['config'], rel)
    kwargs = dict(speculative_num_draft_tokens=4, speculative_num_steps=3) if spec else dict(speculative_num_draft_tokens=0)
    result = vram_plan.plan(model_config=M122['config'], gpu_profile=profile('hardware', gpu), tp_size=tp, release=rel,
                            **kwargs)
    return perf.costs(facts, result, 3.1), perf.hardware(profile('hardware', gpu))


@pytest.mark.parametrize('name', HARDWARE)
def test_every_hardware_profile_has_the_compare_facts_and_passes_the_schema(name):
    data = profile('hardware', name)
    assert profile_schema.check_hardware(name, data) == []
    hw = perf.hardware(data)
    assert hw['fp8'] >= hw['bf16'] > 0 and hw['latency'] > 0 and hw['link'] > 0


def test_a_missing_fact_is_named():
    data = dict(profile('hardware', 'h200'))
    del data['fp8_dense_tflops']
    with pytest.raises(perf.PerfError, match='fp8_dense_tflops'):
        perf.hardware(data)


def test_distinct_experts_and_forward_bytes():
    facts = vram_plan.model_facts_once(M122['config'], release())
    counts = vram_plan.param_counts(facts)
    assert vram_plan.distinct_experts(facts, 1) == pytest.approx(facts['top_k'])
    seq = [vram_plan.distinct_experts(facts, t) for t in (1, 4, 32, 1024)]
    assert seq == sorted(seq) and seq[-1] <= facts['experts']
    one = vram_plan.forward_weight_bytes(facts, counts, 2.0, 1)
    assert one == pytest.approx((counts['non_expert_active'] + facts['layers'] * facts['top_k'] * counts['expert']) * 2.0)
    assert vram_plan.forward_weight_bytes(facts, counts, 2.0, 4096) > 10 * one


def test_roofline_verify_uses_the_shared_distinct_expert_count():
    """vram_plan.roofline()'s MTP figure is the one its formula gave before forward_weight_bytes was factored out."""
    cost, hw = planned(True)
    rel = release()
    result = vram_plan.plan(model_config=M122['config'], gpu_profile=profile('hardware', 'rtx-pro-6000-blackwell-server'),
                            tp_size=4, release=rel, speculative_num_draft_tokens=4, speculative_num_steps=3)
    roof = result['decode_roofline_tok_s']
    facts, counts, bpp = cost['facts'], cost['counts'], cost['bpp']
    state = cost['state'] * 4
    distinct = facts['experts'] * (1 - (1 - float(facts['top_k']) / facts['experts']) ** 4)
    verify = (counts['non_expert_active'] + facts['layers'] * distinct * counts['expert']) * bpp + state
    cycle = verify + 3 * counts['mtp_active'] * bpp
    assert roof['bytes_per_cycle_gb'] == round(cycle / 1e9, 2)
    assert roof['mtp'] == round(hw['bandwidth'] * 4 / cycle * 3.1, 0)


def test_decode_cycle_grows_with_the_batch_and_speculation_costs_more_per_cycle():
    plain, hw = planned(False)
    spec, dummy = planned(True)
    cycles = [perf.decode_cycle(plain, hw, b, 1536) for b in (1, 8, 64)]
    assert cycles == sorted(cycles) and cycles[0] > 0
    assert perf.decode_cycle(spec, hw, 8, 1536) > perf.decode_cycle(plain, hw, 8, 1536)
    assert perf.layer_passes(spec) == plain['facts']['layers'] + 3


def test_tensor_parallelism_adds_all_reduce_time_and_splits_the_weights():
    tp4, hw = planned(False, tp=4)
    assert perf.allreduce_time(tp4, hw, 1) == pytest.approx(
        2 * tp4['facts']['layers'] * (hw['latency'] + 1.5 * tp4['facts']['hidden'] * 2 / hw['link']))
    single = dict(tp4, tp=1)
    assert perf.allreduce_time(single, hw, 1) == 0.0
    assert perf.prefill_time(tp4, hw, 4096) > perf.prefill_time(tp4, hw, 512)
