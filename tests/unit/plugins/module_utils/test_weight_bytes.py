# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checkpoint bytes computed from quantization_config against the byte counts of real published checkpoints.

Every reference below is a figure some public source printed for the real files (each with its source), never a
number derived from this module. Where the computed figure differs, the test asserts the difference itself and says
what it is. None of these figures could be fetched from Hugging Face here: they were found by exact-figure search of
public GitHub files (the search index names the file's content, not always its repository; where it does, the
repository is cited).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest
import yaml

from ansible_collections.llmops.inference.plugins.module_utils.model import tensors as mt
from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan as vp
from ansible_collections.llmops.inference.plugins.module_utils.model import weight_bytes as wb
from ansible_collections.llmops.inference.plugins.module_utils.planner.vram_report import render_markdown

from collection_paths import ROOT, release

GIB = float(1 << 30)
RELEASE = release()
with open(os.path.join(ROOT, 'profiles', 'hardware', 'h200.yml')) as _handle:
    H200 = yaml.safe_load(_handle)


def config(name):
    with open(os.path.join(ROOT, 'tests', 'fixtures', 'hf_configs', name, 'config.json')) as handle:
        return json.load(handle)


def computed(name, cfg=None):
    cfg = cfg or config(name)
    return wb.checkpoint_bytes(cfg, vp.sized_facts(cfg, RELEASE))


# --------------------------------------------------------------------------------------------------------------
# FP8 block 128x128: DeepSeek-R1 / V3 (one layout), Kimi-K2-Instruct
# --------------------------------------------------------------------------------------------------------------

# A public per-tensor report of the real deepseek-ai/DeepSeek-R1 checkpoint (a GitHub markdown file "模型信息报告" of
# /nfs/.../DeepSeek-R1; 163 safetensors files, 91,991 tensors, 684,531,386,000 elements, files 641.30 GB, tensors
# 641.29 GB, GB meaning GiB): its 43 rows, tensors grouped by shape and dtype as (tensors, shape, bytes per element).
R1_TABLE = [
    (1, (129280, 7168), 2), (1, (129280, 7168), 2),                                  # lm_head, embed_tokens
    (3, (7168, 18432), 1), (3, (56, 144), 4), (3, (18432, 7168), 1), (3, (144, 56), 4),  # dense MLP, layers 0-2
    (3, (18432, 7168), 1), (3, (144, 56), 4),
    (62, (7168,), 2), (62, (7168,), 2), (62, (512,), 2),                           # layers 0-61: norms, attention
    (62, (576, 7168), 1), (62, (5, 56), 4), (62, (32768, 512), 1), (62, (256, 4), 4),
    (62, (7168, 16384), 1), (62, (56, 128), 4), (62, (1536,), 2), (62, (1536, 7168), 1), (62, (12, 56), 4),
    (62, (24576, 1536), 1), (62, (192, 12), 4),
    (59 * 256, (7168, 2048), 1), (59 * 256, (56, 16), 4), (59 * 256, (2048, 7168), 1),  # routed experts 3-61
    (59 * 256, (16, 56), 4), (59 * 256, (2048, 7168), 1), (59 * 256, (16, 56), 4),
    (59, (256,), 4), (59, (256, 7168), 2),                                         # router bias (fp32), gate
    (59, (7168, 2048), 1), (59, (56, 16), 4), (59, (2048, 7168), 1), (59, (16, 56), 4),  # shared experts
    (59, (2048, 7168), 1), (59, (16, 56), 4),
    (1, (7168, 14336), 2), (1, (129280, 7168), 2), (1, (7168,), 2), (1, (7168,), 2),  # MTP layer 61
    (1, (129280, 7168), 2), (1, (7168,), 2), (1, (7168,), 2),
]
# deepseek-ai/DeepSeek-V3 at afb92e1f and DeepSeek-R1 at 56d4cbbb: "artifact_bytes 688586727753 byte" (a public
# model ledger, creator repository weight files only): the byte size of the 163 files, safetensors headers included.
V3_FILE_BYTES = 688586727753


def _table(rows):
    tensors = elements = size = 0
    for count, shape, width in rows:
        n = 1
        for dim in shape:
            n *= dim
        tensors, elements, size = tensors + count, elements + count * n, size + count * n * width
    return tensors, elements, size


@pytest.mark.parametrize('name', ['deepseek-ai__DeepSeek-R1', 'deepseek-ai__DeepSeek-V3'])
def test_fp8_block_reproduces_the_deepseek_r1_tensor_table_exactly(name):
    tensors, elements, size = _table(R1_TABLE)
    assert (tensors, elements) == (91991, 684531386000)  # the report's own totals: the rows are complete
    assert round(size / GIB, 2) == 641.29
    result = computed(name)
    assert result['tensors'] == tensors
    assert result['total'] == size == 688574839360
    assert result['validated'] and result['format_key'] == 'fp8-block'
    # The MTP layer's own embedding and head are in the files; SGLang swaps in the target's (set_embed_and_head).
    assert result['parts']['checkpoint_only'] == 2 * 129280 * 7168 * 2


def test_the_deepseek_file_bytes_exceed_the_tensors_by_their_headers_only():
    # Each safetensors file adds an 8-byte length and a JSON entry per tensor (name, dtype, shape, data_offsets: well
    # under 200 bytes for these names); the files hold nothing else.
    extra = V3_FILE_BYTES - computed('deepseek-ai__DeepSeek-V3')['total']
    assert extra == 11888393
    assert 0 < extra < 163 * 8 + 91991 * 200


def test_fp8_block_on_kimi_k2_instruct_misses_one_small_tensor_per_layer():
    # A public read-only audit of the real files' safetensors headers (seven Kimi checkpoints, "全部分片头", fetched
    # at fixed revisions): K2-Instruct 61 shards, 139,644 tensors, 1,026,408,232,448 logical parameters (scales and
    # buffers not counted), 1,029,173,256,720 payload bytes.
    result = computed('moonshotai__Kimi-K2-Instruct')
    facts = vp.sized_facts(config('moonshotai__Kimi-K2-Instruct'), RELEASE)
    assert vp.param_counts(facts)['language'] == 1026408232448
    # The files hold one tensor per decoder layer (61) of 112 bytes that the config does not describe (the audit
    # counts RoPE buffers apart from the logical parameters); every other byte is accounted for.
    assert 139644 - result['tensors'] == 61
    assert 1029173256720 - result['total'] == 61 * 112


# --------------------------------------------------------------------------------------------------------------
# MXFP4: gpt-oss
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('name, index_total, card_gib, card_params_b, exact_params, tensors', [
    # openai/gpt-oss-120b: model.safetensors.index.json total_size 65,248,815,744 (public test fixtures asserting
    # "tensor_bytes" of its 15 files, and a gpt-oss config parser test); model card (arXiv 2508.10925, table 1):
    # 116.83B parameters, checkpoint 60.8 GiB.
    ('openai__gpt-oss-120b', 65248815744, 60.8, 116.83, None, None),
    # openai/gpt-oss-20b: index {"metadata": {"total_size": 13761264768}} (public copies of the file) and a download
    # receipt asserting tensors == 459 and payload_bytes == 13761264768; card: 20.91B, 12.8 GiB; KerasHub's
    # gpt_oss_20b_en preset: "params": 20_914_757_184 (de-quantized).
    ('openai__gpt-oss-20b', 13761264768, 12.8, 20.91, 20914757184, 459),
])
def test_mxfp4_matches_the_gpt_oss_indexes_exactly(name, index_total, card_gib, card_params_b, exact_params, tensors):
    result = computed(name)
    assert result['total'] == index_total
    assert round(result['total'] / GIB, 1) == card_gib
    facts = vp.sized_facts(config(name), RELEASE)
    params = vp.param_counts(facts)['language']
    assert round(params / 1e9, 2) == card_params_b
    if exact_params:
        assert params == exact_params
    if tensors:
        assert result['tensors'] == tensors
    # Only the experts are MXFP4: attention, router, embeddings and sinks stay BF16 (mxfp4.py quantizes FusedMoE).
    assert result['quantized_params'] == facts['layers'] * facts['experts'] * 3 * facts['hidden'] * facts['moe_inter']


# --------------------------------------------------------------------------------------------------------------
# compressed-tensors INT4 (pack-quantized, group 32): Kimi-K2.5
# --------------------------------------------------------------------------------------------------------------

def test_int4_pack_quantized_matches_kimi_k25_exactly():
    # The header audit above: K2.5 64 shards, 208,550 tensors, 1,026,879,376,368 logical parameters, 595,148,192,736
    # payload bytes; a public SGLang porting note gives the same index metadata.total_size = 595148192736. The
    # Kimi-K2.6 census (2096955/TurboQuantNemo results/kimi_k26_checkpoint_census.json @ 40501b20) of a checkpoint of
    # the same layout: 208,550 tensors, "indexed_safetensors_payload_gb": 595.1.
    result = computed('moonshotai__Kimi-K2.5')
    facts = vp.sized_facts(config('moonshotai__Kimi-K2.5'), RELEASE)
    counts = vp.param_counts(facts)
    assert counts['language'] + counts['vision'] == 1026879376368  # MoonViT tower and projector included
    assert result['tensors'] == 208550
    assert result['total'] == 595148192736
    assert round(result['total'] / 1e9, 1) == 595.1
    # Only routed experts are INT4 (the ignore regexes take attention, shared experts and the dense layer; the vision
    # tower is BF16, as the census's unquantized tensor counts show).
    assert result['quantized_params'] == 60 * 384 * 3 * 7168 * 2048
    assert result['validated'] and result['format_key'] == 'int4-pack'


# --------------------------------------------------------------------------------------------------------------
# NVFP4 (modelopt): the layout of one tensor only; no real total was found
# --------------------------------------------------------------------------------------------------------------

def test_nvfp4_prices_one_linear_as_the_real_export_stores_it():
    # A public tensor listing of nvidia/DeepSeek-R1-0528-FP4: model.layers.0.mlp.down_proj.weight [7168, 9216] U8,
    # .weight_scale [7168, 1152] F8_E4M3, .weight_scale_2 [] F32, .input_scale [] F32 (modelopt_quant.py allocates
    # the same). The Linear is [7168, 18432] before packing.
    quant = dict(quant_method='modelopt', quant_algo='NVFP4', group_size=16, exclude_modules=['lm_head'])
    _label, key, _ignored, price, stored = wb._format(quant, 2)
    assert price(dict(shape=(7168, 18432))) == 7168 * 9216 + 7168 * 1152 + 4 + 4
    assert stored == 4 and key == 'nvfp4' and key not in wb.VALIDATED


def test_nvfp4_qwen35_quantizes_only_what_its_ignore_list_leaves():
    result = computed('nvidia__Qwen3.5-397B-A17B-NVFP4')
    # 184 globs exclude every linear-attention, attention and shared-expert module, the MTP layer and the vision
    # tower: only the routed experts are NVFP4 (as the model card of the same recipe by lukealonso also lists).
    assert result['quantized_params'] == 60 * 512 * 3 * 4096 * 1024
    assert result['validated'] is None
    assert result['parts']['mtp'] > 0 and result['parts']['vision'] > 0


# --------------------------------------------------------------------------------------------------------------
# GPTQ / AWQ / asymmetric compressed-tensors: the loaders' shapes (never compared with a real checkpoint)
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('quant, expected', [
    # gptq.py: qweight int32 [in/8, out], qzeros int32 [in/group, out/8], scales fp16 [in/group, out], g_idx int32 [in]
    (dict(quant_method='gptq', bits=4, group_size=128),
     5120 // 8 * 25600 * 4 + 5120 // 128 * 25600 // 8 * 4 + 5120 // 128 * 25600 * 2 + 5120 * 4),
    # awq.py: qweight int32 [in, out/8], qzeros int32 [in/group, out/8], scales fp16 [in/group, out]
    (dict(quant_method='awq', bits=4, group_size=128),
     5120 * 25600 // 8 * 4 + 5120 // 128 * 25600 // 8 * 4 + 5120 // 128 * 25600 * 2),
    # compressed_tensors_wNa16.py, asymmetric with activation ordering: weight_packed int32 [out, in/8], weight_scale
    # [out, in/group] (model dtype), weight_zero_point int32 [out/8, in/group], weight_g_idx int32 [in], weight_shape
    (dict(quant_method='compressed-tensors', format='pack-quantized', ignore=['lm_head'], config_groups=dict(
        group_0=dict(targets=['Linear'], weights=dict(type='int', num_bits=4, group_size=128, strategy='group',
                                                      symmetric=False, actorder='group')))),
     25600 * 5120 // 8 * 4 + 25600 * 40 * 2 + 25600 // 8 * 40 * 4 + 5120 * 4 + 8),
])
def test_unvalidated_integer_formats_follow_the_loader_shapes(quant, expected):
    _label, key, _ignored, price, _stored = wb._format(quant, 2)
    assert price(dict(shape=(25600, 5120))) == expected
    assert key not in wb.VALIDATED


# --------------------------------------------------------------------------------------------------------------
# Refusals
# --------------------------------------------------------------------------------------------------------------

def test_an_unknown_quant_method_is_refused_naming_it_and_the_supported_list():
    cfg = dict(config('Qwen__Qwen3-32B'), quantization_config=dict(quant_method='bitsandbytes'))
    with pytest.raises(wb.WeightBytesError) as err:
        computed('x', cfg)
    assert "quant_method 'bitsandbytes'" in str(err.value)
    assert 'fp8, mxfp4, modelopt, modelopt_fp4, modelopt_fp8, compressed-tensors, gptq, awq' in str(err.value)
    with pytest.raises(vp.PlanError) as err:
        vp.plan(model_config=cfg, gpu_profile=H200, tp_size=1, release=RELEASE)
    assert 'bitsandbytes' in str(err.value) and 'give weights_bytes' in str(err.value)


@pytest.mark.parametrize('quant, fragment', [
    (dict(quant_method='modelopt', quant_algo='NVFP4'), 'has no ignore / exclude_modules list'),
    # FP8 is priced since SGLang resolves it to modelopt_fp8 (configs/model_config.py:1868-1869); W4A8_AWQ is not.
    (dict(quant_method='modelopt', quant_algo='W4A8_AWQ', exclude_modules=[]), "quant_algo 'W4A8_AWQ' is not priced"),
    (dict(quant_algo='FP8', kv_cache_quant_algo='FP8'), 'has no ignore / exclude_modules list'),
    (dict(quant_method='fp8', weight_block_size=[128], trimmed_lists={'modules_to_not_convert': 283}), 'trimmed_lists'),
    (dict(quant_method='fp8', weight_block_size=[128]), 'weight_block_size [128]'),
    (dict(quant_method='compressed-tensors', ignore=[], config_groups=dict(
        g=dict(targets=['Linear'], weights=dict(type='float', num_bits=8)))), 'weights float 8-bit'),
])
def test_configs_that_cannot_be_priced_are_refused(quant, fragment):
    cfg = dict(config('Qwen__Qwen3-32B'), quantization_config=quant)
    with pytest.raises(wb.WeightBytesError) as err:
        computed('x', cfg)
    assert fragment in str(err.value)


# --------------------------------------------------------------------------------------------------------------
# The layout is the planner's: the checkpoint's tensors sum to param_counts, part by part
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('name', ['Qwen__Qwen3.5-122B-A10B', 'Qwen__Qwen3-Next-80B-A3B-Thinking', 'zai-org__GLM-4.5-Air',
                                  'deepseek-ai__DeepSeek-V3', 'moonshotai__Kimi-K2.5', 'openai__gpt-oss-120b',
                                  'meta-llama__Llama-3.3-70B-Instruct', 'Qwen__Qwen3-235B-A22B-FP8'])
def test_the_checkpoint_tensors_are_the_planners_parameters(name):
    facts = vp.sized_facts(config(name), RELEASE)
    counts = vp.param_counts(facts)
    parts = dict(language=0, vision=0, mtp=0)
    for t in mt.checkpoint(facts):
        if not t['checkpoint_only']:
            parts[t['part']] += mt.params([(t['name'], t['shape'], t['role'], t['count'])])
    assert parts == dict(language=counts['language'], vision=counts['vision'], mtp=counts['mtp'])


# --------------------------------------------------------------------------------------------------------------
# The planner uses it when no index total is given
# --------------------------------------------------------------------------------------------------------------

def test_the_planner_sizes_a_quantized_config_without_weights_bytes():
    cfg = config('deepseek-ai__DeepSeek-V3')
    result = vp.plan(model_config=cfg, gpu_profile=H200, tp_size=8, release=RELEASE)
    source = result['weights_detail']['source']
    assert source.startswith('computed from quantization_config: fp8 block 128x128') and 'validated against' in source
    parts = computed('deepseek-ai__DeepSeek-V3')
    expected = parts['parts']['language'] / 8.0 + parts['replicated'] * (1 - 1 / 8.0)
    assert result['weights_detail']['target_gib'] == round(expected / GIB, 3)
    # The report says where the size came from; an unquantized plan keeps its rows as they were.
    assert '| weights sized from | computed from quantization_config: fp8 block 128x128' in render_markdown(result, 'test')
    plain = vp.plan(model_config=config('Qwen__Qwen3-32B'), gpu_profile=H200, tp_size=1, release=RELEASE)
    assert 'weights sized from' not in render_markdown(plain, 'test')
    # An index total wins, unchanged.
    given = vp.plan(model_config=cfg, gpu_profile=H200, tp_size=8, release=RELEASE, weights_bytes=V3_FILE_BYTES)
    assert given['weights_detail']['source'] == 'weights_bytes'
