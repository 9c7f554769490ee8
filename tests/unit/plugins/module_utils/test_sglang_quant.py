# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The release table's quantization rules on real checkpoint configs (tests/fixtures/hf_configs) and the committed
GPU profiles: which format each checkpoint is, what the command line needs per architecture, and the refusal of a
GPU no row covers. The facts themselves are checked against the pinned wheel by tests/sglang/test_parser.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os

import pytest
import yaml

from ansible_collections.llmops.inference.plugins.module_utils.sglang import quant as sq
from ansible_collections.llmops.inference.plugins.module_utils.sglang import release as sr
from collection_paths import PIN, ROOT, release_table_data

TABLE = release_table_data()
RULES = sr.release(TABLE, PIN)['quantization']


def config(name):
    with open(os.path.join(ROOT, 'tests', 'fixtures', 'hf_configs', name, 'config.json')) as handle:
        return json.load(handle)


def gpu(name):
    with open(os.path.join(ROOT, 'profiles', 'hardware', name + '.yml')) as handle:
        return yaml.safe_load(handle)['compute_capability']


# (fixture, format) for every quantized fixture: the format rows match real quantization_config blocks.
FORMATS = [
    ('nvidia__Qwen3.5-397B-A17B-NVFP4', 'modelopt-nvfp4'),
    ('nvidia__Qwen3.5-122B-A10B-NVFP4', 'modelopt-nvfp4'),
    ('deepseek-ai__DeepSeek-V3', 'fp8'),
    ('Qwen__Qwen3-235B-A22B-FP8', 'fp8'),
    ('moonshotai__Kimi-K2.5', 'compressed-tensors'),
    ('openai__gpt-oss-120b', 'mxfp4'),
]


@pytest.mark.parametrize('name, fmt', FORMATS)
def test_real_quantized_configs_match_their_format_on_every_committed_gpu(name, fmt):
    for hardware in ('b200', 'h100-80gb', 'h200', 'l40s', 'rtx-pro-6000-blackwell-server'):
        got = sq.resolve(RULES, config(name), gpu(hardware), name, hardware)
        assert got['quantized'] and got['format'] == fmt, (name, hardware, got)
        assert got['refusal'] is None, (name, hardware)  # every committed GPU is sm_89 or newer


def test_an_unquantized_config_gives_nothing():
    got = sq.resolve(RULES, config('Qwen__Qwen3-32B'), '12.0')
    assert got == dict(quantized=False, format=None, what=None, method=None, render={}, defaults={}, notes=[],
                       refusal=None)


def test_nvfp4_needs_the_flag_on_sm120_only_and_runs_weight_only_below_sm100():
    nvfp4 = config('nvidia__Qwen3.5-122B-A10B-NVFP4')
    sm120 = sq.resolve(RULES, nvfp4, gpu('rtx-pro-6000-blackwell-server'))
    assert sm120['method'] == 'modelopt_fp4'
    assert sm120['render'] == {'--quantization': 'modelopt_fp4'}
    assert sm120['defaults']['--moe-runner-backend'] == 'flashinfer_cutlass'
    sm100 = sq.resolve(RULES, nvfp4, gpu('b200'))
    assert sm100['render'] == {}  # detected from the checkpoint; the MoE "auto" is flashinfer_trtllm there
    assert sm100['defaults']['--moe-runner-backend'] == 'flashinfer_trtllm'
    hopper = sq.resolve(RULES, nvfp4, gpu('h200'))
    assert hopper['render'] == {} and hopper['defaults']['--fp4-gemm-backend'] == 'marlin'
    assert any('weight-only (W4A16)' in note for note in hopper['notes'])
    # The FP8 KV cache the ModelOpt export declares is said once, whatever the GPU.
    assert any('fp8_e4m3' in note for note in sm100['notes'])


def test_fp8_runs_weight_only_below_sm89_and_natively_from_it():
    fp8 = config('deepseek-ai__DeepSeek-V3')
    assert any('Marlin' in note for note in sq.resolve(RULES, fp8, '8.0')['notes'])
    assert sq.resolve(RULES, fp8, gpu('l40s'))['notes'] == []  # 8.9: native FP8
    refused = sq.resolve(RULES, fp8, '7.5', 'deepseek-v3', 't4')['refusal']
    assert refused['message'] == ('The quantization method fp8 is not supported for the current GPU. Minimum '
                                  'capability: 80. Current capability: 75.')


def test_a_gpu_no_row_covers_is_refused_naming_model_quantization_gpu_sm_and_fix():
    mxfp8 = dict(config('Qwen__Qwen3-32B'), quantization_config={'quant_method': 'modelopt', 'quant_algo': 'MXFP8'})
    refused = sq.resolve(RULES, mxfp8, gpu('h200'), 'qwen3-32b-mxfp8', 'h200')['refusal']
    assert refused['check'] == 'quantization_arch'
    assert refused['message'] == ('The quantization method mxfp8 is not supported for the current GPU. Minimum '
                                  'capability: 100. Current capability: 90.')
    for part in ('model qwen3-32b-mxfp8', 'modelopt-mxfp8', 'GPU h200 is sm_90 (compute capability 9.0)',
                 'needs sm_100+', 'llmops_gpu_profile', 'checkpoint in a quantization this GPU runs'):
        assert part in refused['fix'], part
    assert sq.resolve(RULES, mxfp8, gpu('b200'))['refusal'] is None
    # Without names (the sglang_server_args module knows no GPU profile) the fix still reads.
    assert sq.resolve(RULES, mxfp8, '9.0')['refusal']['fix'].startswith('the model: its checkpoint is modelopt-mxfp8')


def test_gptq_converts_to_marlin_or_is_refused_as_sglang_has_no_cuda_gptq():
    base = config('Qwen__Qwen3-32B')
    marlin = dict(base, quantization_config=dict(quant_method='gptq', bits=4, sym=True, group_size=128, desc_act=False))
    assert sq.resolve(RULES, marlin, '9.0')['method'] == 'gptq_marlin'
    below = sq.resolve(RULES, marlin, '7.5', 'm', 't4')['refusal']
    assert below['message'].startswith('Unknown quantization method: gptq.')
    three_bit = dict(base, quantization_config=dict(quant_method='gptq', bits=3, sym=True, group_size=128,
                                                    desc_act=False))
    refused = sq.resolve(RULES, three_bit, '12.0', 'm', 'rtx')['refusal']
    assert refused['check'] == 'quantization_unsupported'
    assert refused['message'].startswith('Unknown quantization method: gptq.')
    assert 'No GPU runs this checkpoint' in refused['fix']
    # YAML true must not match bits 1, nor 1 match sym true.
    odd = dict(base, quantization_config=dict(quant_method='gptq', bits=4, sym=1, group_size=128, desc_act=False))
    assert sq.resolve(RULES, odd, '9.0')['format'] == 'gptq'


def test_awq_keeps_its_own_kernel_on_turing():
    quant = dict(quant_method='awq', bits=4, group_size=128, zero_point=True)
    awq = dict(config('Qwen__Qwen3-32B'), quantization_config=quant)
    assert sq.resolve(RULES, awq, '7.5')['method'] == 'awq'
    assert sq.resolve(RULES, awq, '8.9')['method'] == 'awq_marlin'
    assert sq.resolve(RULES, awq, '7.0')['refusal']['message'].startswith(
        'The quantization method awq is not supported for the current GPU. Minimum capability: 75.')


def test_an_unknown_format_renders_nothing_and_says_so():
    odd = dict(config('Qwen__Qwen3-32B'), quantization_config={'quant_method': 'bitsandbytes'})
    got = sq.resolve(RULES, odd, '9.0')
    assert got['quantized'] and got['format'] is None and got['refusal'] is None and got['render'] == {}
    assert 'bitsandbytes is not in the release table' in got['notes'][0]


def test_an_unknown_compute_capability_checks_nothing():
    got = sq.resolve(RULES, config('nvidia__Qwen3.5-122B-A10B-NVFP4'), None)
    assert got['render'] == {} and got['refusal'] is None
    assert 'compute capability is unknown' in got['notes'][-1]


@pytest.mark.parametrize('text, sm', [('12.0', 120), ('9.0', 90), ('8.9', 89), ('sm_100', 100), ('sm_89', 89),
                                      ('', None), ('ampere', None), ('9', None)])
def test_compute_capability_text(text, sm):
    assert sq.sm_of(text) == sm


def test_the_nested_text_config_and_compression_config_are_read():
    assert sq.quant_config({'text_config': {'quantization_config': {'quant_method': 'fp8'}}}) == {'quant_method': 'fp8'}
    assert sq.quant_config({'compression_config': {'quant_method': 'compressed-tensors'}})['quant_method'] == \
        'compressed-tensors'
    assert sq.quant_config({'quantization_config': {}}) is None


@pytest.mark.parametrize('edit, fragment', [
    (lambda r: r['formats'][0].update(matc=[]), 'unknown key matc'),
    (lambda r: r['formats'][0]['archs'][0].update(sm=[100, 80]), 'must be [from, to)'),
    (lambda r: r['formats'][0]['archs'][0].update(source='modelopt_quant.py'), 'source must be "path/file.py:LINE"'),
    (lambda r: r['formats'][0].update(below='capabilty'), 'below must be one of capability, unknown'),
    (lambda r: r['formats'][0]['archs'][2].update(render={'quantization': 'modelopt_fp4'}), 'must map --flag'),
    (lambda r: r['formats'][1].update(name=r['formats'][0]['name']), 'duplicate name'),
])
def test_malformed_rules_are_refused_by_the_table_loader(edit, fragment):
    table = copy.deepcopy(TABLE)
    family = table['releases'][PIN]['quantization']
    edit(table['quantization_rules'][family])
    with pytest.raises(sr.ReleaseError) as err:
        sr.load_table(table)
    assert fragment in str(err.value)
    assert 'quantization_rules.%s' % family in str(err.value)


def test_a_release_naming_no_rules_family_is_refused():
    table = copy.deepcopy(TABLE)
    family = table['releases'][PIN]['quantization']
    table['releases'][PIN]['quantization'] = family[:-1]
    with pytest.raises(sr.ReleaseError) as err:
        sr.load_table(table)
    assert "quantization %r is not a quantization_rules key (did you mean %s?)" % (family[:-1], family) in str(err.value)
