# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A path-less MTP draft's own embedding and lm_head: resident when SGLang 0.5.23 sizes the target pools, freed after.

The draft worker is built and loaded before scheduler.init_memory_pools sizes the target's pools
(managers/scheduler.py:1098-1111); its MTP class allocates its own embed_tokens and lm_head then, and only
init_lm_head, inside the draft's alloc_memory_pool after the target was sized, swaps in the target's
(speculative/eagle_worker_v2.py:243-258, :336-379). One test per MTP class the release table maps a planned target
architecture to (profiles/sglang_releases.yml architectures.mtp_draft; configs/model_config.py:1032-1211), each with the
constructor lines it mirrors (paths under sglang/srt/ of the pinned wheel), then the padding of the vocabulary, the
plan's figures, and two real logs: the draft's "Load weight end ... mem usage" of MiMo-7B-RL's MTP head and of an
EAGLE-3 draft (the same rule, spec_draft.resident_draft).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.model import config as mc
from ansible_collections.llmops.inference.plugins.module_utils.planner import spec_draft as sdr
from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan as vp

from collection_paths import ROOT, release

FIXTURES = os.path.join(ROOT, 'tests', 'fixtures')
GIB = float(1 << 30)
# SGLang prints "mem usage=2.71 GB" (GiB) with two decimals: half a unit of the last digit.
ROUNDING_GIB = 0.005

RELEASE = release()


def config(name):
    with open(os.path.join(FIXTURES, 'hf_configs', name, 'config.json')) as handle:
        return json.load(handle)


def facts(cfg):
    return mc.model_facts(cfg, RELEASE['architectures'])


def tied(cfg):
    """The config with tie_word_embeddings true (text config too, where there is one)."""
    cfg = dict(cfg, tie_word_embeddings=True)
    if 'text_config' in cfg:
        cfg['text_config'] = dict(cfg['text_config'], tie_word_embeddings=True)
    return cfg


def mtp(cfg, tp, attn_tp=None, environment=None, layer_bytes=0):
    return sdr.mtp_draft_weights(RELEASE, facts(cfg), layer_bytes, tp, attn_tp or tp, environment)


def table(vocab, hidden, ranks):
    """vocab x hidden bf16 split over `ranks` (every vocab below is a multiple of 64 and of the ranks: no padding)."""
    assert vocab % 64 == 0 and vocab % ranks == 0
    return vocab // ranks * hidden * 2


# ---------------------------------------------------------------------------------------------------------------
# One test per MTP class
# ---------------------------------------------------------------------------------------------------------------

def test_qwen3_5_mtp_ties_its_head_to_its_embedding_and_replicates_the_embedding_under_dp_attention():
    # models/qwen3_5_mtp.py:138-155: Qwen3_5ForCausalLM(mtp_config) builds embed_tokens (qwen3_5.py:1791, :1864-1873
    # VocabParallelEmbedding(enable_tp=not is_dp_attention_enabled())); lm_head = model.embed_tokens when
    # tie_word_embeddings, else ParallelLMHead(vocab, hidden) over the TP group; set_embed_and_head (:170-180) drops
    # the embedding and the untied head.
    cfg = config('Qwen__Qwen3.5-122B-A10B')
    vocab, hidden = 248320, 3072
    out = mtp(cfg, 4)
    assert out['arch'] == 'Qwen3_5ForCausalLMMTP'
    assert (out['embed_bytes'], out['head_bytes']) == (table(vocab, hidden, 4), table(vocab, hidden, 4))
    assert out['freed_after'] == out['embed_bytes'] + out['head_bytes']
    dp = mtp(cfg, 4, attn_tp=1)  # --dp-size 4 --enable-dp-attention: the embedding is not split at all
    assert (dp['embed_group'], dp['embed_bytes'], dp['head_bytes']) == (1, table(vocab, hidden, 1), table(vocab, hidden, 4))
    one_table = mtp(tied(cfg), 4)
    assert (one_table['embed_bytes'], one_table['head_bytes']) == (table(vocab, hidden, 4), 0)
    assert one_table['freed_after'] == table(vocab, hidden, 4)


def test_qwen3_next_mtp_builds_its_own_head_even_when_tied():
    # models/qwen3_next_mtp.py:75-81 ParallelLMHead(vocab, hidden, use_attn_tp_group=enable_dp_lm_head) whatever
    # tie_word_embeddings says; the embedding of Qwen3NextModel, qwen3_next.py:922-927 (use_attn_tp_group=
    # is_dp_attention_enabled()); set_embed_and_head qwen3_next.py:1115-1121.
    cfg = config('Qwen__Qwen3-Next-80B-A3B-Thinking')
    vocab, hidden = 151936, 2048
    out = mtp(tied(cfg), 4)
    assert out['arch'] == 'Qwen3NextForCausalLMMTP'
    assert (out['embed_bytes'], out['head_bytes']) == (table(vocab, hidden, 4), table(vocab, hidden, 4))
    dp = mtp(cfg, 4, attn_tp=2)
    assert (dp['embed_group'], dp['embed_bytes'], dp['head_bytes']) == (2, table(vocab, hidden, 2), table(vocab, hidden, 4))


@pytest.mark.parametrize('name, cls, vocab, hidden', [
    ('deepseek-ai__DeepSeek-V3', 'DeepseekV3ForCausalLMNextN', 129280, 7168),
    # models/glm4_moe.py:1288 GlmMoeDsaForCausalLMNextN(DeepseekV3ForCausalLMNextN): the same modules.
    ('zai-org__GLM-5-FP8', 'GlmMoeDsaForCausalLMNextN', 154880, 6144),
])
def test_deepseek_nextn_embedding_follows_get_embedding_tp_kwargs(name, cls, vocab, hidden):
    # models/deepseek_nextn.py:83-88 VocabParallelEmbedding(**get_embedding_tp_kwargs()), :294-300 ParallelLMHead;
    # layers/vocab_parallel_embedding.py:166-185: replicated with SGLANG_ENABLE_EMBED_REPLICATION, else the
    # attention-TP group; set_embed_and_head deepseek_v2.py:3442-3448.
    cfg = config(name)
    out = mtp(cfg, 8)
    assert out['arch'] == cls
    expected = (8, table(vocab, hidden, 8), table(vocab, hidden, 8))
    assert (out['embed_group'], out['embed_bytes'], out['head_bytes']) == expected
    assert mtp(cfg, 8, attn_tp=2)['embed_bytes'] == table(vocab, hidden, 2)  # DP attention 4: attention TP 2
    for value in ('1', 'true', 'YES', 'y', True):
        replicated = mtp(cfg, 8, environment=dict(SGLANG_ENABLE_EMBED_REPLICATION=value))
        assert (replicated['embed_group'], replicated['embed_bytes'], replicated['head_bytes']) == (
            1, table(vocab, hidden, 1), table(vocab, hidden, 8))
        assert replicated['freed_after'] == table(vocab, hidden, 1) + table(vocab, hidden, 8)
    assert mtp(cfg, 8, environment=dict(SGLANG_ENABLE_EMBED_REPLICATION='0'))['embed_group'] == 8
    with pytest.raises(sdr.DraftError) as exc:
        mtp(cfg, 8, environment=dict(SGLANG_ENABLE_EMBED_REPLICATION='on'))
    assert exc.value.variable == 'llmops_environment'
    assert 'SGLANG_ENABLE_EMBED_REPLICATION=\'on\'' in str(exc.value) and 'environ.py:143-150' in str(exc.value)


def test_glm4_moe_nextn_shards_over_attention_tp_and_ignores_the_replication_env():
    # models/glm4_moe_nextn.py:60-65 VocabParallelEmbedding(use_attn_tp_group=is_dp_attention_enabled()), :139-145
    # ParallelLMHead; set_embed_and_head glm4_moe.py:1253-1259. No get_embedding_tp_kwargs: the env does nothing.
    cfg = config('zai-org__GLM-4.5-Air')
    vocab, hidden = 151552, 4096
    out = mtp(cfg, 4, environment=dict(SGLANG_ENABLE_EMBED_REPLICATION='1'))
    assert out['arch'] == 'Glm4MoeForCausalLMNextN'
    expected = (4, table(vocab, hidden, 4), table(vocab, hidden, 4))
    assert (out['embed_group'], out['embed_bytes'], out['head_bytes']) == expected
    assert mtp(cfg, 4, attn_tp=1)['embed_group'] == 1


def test_mimo_mtp_shards_over_the_whole_tp_group():
    # models/mimo_mtp.py:35-38 VocabParallelEmbedding(vocab, hidden) (no use_attn_tp_group), :103-107 ParallelLMHead
    # whatever tie_word_embeddings says; set_embed_and_head :198-204.
    cfg = config('XiaomiMiMo__MiMo-7B-Base')
    vocab, hidden = 151680, 4096
    out = mtp(tied(cfg), 2, attn_tp=1)
    assert out['arch'] == 'MiMoMTP'
    expected = (2, table(vocab, hidden, 2), table(vocab, hidden, 2))
    assert (out['embed_group'], out['embed_bytes'], out['head_bytes']) == expected


def test_mimo_v2_mtp_shards_over_attention_tp():
    # models/mimo_v2_nextn.py:168-173 VocabParallelEmbedding(use_attn_tp_group=is_dp_attention_enabled()), :251-257
    # ParallelLMHead; set_embed_and_head :387-393.
    cfg = config('XiaomiMiMo__MiMo-V2-Flash')
    vocab, hidden = 152576, 4096
    out = mtp(cfg, 4, attn_tp=2)
    assert out['arch'] == 'MiMoV2MTP'
    expected = (2, table(vocab, hidden, 2), table(vocab, hidden, 4))
    assert (out['embed_group'], out['embed_bytes'], out['head_bytes']) == expected


def test_qwen3_moe_mtp_shards_over_attention_tp():
    # models/qwen3_moe_mtp.py:59-65 ParallelLMHead, :84-90 set_embed_and_head; the embedding of Qwen3MoeModel,
    # qwen2_moe.py:1115-1121 (use_attn_tp_group=is_dp_attention_enabled()).
    cfg = config('Qwen__Qwen3-30B-A3B')
    vocab, hidden = 151936, 2048
    out = mtp(tied(cfg), 4, attn_tp=4)
    assert out['arch'] == 'Qwen3MoeForCausalLMMTP'
    assert (out['embed_bytes'], out['head_bytes']) == (table(vocab, hidden, 4), table(vocab, hidden, 4))


def test_every_mapped_target_is_planned_and_an_unmapped_one_with_mtp_layers_is_refused():
    arch = RELEASE['architectures']
    planned = arch['gqa'] | arch['mla'] | arch['hybrid_swa'] | arch['hybrid_gdn']
    assert set(arch['mtp_draft']) <= planned
    # Kimi-K2.5 keeps its architecture as the draft's (configs/model_config.py:1032-1211 names no MTP class for it).
    cfg = config('moonshotai__Kimi-K2.5')
    cfg = dict(cfg, text_config=dict(cfg['text_config'], num_nextn_predict_layers=1))
    with pytest.raises(vp.PlanError) as exc:
        vp.plan(model_config=cfg, gpu_memory_mib=143771, tp_size=8, release=RELEASE, speculative_num_draft_tokens=4)
    assert exc.value.kind == 'mtp'
    assert 'KimiK25ForConditionalGeneration' in str(exc.value) and 'architectures.mtp_draft' in str(exc.value)


# ---------------------------------------------------------------------------------------------------------------
# The vocabulary padding and the dtype
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('vocab, group, rows', [
    (151680, 1, 151680),   # a multiple of 64
    (50257, 1, 50304),     # padded to 64 (pad_vocab_size, vocab_parallel_embedding.py:57-59)
    (50257, 4, 12576),     # 50304 divides by 4
    (248320, 3, 82816),    # 248320 % 3 != 0: padding 64 x 3 = 192 -> 248448 (vocab_parallel_embedding.py:272-274)
    (248320, 6, 41408),    # padding 384 -> 248448
])
def test_vocab_partition_rows_pad_as_vocab_parallel_embedding(vocab, group, rows):
    assert sdr.vocab_partition_rows(vocab, group) == rows


def test_runtime_dtype_is_two_bytes_for_float32_configs():
    # configs/model_config.py:2303-2317: --dtype auto runs a float32 config in float16.
    assert sdr.runtime_dtype_bytes('float32') == sdr.runtime_dtype_bytes('bfloat16') == 2
    with pytest.raises(sdr.DraftError):
        sdr.runtime_dtype_bytes('float8_e4m3fn')


# ---------------------------------------------------------------------------------------------------------------
# The plan: at sizing out of the budget, freed after into the headroom
# ---------------------------------------------------------------------------------------------------------------

def test_plan_counts_the_tables_at_sizing_and_gives_them_back_to_the_headroom():
    cfg = config('Qwen__Qwen3.5-122B-A10B')
    result = vp.plan(model_config=cfg, gpu_memory_mib=143771, tp_size=4, release=RELEASE,
                     speculative_num_draft_tokens=4, speculative_num_steps=3)
    weights = result['weights_detail']
    tables = 2 * table(248320, 3072, 4) / GIB
    assert weights['draft_class'] == 'Qwen3_5ForCausalLMMTP'
    assert weights['draft_vocab_tables_gib'] == weights['draft_freed_after_gib'] == round(tables, 3)
    assert weights['draft_at_sizing_gib'] == weights['draft_gib']
    # The MTP layer of the checkpoint, counted by hand from the text config after models/qwen3_5_mtp.py:108-146: fc
    # (2h -> h, no bias), pre_fc_norm_embedding / _hidden, and one decoder layer with full attention (q_proj doubled by
    # attn_output_gate, 32 heads x 256; k, v of 2 heads; o) and the MoE (256 experts x gate/up/down 3072 x 1024, the
    # shared expert and its 1-wide gate, the 256-way router), its two layer norms, q_norm / k_norm and the final norm.
    text = cfg['text_config']
    h, heads, head_dim, kv_heads = text['hidden_size'], text['num_attention_heads'], text['head_dim'], text['num_key_value_heads']
    experts, moe_inter, shared_inter = text['num_experts'], text['moe_intermediate_size'], text['shared_expert_intermediate_size']
    assert (h, heads, head_dim, kv_heads, experts, moe_inter, shared_inter) == (3072, 32, 256, 2, 256, 1024, 1024)
    attention = h * heads * head_dim * 2 + 2 * h * kv_heads * head_dim + heads * head_dim * h
    moe = experts * 3 * h * moe_inter + 3 * h * shared_inter + h + h * experts
    mtp_params = attention + moe + 2 * h * h + (2 * h + 2 * head_dim) + 2 * h + h
    assert mtp_params == 2523679232
    layer = mtp_params * 2 / 4.0 / GIB  # bf16, over TP 4
    # The plan rounds to three decimals: exact after the same rounding.
    assert weights['draft_at_sizing_gib'] == round(layer + tables, 3) == 1.886
    # Loaded before sizing: free after load = free before - target - draft at sizing.
    assert result['free_before_load_gib'] - result['free_after_load_gib'] == pytest.approx(
        weights['target_gib'] + weights['draft_at_sizing_gib'], abs=0.002)
    # Headroom = what is free at sizing minus everything allocated after it, plus the freed tables.
    allocated = (result['k_size_gib'] + result['v_size_gib'] + result['draft_kv_gib'] + result['req_to_token_gib']
                 + result['mamba_pool_gib'] + result['spec_state_gib'] + result['mm_reserve_gib'])
    expected = (result['free_after_load_gib'] - result['runtime_overhead_gib'] - allocated
                + weights['draft_freed_after_gib'])
    assert result['headroom_gib'] == pytest.approx(expected, abs=0.01)


def test_the_replication_env_reaches_the_plan_and_notes_the_target():
    cfg = config('deepseek-ai__DeepSeek-V3')
    inputs = dict(model_config=cfg, gpu_memory_mib=183359, tp_size=8, release=RELEASE, speculative_num_draft_tokens=2,
                  weights_bytes=688586727753)
    base = vp.plan(**inputs)
    replicated = vp.plan(environment=dict(SGLANG_ENABLE_EMBED_REPLICATION='1'), **inputs)
    grown = replicated['weights_detail']['draft_at_sizing_gib'] - base['weights_detail']['draft_at_sizing_gib']
    assert grown == pytest.approx((table(129280, 7168, 1) - table(129280, 7168, 8)) / GIB, abs=0.002)
    assert replicated['kv_cache_tokens'] < base['kv_cache_tokens']
    assert any('SGLANG_ENABLE_EMBED_REPLICATION' in note for note in replicated['notes'])


# ---------------------------------------------------------------------------------------------------------------
# Real logs: the draft's "Load weight end ... mem usage"
# ---------------------------------------------------------------------------------------------------------------

def draft_mem_usage(log):
    """(draft type, mem usage GiB) of the second "Load weight end" line (the draft worker's)."""
    with open(os.path.join(FIXTURES, 'sglang_logs', 'speculative', log)) as handle:
        lines = re.findall(r'Load weight end\. type=(\w+), .*mem usage=([\d.]+) GB', handle.read())
    assert len(lines) == 2, lines
    return lines[1][0], float(lines[1][1])


def test_mimo_mtp_draft_load_matches_the_logged_mem_usage():
    """MiMo-7B-RL + its MTP layer, TP1, bf16 (docs build 0.5.2rc1): the draft logs mem usage=2.71 GB.

    0.5.2rc1 loaded the draft AFTER the target's pools (EAGLEWorker built after the target TpModelWorker sized them,
    then set_embed_and_head at once: eagle_worker.py:126-165 of that wheel), 0.5.23 before (scheduler.py:1098-1111).
    The figure checked is what the draft model allocates when it loads, the same in both: MiMoMTP builds the same
    embedding, lm_head and Qwen2 decoder layer in both wheels (models/mimo_mtp.py), so the 0.5.23 rule's at-sizing
    bytes must equal it. The config is MiMo-7B-Base's (the RL model has the same architecture).
    """
    kind, logged = draft_mem_usage('mimo-7b-rl-mtp-tp1-docs-v0.5.2rc1.md')
    assert kind == 'MiMoMTP'
    result = vp.plan(model_config=config('XiaomiMiMo__MiMo-7B-Base'), gpu_memory_mib=81920, tp_size=1,
                     release=RELEASE, mem_fraction_static=0.5, context_length=4096, speculative_algorithm='EAGLE',
                     speculative_num_steps=1, speculative_eagle_topk=1, speculative_num_draft_tokens=2)
    weights = result['weights_detail']
    planned = weights['draft_at_sizing_gib']
    error = planned - logged
    print('MiMoMTP draft load: plan %.3f GiB (MTP layer %.3f + embedding and lm_head %.3f), log %.2f: %+.3f GiB '
          '(%+.2f %%); the MTP layer alone, as priced before, %+.1f %%'
          % (planned, planned - weights['draft_vocab_tables_gib'], weights['draft_vocab_tables_gib'], logged, error,
             100 * error / logged, 100 * (planned - weights['draft_vocab_tables_gib'] - logged) / logged))
    # 2 x 151,680 x 4,096 x 2 B = 2.314 GiB of tables (151,680 is a multiple of 64).
    assert weights['draft_vocab_tables_gib'] == round(2 * table(151680, 4096, 1) / GIB, 3)
    # Bound: the print's rounding plus the plan's three-decimal rounding.
    assert abs(error) <= ROUNDING_GIB + 0.0005


def test_eagle3_draft_load_matches_the_logged_mem_usage():
    """Llama-3.1-8B-Instruct + an EAGLE-3 draft, TP1, --dtype float16 (docs build 0.5.2rc1): mem usage=1.77 GB.

    The same rule (spec_draft.resident_draft) for a draft checkpoint: its own embedding (128,256 x 4,096) and lm_head
    (draft_vocab_size 32,000), fc and one decoder layer. The draft's config.json is SpecForge's llama3-8B-eagle3, a
    stand-in with the same geometry (the logged draft's own config was not found; docs/plan.md says so).
    """
    kind, logged = draft_mem_usage('llama-3.1-8b-instruct-eagle3-tp1-docs-v0.5.2rc1.md')
    assert kind == 'LlamaForCausalLMEagle3'
    result = vp.plan(model_config=config('meta-llama__Meta-Llama-3.1-8B'), gpu_memory_mib=81920, tp_size=1,
                     release=RELEASE, mem_fraction_static=0.6, context_length=4096, speculative_algorithm='EAGLE3',
                     speculative_num_steps=5, speculative_eagle_topk=8, speculative_num_draft_tokens=32,
                     draft_model_config=config('EAGLE3-draft__SpecForge__llama3-8B-eagle3'),
                     # the stand-in's max_position_embeddings is 2048; the logged draft ran at the server's context
                     environment={'SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN': '1'})
    planned = result['weights_detail']['draft_at_sizing_gib']
    print('EAGLE-3 draft load: plan %.3f GiB, log %.2f: %+.3f GiB (%+.2f %%)'
          % (planned, logged, planned - logged, 100 * (planned - logged) / logged))
    assert abs(planned - logged) <= ROUNDING_GIB + 0.0005
