# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rendered command line for quantized checkpoints per GPU architecture (release quantization rules), and the
refusal of a GPU the checkpoint's quantization cannot run on, through the renderer and the resolver."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os

import yaml

from ansible_collections.llmops.inference.plugins.module_utils.sglang import flags as f

from collection_paths import ROOT, release

RELEASE = release()


def profile(name):
    with open(os.path.join(ROOT, 'profiles', 'models', name + '.yml')) as stream:
        return yaml.safe_load(stream)


def cc(name):
    with open(os.path.join(ROOT, 'profiles', 'hardware', name + '.yml')) as stream:
        return yaml.safe_load(stream)['compute_capability']


def nvfp4_profile():
    """The committed NVFP4 profile without its explicit serving.quantization and extra args (the seed's), so the
    release rules alone decide, with the real nvidia/Qwen3.5-397B-A17B-NVFP4 quantization_config."""
    model = copy.deepcopy(profile('qwen3.5-397b-a17b-nvfp4'))
    model['serving'].pop('quantization')
    model['serving'].pop('extra_args')
    with open(os.path.join(ROOT, 'tests', 'fixtures', 'hf_configs', 'nvidia__Qwen3.5-397B-A17B-NVFP4',
                           'config.json')) as handle:
        model['config']['quantization_config'] = json.load(handle)['quantization_config']
    return model


def render(model, gpu, **server):
    host = dict(compute_capability=cc(gpu), gpu_name=gpu)
    return f.render(RELEASE, model, dict(max_running_requests=8), host, dict(dict(model_path='/m'), **server))


def flag(argv, name):
    return argv[argv.index(name) + 1] if name in argv else None


def test_nvfp4_on_sm120_renders_modelopt_fp4_and_says_what_sglang_picks():
    rendered = render(nvfp4_profile(), 'rtx-pro-6000-blackwell-server')
    assert flag(rendered['argv'], '--quantization') == 'modelopt_fp4'
    assert rendered['argv'].count('--quantization') == 1
    assert '--moe-runner-backend' not in rendered['argv']  # SGLang's own default once it sees the flag
    assert any('picks --moe-runner-backend flashinfer_cutlass, --fp4-gemm-backend flashinfer_cutlass itself' in n
               for n in rendered['notes'])
    assert rendered['quantization']['format'] == 'modelopt-nvfp4'
    assert not rendered['preflight']


def test_nvfp4_on_sm100_is_detected_from_the_checkpoint():
    rendered = render(nvfp4_profile(), 'b200')
    assert '--quantization' not in rendered['argv']
    assert any('flashinfer_trtllm' in n for n in rendered['notes'])


def test_nvfp4_on_hopper_notes_the_weight_only_fallback():
    rendered = render(nvfp4_profile(), 'h200')
    assert '--quantization' not in rendered['argv']
    assert any('weight-only (W4A16) through Marlin' in n for n in rendered['notes'])


def test_the_committed_profile_keeps_its_explicit_choices():
    # serving.quantization and the seed's extra args are the operator's: rendered as given on every GPU.
    for gpu in ('rtx-pro-6000-blackwell-server', 'b200'):
        argv = render(profile('qwen3.5-397b-a17b-nvfp4'), gpu)['argv']
        assert argv.count('--quantization') == 1 and flag(argv, '--quantization') == 'modelopt_fp4'
        assert flag(argv, '--moe-runner-backend') == 'flashinfer_cutlass'


def test_a_quantization_flag_in_extra_args_is_not_rendered_twice():
    model = nvfp4_profile()
    model['serving']['extra_args'] = ['--quantization', 'modelopt_fp4']
    argv = render(model, 'rtx-pro-6000-blackwell-server')['argv']
    assert argv.count('--quantization') == 1


def test_fp8_and_mxfp4_checkpoints_render_no_quantization_flag():
    for name, arch in (('deepseek-ai__DeepSeek-V3', 'mla'), ('openai__gpt-oss-120b', 'swa')):
        with open(os.path.join(ROOT, 'tests', 'fixtures', 'hf_configs', name, 'config.json')) as handle:
            model = dict(name=name, serving=dict(tp_size=8), config=json.load(handle))
        for gpu in ('h200', 'b200', 'rtx-pro-6000-blackwell-server'):
            rendered = render(model, gpu, tp_size=8)
            assert '--quantization' not in rendered['argv'], (name, gpu, arch)
            assert not [c for c in rendered['preflight'] if c['check'] == 'quantization_arch']


def test_mxfp8_on_hopper_is_a_preflight_refusal_in_sglangs_words():
    model = copy.deepcopy(profile('qwen3-32b'))
    model['config']['quantization_config'] = {'quant_method': 'modelopt', 'quant_algo': 'MXFP8'}
    checks = render(model, 'h200')['preflight']
    assert [c['check'] for c in checks] == ['quantization_arch']
    assert checks[0]['message'].startswith('The quantization method mxfp8 is not supported for the current GPU.')
    assert 'model qwen3-32b' in checks[0]['fix'] and 'GPU h200 is sm_90' in checks[0]['fix']
    assert not render(model, 'b200')['preflight']


def test_a_release_without_rules_warns_and_renders_only_the_explicit_value():
    release = dict(RELEASE, quantization=None)
    rendered = f.render(release, nvfp4_profile(), {}, dict(compute_capability='12.0'), dict(model_path='/m'))
    assert '--quantization' not in rendered['argv']
    assert any('no quantization rules' in w for w in rendered['warnings'])
