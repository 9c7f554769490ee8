# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The families added for issue #26 point 4 against SGLang's own numbers.

Expected values come from SGLang, never from the planner: tests/fixtures/sglang_oracle/families.json holds the
pinned release's own server defaults, KV cells, Mamba state and pool sizes for real configs
(tests/fixtures/hf_configs: Phi-4, MiniMax-M2.5, Qwen3-VL-8B / -30B-A3B, Llama-4-Scout / -Maverick, Nemotron-H-56B,
Nemotron-3-Nano-30B-A3B) over TP 1-8, six GPU sizes and compute capabilities, kv_cache_dtype auto / fp8_e4m3 and a
custom mem_fraction_static + context length; its "source" says how SGLang produced them (the oracle harness of
issue #26 point 1 in the lab venv). The planner, given the same GPU and the same free memory before and after loading
(runtime_overhead_gib 0: the oracle measures free memory after loading directly), must give:
mem_fraction_static (4 decimals, as plan() rounds it), chunked_prefill_size, cuda_graph_max_bs, page size, KV bytes
per element, the pool's cell bytes per token, the full (and sliding-window) token counts within one page,
max_running_requests, Mamba bytes per slot and slot count. A case SGLang refuses, the planner must refuse too.

tests/sglang/test_planner_families_sglang.py checks the planner's per-architecture facts against ModelConfig live, and
the table's served-architecture list against the installed model registry.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.model import config as mc
from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan as vp

from collection_paths import ROOT, release

FIXTURES = os.path.join(ROOT, 'tests', 'fixtures')

RELEASE = release()
with open(os.path.join(FIXTURES, 'sglang_oracle', 'families.json')) as _handle:
    ORACLE = json.load(_handle)


def config(name):
    with open(os.path.join(FIXTURES, 'hf_configs', name, 'config.json')) as handle:
        return json.load(handle)


def planned(case):
    return vp.plan(model_config=config(case['config']), gpu_memory_mib=case['gpu_mem_mib'], tp_size=case['tp'],
                   release=RELEASE, free_memory_before_load_gib=case['free_before_load_gib'],
                   free_memory_after_load_gib=case['free_after_load_gib'], runtime_overhead_gib=0.0,
                   gpu_profile={'compute_capability': case.get('cc', '9.0')}, mem_fraction_static=case.get('mem_fraction'),
                   kv_cache_dtype=case.get('kv_dtype', 'auto'), context_length=case.get('context'))


def test_the_oracle_fixture_is_of_the_pinned_release():
    assert ('SGLang %s itself' % RELEASE['version']) in ORACLE['source']
    assert len(ORACLE['cases']) >= 300


@pytest.mark.parametrize('entry', ORACLE['cases'], ids=[e['case']['id'] for e in ORACLE['cases']])
def test_the_plan_is_what_sglang_computes(entry):
    case = entry['case']
    if 'refused' in entry:
        with pytest.raises(vp.PlanError):
            planned(case)
        return
    want = entry['sglang']
    got = planned(case)
    page = got['page_size']
    assert got['page_size'] == want['page_size']
    assert got['mem_fraction_static'] == round(want['mem_fraction_static'], 4)
    assert (got['chunked_prefill_size'], got['cuda_graph_max_bs']) == (want['chunked_prefill_size'],
                                                                       want['cuda_graph_max_bs'])
    assert vp.DTYPE_BYTES[got['kv_cache_dtype']] == want['kv_element_size']
    assert got['kv_bytes_per_token'] == pytest.approx(want['kv_bytes_per_token'], abs=1e-6)
    assert abs(got['kv_cache_tokens'] - want['max_total_num_tokens']) <= page
    if 'swa_max_total_num_tokens' in want:
        assert abs(got['swa_kv_cache_tokens'] - want['swa_max_total_num_tokens']) <= page
    assert got['max_running_requests'] == want['max_running_requests']
    assert got['mamba_bytes_per_slot'] == want.get('mamba_bytes_per_slot', 0)
    assert got['mamba_cache_slots'] == want.get('max_mamba_cache_size')


@pytest.mark.parametrize('name, family', [
    ('microsoft__phi-4', 'gqa'), ('MiniMaxAI__MiniMax-M2.5', 'gqa'), ('Qwen__Qwen3-VL-8B-Instruct', 'gqa'),
    ('Qwen__Qwen3-VL-30B-A3B-Instruct', 'gqa'), ('meta-llama__Llama-4-Scout-17B-16E-Instruct', 'hybrid_swa'),
    ('meta-llama__Llama-4-Maverick-17B-128E-Instruct', 'hybrid_swa'),
    ('nvidia__Nemotron-H-56B-Base-8K', 'hybrid_mamba'), ('nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16', 'hybrid_mamba'),
])
def test_each_new_config_lands_in_its_family(name, family):
    assert vp.sized_facts(config(name), RELEASE)['family'] == family


def test_llama4_keeps_every_fourth_layer_full_and_no_vision_tower_by_default():
    # SGLang ModelConfig of this config (tests/sglang/test_planner_families_sglang.py checks it live):
    # full_attention_layer_ids [3, 7, ..., 47], is_multimodal False (configs/model_config.py:690-703).
    facts = vp.sized_facts(config('meta-llama__Llama-4-Scout-17B-16E-Instruct'), RELEASE)
    assert facts['full_layer_ids'] == list(range(3, 48, 4)) and facts['n_swa'] == 36
    assert facts['sliding_window'] == 8192 and not facts['multimodal'] and facts['vision'] is None


def test_llama4_maverick_interleaves_dense_and_moe_layers():
    # models/llama4.py:439-447: layer i is MoE when (i + 1) % interleave_moe_layer_step == 0, else a dense MLP of
    # intermediate_size_mlp; every MoE layer adds a shared expert of intermediate_size (:136-141).
    facts = vp.sized_facts(config('meta-llama__Llama-4-Maverick-17B-128E-Instruct'), RELEASE)
    assert (facts['dense_layers'], facts['dense_inter'], facts['shared_inter'], facts['experts']) == (24, 16384, 8192, 128)


def test_qwen3_vl_prices_its_vision_tower_as_weights():
    facts = vp.sized_facts(config('Qwen__Qwen3-VL-8B-Instruct'), RELEASE)
    counts = vp.param_counts(facts)
    assert facts['multimodal'] and counts['vision'] > 0
    text_only = vp.param_counts(dict(facts, vision=None))
    assert counts['language'] == text_only['language'] and text_only['vision'] == 0


@pytest.mark.parametrize('name, arch', [
    ('google__gemma-4-26B-A4B', 'Gemma4ForConditionalGeneration'),
    ('nvidia__Llama-3_3-Nemotron-Super-49B-v1', 'DeciLMForCausalLM'),
    ('deepseek-ai__DeepSeek-V4-Flash', 'DeepseekV4ForCausalLM'),
])
def test_a_served_architecture_the_planner_does_not_size_says_so(name, arch):
    with pytest.raises(vp.PlanError) as err:
        vp.sized_facts(config(name), RELEASE)
    text = str(err.value)
    assert err.value.kind == 'architecture'
    assert '%s is not one the planner sizes for sglang %s, though that release serves it' % (arch, RELEASE['version']) in text
    assert 'NemotronHForCausalLM' in text and 'Llama4ForConditionalGeneration' in text


def test_an_architecture_the_release_does_not_serve_is_refused_with_what_it_serves():
    cfg = dict(config('microsoft__phi-4'), architectures=['Phi5ForCausalLM'])
    with pytest.raises(vp.PlanError) as err:
        vp.sized_facts(cfg, RELEASE)
    text = str(err.value)
    assert err.value.kind == 'architecture'
    assert text.startswith('architecture Phi5ForCausalLM is not served by sglang %s: it is not in that release\'s '
                           'model registry' % RELEASE['version'])
    served = RELEASE['architectures']['served']
    assert '(%d names)' % len(served) in text and 'Gemma3ForCausalLM' in text and 'Phi3ForCausalLM' in text


def test_a_release_whose_registry_was_not_read_cannot_say_not_served():
    arch = dict(RELEASE['architectures'], served=None)
    text = mc.unsized_reason('Phi5ForCausalLM', arch, 'x.y')
    assert 'is not one the planner sizes for sglang x.y (' in text and 'serves it' not in text


@pytest.mark.parametrize('pattern, words', [
    ('M*-Q', 'needs hybrid_override_pattern, a string of M * - E'),
    (None, 'needs hybrid_override_pattern'),
    ('M*-', 'hybrid_override_pattern has 3 blocks but num_hidden_layers is 52'),
])
def test_a_bad_nemotron_h_pattern_is_named(pattern, words):
    cfg = config('nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16')
    cfg = dict(cfg, hybrid_override_pattern=pattern)
    if pattern is None:
        del cfg['hybrid_override_pattern']
    with pytest.raises(vp.PlanError) as err:
        vp.sized_facts(cfg, RELEASE)
    assert words in str(err.value)
