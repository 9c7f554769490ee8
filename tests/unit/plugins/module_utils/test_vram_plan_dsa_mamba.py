# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""DeepSeek DSA, the mamba pool flags, the MTP draft layer in or out of the budget, context length, page size and
req_to_token rows, each against the pinned SGLang source line it cites (paths under sglang/srt/;
docs/dev/sglang-memory.md sections 2.4, 4.3, 5.2, 7.2 and 9)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest
import yaml

from ansible_collections.llmops.inference.plugins.module_utils.model import config as mc
from ansible_collections.llmops.inference.plugins.module_utils.sglang import flags as sf
from ansible_collections.llmops.inference.plugins.module_utils.sglang import layout as sl
from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan as vp

from collection_paths import ROOT, release

FIXTURES = os.path.join(ROOT, 'tests', 'fixtures')
GIB = float(1 << 30)

RELEASE = release()


def config(name):
    with open(os.path.join(FIXTURES, 'hf_configs', name, 'config.json')) as handle:
        return json.load(handle)


def hardware(name):
    with open(os.path.join(ROOT, 'profiles', 'hardware', name + '.yml')) as handle:
        return yaml.safe_load(handle)


def profile(name):
    with open(os.path.join(ROOT, 'profiles', 'models', name + '.yml')) as handle:
        return yaml.safe_load(handle)


def plan(**inputs):
    inputs.setdefault('release', RELEASE)
    return vp.plan(**inputs)


H200, B200, RTX = hardware('h200'), hardware('b200'), hardware('rtx-pro-6000-blackwell-server')
V32 = config('deepseek-ai__DeepSeek-V3.2')
V32_BYTES = 689 * 10 ** 9  # a weights size for the FP8 checkpoint (not read from an index; any fitting size serves)
Q122 = profile('qwen3.5-122b-a10b')['config']
MTP = dict(speculative_num_draft_tokens=4, speculative_num_steps=3)


# --------------------------------------------------------------------------------------------------------------
# DeepSeek-V3.2 DSA indexer cache (section 2.4)
# --------------------------------------------------------------------------------------------------------------

def test_the_v32_fixture_is_a_dsa_config():
    facts = vp.sized_facts(V32, RELEASE)
    # configs/model_config.py:191-212 is_deepseek_dsa: the architecture and an index_topk key.
    assert facts['dsa'] and facts['family'] == 'mla' and facts['index_head_dim'] == 128
    # configs/model_config.py:488-527 dsa_layer_skips_topk: no indexer_types / pattern, freq 1 -> every layer indexes.
    assert facts['dsa_indexer_layers'] == 61
    assert not vp.sized_facts(config('deepseek-ai__DeepSeek-V3'), RELEASE)['dsa']  # no index_topk


@pytest.mark.parametrize('gpu, dtype, latent, kv_bytes', [
    # overrides.py:532-538: auto -> bfloat16 on Hopper, fp8_e4m3 on SM >= 10; overrides.py:714-726 backends;
    # kv_cache_configurator.py:3434-3440: trtllm (B200) keeps the raw 576-wide latent.
    ('h200', 'auto', 576, 2), ('b200', 'auto', 576, 1),
    # fp8 on Hopper: flashmla_kv both sides -> the scaled layout 512 + 512 // 128 * 4 + 64 * 2 = 656 bytes
    # (kv_cache_configurator.py:3458-3473).
    ('h200', 'fp8_e4m3', 656, 1),
    # bfloat16 on B200: decode trtllm, and bf16 is never rescaled -> raw 576 x 2.
    ('b200', 'bfloat16', 576, 2),
])
def test_dsa_cell_is_the_latent_plus_132_indexer_bytes_per_layer(gpu, dtype, latent, kv_bytes):
    # pool_configurator.py:560-633: ceil((128 + 128 // 128 * 4) / index_kpool) uint8 bytes per indexer layer
    # (memory_pool.py:5279-5281), whatever the KV dtype.
    result = plan(model_config=V32, gpu_profile=hardware(gpu), tp_size=8, weights_bytes=V32_BYTES, kv_cache_dtype=dtype)
    assert result['dsa_indexer_bytes_per_token'] == 61 * 132
    assert result['kv_bytes_per_token'] == 61 * (latent * kv_bytes + 132)
    assert result['kv_cache_dtype'] == ('bfloat16' if kv_bytes == 2 else 'fp8_e4m3')
    # One buffer per layer plus the index-K buffer, "KV size" (memory_pool.py:5385): K holds it all, V is 0.
    rows = result['kv_cache_tokens'] + result['page_size']
    assert result['k_size_gib'] == round(rows * result['kv_bytes_per_token'] / GIB, 3) and result['v_size_gib'] == 0


@pytest.mark.parametrize('backends, latent', [
    # kv_cache_configurator.py:3434-3440: trtllm on either side keeps the raw latent.
    (['trtllm', 'flashmla_kv'], 576), (['flashmla_sparse', 'trtllm'], 576),
    # :3449-3456: tilelang on both sides too (SGLang's argument checks refuse it on one side only).
    (['tilelang', 'tilelang'], 576),
    # :3458-3473: every other fp8 backend (the GLM-5 log's flashmla_auto / flashmla_kv) stores the scaled latent.
    (['flashmla_auto', 'flashmla_kv'], 656), (['flashmla_kv', 'flashmla_kv'], 656),
])
def test_explicit_dsa_backends_decide_the_fp8_latent_layout(backends, latent):
    facts = vp.sized_facts(V32, RELEASE)
    for cc in ('9.0', '10.0'):  # explicit backends replace the per-GPU defaults
        dsa = sl.dsa_layout(RELEASE, facts, 'fp8_e4m3', cc, backends=backends)
        assert dsa['latent_dim'] == latent and dsa['backends'] == backends
    # bf16 is never rescaled, whatever the backend.
    assert sl.dsa_layout(RELEASE, facts, 'bfloat16', '10.0', backends=backends)['latent_dim'] == 576


def test_the_doc_figures_of_section_2_4():
    assert plan(model_config=V32, gpu_profile=H200, tp_size=8, weights_bytes=V32_BYTES)['kv_bytes_per_token'] == 78324
    assert plan(model_config=V32, gpu_profile=B200, tp_size=8, weights_bytes=V32_BYTES)['kv_bytes_per_token'] == 43188


def test_dsa_pages_are_64_tokens_whatever_is_given():
    # arg_groups/model_overrides/deepseek_v2.py:167-172: page_size = 64 x index_kpool on CUDA.
    result = plan(model_config=V32, gpu_profile=H200, tp_size=8, weights_bytes=V32_BYTES)
    assert result['page_size'] == 64 and result['kv_cache_tokens'] % 64 == 0
    with pytest.raises(vp.PlanError) as err:
        plan(model_config=V32, gpu_profile=H200, tp_size=8, weights_bytes=V32_BYTES, page_size=1)
    assert err.value.details['variable'] == 'llmops_page_size' and 'deepseek_v2.py:167-172' in str(err.value)
    pooled = dict(V32, index_kpool=2)
    assert plan(model_config=pooled, gpu_profile=H200, tp_size=8, weights_bytes=V32_BYTES)['page_size'] == 128


def test_dsa_refuses_a_kv_dtype_it_asserts_against():
    # overrides.py:541-544: "DeepSeek DSA only supports bf16/bfloat16 or fp8_e4m3 kv_cache_dtype".
    with pytest.raises(vp.PlanError) as err:
        plan(model_config=V32, gpu_profile=H200, tp_size=8, weights_bytes=V32_BYTES, kv_cache_dtype='fp8_e5m2')
    assert err.value.details['variable'] == 'llmops_kv_cache_dtype' and 'only supports bf16' in str(err.value)


def test_dsa_mtp_draft_adds_its_latent_share_and_its_own_indexer():
    # pool_configurator.py:282-309: int((cell - indexer) x draft / target layers) + indexer x draft layers
    # (allocate_all_layers=True).
    result = plan(model_config=V32, gpu_profile=B200, tp_size=8, weights_bytes=V32_BYTES, **MTP)
    assert result['kv_bytes_per_token_draft_in_budget'] == 61 * 576 // 61 + 132
    assert result['draft_kv_in_budget'] and result['draft_kv_outside_budget_gib'] == 0.0


# --------------------------------------------------------------------------------------------------------------
# Issue 17: the MTP draft layer in or out of the token budget, through the planner
# --------------------------------------------------------------------------------------------------------------

def test_qwen35_mtp_draft_kv_is_outside_the_budget():
    """model_runner_components/spec_aux_hidden_state.py:171-172: without a draft path the layer count comes from the
    TARGET config's num_nextn_predict_layers (configs/model_config.py:1602-1604, text config); Qwen3.5 has
    mtp_num_hidden_layers only, so it is None and :177-178 returns: nothing joins the cell, and the draft's one-layer
    pool (kv_cache_configurator.py:2614-2622) is paid from the slack."""
    facts = vp.sized_facts(Q122, RELEASE)
    assert facts['nextn_layers'] is None and facts['mtp_layers'] == 1
    result = plan(model_config=Q122, gpu_profile=RTX, tp_size=4, **MTP)
    assert not result['draft_kv_in_budget'] and result['kv_bytes_per_token_draft_in_budget'] == 0
    # One full-attention layer by hand: max(1, 2 KV heads // TP 4) = 1 head x (256 + 256) x 2 B (bf16).
    text = Q122['text_config']
    assert (text['num_key_value_heads'], text['head_dim']) == (2, 256)
    per_layer = 1 * (256 + 256) * 2
    rows = result['kv_cache_tokens'] + result['page_size']
    assert result['draft_kv_gib'] == round(rows * per_layer / GIB, 3) == result['draft_kv_outside_budget_gib']


@pytest.mark.parametrize('name, tp, cell', [
    # By hand: GLM-4.5-Air 46 layers x (8 KV heads / TP 4 = 2) x 128 x (K + V) x 2 B; DeepSeek-V3 61 layers x the MLA
    # latent 512 + 64 x 2 B on every rank.
    ('zai-org__GLM-4.5-Air', 4, 46 * 2 * 128 * 2 * 2), ('deepseek-ai__DeepSeek-V3', 8, 61 * (512 + 64) * 2),
])
def test_glm_and_deepseek_mtp_draft_kv_is_inside_the_budget(name, tp, cell):
    """spec_aux_hidden_state.py:172-174: num_nextn_predict_layers 1 in the target config -> eagle_draft_num_layers 1;
    pool_configurator.py:267-271 (> 0) then adds int(cell x 1 / target layers) to the cell (:310-314)."""
    cfg = config(name)
    assert cfg['num_nextn_predict_layers'] == 1
    result = plan(model_config=cfg, gpu_profile=H200, tp_size=tp, weights_bytes=(
        None if 'GLM' in name else 689 * 10 ** 9), **MTP)
    assert result['kv_bytes_per_token_target'] == cell
    assert result['draft_kv_in_budget'] and result['draft_kv_layers_in_budget'] == 1
    assert result['kv_bytes_per_token_draft_in_budget'] == cell // cfg['num_hidden_layers']
    assert result['draft_kv_outside_budget_gib'] == 0.0


def test_num_nextn_predict_layers_zero_adds_nothing_and_two_add_two():
    # pool_configurator.py:267-271: only a value > 0 joins the cell; the value is the layer count.
    cfg = config('zai-org__GLM-4.5-Air')
    zero = plan(model_config=dict(cfg, num_nextn_predict_layers=0, mtp_num_hidden_layers=1), gpu_profile=H200,
                tp_size=4, **MTP)
    two = plan(model_config=dict(cfg, num_nextn_predict_layers=2), gpu_profile=H200, tp_size=4, **MTP)
    assert zero['kv_bytes_per_token_draft_in_budget'] == 0
    # The target cell by hand (46 x 2 x 128 x 2 x 2 B = 47104, as in the test above), two draft layers' share of it.
    assert two['kv_bytes_per_token_target'] == 47104
    assert two['kv_bytes_per_token_draft_in_budget'] == 47104 * 2 // 46 == 2048


# --------------------------------------------------------------------------------------------------------------
# Issue 17: --max-mamba-cache-size and --mamba-full-memory-ratio (section 4.3)
# --------------------------------------------------------------------------------------------------------------

def test_max_mamba_cache_size_sets_the_slots_and_charges_them():
    # kv_cache_configurator.py:3303-3324 (mode 1) and :3404-3409: (K + 1) slots charged, the spec reservation from
    # min(max(1, max_running), K // ratio) + 1.
    auto = plan(model_config=Q122, gpu_profile=RTX, tp_size=4, max_running_requests=4096, **MTP)
    fixed = plan(model_config=Q122, gpu_profile=RTX, tp_size=4, max_running_requests=4096, max_mamba_cache_size=60,
                 **MTP)
    # One slot by hand (SGLang's Mamba2StateShape at TP 4, 36 linear layers): conv 12288 / 4 x 3 x 2 B + temporal
    # 64 / 4 x 128 x 128 x 4 B per layer. Slots per request: 3 + 2 (extra_buffer, auto under MTP, overlap on;
    # kv_cache_configurator.py:3062-3081, allocation_sizing.py:11-19).
    per_slot, ratio = 36 * (12288 // 4 * 3 * 2 + 64 // 4 * 128 * 128 * 4), 5
    assert per_slot == 38412288
    assert (fixed['mamba_bytes_per_slot'], fixed['mamba_slots_per_request']) == (per_slot, ratio)
    assert fixed['mamba_cache_slots'] == 60 and fixed['mamba_cache_mode'] == 'explicit'
    assert auto['mamba_cache_mode'] == 'memory'
    assert fixed['mamba_pool_gib'] == round(61 * per_slot / GIB, 3)
    assert fixed['spec_state_gib'] == round(per_slot * (60 // ratio + 1) * 4 / GIB, 3)
    assert fixed['max_running_requests'] == 60 // ratio
    # Fewer slots than the memory would give: the KV cache gets the rest.
    assert fixed['mamba_cache_slots'] < auto['mamba_cache_slots'] and fixed['kv_cache_tokens'] > auto['kv_cache_tokens']


def test_mamba_full_memory_ratio_sets_the_pool_share():
    # kv_cache_configurator.py:3350-3356: budget = rest x r / (1 + r), then the joint solve with the spec states.
    half = plan(model_config=Q122, gpu_profile=RTX, tp_size=4, mamba_full_memory_ratio=0.5, **MTP)
    default = plan(model_config=Q122, gpu_profile=RTX, tp_size=4, **MTP)
    assert half['mamba_full_memory_ratio'] == 0.5 and default['mamba_full_memory_ratio'] == 0.9
    per_slot, ratio = 38412288, 5  # by hand, as in the test above
    assert (half['mamba_bytes_per_slot'], half['mamba_slots_per_request']) == (per_slot, ratio)
    rest = half['rest_for_pools_gib']
    budget = rest * 0.5 / 1.5 * GIB
    expected = int((budget - per_slot * 5) // (per_slot * (1 + 4.0 / ratio)))
    assert abs(half['mamba_cache_slots'] - expected) <= 1  # rest_for_pools_gib is rounded to 3 decimals
    assert half['mamba_cache_slots'] < default['mamba_cache_slots']


def test_mamba_flags_are_refused_where_they_do_nothing_or_break_start_up():
    dense = profile('qwen3-32b')['config']
    for key, value in (('max_mamba_cache_size', 100), ('mamba_full_memory_ratio', 0.5)):
        with pytest.raises(vp.PlanError) as err:
            plan(model_config=dense, gpu_profile=RTX, tp_size=1, **{key: value})
        assert err.value.details['variable'] == 'llmops_' + key and 'SGLang ignores the flag' in str(err.value)
    with pytest.raises(vp.PlanError) as err:  # 1 slot split over 2 DP workers is 0 each
        plan(model_config=Q122, gpu_profile=RTX, tp_size=4, dp_size=2, enable_dp_attention=True, max_mamba_cache_size=1)
    assert err.value.details['variable'] == 'llmops_max_mamba_cache_size' and 'at least 2' in str(err.value)
    with pytest.raises(vp.PlanError) as err:  # more slots than the budget holds: no KV tokens left
        plan(model_config=Q122, gpu_profile=RTX, tp_size=4, max_mamba_cache_size=100000)
    assert err.value.details['variable'] == 'llmops_max_mamba_cache_size'
    with pytest.raises(vp.PlanError) as err:
        plan(model_config=Q122, gpu_profile=RTX, tp_size=4, mamba_full_memory_ratio=-1.0)
    assert err.value.details['variable'] == 'llmops_mamba_full_memory_ratio'


def test_the_mamba_flags_are_rendered_for_hybrid_models_only():
    argv = sf.render(RELEASE, profile('qwen3.5-122b-a10b'), {}, {}, dict(
        model_path='/m', max_mamba_cache_size=120, mamba_full_memory_ratio=0.75))['argv']
    assert argv[argv.index('--max-mamba-cache-size') + 1] == '120'
    assert argv[argv.index('--mamba-full-memory-ratio') + 1] == '0.75'


# --------------------------------------------------------------------------------------------------------------
# Items 10, 11, 12 of section 9
# --------------------------------------------------------------------------------------------------------------

def test_req_to_token_rows_carry_the_decode_headroom():
    # mem_cache/memory_pool.py:402-408: int32 (max_running + 1, context + extra); allocation_sizing.py:96-116:
    # extra = 4 + draft tokens, with spec and page > 1 at least 2 x max(steps x topk, draft tokens) + page - 1.
    assert sl.req_to_token_bytes(22, 262144) == 23 * (262144 + 4) * 4
    assert sl.req_to_token_bytes(22, 262144, 1, 3, 1, 4) == 23 * (262144 + 8) * 4
    assert sl.req_to_token_bytes(22, 262144, 64, 3, 1, 4) == 23 * (262144 + 2 * 4 + 63) * 4
    # topk > 1 with pages: ceil-paged tree footprint per branch (allocation_sizing.py:54-59).
    assert sl.req_to_token_bytes(8, 1000, 64, 5, 4, 8) == 9 * (1000 + 2 * (((63 + 5 + 63) // 64) * 64 * 4) + 63) * 4
    result = plan(model_config=Q122, gpu_profile=RTX, tp_size=4, **MTP)
    assert result['req_to_token_gib'] == round((result['max_running_requests'] + 1) * (262144 + 8) * 4 / GIB, 3)


@pytest.mark.parametrize('text, expected', [
    # utils/hf_transformers/common.py:668-694: the first key present wins, in this order ...
    (dict(max_position_embeddings=4096, seq_length=8192), 8192),
    (dict(max_position_embeddings=4096, max_sequence_length=2048, seq_length=8192), 2048),
    (dict(model_max_length=1024, max_position_embeddings=4096), 1024),
    # ... times rope_scaling.factor, unless original_max_position_embeddings is there or rope_type is llama3.
    (dict(max_position_embeddings=32768, rope_scaling=dict(factor=4.0, type='yarn')), 131072),
    (dict(max_position_embeddings=163840, rope_scaling=dict(factor=40, original_max_position_embeddings=4096)), 163840),
    (dict(max_position_embeddings=131072, rope_scaling=dict(factor=8.0, rope_type='llama3')), 131072),
    ({}, 0),
])
def test_context_length_follows_get_context_length(text, expected):
    assert mc.context_length(text) == expected


def test_qwen35_rope_parameters_count_as_rope_scaling():
    # configs/qwen3_5.py:19-33: Qwen3.5 text configs copy rope_parameters into rope_scaling when it is absent.
    text = dict(model_type='qwen3_5_moe_text', max_position_embeddings=262144, rope_parameters=dict(factor=2.0))
    assert mc.context_length(text, 'qwen3_5_moe_text') == 524288
    assert mc.context_length(dict(text, model_type='llama'), 'llama') == 262144
    assert vp.sized_facts(Q122, RELEASE)['context'] == 262144  # its rope_parameters has no factor


def test_the_committed_fixtures_keep_their_context_lengths():
    for name, expected in (('meta-llama__Llama-3.3-70B-Instruct', 131072), ('deepseek-ai__DeepSeek-V3', 163840),
                           ('openai__gpt-oss-120b', 131072), ('Qwen__Qwen3-32B', 40960)):
        assert vp.sized_facts(config(name), RELEASE)['context'] == expected, name


@pytest.mark.parametrize('arch, spec, expected', [
    # model_overrides/qwen3_5.py:17-23 registers the override for the multimodal / Qwen3-Next archs ...
    ('Qwen3_5MoeForConditionalGeneration', True, 64),
    ('Qwen3_5MoeForConditionalGeneration', False, 64),  # auto resolves extra_buffer: trtllm_mha, page 64
    # ... not for the text-only Qwen3_5MoeForCausalLM: get_default_attn_backend still picks trtllm_mha on SM100
    # (model_override_base.py:312-325), and overrides.py:1176-1188 gives it page 64.
    ('Qwen3_5MoeForCausalLM', True, 64),
])
def test_sm100_page_size_rules_are_scoped_to_their_architectures(arch, spec, expected):
    cfg = dict(Q122, architectures=[arch])
    if arch.endswith('ForCausalLM'):
        cfg = dict(Q122['text_config'], architectures=[arch])
    inputs = MTP if spec else dict(speculative_num_draft_tokens=0)
    assert plan(model_config=cfg, gpu_profile=B200, tp_size=4, **inputs)['page_size'] == expected


def test_sm100_qwen35_override_keeps_page_one_without_extra_buffer_and_spec():
    # qwen3_5.py:40-49: no extra buffer, radix on, no spec -> triton and page 1, whatever page was given.
    cfg = dict(Q122)
    result = plan(model_config=cfg, gpu_profile=B200, tp_size=4, speculative_num_draft_tokens=0,
                  mamba_strategy='no_buffer', disable_overlap_schedule=True)
    assert result['page_size'] == 1
    with pytest.raises(vp.PlanError) as err:
        plan(model_config=cfg, gpu_profile=B200, tp_size=4, page_size=16, **MTP)
    assert err.value.details['variable'] == 'llmops_page_size' and 'qwen3_5.py' in str(err.value)


def test_an_explicit_attention_backend_leaves_the_page_size_alone():
    cfg = dict(Q122)
    assert plan(model_config=cfg, gpu_profile=B200, tp_size=4, attention_backend='triton', **MTP)['page_size'] == 1


@pytest.mark.parametrize('name, tp, expected', [
    ('meta-llama__Meta-Llama-3.1-8B', 1, 64),     # trtllm_mha on SM100
    ('deepseek-ai__DeepSeek-V3', 8, 64),         # trtllm_mla (deepseek_v2.py:176-186)
])
def test_sm100_default_backends_force_page_64(name, tp, expected):
    weights = 689 * 10 ** 9 if 'Deep' in name else None
    result = plan(model_config=config(name), gpu_profile=B200, tp_size=tp, weights_bytes=weights)
    assert result['page_size'] == expected
    assert plan(model_config=config(name), gpu_profile=H200, tp_size=tp, weights_bytes=weights)['page_size'] == 1
