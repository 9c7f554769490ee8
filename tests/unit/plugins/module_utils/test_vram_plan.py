# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""VRAM planner against SGLang's own numbers: two real start-up logs, the notes' arithmetic and the source rules."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest
import yaml

from ansible_collections.llmops.inference.plugins.module_utils.model import config as mc
from ansible_collections.llmops.inference.plugins.module_utils.sglang import defaults as sd
from ansible_collections.llmops.inference.plugins.module_utils.sglang import release as sr
from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan as vp
from ansible_collections.llmops.inference.plugins.module_utils.planner.vram_report import render_markdown, render_text

from collection_paths import PIN, ROOT, release_table_data

GIB = 1 << 30


def profile(kind, name):
    with open(os.path.join(ROOT, 'profiles', kind, name + '.yml')) as handle:
        return yaml.safe_load(handle)


TABLE = release_table_data()


def rel(version=PIN):
    return sr.release(TABLE, version)


def facts(config):
    return mc.model_facts(config, rel()['architectures'])


def plan(**inputs):
    """vram_plan.plan() with the pinned release unless the test names another."""
    inputs.setdefault('release', rel())
    return vp.plan(**inputs)


M122 = profile('models', 'qwen3.5-122b-a10b')
M397 = profile('models', 'qwen3.5-397b-a17b-nvfp4')
RTX = profile('hardware', 'rtx-pro-6000-blackwell-server')
H200 = profile('hardware', 'h200')
H100 = profile('hardware', 'h100-80gb')
B200 = profile('hardware', 'b200')
MTP = dict(speculative_num_draft_tokens=4, speculative_num_steps=3)


def gib2(value):
    """How SGLang prints GiB in its logs ('%.2f GB')."""
    return '%.2f' % value


# ---------------------------------------------------------------------------------------------------------------
# The two real log data points (shared/notes/sglang.md section 6). Only the facts the planner reads are given;
# hidden/intermediate sizes matter only for weights, which the logged free-memory figures replace.
# ---------------------------------------------------------------------------------------------------------------

# Validation A: Qwen3.5-9B, TP2 on 2x RTX 4090, SGLang dev g4df60434d (2026-04-14, between 0.5.10 and 0.5.11),
# frac 0.8, ctx 262144, no spec. Log: avail 22.93 -> 14.08; max_mamba_cache_size 186, conv 0.10 GB, ssm 4.38 GB;
# #tokens 327310, K 2.50 GB; max_running_requests 62.
CONFIG_A = dict(
    architectures=['Qwen3_5ForConditionalGeneration'], model_type='qwen3_5',
    text_config=dict(hidden_size=4096, num_hidden_layers=32, full_attention_interval=4, num_attention_heads=16,
                     num_key_value_heads=4, head_dim=256, linear_num_key_heads=16, linear_num_value_heads=32,
                     linear_key_head_dim=128, linear_value_head_dim=128, linear_conv_kernel_dim=4,
                     intermediate_size=12288, vocab_size=248320, max_position_embeddings=262144,
                     mamba_ssm_dtype='float32'),
    vision_config=dict(depth=27, hidden_size=1152))
INPUTS_A = dict(model_config=CONFIG_A, gpu_memory_mib=24564, tp_size=2, release=rel('0.5.11'),
                mem_fraction_static=0.8, free_memory_before_load_gib=22.93, free_memory_after_load_gib=14.08)

# Validation B: Qwen3.8-27B-FP8 (Qwen3_5ForConditionalGeneration), 1x H100 80GB, SGLang 0.5.18, frac 0.85,
# --max-running-requests 32, no spec. Log: avail 50.01 after load (usage 28.47 -> 78.48 before);
# max_mamba_cache_size 124, conv 0.34 GB, ssm 17.58 GB; #tokens 330323, K 10.08 GB; capped to 24 by mamba slots.
CONFIG_B = dict(
    architectures=['Qwen3_5ForConditionalGeneration'], model_type='qwen3_5',
    text_config=dict(hidden_size=5120, num_hidden_layers=64, full_attention_interval=4, num_attention_heads=24,
                     num_key_value_heads=4, head_dim=256, linear_num_key_heads=16, linear_num_value_heads=48,
                     linear_key_head_dim=128, linear_value_head_dim=128, linear_conv_kernel_dim=4,
                     intermediate_size=17408, vocab_size=248320, max_position_embeddings=262144,
                     mamba_ssm_dtype='float32', quantization_config=dict(quant_method='fp8')),
    vision_config=dict(depth=27, hidden_size=1152))
INPUTS_B = dict(model_config=CONFIG_B, gpu_memory_mib=81559, tp_size=1, release=rel('0.5.18'),
                mem_fraction_static=0.85, max_running_requests=32, free_memory_before_load_gib=78.48,
                free_memory_after_load_gib=50.01)

# The two logs' discrete values, and their K/V and state sizes as SGLang printed them ('%.2f GB').
LOGGED_A = dict(slots=186, tokens=327310, k='2.50', ssm='4.38', conv='0.10', running=62, per_slot=25755648, cell=16384,
                ratio=3)
LOGGED_B = dict(slots=124, tokens=330323, k='10.08', ssm='17.58', conv='0.34', running=24, per_slot=153944064,
                cell=65536, ratio=5)


def _rounding_gib(inputs):
    """What the logs' 0.01 GiB rounding of the two free-memory inputs can move the pool budget by:
    rest = after - pre x (1 - frac), each logged to +-0.005 GiB."""
    return 0.005 + 0.005 * (1 - inputs['mem_fraction_static'])


@pytest.mark.parametrize('inputs, logged', [(INPUTS_A, LOGGED_A), (INPUTS_B, LOGGED_B)],
                         ids=['A-qwen3.5-9b-tp2-4090', 'B-27b-fp8-h100-0.5.18'])
def test_real_log_exact(inputs, logged):
    """With the planner's default runtime overhead (nothing fitted to these logs) every discrete value of the log is
    exact: state and KV geometry, slots, running requests and the printed state sizes."""
    result = plan(**inputs)
    assert result['runtime_overhead_gib'] == vp.DEFAULT_RUNTIME_OVERHEAD_GIB
    assert result['mamba_bytes_per_slot'] == logged['per_slot']
    assert result['kv_bytes_per_token'] == logged['cell']
    assert result['mamba_cache_slots'] == logged['slots']
    assert result['mamba_slots_per_request'] == logged['ratio']
    assert gib2(result['ssm_state_gib']) == logged['ssm']
    assert gib2(result['conv_state_gib']) == logged['conv']
    assert result['max_running_requests'] == logged['running']
    assert result['max_running_requests_bound_by'] == 'mamba_slots'


@pytest.mark.parametrize('inputs, logged', [(INPUTS_A, LOGGED_A), (INPUTS_B, LOGGED_B)], ids=['A', 'B'])
def test_real_log_tokens_within_the_stated_uncertainty(inputs, logged):
    """#tokens depends on the memory SGLang allocates between "Load weight end" and pool sizing, which no log line
    shows; the planner charges DEFAULT_RUNTIME_OVERHEAD_GIB for it. The logged #tokens (and K size) must lie between
    the plans for overheads from none to twice the default (swept in 8 MiB steps: the mamba pool's whole slots make
    #tokens step, not slide), widened by the logs' own rounding and one sweep step: a band stated before looking at
    these logs, not fitted to them."""
    step_mib = 8
    rounding = _rounding_gib(inputs) + step_mib / 1024.0
    sweep = [plan(runtime_overhead_gib=mib / 1024.0, **inputs)
             for mib in range(0, int(2 * vp.DEFAULT_RUNTIME_OVERHEAD_GIB * 1024) + step_mib, step_mib)]
    tokens = [r['kv_cache_tokens'] for r in sweep]
    slack = int(rounding * GIB // logged['cell']) + 1
    assert min(tokens) - slack <= logged['tokens'] <= max(tokens) + slack
    sizes = [r['k_size_gib'] for r in sweep]
    assert min(sizes) - 0.01 <= float(logged['k']) <= max(sizes) + 0.01
    assert gib2(plan(**inputs)['v_size_gib']) == gib2(plan(**inputs)['k_size_gib'])


def test_real_log_rules_matter():
    """Without the hidden overhead, or with the other release's rules, the slot counts are off by one."""
    assert plan(runtime_overhead_gib=0.0, **INPUTS_A)['mamba_cache_slots'] == 187
    assert plan(runtime_overhead_gib=0.0, **INPUTS_B)['mamba_cache_slots'] == 125
    # 0.5.18's rules (padded pool, 100 MiB multimodal reserve) on the April log give 183, not 186: A ran the
    # unpadded 0.5.10/0.5.11 formula without the reserve.
    inputs = dict(INPUTS_A)
    inputs['release'] = rel('0.5.18')
    assert plan(**inputs)['mamba_cache_slots'] == 183
    # B is multimodal: 0.5.18 reserves SGLANG_VLM_CACHE_SIZE_MB (100 MiB) of the KV budget.
    assert plan(**INPUTS_B)['mm_reserve_gib'] == pytest.approx(100 / 1024.0, abs=1e-4)


# ---------------------------------------------------------------------------------------------------------------
# Arithmetic from the notes (per-slot, KV cell, parameter count, default fraction)
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('model, tp, dtype, expected', [
    (M122, 4, 'float32', 38412288),
    (M122, 4, 'bfloat16', 19537920),
    (M122, 2, 'float32', 76824576),
    (M122, 8, 'float32', 19206144),
    (M397, 4, 'float32', 48015360),
])
def test_mamba_bytes_per_slot(model, tp, dtype, expected):
    assert vp.mamba_slot_bytes(facts(model['config']), tp, dtype)['per_slot'] == expected


@pytest.mark.parametrize('model, tp, kv_bytes, expected', [
    (M122, 4, 2, 12288), (M122, 4, 1, 6144), (M122, 1, 2, 24576), (M122, 8, 2, 12288), (M397, 4, 2, 15360),
])
def test_kv_cell_full_attention_layers_only(model, tp, kv_bytes, expected):
    f = facts(model['config'])
    assert f['n_full'] == len(f['full_layer_ids'])
    assert vp.kv_cell_bytes(f, tp, kv_bytes, 0) == (expected, 0)


def test_eagle_draft_kv_folded_in_when_config_names_nextn_layers():
    config = dict(M122['config'], text_config=dict(M122['config']['text_config'], num_nextn_predict_layers=1))
    assert vp.kv_cell_bytes(facts(config), 4, 2, 1) == (12288, 1024)  # 13/12, HEAD's EAGLE cell
    result = plan(model_config=config, gpu_profile=RTX, tp_size=4, release=rel(), **MTP)
    assert result['kv_bytes_per_token'] == 13312
    assert result['draft_kv_in_budget'] is True


def test_parameter_count_matches_model_card():
    counts = vp.param_counts(facts(M122['config']))
    assert counts['language'] / 1e9 == pytest.approx(122.1, abs=0.1)
    assert counts['active'] / 1e9 == pytest.approx(9.0, abs=0.05)  # download-and-bench.md section 8
    # 39 shards of the seed: du printed 234G (GiB); 125.1 B params x 2 B = 233 GiB.
    total = counts['language'] + counts['vision'] + counts['mtp']
    assert total * 2 / float(GIB) == pytest.approx(233, abs=1.5)


def test_nested_and_flat_configs_agree():
    flat = dict(M122['config']['text_config'], architectures=M122['config']['architectures'])
    nested = facts(M122['config'])
    plain = facts(flat)
    for key in ('hidden', 'layers', 'n_full', 'n_linear', 'kv_heads', 'lin_v_heads', 'experts', 'mtp_layers'):
        assert nested[key] == plain[key]
    assert nested['n_full'] == 12 and nested['n_linear'] == 36
    assert nested['multimodal'] and plain['multimodal']  # the architecture alone makes SGLang treat it as a VLM


@pytest.mark.parametrize('gpu, tp, spec, before_factor', [
    (RTX, 4, True, 0.849), (H200, 4, True, 0.897), (H100, 4, True, 0.819), (B200, 4, True, 0.852),
    (RTX, 2, False, 0.857),
])
def test_default_mem_fraction(gpu, tp, spec, before_factor):
    release = rel()
    chunk, bs = sd.capacity_defaults(release, gpu['memory_total_mib'], tp)
    out = sd.default_mem_fraction(release, gpu['memory_total_mib'], tp, chunk, bs, True, spec, True,
                                  facts(M122['config'])['vision'])
    assert out['before_vlm_factor'] == before_factor
    # The vision config has depth, not num_hidden_layers: SGLang's getattr falls back to 24 layers.
    assert out['vlm_factor'] == pytest.approx(0.95 * (1 - 0.1 * (24 * 1152 ** 2 / (24.0 * 1024 ** 2) - 1)))


def test_apr_mem_fraction_adds_spec_reserve():
    out = sd.default_mem_fraction(rel('0.5.11'), 143771, 4, 8192, 512, False, True, False, None)
    assert out['reserved_mib'] == 512 + 8192 * 1.5 + 512 * 2 + 512 + 4096


def test_capacity_buckets():
    release = rel()
    assert sd.capacity_defaults(release, 97887, 4) == (8192, 512)
    assert sd.capacity_defaults(release, 97887, 2) == (8192, 256)
    assert sd.capacity_defaults(release, 183359, 4) == (16384, 512)
    assert sd.capacity_defaults(release, 24564, 2) == (4096, 48)
    assert sd.capacity_defaults(rel('0.5.11'), 24564, 2) == (2048, 24)  # the apr family's <35 GiB bucket
    assert len(sd.prefill_graph_sizes(8192)) == 58


# ---------------------------------------------------------------------------------------------------------------
# The deployment of the seed: 122B BF16 with MTP on 4x RTX PRO 6000 vs 4x H200
# ---------------------------------------------------------------------------------------------------------------

def plan_122b(gpu, **extra):
    inputs = dict(model_config=M122['config'], gpu_profile=gpu, tp_size=4, release=rel(), max_tp=8)
    inputs.update(MTP)
    inputs.update(extra)
    return vp.plan_with_recommendations(**inputs)


def test_122b_rtx6000_tp4_mtp_is_tight():
    result = plan_122b(RTX)
    assert result['mem_fraction_static'] == pytest.approx(0.849 * 0.92477, abs=1e-4)
    # Target 57.1 + the MTP layer 1.2 + the draft's own embedding and lm_head (Qwen3_5ForCausalLMMTP, untied):
    # 2 x 248,320 x 3,072 x 2 B / TP4 (the vocab is a multiple of 64: no padding) = 0.71 GiB, freed after sizing.
    tables = 2 * 248320 * 3072 * 2 / 4.0
    assert result['weights_detail']['draft_vocab_tables_gib'] == round(tables / GIB, 3)
    assert result['weights_detail']['draft_freed_after_gib'] == round(tables / GIB, 3)
    assert result['weights_gib_per_gpu'] == pytest.approx(58.3 + tables / GIB, abs=0.2)
    assert result['mamba_bytes_per_slot'] == 38412288
    assert result['mamba_slots_per_request'] == 5  # extra_buffer (auto on the pinned release) with overlap
    assert result['mamba_cache_slots'] == 105
    assert result['spec_state_gib'] == pytest.approx(3.15, abs=0.01)
    assert result['kv_bytes_per_token'] == 12288
    assert 670000 < result['kv_cache_tokens'] < 700000
    assert result['max_running_requests'] == 21
    assert result['max_running_requests_bound_by'] == 'mamba_slots'
    table = dict((row['concurrency'], row) for row in result['max_context_at_concurrency'])
    assert table[1]['max_context_tokens'] == 262144
    assert table[8]['bound_by'] == 'kv_cache' and table[8]['max_context_tokens'] == result['kv_cache_tokens'] // 8
    assert table[32]['max_context_tokens'] is None and table[32]['bound_by'] == 'max_running_requests'
    assert result['fits'] and result['verdict'] == 'FITS (tight)'
    assert result['limits'][0].startswith('max_running_requests 21 is capped by the mamba state pool')
    flags = [' '.join(rec['flags']) for rec in result['recommendations']]
    assert '--mamba-ssm-dtype bfloat16' in flags
    assert '--kv-cache-dtype fp8_e4m3' in flags
    assert '--tp-size 8' in flags
    assert any(flag.startswith('--mem-fraction-static 0.9') for flag in flags)
    assert any(flag.startswith('--max-running-requests') for flag in flags)
    bf16 = [rec for rec in result['recommendations'] if rec['flags'] == ['--mamba-ssm-dtype', 'bfloat16']][0]
    assert bf16['effect']['max_running_requests'] == [21, 42]
    # The hand estimate of the seed: "134 GB left for KV" (33.5 GB per GPU). SGLang's KV pool is far smaller.
    assert result['k_size_gib'] + result['v_size_gib'] < 9


def test_122b_h200_tp4_mtp_is_comfortable():
    result = plan_122b(H200)
    assert result['max_running_requests'] == 48
    assert result['max_running_requests_bound_by'] == 'speculative_default'
    assert result['kv_cache_tokens'] > 2900000
    table = dict((row['concurrency'], row) for row in result['max_context_at_concurrency'])
    assert table[8]['max_context_tokens'] == 262144
    assert result['verdict'] == 'FITS'
    raise_cap = [rec for rec in result['recommendations'] if rec['flags'][0] == '--max-running-requests'][0]
    assert int(raise_cap['flags'][1]) == result['mamba_cache_slots'] // 5
    assert raise_cap['effect']['max_running_requests'][1] > 48


def test_roofline():
    rtx = plan_122b(RTX)['decode_roofline_tok_s']
    h200 = plan_122b(H200)['decode_roofline_tok_s']
    assert rtx['bytes_per_token_gb'] == pytest.approx(18.3, abs=0.1)
    assert rtx['no_mtp'] == pytest.approx(4 * 1597e9 / 18.32e9, abs=2)
    assert h200['no_mtp'] == pytest.approx(1050, abs=10)
    assert h200['mtp'] == pytest.approx(1340, abs=15)  # notes: about 1,350 at L = 3.1
    assert rtx['mtp'] > rtx['no_mtp']


def test_render():
    result = plan_122b(RTX)
    lines = render_text(result, 'sglang-ct')
    assert lines[0] == 'sglang-ct'
    assert any(line.startswith('max running requests') and '21 (bound by mamba slots)' in line for line in lines)
    markdown = render_markdown(result, 'sglang-ct')
    assert 'not measured on a GPU' in markdown
    assert '| 32 | - | max running requests |' in markdown
    # The headline, with "tight" defined where it appears (21 running requests < 32).
    assert ('**FITS (tight)**: %s KV cache tokens, max running requests 21 (bound by mamba slots), context length '
            '262,144. *Tight* means it starts, but max running requests 21 < 32.'
            % '{:,}'.format(result['kv_cache_tokens'])) in markdown.split('\n')[4], markdown[:800]
    json.dumps(result)  # the module returns it as is


# ---------------------------------------------------------------------------------------------------------------
# Failures SGLang would raise, or that make the plan impossible
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('tp, fragment', [
    (3, 'num_attention_heads 32 is not divisible by tp 3'),
    (64, 'linear_num_key_heads 16 is not divisible by tp 64'),
])
def test_tp_divisibility(tp, fragment):
    with pytest.raises(vp.PlanError) as exc:
        plan(model_config=M122['config'], gpu_memory_mib=183359, tp_size=tp)
    assert exc.value.kind == 'tp'
    assert fragment in str(exc.value)


def test_tp_kv_replication_rule():
    text = dict(M122['config']['text_config'], num_key_value_heads=3, num_attention_heads=24)
    config = dict(M122['config'], text_config=text)
    with pytest.raises(vp.PlanError) as exc:
        plan(model_config=config, gpu_memory_mib=183359, tp_size=4)
    assert 'not a multiple of num_key_value_heads 3' in str(exc.value)


def test_tp_linear_key_heads():
    config = dict(M122['config'], text_config=dict(M122['config']['text_config'], linear_num_key_heads=12))
    with pytest.raises(vp.PlanError) as exc:
        plan(model_config=config, gpu_memory_mib=183359, tp_size=8)
    assert 'linear_num_key_heads 12 is not divisible by tp 8' in str(exc.value)


def test_no_mtp_layers():
    text = dict(M122['config']['text_config'])
    del text['mtp_num_hidden_layers']
    with pytest.raises(vp.PlanError) as exc:
        plan(model_config=dict(M122['config'], text_config=text), gpu_profile=H200, tp_size=4, **MTP)
    assert exc.value.kind == 'mtp' and 'has no MTP layers' in str(exc.value)
    # Without MTP the same config plans fine.
    assert plan(model_config=dict(M122['config'], text_config=text), gpu_profile=H200, tp_size=4)['fits']


def test_mtp_tensors_missing_from_checkpoint(tmp_path):
    (tmp_path / 'config.json').write_text(json.dumps(M122['config']))
    (tmp_path / 'model.safetensors.index.json').write_text(json.dumps(dict(
        metadata=dict(total_size=250000000000), weight_map={'model.language_model.embed_tokens.weight': 'a'})))
    config, total, names = vp.read_model_path(str(tmp_path))
    assert total == 250000000000 and config['model_type'] == 'qwen3_5_moe'
    with pytest.raises(vp.PlanError) as exc:
        plan(model_config=config, weights_bytes=total, weight_names=names, gpu_profile=H200, tp_size=4, **MTP)
    assert exc.value.kind == 'mtp' and 'mtp.*' in str(exc.value)


def test_weights_exceed_memory():
    with pytest.raises(vp.PlanError) as exc:
        plan(model_config=M122['config'], gpu_profile=RTX, tp_size=2, **MTP)
    assert exc.value.kind == 'weights'
    assert 'cannot load' in str(exc.value) and 'exceed the' in str(exc.value)


def llama_70b_block_fp8_gib():
    """Llama-3.x-70B (hidden 8192, 80 layers, 8 KV heads of 128, intermediate 28672, vocab 128256, untied) as a
    block-FP8 128x128 checkpoint, by hand: layers/quantization/fp8.py Fp8LinearMethod.create_weights keeps an FP8
    weight [out, in] and a float32 weight_scale_inv [ceil(out/128), ceil(in/128)] per Linear; the rest stays bf16."""
    hidden, layers, kv, inter, vocab = 8192, 80, 1024, 28672, 128256
    shapes = [(hidden, hidden), (kv, hidden), (kv, hidden), (hidden, hidden), (inter, hidden), (inter, hidden),
              (hidden, inter)]
    linear = sum(o * i + -(-o // 128) * -(-i // 128) * 4 for o, i in shapes)
    return (layers * (linear + 2 * hidden * 2) + hidden * 2 + 2 * vocab * hidden * 2) / float(GIB)


def test_weights_that_no_fraction_can_fit_get_a_fix_that_can():
    # Issue 26: BF16 Llama-3.3-70B at TP1 on an H200 (131.4 GiB of weights, 138.5 GiB free) was told to raise
    # --mem-fraction-static above 0.950, which leaves nothing of the memory SGLang keeps for activations.
    llama = profile('models', 'llama-3.3-70b-instruct')['config']
    with pytest.raises(vp.PlanError) as exc:
        plan(model_config=llama, gpu_profile=H200, tp_size=1)
    text = str(exc.value)
    assert exc.value.kind == 'weights' and exc.value.details['variable'] == 'llmops_tp_size'
    assert 'no --mem-fraction-static can help' in text and 'Raise --mem-fraction-static' not in text
    # The fixes, with their numbers: TP2 halves the 131.4 GiB; an FP8 checkpoint is about half of it at TP1.
    assert '(fix: llmops_tp_size: 2 (65.7 GiB of weights per GPU)' in text
    assert 'an FP8 checkpoint of this model (about %.1f GiB per GPU at tp 1)' % llama_70b_block_fp8_gib() in text
    assert 'a GPU with more than' in text
    # On an H100 the weights exceed what is free before loading: the same kind of fix, TP4 (32.9 GiB a GPU).
    with pytest.raises(vp.PlanError) as exc:
        plan(model_config=llama, gpu_profile=H100, tp_size=1)
    assert 'cannot load' in str(exc.value) and 'no --mem-fraction-static can help' in str(exc.value)
    assert '(fix: llmops_tp_size: 4 (32.9 GiB of weights per GPU)' in str(exc.value)
    # Where a fraction can help, it is still the advice (the next test).


def test_no_kv_budget_quotes_sglang_minimum():
    with pytest.raises(vp.PlanError) as exc:
        plan(model_config=M122['config'], gpu_profile=RTX, tp_size=4, mem_fraction_static=0.6, **MTP)
    assert exc.value.kind == 'weights'
    assert 'Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.600' in str(exc.value)
    suggested = exc.value.details['min_mem_fraction_static']
    assert 0.6 < suggested < 0.7
    # Just above SGLang's suggested minimum it starts (with a tiny pool).
    with pytest.raises(vp.PlanError):
        plan(model_config=M122['config'], gpu_profile=RTX, tp_size=4, mem_fraction_static=suggested - 0.01, **MTP)


def test_h100_tp4_default_fraction_cannot_serve():
    with pytest.raises(vp.PlanError) as exc:
        plan_122b(H100)
    assert exc.value.kind in ('sglang', 'weights')
    # The cookbook runs H100 TP4 at 0.88.
    assert plan_122b(H100, mem_fraction_static=0.88)['max_running_requests'] > 0


def test_quantized_needs_weights_bytes():
    config = dict(M397['config'])
    with pytest.raises(vp.PlanError) as exc:
        plan(model_config=config, gpu_profile=RTX, tp_size=8)
    # The profile's config lost its 184-entry ignore list (trimmed): the planner will not price it without the list.
    assert 'give weights_bytes' in str(exc.value) and 'trimmed_lists' in str(exc.value)
    result = plan(model_config=config, weights_bytes=M397['weights_bytes'], gpu_profile=RTX, tp_size=8)
    # The checkpoint / 8 minus the MTP head's share, which the target does not load without MTP.
    assert 27.0 < result['weights_gib_per_gpu'] < M397['weights_bytes'] / 8.0 / GIB
    # 15 full layers, one (replicated) KV head of (256 + 256) per rank, in fp8: NVIDIA's config carries an 8-bit float
    # kv_cache_scheme, which makes --kv-cache-dtype auto fp8_e4m3 (test_kv_cache_auto.py).
    assert result['kv_cache_dtype'] == 'fp8_e4m3' and result['kv_bytes_per_token'] == 15 * 512 * 1
    assert result['fits']


def test_release_is_required_and_must_have_planner_rules():
    with pytest.raises(sr.ReleaseError) as exc:
        rel('0.5.99')
    assert 'sglang 0.5.99: profiles/sglang_releases.yml has no entry for it; known releases: 0.5.9, 0.5.10' in str(exc.value)
    with pytest.raises(vp.PlanError) as exc:
        vp.plan(model_config=M122['config'], gpu_profile=RTX, tp_size=4)
    assert 'release is required' in str(exc.value)
    # A flags-only release object (as tests of the flag rules build it) is no release for the planner.
    with pytest.raises(vp.PlanError) as exc:
        vp.plan(model_config=M122['config'], gpu_profile=RTX, tp_size=4,
                release=sr.release(TABLE, '0.5.20', need=('flags', 'defaults')))
    assert 'release is required' in str(exc.value)
    # The old keyword is gone.
    with pytest.raises(vp.PlanError) as exc:
        plan(model_config=M122['config'], gpu_profile=RTX, tp_size=4, sglang_version=PIN)
    assert 'unknown planner inputs: sglang_version' in str(exc.value)


def test_context_longer_than_model():
    with pytest.raises(vp.PlanError) as exc:
        plan(model_config=M122['config'], gpu_profile=H200, tp_size=4, context_length=1 << 20)
    assert 'SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN' in str(exc.value)


# ---------------------------------------------------------------------------------------------------------------
# Strategy / radix / page size rules
# ---------------------------------------------------------------------------------------------------------------

def test_apr_spec_with_radix_raises_the_seed_error():
    # 0.5.11 resolves auto to no_buffer and refuses it with MTP + radix: an explicit no_buffer raises the seed error.
    with pytest.raises(vp.PlanError) as exc:
        plan_122b(H200, release=rel('0.5.11'), mamba_strategy='no_buffer')
    assert exc.value.kind == 'sglang'
    assert 'no_buffer.To use radix cache with speculative decoding' in str(exc.value)
    assert plan_122b(H200, release=rel('0.5.11'), mamba_strategy='extra_buffer')['mamba_slots_per_request'] == 5
    # auto takes the fix SGLang's message names (extra_buffer), as the renderer writes it on the command line.
    auto = plan_122b(H200, release=rel('0.5.11'))
    assert auto['mamba_strategy'] == 'extra_buffer' and auto['mamba_slots_per_request'] == 5
    assert any('extra_buffer is rendered instead' in note for note in auto['notes'])
    # Without MTP, 0.5.11's auto is no_buffer with the overlap schedule off.
    plain = plan_122b(H200, release=rel('0.5.11'), speculative_num_draft_tokens=0, speculative_num_steps=None)
    assert (plain['mamba_strategy'], plain['disable_overlap_schedule'], plain['mamba_slots_per_request']) == \
        ('no_buffer', True, 3)


def test_no_buffer_needs_overlap_off_on_0523():
    with pytest.raises(vp.PlanError) as exc:
        plan_122b(H200, mamba_strategy='no_buffer')
    assert 'no_buffer do not support overlap schedule' in str(exc.value)
    result = plan_122b(H200, mamba_strategy='no_buffer', disable_overlap_schedule=True)
    assert result['mamba_slots_per_request'] == 3


def test_radix_off_sizes_pool_by_requests():
    result = plan_122b(RTX, radix_cache=False, max_running_requests=16)
    assert result['mamba_slots_per_request'] == 1
    assert result['mamba_cache_slots'] == 16
    assert result['max_running_requests'] == 16


def test_page_size_rounding_and_sm100_default():
    result = plan_122b(H200, page_size=64)
    assert result['kv_cache_tokens'] % 64 == 0
    b200 = plan_122b(B200)
    assert b200['page_size'] == 64 and b200['kv_cache_tokens'] % 64 == 0


def test_fp8_kv_doubles_tokens():
    base = plan_122b(H200)
    fp8 = plan_122b(H200, kv_cache_dtype='fp8_e4m3')
    assert fp8['kv_bytes_per_token'] == base['kv_bytes_per_token'] // 2
    assert abs(fp8['kv_cache_tokens'] - 2 * base['kv_cache_tokens']) <= 2


def test_explicit_max_running_requests_caps_graph_reserve():
    """SGLang caps the decode CUDA-graph max bs at an explicit --max-running-requests before the fraction heuristic."""
    default = plan_122b(RTX)
    explicit = plan_122b(RTX, max_running_requests=22)
    assert explicit['mem_fraction_static'] > default['mem_fraction_static']
    assert explicit['max_running_requests_bound_by'] in ('requested', 'mamba_slots')


def test_calibration_replaces_estimates():
    result = plan_122b(RTX, free_memory_before_load_gib=93.0, free_memory_after_load_gib=35.0)
    assert result['weights_gib_per_gpu'] == pytest.approx(58.0)
    assert result['free_memory_source'] == 'calibration'


def test_unknown_input_rejected():
    with pytest.raises(vp.PlanError):
        plan(model_config=M122['config'], gpu_profile=RTX, tp_size=4, bogus=1)


def test_extra_buffer_lazy_follows_the_release_choices():
    # _calculate_mamba_ratio: 3 + get_mamba_tracking_slots(lazy=True) = 4 (eager extra_buffer with overlap: 5).
    lazy = plan_122b(H200, mamba_strategy='extra_buffer_lazy')
    eager = plan_122b(H200, mamba_strategy='extra_buffer')
    assert lazy['mamba_strategy'] == 'extra_buffer_lazy' and lazy['mamba_slots_per_request'] == 4
    assert eager['mamba_slots_per_request'] == 5 and lazy['max_running_requests'] >= eager['max_running_requests']
    # The lazy buffer needs the overlap schedule (SGLang asserts it).
    with pytest.raises(vp.PlanError) as exc:
        plan_122b(H200, mamba_strategy='extra_buffer_lazy', disable_overlap_schedule=True)
    assert 'Lazy extra buffer requires overlap schedule' in str(exc.value)
    with pytest.raises(vp.PlanError) as exc:
        plan_122b(H200, release=rel('0.5.11'), mamba_strategy='extra_buffer_lazy')
    assert exc.value.kind == 'input'
    assert "mamba_strategy 'extra_buffer_lazy' is not one of the choices of --mamba-scheduler-strategy in sglang " \
        "0.5.11" in str(exc.value)
    assert 'valid: auto, no_buffer, extra_buffer' in str(exc.value)


def test_dtypes_are_checked_against_the_release_choices():
    with pytest.raises(vp.PlanError) as exc:
        plan_122b(H200, kv_cache_dtype='fp8-e4m3')
    assert exc.value.kind == 'input'
    assert "kv_cache_dtype 'fp8-e4m3' is not one of the choices of --kv-cache-dtype in sglang %s (nearest: fp8_e4m3)" \
        % PIN in str(exc.value)
    # A choice of the release the planner cannot size is refused as such, not guessed.
    with pytest.raises(vp.PlanError) as exc:
        plan_122b(H200, kv_cache_dtype='nvfp4')
    assert 'accepts it, but the planner knows no byte size' in str(exc.value)
    assert plan_122b(H200, kv_cache_dtype='bf16')['kv_bytes_per_token'] == 12288
    with pytest.raises(vp.PlanError) as exc:
        plan_122b(H200, mamba_ssm_dtype='fp16')
    assert 'nearest: float16' in str(exc.value)
    # Releases whose parser was not read record no choices: the planner's own sizes decide.
    assert plan_122b(H200, release=rel('0.5.18'), kv_cache_dtype='fp8_e5m2')['kv_cache_dtype'] == 'fp8_e5m2'


def test_extra_buffer_without_radix_by_release():
    # A release whose table entry says its mamba hook refuses it (0.5.20's) refuses it; the pinned release, and 0.5.18
    # (its own ServerArgs accepts it: the oracle), only ignore it (same rule as the renderer).
    refusing = dict(rel(PIN), flags=dict(rel(PIN)['flags'], extra_buffer_needs_radix=True))
    with pytest.raises(vp.PlanError) as exc:
        plan_122b(H200, release=refusing, radix_cache=False, mamba_strategy='extra_buffer', max_running_requests=16)
    assert 'mamba extra_buffer is not compatible with --disable-radix-cache' in str(exc.value)
    assert sr.release(TABLE, '0.5.20', need=('flags',))['flags']['extra_buffer_needs_radix'] is True
    for release in (rel(PIN), rel('0.5.18')):
        result = plan_122b(H200, release=release, radix_cache=False, mamba_strategy='extra_buffer',
                           max_running_requests=16)
        assert result['mamba_strategy'] is None and result['mamba_slots_per_request'] == 1
