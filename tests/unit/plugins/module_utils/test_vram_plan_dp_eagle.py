# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""DP attention and EAGLE-3 draft checkpoints in the planner, rule by rule against the pinned SGLang source.

Each test names the source line (paths under sglang/srt/ of the pinned release, docs/dev/sglang-memory.md sections 5.3
and 6) whose behaviour it checks, and derives the expected number from the config and that rule, not from the
planner. One real start-up log shape is used: the Qwen3-Next DP4/TP4 KV line of tests/fixtures/sglang_logs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

import pytest
import yaml

from ansible_collections.llmops.inference.plugins.module_utils.sglang import defaults as sd
from ansible_collections.llmops.inference.plugins.module_utils.sglang import flags as sf
from ansible_collections.llmops.inference.plugins.module_utils.sglang import layout as sl
from ansible_collections.llmops.inference.plugins.module_utils.sglang import release as sr
from ansible_collections.llmops.inference.plugins.module_utils.planner import spec_draft as sdr
from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan as vp

from collection_paths import ROOT, release, release_table_data

FIXTURES = os.path.join(ROOT, 'tests', 'fixtures')
GIB = float(1 << 30)

TABLE = release_table_data()
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


H200, H100, L40S = hardware('h200'), hardware('h100-80gb'), hardware('l40s')
LLAMA8B = config('meta-llama__Meta-Llama-3.1-8B')
DRAFT8B = config('EAGLE3-draft__SpecForge__llama3-8B-eagle3')
QNEXT = config('Qwen__Qwen3-Next-80B-A3B-Thinking')
QWEN32B = config('Qwen__Qwen3-32B')
DRAFT32B = config('EAGLE3-draft__SpecForge__qwen3-32b-eagle3')
Q122 = profile('qwen3.5-122b-a10b')['config']
EAGLE3 = dict(speculative_algorithm='EAGLE3', draft_model_config=DRAFT8B)


# --------------------------------------------------------------------------------------------------------------
# DP attention (section 6)
# --------------------------------------------------------------------------------------------------------------

def test_dp_attention_layout_and_its_refusals():
    # parallel_hook.py:39-61: --dp-size N --enable-dp-attention -> attn_dp_size N; runtime_context.py:73-76
    # attn_tp_size = tp // attn_dp_size.
    assert sl.attention_parallel(RELEASE, 8, 4, True) == (4, 2)
    assert sl.attention_parallel(RELEASE, 8) == (1, 8)
    # parallel_hook.py:326 asserts tp_size % attn_dp_size == 0.
    with pytest.raises(sl.LayoutError) as err:
        sl.attention_parallel(RELEASE, 4, 3, True)
    assert err.value.variable == 'llmops_dp_size' and 'tp_size % attn_dp_size == 0' in str(err.value)
    assert 'fix: dp_size: one of 2, 4' in str(err.value)
    # --dp-size without the flag is N replicas of the whole server; the flag with dp 1 is no DP attention.
    for args, variable in (((4, 2, False), 'llmops_enable_dp_attention'), ((4, 1, True), 'llmops_enable_dp_attention'),
                           ((4, 0, True), 'llmops_dp_size')):
        with pytest.raises(sl.LayoutError) as err:
            sl.attention_parallel(RELEASE, *args)
        assert err.value.variable == variable and '(fix: ' in str(err.value)


def test_dp_attention_is_refused_where_the_release_was_not_read():
    with pytest.raises(sl.LayoutError) as err:
        sl.attention_parallel(sr.release(TABLE, '0.5.11'), 4, 2, True)
    assert 'not modelled for sglang 0.5.11' in str(err.value)


def test_attention_heads_must_divide_the_attention_tp_width():
    # models/qwen3.py:164-177: total_num_heads % attn_tp_size == 0 (tp 6 / dp 2 = 3 does not divide 64 heads).
    with pytest.raises(vp.PlanError) as err:
        plan(model_config=QWEN32B, gpu_profile=H200, tp_size=6, dp_size=2, enable_dp_attention=True)
    assert err.value.kind == 'tp' and err.value.details['variable'] == 'llmops_dp_size'
    assert 'attention tp 3 (tp 6 / dp 2)' in str(err.value)


def test_dp_attention_is_refused_for_models_that_split_attention_over_the_whole_tp():
    # models/llama.py:181-194 builds attention over get_parallel().tp_size while the pool sizes KV heads per
    # attention-TP rank (pool_configurator.py:356): not planned.
    with pytest.raises(vp.PlanError) as err:
        plan(model_config=LLAMA8B, gpu_profile=H200, tp_size=4, dp_size=2, enable_dp_attention=True)
    assert err.value.details['variable'] == 'llmops_dp_size' and 'DP attention for LlamaForCausalLM' in str(err.value)


def test_kv_heads_split_over_attention_tp_match_the_qwen3_next_dp4_log():
    """hybrid_linear/qwen3-next-80b-a3b-fp8-dp4-tp4-ep4.md: tp 4, dp 4 -> attention TP 1, both KV heads on every rank
    (pool_configurator.py:356 get_num_kv_heads(attn_tp_size)). The planner's cell at those settings gives the logged
    K size for the logged token count."""
    with open(os.path.join(FIXTURES, 'sglang_logs', 'hybrid_linear', 'qwen3-next-80b-a3b-fp8-dp4-tp4-ep4.md')) as handle:
        text = handle.read()
    match = re.search(r'#tokens: (\d+), K size: ([\d.]+) GB', text)
    tokens, k_gib = int(match.group(1)), float(match.group(2))
    result = plan(model_config=QNEXT, gpu_profile=H200, tp_size=4, dp_size=4, enable_dp_attention=True,
                  mamba_ssm_dtype='bfloat16')
    assert (result['attn_dp_size'], result['attn_tp_size']) == (4, 1)
    predicted = (tokens + 1) * result['kv_bytes_per_token_target'] / 2 / GIB
    assert abs(predicted - k_gib) <= 0.005
    # By hand from the config: 48 layers, every 4th (full_attention_interval 4) full attention -> 12 layers, 2 KV heads
    # of head_dim 256, K and V, bf16. Attention TP 1 keeps both heads; plain TP 4 keeps max(1, 2 // 4) = 1.
    full_layers = QNEXT['num_hidden_layers'] // QNEXT['full_attention_interval']
    assert (full_layers, QNEXT['num_key_value_heads'], QNEXT['head_dim']) == (12, 2, 256)
    assert result['kv_bytes_per_token_target'] == 12 * 2 * 256 * 2 * 2 == 24576
    without = plan(model_config=QNEXT, gpu_profile=H200, tp_size=4, mamba_ssm_dtype='bfloat16')
    assert without['kv_bytes_per_token_target'] == 12 * 1 * 256 * 2 * 2 == 12288


def gdn_slot_bytes(cfg, tp):
    """One mamba slot of a Qwen3.5 / Qwen3-Next config by hand, from SGLang's own shape rules: configs/qwen3_next.py
    mamba2_cache_params -> Mamba2StateShape.create (configs/mamba_utils.py:195-243): conv_dim = value heads x value dim
    + 2 x key heads x key dim, conv state (conv_dim / tp, kernel - 1) in bfloat16 (mamba2_state_dtype :68), temporal
    state (value heads / tp, value dim, key dim) in the config's mamba_ssm_dtype float32; BaseLinearStateParams.
    mamba_cache_per_req (:116-125) sums both over the linear-attention layers."""
    text = cfg.get('text_config', cfg)
    linear_layers = text['layer_types'].count('linear_attention')
    conv_dim = (text['linear_num_value_heads'] * text['linear_value_head_dim']
                + 2 * text['linear_num_key_heads'] * text['linear_key_head_dim'])
    conv = conv_dim // tp * (text['linear_conv_kernel_dim'] - 1) * 2
    temporal = text['linear_num_value_heads'] // tp * text['linear_value_head_dim'] * text['linear_key_head_dim'] * 4
    return linear_layers * (conv + temporal)


def test_gdn_state_shards_over_the_attention_tp_width():
    # qwen3_next.py:287-313 Mamba2StateShape with tp_world_size = linear_attn_tp_size() = attn_tp_size
    # (runtime_context.py:484-486). Qwen3.5-122B: 36 linear layers; conv (64 x 128 + 2 x 16 x 128 = 12288) / 2 x 3 x 2 B
    # = 36864 B and temporal 32 x 128 x 128 x 4 B = 2 MiB per layer at attention TP 2.
    assert gdn_slot_bytes(Q122, 2) == 36 * (36864 + 2097152) == 76824576
    dp = plan(model_config=Q122, gpu_profile=H200, tp_size=4, dp_size=2, enable_dp_attention=True)
    assert dp['mamba_bytes_per_slot'] == 76824576
    assert plan(model_config=Q122, gpu_profile=H200, tp_size=4)['mamba_bytes_per_slot'] == gdn_slot_bytes(Q122, 4) == 38412288


def test_explicit_requests_are_divided_per_worker_the_estimate_is_not():
    # kv_cache_configurator.py:3126-3132: an explicit value -> max(1, value // attn_dp_size); the unset estimate
    # (2048..4096) is per worker.
    explicit = plan(model_config=QWEN32B, gpu_profile=H200, tp_size=4, dp_size=4, enable_dp_attention=True,
                    max_running_requests=100)
    assert explicit['max_running_requests'] == 25 and explicit['max_running_requests_total'] == 100
    unset = plan(model_config=QWEN32B, gpu_profile=H200, tp_size=4, dp_size=4, enable_dp_attention=True,
                 context_length=8192)
    estimated = max(min(int(unset['kv_cache_tokens'] / 8192.0 * 512), 4096), 2048)
    assert unset['max_running_requests'] == min(estimated, unset['kv_cache_tokens'] // 2)
    # Concretely: Qwen3-32B at attention TP 1 is 64 x 8 x 128 x 2 x 2 B = 256 KiB a token; an H200 worker holds far more
    # than the 65,536 tokens (8192 x 4096 / 512) at which the estimate reaches its 4096 ceiling.
    assert unset['kv_bytes_per_token'] == 64 * 8 * 128 * 2 * 2 and unset['kv_cache_tokens'] > 8192 * 4096 // 512
    assert unset['max_running_requests'] == 4096 and unset['max_running_requests_total'] == 4 * 4096
    # The speculative default 48 (speculative_hook.py:1086-1094) is set before the division: 12 per worker.
    spec = plan(model_config=QWEN32B, gpu_profile=H200, tp_size=4, dp_size=4, enable_dp_attention=True,
                speculative_algorithm='EAGLE3', draft_model_config=DRAFT32B)
    assert spec['max_running_requests'] == 12 and spec['max_running_requests_bound_by'] == 'speculative_default'


@pytest.mark.parametrize('gpu, dp', [(H200, 2), (H200, 4)])
def test_memory_hook_reserves_for_dp_attention_graphs(gpu, dp):
    # memory_hook.py:370-378: + decode max_bs x attn_dp_size x 3 MiB, and x 1.5 more above max_bs 300.
    one = plan(model_config=QWEN32B, gpu_profile=gpu, tp_size=4)
    many = plan(model_config=QWEN32B, gpu_profile=gpu, tp_size=4, dp_size=dp, enable_dp_attention=True)
    max_bs = one['cuda_graph_max_bs']
    assert max_bs == 512  # H200, tp >= 4 (memory_hook.py:146-159)
    extra = max_bs * dp * 3 + (max_bs * dp * 1.5 if max_bs > 300 else 0)
    assert many['mem_fraction_heuristic']['reserved_mib'] - one['mem_fraction_heuristic']['reserved_mib'] == extra


def test_runtime_reserve_reads_the_chunk_per_worker():
    # parallel_hook.py:327-332 divides chunked_prefill_size by attn_dp_size after the memory hook;
    # runtime_context.py:1797-1819 pre_capture_activation_reserve_mb reads that value (L40S: no 10 GiB floor).
    one = plan(model_config=QWEN32B, gpu_profile=L40S, tp_size=4)
    two = plan(model_config=QWEN32B, gpu_profile=L40S, tp_size=4, dp_size=2, enable_dp_attention=True)
    assert one['chunked_prefill_size'] == two['chunked_prefill_size'] == 4096  # the heuristic keeps the undivided one
    assert two['chunked_prefill_size_per_worker'] == 2048
    assert round((one['sglang_runtime_reserve_gib'] - two['sglang_runtime_reserve_gib']) * 1024) == round(1.5 * 2048)


def test_mamba_slots_from_the_flag_are_per_worker():
    # kv_cache_configurator.py:3303-3324: K = max_mamba_cache_size // attn_dp_size; the spec reservation uses
    # min(max(1, max_running // dp), K // ratio) + 1 slots of D states.
    result = plan(model_config=Q122, gpu_profile=H200, tp_size=4, dp_size=2, enable_dp_attention=True,
                  max_mamba_cache_size=100, speculative_num_draft_tokens=4, speculative_num_steps=3,
                  max_running_requests=64)
    assert result['mamba_cache_slots'] == 50 and result['mamba_cache_mode'] == 'explicit'
    # kv_cache_configurator.py:3062-3081 _calculate_mamba_ratio: MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO 3 (:227)
    # + get_mamba_tracking_slots (allocation_sizing.py:11-19) 2 for extra_buffer (auto under MTP) with the overlap
    # schedule = 5 slots a request.
    assert result['mamba_strategy'] == 'extra_buffer' and result['mamba_slots_per_request'] == 5
    assert result['mamba_bytes_per_slot'] == gdn_slot_bytes(Q122, 2) == 76824576
    capped = min(max(1, 64 // 2), 50 // 5)  # 10
    assert result['spec_state_gib'] == round(76824576 * (capped + 1) * 4 / GIB, 3) == 3.148
    assert result['max_running_requests'] == 10 and result['max_running_requests_total'] == 20


def test_dp_attention_keeps_attention_weights_per_attention_group():
    one = plan(model_config=QWEN32B, gpu_profile=H200, tp_size=4)
    dp = plan(model_config=QWEN32B, gpu_profile=H200, tp_size=4, dp_size=4, enable_dp_attention=True)
    # By hand from the config: the TP-sharded attention projections of one Qwen3-32B layer are q (5120 x 64 x 128),
    # k and v (5120 x 8 x 128 each) and o (64 x 128 x 5120); 64 layers. Attention TP 1 instead of 4: each rank holds
    # the whole of them, 3/4 more than under plain TP 4 (bf16).
    h, heads, kv_heads, head_dim = 5120, 64, 8, 128
    assert (QWEN32B['hidden_size'], QWEN32B['num_attention_heads'], QWEN32B['num_key_value_heads'],
            QWEN32B['head_dim'], QWEN32B['num_hidden_layers']) == (h, heads, kv_heads, head_dim, 64)
    attention = 64 * (2 * h * heads * head_dim + 2 * h * kv_heads * head_dim)
    assert dp['weights_detail']['dp_attention_gib'] == round(attention * (1 - 1 / 4.0) * 2 / GIB, 3) == 8.438
    assert dp['weights_detail']['target_gib'] > one['weights_detail']['target_gib']


def test_the_plan_and_the_command_line_state_per_worker_and_total_requests():
    result = plan(model_config=QWEN32B, gpu_profile=H200, tp_size=4, dp_size=2, enable_dp_attention=True,
                  max_running_requests=300)
    assert any(line.startswith('DP attention: 2 workers') for line in result['limits'])
    argv = sf.render(RELEASE, profile('qwen3-32b'), dict(max_running_requests=300), {}, dict(
        model_path='/m', tp_size=4, dp_size=2, enable_dp_attention=True))['argv']
    assert argv[argv.index('--tp-size'):argv.index('--tp-size') + 5] == ['--tp-size', '4', '--dp-size', '2',
                                                                         '--enable-dp-attention']
    rendered = sf.render(RELEASE, profile('qwen3-32b'), {}, {}, dict(model_path='/m', tp_size=4, dp_size=2))
    assert [c['check'] for c in rendered['preflight']] == ['dp_attention'] and '--dp-size' not in rendered['argv']


# --------------------------------------------------------------------------------------------------------------
# EAGLE-3 with a draft checkpoint (section 5.3)
# --------------------------------------------------------------------------------------------------------------

def test_auto_speculative_params_follow_the_target_architecture():
    # speculative_hook.py:1439-1440 LlamaForCausalLM (5, 4, 8); :1461 the fallback (3, 1, 4); topk > 1 keeps the
    # draft tokens, topk 1 forces steps + 1 (:1255-1266).
    assert sl.speculative_params(RELEASE, 'LlamaForCausalLM', 'EAGLE3') == (5, 4, 8)
    assert sl.speculative_params(RELEASE, 'Qwen3ForCausalLM', 'EAGLE3') == (3, 1, 4)
    assert sl.speculative_params(RELEASE, 'Grok1ForCausalLM', 'EAGLE3') == (5, 4, 8)
    assert sl.speculative_params(RELEASE, 'LlamaForCausalLM', 'EAGLE3', 3, 1, 8) == (3, 1, 4)
    assert sl.speculative_params(RELEASE, 'LlamaForCausalLM', 'EAGLE3', 5, 8, 32) == (5, 8, 32)
    # A release whose table lacks the per-architecture rule keeps the single fallback.
    assert sl.speculative_params(sr.release(TABLE, '0.5.18'), 'LlamaForCausalLM', 'EAGLE3') == (3, 1, 4)


def test_eagle3_draft_weights_count_before_sizing_with_their_own_embedding():
    """models/llama_eagle3.py: embed_tokens (vocab x hidden, :145-149), fc (3 aux states x hidden -> hidden,
    :151-167), one decoder layer with a 2 x hidden qkv input (:61-75), lm_head of draft_vocab_size (:309-314);
    all allocated when the draft worker is built, before scheduler.init_memory_pools (scheduler.py:1098-1111)."""
    h, inter, vocab, draft_vocab = 4096, 14336, 128256, 32000
    layer = 2 * h * (32 + 2 * 8) * 128 + 32 * 128 * h + 3 * h * inter + 3 * h
    expected = vocab * h + draft_vocab * h + 3 * h * h + layer + h
    result = plan(model_config=LLAMA8B, gpu_profile=H100, tp_size=1, context_length=2048, **EAGLE3)
    draft = result['speculative']['draft']
    assert round(draft['params_b'], 3) == round(expected / 1e9, 3)
    assert result['weights_detail']['draft_gib'] == round(expected * 2 / GIB, 3)  # float16 draft
    # eagle_worker_v2.py:353-363 -> llama.py:910-924 set_embed: the draft's own embedding is freed after sizing.
    assert draft['freed_after_sizing_gib'] == round(vocab * h * 2 / GIB, 3)
    plain = plan(model_config=LLAMA8B, gpu_profile=H100, tp_size=1, context_length=2048)
    # The draft comes out of the KV budget: the tokens lost are its bytes over the (bigger) cell.
    lost_bytes = plain['kv_cache_tokens'] * plain['kv_bytes_per_token'] - (
        result['kv_cache_tokens'] * result['kv_bytes_per_token'])
    assert abs(lost_bytes - expected * 2) < result['kv_bytes_per_token'] * 2


def test_a_draft_without_draft_vocab_shares_embedding_and_lm_head():
    # llama_eagle3.py:305-308: draft_vocab_size None -> load_lm_head_from_target -> set_embed_and_head frees both.
    cfg = dict(DRAFT8B)
    del cfg['draft_vocab_size']
    facts = sdr.draft_facts(cfg, RELEASE)
    weights = sdr.draft_weights(facts, None, 1, 2)
    assert weights['freed_after'] == 2 * 128256 * 4096 * 2


def test_eagle3_draft_kv_is_priced_at_the_target_per_layer_size_in_the_cell():
    # pool_configurator.py:310-314: cell += int(target cell x draft layers / target layers); the draft's layers
    # from its config (spec_aux_hidden_state.py:158-176: no num_nextn_predict_layers -> num_hidden_layers = 1).
    result = plan(model_config=LLAMA8B, gpu_profile=H100, tp_size=1, context_length=2048, **EAGLE3)
    target = 32 * 8 * 256 * 2
    assert result['kv_bytes_per_token_target'] == target
    assert result['kv_bytes_per_token_draft_in_budget'] == target // 32
    assert result['draft_kv_outside_budget_gib'] == 0.0


def test_a_wider_draft_pays_its_excess_kv_from_the_headroom():
    # The draft pool is built from the draft's own ModelConfig at the target's token count (kv_cache_configurator.py:
    # 470-474, :2742-2793): 16 KV heads cost twice the cell's share, and the excess is not in the budget.
    wide = dict(DRAFT8B, num_key_value_heads=16)
    base = plan(model_config=LLAMA8B, gpu_profile=H100, tp_size=1, context_length=2048, **EAGLE3)
    result = plan(model_config=LLAMA8B, gpu_profile=H100, tp_size=1, context_length=2048,
                  speculative_algorithm='EAGLE3', draft_model_config=wide)
    rows = result['kv_cache_tokens'] + result['page_size']
    assert result['draft_kv_outside_budget_gib'] == round(rows * 4096 / GIB, 3)
    assert any('EAGLE-3 draft\'s KV takes' in line for line in result['limits'])
    assert result['headroom_gib'] < base['headroom_gib']


def test_eagle3_refusals_name_the_rule_and_the_fix():
    with pytest.raises(vp.PlanError) as err:  # no built-in EAGLE-3 head
        plan(model_config=LLAMA8B, gpu_profile=H100, tp_size=1, speculative_algorithm='EAGLE3')
    assert err.value.kind == 'mtp' and 'needs a draft checkpoint' in str(err.value) and '(fix: ' in str(err.value)
    with pytest.raises(vp.PlanError) as err:  # a training config with architectures LlamaForCausalLM
        plan(model_config=LLAMA8B, gpu_profile=H100, tp_size=1, speculative_algorithm='EAGLE3',
             draft_model_config=config('EAGLE3-draft__SafeAILab-EAGLE__traineagle3-llama3.1-8B'))
    assert 'draft architecture LlamaForCausalLM' in str(err.value) and 'llama_eagle3.py:387' in str(err.value)
    with pytest.raises(vp.PlanError) as err:  # NEXTN with a draft path
        plan(model_config=LLAMA8B, gpu_profile=H100, tp_size=1, speculative_algorithm='NEXTN',
             speculative_num_draft_tokens=4, draft_model_config=DRAFT8B)
    assert 'algorithm: EAGLE3' in str(err.value)
    with pytest.raises(vp.PlanError) as err:  # STANDALONE is not modelled
        plan(model_config=LLAMA8B, gpu_profile=H100, tp_size=1, speculative_algorithm='STANDALONE',
             draft_model_config=DRAFT8B)
    assert 'models NEXTN/EAGLE' in str(err.value)


def test_the_draft_refuses_a_context_longer_than_its_own():
    # eagle_worker_v2.py:229 builds the draft with the target's context; configs/model_config.py:1291-1316 refuses it
    # above the draft's derived context unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN.
    model = dict(profile('qwen3-32b-eagle3'))
    model['serving'] = dict(model['serving'], speculative=dict(model['serving']['speculative']))
    model['serving']['speculative']['draft'] = dict(model['serving']['speculative']['draft'],
                                                    config=DRAFT8B)
    server = dict(model_path='/m', speculative_draft_model_path='/d', context_length=40960)
    checks = sf.render(RELEASE, model, {}, {}, server)['preflight']
    assert [c['check'] for c in checks] == ['draft_context_length']
    assert "Target model's context_length (40960) is greater than the derived context_length (2048)" in checks[0]['message']
    allowed = dict(server, extra_env={'SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN': '1'})
    assert not sf.render(RELEASE, model, {}, {}, allowed)['preflight']


def test_the_planner_refuses_a_draft_trained_for_a_shorter_context():
    # Issue 26: only the flag rules refused it. Meta-Llama-3.1-8B derives 131072 (max_position_embeddings 131072,
    # rope_type llama3: factor 1); the SpecForge draft's max_position_embeddings is 2048 (both config.json fixtures).
    with pytest.raises(vp.PlanError) as err:
        plan(model_config=LLAMA8B, gpu_profile=H100, tp_size=1, **EAGLE3)
    text = str(err.value)
    assert err.value.details['variable'] == 'llmops_context_length'
    assert 'context of 2048 tokens' in text and 'serving context of 131072' in text
    assert "Target model's context_length (131072) is greater than the derived context_length (2048)" in text
    assert '(fix: llmops_context_length: 2048 or less' in text
    with pytest.raises(vp.PlanError):
        plan(model_config=LLAMA8B, gpu_profile=H100, tp_size=1, context_length=2049, **EAGLE3)
    assert plan(model_config=LLAMA8B, gpu_profile=H100, tp_size=1, context_length=2048, **EAGLE3)['context_length'] == 2048
    # SGLang's override (environ.py EnvBool: "1", "true", ...) lets the draft run past 2048, and so does the planner.
    allowed = plan(model_config=LLAMA8B, gpu_profile=H100, tp_size=1, environment={
        'SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN': '1'}, **EAGLE3)
    assert allowed['context_length'] == 131072


def test_the_committed_pair_plans_and_renders_its_draft():
    model = profile('qwen3-32b-eagle3')
    # The profile's draft config is the SpecForge fixture, value for value (its unverified provenance is that file's).
    assert model['serving']['speculative']['draft']['config'] == config('EAGLE3-draft__SpecForge__qwen3-32b-eagle3')
    spec = model['serving']['speculative']
    result = plan(model_config=model['config'], gpu_profile=H200, tp_size=1, speculative_algorithm=spec['algorithm'],
                  draft_model_config=spec['draft']['config'])
    assert (result['speculative']['num_steps'], result['speculative']['eagle_topk'],
            result['speculative']['num_draft_tokens']) == (3, 1, 4)
    assert result['kv_bytes_per_token_draft_in_budget'] == 8 * 256 * 2  # 64 layers x 8 heads x 256 / 64
    rendered = sf.render(RELEASE, model, {}, {}, dict(model_path='/m', speculative_draft_model_path='/d',
                                                      speculative_num_draft_tokens=4, speculative_num_steps=3))
    argv = rendered['argv']
    assert argv[argv.index('--speculative-algorithm') + 1] == 'EAGLE3'
    assert argv[argv.index('--speculative-draft-model-path') + 1] == '/d' and not rendered['preflight']


def test_mtp_default_requests_and_headroom_count_the_freed_embedding():
    result = plan(model_config=LLAMA8B, gpu_profile=H100, tp_size=1, context_length=2048, **EAGLE3)
    assert result['max_running_requests'] == 48 and result['max_running_requests_bound_by'] == 'speculative_default'
    no_free = dict(result['speculative']['draft'])
    assert no_free['freed_after_sizing_gib'] > 0.9


def test_sglang_defaults_reserve_function_is_unchanged_without_dp():
    # The DP term is additive: dp 1 gives memory_hook.py:309-325 without it. By hand for an H200 (143771 MiB), TP 4,
    # chunk 8192, decode max_bs 512, prefill graphs on: 512 + 8192 x 1.5 + 4 / 8 x 1024 + reserve_for_graph_mb
    # (:357-399: 512 x 2 + 58 prefill graph sizes x 8, the sizes of cuda_graph_hook.py:480-497 up to 8192: 8 + 14 + 8
    # + 8 + 12 + 8) = 14800 MiB, above the 10 GiB floor; round((143771 - 14800) / 143771, 3) = 0.897.
    sizes = (list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32)) + list(range(576, 1025, 64))
             + list(range(1280, 4097, 256)) + list(range(4608, 8193, 512)))
    reserved = 512 + 8192 * 1.5 + 4 / 8.0 * 1024 + 512 * 2 + len(sizes) * 8
    assert (len(sizes), reserved) == (58, 14800)
    args = (RELEASE, 143771, 4, 8192, 512, True, False, False, None)
    for heuristic in (sd.default_mem_fraction(*args), sd.default_mem_fraction(*args, attn_dp_size=1)):
        assert heuristic['reserved_mib'] == 14800 and heuristic['mem_fraction_static'] == 0.897
    assert round((143771 - 14800) / 143771.0, 3) == 0.897
