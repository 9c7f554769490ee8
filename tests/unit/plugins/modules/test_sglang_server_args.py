# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""sglang_server_args through its real argument spec (AnsibleModule)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

import yaml

from module_harness import AnsibleExitJson, AnsibleFailJson, run as run_main

from ansible_collections.llmops.inference.plugins.modules import sglang_server_args
from collection_paths import PIN, ROOT, release_table_data

with open(os.path.join(ROOT, 'profiles', 'models', 'qwen3.5-122b-a10b.yml')) as handle:
    MODEL = yaml.safe_load(handle)
TABLE = release_table_data()


def run(module, args):
    return run_main(module.main, args)


BASE = dict(sglang_releases=TABLE, sglang_version=PIN, model_profile=MODEL, model_path='/shared/models/Qwen3.5-122B-A10B',
            gpu_indices=['0', '1', '2', '3'], sev_snp=True,
            plan={'mem_fraction_static': 0.7851, 'max_running_requests': 22, 'details': {'context_length': 262144}},
            launcher=['/opt/sglang/venv-%s/bin/python' % PIN, '-m', 'sglang.launch_server'])


def test_renders_command_exec_start_and_environment():
    kind, out = run(sglang_server_args, BASE)
    assert kind is AnsibleExitJson and not out['changed']
    assert out['command'][:3] == BASE['launcher']
    assert out['exec_start'].startswith('/opt/sglang/venv-%s/bin/python -m sglang.launch_server --model-path ' % PIN)
    assert '--context-length 262144' in out['exec_start']
    assert out['environment_lines'] == [
        'CUDA_DEVICE_ORDER=PCI_BUS_ID', 'CUDA_VISIBLE_DEVICES=0,1,2,3', 'NCCL_P2P_DISABLE=1', 'PYTHONUNBUFFERED=1']
    assert out['mamba_strategy'] == 'extra_buffer' and out['nccl_p2p_disable']


def test_preflight_failure_quotes_sglang_and_the_fix():
    kind, out = run(sglang_server_args, dict(BASE, served_model_name='qwen:122b'))
    assert kind is AnsibleFailJson
    assert "served_model_name cannot contain a colon (':') character." in out['msg']
    assert 'Fix: Use a name without ":"' in out['msg']
    kind, out = run(sglang_server_args, dict(BASE, served_model_name='qwen:122b', fail_on_preflight=False))
    assert kind is AnsibleExitJson and out['preflight'][0]['check'] == 'served_model_name'


def test_flag_error_is_a_clean_failure():
    kind, out = run(sglang_server_args, dict(BASE, extra_args=['--speculative-algo', 'NEXTN']))
    assert kind is AnsibleFailJson and 'full flag name' in out['msg']


def test_parser_run_with_a_fake_interpreter(tmp_path):
    fake = tmp_path / 'python'
    fake.write_text('#!%s\nimport sys, json\nsys.stdin.read()\nprint(json.dumps({"ok": False, "version": "%s", '
                    '"error": "sglang serve: error: unrecognized arguments: --x", "kind": "argparse"}))\n'
                    % (sys.executable, PIN))
    fake.chmod(0o755)
    kind, out = run(sglang_server_args, dict(BASE, validate_with_parser=str(fake)))
    assert kind is AnsibleFailJson
    assert 'unrecognized arguments: --x' in out['msg'] and out['parser']['kind'] == 'argparse'
    # Parser-only mode needs no release table.
    kind, out = run(sglang_server_args, dict(sglang_version=PIN, argv=['--x'], validate_with_parser=str(fake)))
    assert kind is AnsibleFailJson and 'refuses the command line' in out['msg']


def test_release_table_is_required_to_render_and_refuses_unread_releases():
    kind, out = run(sglang_server_args, dict(BASE, sglang_releases=None))
    assert kind is AnsibleFailJson and 'sglang_releases, model_profile and model_path are required' in out['msg']
    kind, out = run(sglang_server_args, dict(BASE, sglang_version='0.5.20'))
    assert kind is AnsibleFailJson
    assert out['msg'].startswith('sglang 0.5.20: profiles/sglang_releases.yml has flag rules but no planner rules')


def test_values_are_checked_against_the_release_choices():
    kind, out = run(sglang_server_args, dict(BASE, mamba_strategy='extra-buffer'))
    assert kind is AnsibleFailJson
    assert "mamba_strategy 'extra-buffer' is not one of the choices of --mamba-radix-cache-strategy" in out['msg']
    kind, out = run(sglang_server_args, dict(BASE, kv_cache_dtype='fp8'))
    assert kind is AnsibleFailJson and 'valid: auto, fp8_e5m2, fp8_e4m3' in out['msg']
    kind, out = run(sglang_server_args, dict(BASE, sglang_version='0.5.11', mamba_strategy='extra_buffer_lazy'))
    assert kind is AnsibleFailJson and 'of --mamba-scheduler-strategy in sglang 0.5.11' in out['msg']
    kind, out = run(sglang_server_args, dict(BASE, mamba_strategy='extra_buffer_lazy', page_size=64,
                                             chunked_prefill_size=8192))
    assert kind is AnsibleExitJson and out['mamba_strategy'] == 'extra_buffer_lazy'


def test_auto_renders_the_resolved_strategy_and_the_overlap_consequence():
    kind, out = run(sglang_server_args, dict(BASE, speculative_num_draft_tokens=0, disable_overlap_schedule=True))
    assert kind is AnsibleExitJson and out['mamba_strategy'] == 'no_buffer'
    assert '--mamba-radix-cache-strategy no_buffer' in out['exec_start']
    assert '--disable-overlap-schedule' in out['argv']


def test_check_mode_renders_too():
    kind, out = run_main(sglang_server_args.main, BASE, check_mode=True)
    assert kind is AnsibleExitJson and not out['changed'] and out['argv']
