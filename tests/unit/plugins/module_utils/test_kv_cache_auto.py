# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``--kv-cache-dtype auto`` against the checkpoint, as SGLang 0.5.23 resolves it (paths under sglang/srt/).

mem_cache/kv_cache_dtype.py:49-57: under ``auto`` the cache is fp8_e4m3 when the loaded quantization config's
``kv_cache_quant_algo`` is "FP8" (any case), else the model dtype. Each method's config class derives that value from
the checkpoint's quantization_config its own way:

* ModelOptFp4Config.from_config (layers/quantization/modelopt_quant.py:1619-1637, flat config.json form): an
  8-bit float ``kv_cache_scheme`` dict gives FP8 (any other dict ``auto``); a string FP8/FLOAT8 gives FP8; without a
  scheme the ``kv_cache_quant_algo`` key (else ``auto``). NVIDIA's NVFP4 exports carry only the scheme.
* ModelOptFp8Config.from_config (:481-490): the same dict test (else none), else the key.
* Fp8Config.from_config (layers/quantization/fp8.py:366-367): the ``kv_cache_quant_algo`` key only.
* CompressedTensorsConfig.kv_cache_quant_algo (compressed_tensors/compressed_tensors.py:143-151, :1276-1284): FP8
  only for a static, symmetric, per-tensor 8-bit float ``kv_cache_scheme``.
* GPTQ, AWQ, MXFP4 config classes have no kv_cache_quant_algo: the cache keeps the model dtype.

The release table holds these as data (quantization_rules kv_cache_auto, each citation checked against the wheel by
tests/sglang/release_rules.py under make parser).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.sglang import quant as sq
from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan as vp

from collection_paths import ROOT, release

RELEASE = release()
RULES = RELEASE['quantization']


def config(name):
    with open(os.path.join(ROOT, 'tests', 'fixtures', 'hf_configs', name, 'config.json')) as handle:
        return json.load(handle)


def with_quant(name, **changes):
    out = copy.deepcopy(config(name))
    out['quantization_config'].update(changes)
    for key in [k for k, v in changes.items() if v is None]:
        del out['quantization_config'][key]
    return out


NVFP4 = 'nvidia__Qwen3.5-397B-A17B-NVFP4'
SCHEME8 = {'dynamic': False, 'num_bits': 8, 'type': 'float'}


@pytest.mark.parametrize('name, fp8', [
    # NVIDIA's exports: kv_cache_scheme {type: float, num_bits: 8} and no kv_cache_quant_algo key.
    ('nvidia__Qwen3.5-397B-A17B-NVFP4', True), ('nvidia__Qwen3.5-122B-A10B-NVFP4', True),
    # Fp8Config reads only kv_cache_quant_algo, which these block-FP8 configs do not have.
    ('deepseek-ai__DeepSeek-V3', False), ('Qwen__Qwen3-235B-A22B-FP8', False), ('zai-org__GLM-5-FP8', False),
    # compressed-tensors with kv_cache_scheme null; MXFP4 has no KV quantization at all; BF16 has no config.
    ('moonshotai__Kimi-K2.5', False), ('openai__gpt-oss-120b', False), ('Qwen__Qwen3-32B', False),
])
def test_real_checkpoints_resolve_auto_as_sglang_does(name, fp8):
    assert sq.kv_cache_auto(RULES, config(name))['fp8'] is fp8


def test_the_nvfp4_scheme_is_what_makes_it_fp8():
    assert not sq.kv_cache_auto(RULES, with_quant(NVFP4, kv_cache_scheme=None))['fp8']
    # modelopt_quant.py:1621-1628: any other scheme dict gives "auto" (the model dtype).
    got = sq.kv_cache_auto(RULES, with_quant(NVFP4, kv_cache_scheme={'type': 'float', 'num_bits': 4}))
    assert got['algo'] == 'auto' and not got['fp8']
    # :1629-1636: the string forms.
    assert sq.kv_cache_auto(RULES, with_quant(NVFP4, kv_cache_scheme='float8'))['fp8']
    assert sq.kv_cache_auto(RULES, with_quant(NVFP4, kv_cache_scheme='nvfp4'))['algo'] == 'NVFP4'
    # :1637-1638: no scheme, the key (the flat form profile_gen writes from hf_quant_config.json).
    assert sq.kv_cache_auto(RULES, with_quant(NVFP4, kv_cache_scheme=None, kv_cache_quant_algo='FP8'))['fp8']


def test_modelopt_fp8_and_fp8_read_their_own_keys():
    fp8_modelopt = dict(quantization_config=dict(quant_method='modelopt', quant_algo='FP8', kv_cache_scheme=SCHEME8))
    assert sq.kv_cache_auto(RULES, fp8_modelopt)['fp8']
    # ModelOptFp8Config: a scheme dict that is not 8-bit float leaves no algo (modelopt_quant.py:483-488).
    odd = copy.deepcopy(fp8_modelopt)
    odd['quantization_config']['kv_cache_scheme'] = {'type': 'int', 'num_bits': 8}
    assert sq.kv_cache_auto(RULES, odd)['algo'] is None
    # Fp8Config ignores a scheme and reads the key (fp8.py:366-367).
    ds = config('deepseek-ai__DeepSeek-V3')
    with_scheme = dict(ds, quantization_config=dict(ds['quantization_config'], kv_cache_scheme=SCHEME8))
    with_key = dict(ds, quantization_config=dict(ds['quantization_config'], kv_cache_quant_algo='fp8'))
    assert not sq.kv_cache_auto(RULES, with_scheme)['fp8']
    assert sq.kv_cache_auto(RULES, with_key)['fp8']


def test_compressed_tensors_needs_a_static_symmetric_per_tensor_scheme():
    kimi = config('moonshotai__Kimi-K2.5')
    static = dict(SCHEME8, strategy='tensor', symmetric=True)

    def with_scheme(scheme):
        out = copy.deepcopy(kimi)
        out['text_config']['quantization_config']['kv_cache_scheme'] = scheme
        return out
    # compressed_tensors.py:1276-1284 is_supported_scheme.
    assert sq.kv_cache_auto(RULES, with_scheme(static))['fp8']
    assert not sq.kv_cache_auto(RULES, with_scheme(dict(static, dynamic=True)))['fp8']
    assert not sq.kv_cache_auto(RULES, with_scheme(dict(static, strategy='channel')))['fp8']
    assert not sq.kv_cache_auto(RULES, with_scheme(dict(static, symmetric=False)))['fp8']


def test_a_method_without_kv_quantization_ignores_the_key():
    oss = config('openai__gpt-oss-120b')
    got = sq.kv_cache_auto(RULES, dict(oss, quantization_config=dict(oss['quantization_config'],
                                                                     kv_cache_quant_algo='FP8')))
    assert not got['fp8'] and 'mxfp4 has no kv_cache_quant_algo' in got['how']


def test_the_planner_prices_nvidias_nvfp4_kv_in_fp8():
    """The 397B NVFP4 plan under --kv-cache-dtype auto is the plan under an explicit fp8_e4m3: same bytes per token,
    half those of bfloat16 (Qwen3.5-397B: 15 full-attention layers x 2 KV heads x (256 + 256) per rank at TP8 -> 1
    head), and it says where the dtype came from."""
    cfg = config(NVFP4)
    common = dict(model_config=cfg, gpu_memory_mib=97887, tp_size=8, release=RELEASE, context_length=262144,
                  weights_bytes=251135201248)
    auto = vp.plan(**common)
    fp8 = vp.plan(kv_cache_dtype='fp8_e4m3', **common)
    bf16 = vp.plan(kv_cache_dtype='bfloat16', **common)
    assert auto['kv_cache_dtype'] == 'fp8_e4m3'
    assert auto['kv_bytes_per_token'] == fp8['kv_bytes_per_token'] == bf16['kv_bytes_per_token'] // 2
    assert auto['kv_cache_tokens'] == fp8['kv_cache_tokens']
    # The full-attention layers counted in the config itself (its layer_types), not by the planner.
    text = cfg.get('text_config', cfg)
    full_layers = text['layer_types'].count('full_attention')
    assert (full_layers, text['num_key_value_heads'], text['head_dim']) == (15, 2, 256)
    assert auto['kv_bytes_per_token_target'] == 15 * 1 * (256 + 256) * 1 == 7680
    assert bf16['kv_bytes_per_token'] == 15 * 1 * (256 + 256) * 2
    assert any('fp8_e4m3 from the checkpoint' in note and 'modelopt_quant.py:1619-1637' in note
               for note in auto['notes'])
    assert not any('from the checkpoint' in note for note in fp8['notes'])
