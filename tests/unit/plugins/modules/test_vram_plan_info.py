# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vram_plan_info through its real argument spec (AnsibleModule)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest
import yaml

from ansible.module_utils.testing import patch_module_args

from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan as vp
from ansible_collections.llmops.inference.plugins.modules import vram_plan_info
from module_harness import AnsibleExitJson, AnsibleFailJson, run
from collection_paths import PIN, ROOT, release, release_table_data


def profile(kind, name):
    with open(os.path.join(ROOT, 'profiles', kind, name + '.yml')) as handle:
        return yaml.safe_load(handle)


def run_module(args):
    return run(vram_plan_info.main, args)


MODEL = profile('models', 'qwen3.5-122b-a10b')
RTX = profile('hardware', 'rtx-pro-6000-blackwell-server')
TABLE = release_table_data()
RELEASE = dict(sglang_releases=TABLE, sglang_version=PIN)


def test_plan_with_profiles():
    kind, result = run_module(dict(RELEASE, model_config=MODEL['config'], gpu_profile=RTX, tp_size=4,
                                   speculative_num_draft_tokens=4, speculative_num_steps=3, title='sglang-ct'))
    assert kind is AnsibleExitJson
    assert result['changed'] is False
    for key in ('weights_gib_per_gpu', 'kv_bytes_per_token', 'mamba_bytes_per_slot', 'mamba_slots_per_request',
                'mamba_cache_slots', 'spec_state_gib', 'kv_cache_tokens', 'max_running_requests',
                'max_context_at_concurrency', 'headroom_gib', 'fits', 'limits', 'recommendations',
                'decode_roofline_tok_s'):
        assert key in result, key
    # The module reports the planner's plan for these inputs (a pass-through: the module adds nothing to the numbers).
    direct = vp.plan(model_config=MODEL['config'], gpu_profile=RTX, tp_size=4, speculative_num_draft_tokens=4,
                     speculative_num_steps=3, release=release())
    for key in ('kv_cache_tokens', 'mamba_cache_slots', 'max_running_requests', 'headroom_gib'):
        assert result[key] == direct[key], key
    # Anchored by hand where the number follows from SGLang's rules alone: the request limit is the mamba slots over
    # the 3 + 2 slots an extra_buffer request holds with the overlap schedule (kv_cache_configurator.py:3062-3081,
    # allocation_sizing.py:11-19), below the speculative default 48 (speculative_hook.py:1086-1094).
    assert result['mamba_slots_per_request'] == 5
    assert result['max_running_requests'] == min(48, result['mamba_cache_slots'] // 5)
    assert result['report_lines'][0] == 'sglang-ct'
    assert result['report_markdown'].startswith('# sglang-ct')
    assert result['details']['mamba_strategy'] == 'extra_buffer'
    json.dumps(result)


def test_gpu_memory_mib_without_profile_and_defaults():
    kind, result = run_module(dict(RELEASE, model_config=MODEL['config'], gpu_memory_mib=143771, tp_size=4,
                                   sglang_version='v%s' % PIN))
    assert kind is AnsibleExitJson
    assert result['sglang_version'] == PIN
    assert result['details']['speculative']['enabled'] is False
    assert result['decode_roofline_tok_s']['no_mtp'] is None  # no bandwidth without a profile


def test_model_path(tmp_path):
    (tmp_path / 'config.json').write_text(json.dumps(MODEL['config']))
    (tmp_path / 'model.safetensors.index.json').write_text(json.dumps(dict(
        metadata=dict(total_size=250220000000), weight_map={'mtp.fc.weight': 'model-00039.safetensors'})))
    kind, result = run_module(dict(RELEASE, model_path=str(tmp_path), gpu_profile=RTX, tp_size=4,
                                   speculative_num_draft_tokens=4))
    assert kind is AnsibleExitJson
    assert result['details']['weights_detail']['source'] == 'weights_bytes'


def test_model_config_path(tmp_path):
    path = tmp_path / 'config.json'
    path.write_text(json.dumps(MODEL['config']))
    kind, result = run_module(dict(RELEASE, model_config_path=str(path), gpu_profile=RTX, tp_size=4))
    assert kind is AnsibleExitJson and result['fits']


@pytest.mark.parametrize('args, kind_expected, fragment', [
    (dict(tp_size=3), 'tp', 'not divisible by tp 3'),
    (dict(tp_size=2), 'weights', 'cannot load'),
    (dict(tp_size=4, mem_fraction_static=0.6), 'weights', 'Raise --mem-fraction-static above'),
    (dict(tp_size=4, sglang_version='0.4.0'), 'release', 'sglang 0.4.0: profiles/sglang_releases.yml has no entry'),
    (dict(tp_size=4, sglang_version='0.5.20'), 'release', 'has flag rules but no planner rules for it'),
    (dict(tp_size=4, sglang_releases={'release': {}}), 'release',
     'unknown top-level key release (did you mean releases?)'),
    (dict(tp_size=4, kv_cache_dtype='fp4'), 'input', "kv_cache_dtype 'fp4' is not one of the choices of "
                                                     '--kv-cache-dtype in sglang'),
    (dict(tp_size=4, mamba_strategy='extra-buffer'), 'input', 'nearest: extra_buffer'),
    (dict(tp_size=4, mamba_ssm_dtype='fp32'), 'input', "mamba_ssm_dtype 'fp32' is not one of the choices"),
    (dict(tp_size=4, mamba_strategy='no_buffer'), 'sglang', 'no_buffer do not support overlap schedule'),
])
def test_failures(args, kind_expected, fragment):
    base = dict(RELEASE, model_config=MODEL['config'], gpu_profile=RTX, speculative_num_draft_tokens=4)
    base.update(args)
    kind, result = run_module(base)
    assert kind is AnsibleFailJson
    assert result['kind'] == kind_expected
    assert fragment in result['msg']


def test_extra_buffer_lazy_and_the_release_choices():
    kind, result = run_module(dict(RELEASE, model_config=MODEL['config'], gpu_profile=RTX, tp_size=4,
                                   speculative_num_draft_tokens=4, mamba_strategy='extra_buffer_lazy'))
    assert kind is AnsibleExitJson and result['details']['mamba_strategy'] == 'extra_buffer_lazy'
    kind, result = run_module(dict(RELEASE, model_config=MODEL['config'], gpu_profile=RTX, tp_size=4,
                                   sglang_version='0.5.11', mamba_strategy='extra_buffer_lazy'))
    assert kind is AnsibleFailJson and result['kind'] == 'input'
    assert 'valid: auto, no_buffer, extra_buffer' in result['msg']


def test_argspec_requires_the_release_table_and_version():
    with patch_module_args(dict(model_config=MODEL['config'], gpu_profile=RTX, tp_size=4)):
        with pytest.raises(AnsibleFailJson) as exc:
            vram_plan_info.main()
    assert 'sglang_releases' in exc.value.args[0]['msg'] and 'sglang_version' in exc.value.args[0]['msg']


def test_check_mode_plans_too():
    kind, result = run(vram_plan_info.main, dict(RELEASE, model_config=MODEL['config'], gpu_memory_mib=143771,
                                                 tp_size=4), check_mode=True)
    assert kind is AnsibleExitJson and not result['changed'] and result['kv_cache_tokens'] > 0


def test_argspec_requires_gpu():
    with patch_module_args(dict(RELEASE, model_config=MODEL['config'], tp_size=4)):
        with pytest.raises(AnsibleFailJson) as exc:
            vram_plan_info.main()
    assert 'gpu_memory_mib' in exc.value.args[0]['msg']
