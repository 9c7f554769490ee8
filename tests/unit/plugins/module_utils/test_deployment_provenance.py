# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""llmops_deployment.provenance: every word of the command line and every variable of the unit's environment, with
where it came from; the plan.md sections that show it and the binding running-request count."""

from __future__ import annotations

import os
import re

import pytest

from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import provenance as dp
from ansible_collections.llmops.inference.plugins.module_utils.sglang import flags as sglang_flags
from ansible_collections.llmops.inference.plugins.module_utils.planner.vram_report import render_markdown
from collection_paths import PIN
from test_deployment import resolve, seed
from test_deployment_refusals import ROOT, run

MODEL_FILE = 'profiles/models/qwen3.5-122b-a10b.yml'


def by_name(deployment):
    return dict((row['name'], row) for row in deployment['provenance'])


def check_complete(deployment):
    """One row per launcher, per argv word (flags in order, values as rendered) and per environment variable."""
    rows = deployment['provenance']
    for row in rows:
        assert set(row) == {'kind', 'name', 'value', 'source'} and row['kind'] in ('command', 'flag', 'env'), row
        assert row['source'] and dp.UNKNOWN not in row['source'], row
    assert rows[0]['kind'] == 'command' and rows[0]['value'].split() == deployment['sglang']['launcher']
    argv, i = deployment['argv'], 0
    for row in [r for r in rows if r['kind'] == 'flag']:
        if argv[i] == row['name']:
            i += 1
            # A value is one word, or the words of an extra argument with several (joined by blanks).
            words = [] if row['value'] is None else [row['value']] if argv[i] == row['value'] else row['value'].split()
            assert argv[i:i + len(words)] == words, (row, argv[i:])
            i += len(words)
        else:
            assert argv[i] == '%s=%s' % (row['name'], row['value']), (row, argv[i:])
            i += 1
    assert i == len(argv), argv[i:]
    env = [(r['name'], r['value']) for r in rows if r['kind'] == 'env']
    unit = [(name, value.format(instance=deployment['instance'])) for name, value, dummy in dp.UNIT_ENVIRONMENT]
    assert env[:len(unit)] == unit
    assert env[len(unit):len(unit) + len(deployment['environment'])] == sorted(deployment['environment'].items())
    assert [name for name, dummy in env[len(unit) + len(deployment['environment']):]] == ['SGLANG_API_KEY']
    return by_name(deployment)


def test_the_example_has_a_source_for_every_flag_and_variable():
    d = resolve()
    rows = check_complete(d)
    # host_vars/sglang-ct.yml sets llmops_tp_size: 4, over the profile's serving.tp_size (also 4).
    assert rows['--tp-size']['source'] == ('inventory llmops_tp_size (overrides profile %s: serving.tp_size = 4, the '
                                           'same value)' % MODEL_FILE)
    assert rows['--reasoning-parser']['source'] == 'profile %s: serving.reasoning_parser' % MODEL_FILE
    assert rows['--served-model-name']['source'] == 'profile %s: served_model_name' % MODEL_FILE
    assert rows['--mem-fraction-static']['value'] == '%.4f' % d['plan']['mem_fraction_static']
    assert rows['--mem-fraction-static']['source'].startswith('planner: plan.mem_fraction_static (SGLang %s' % PIN)
    assert ('profiles/hardware/rtx-pro-6000-blackwell-server.yml: memory_total_mib'
            in rows['--mem-fraction-static']['source'])
    assert rows['--context-length']['source'].startswith('planner: plan.context_length')
    # The release decides what mamba strategy "auto" (group_vars) becomes, under the release's flag name.
    assert rows['--mamba-radix-cache-strategy']['source'].startswith(
        'release rule: SGLang %s resolves mamba strategy auto (inventory llmops_mamba_strategy) to extra_buffer' % PIN)
    assert rows['--watchdog-timeout']['source'] == 'collection default of llmops_watchdog_timeout (docs/reference.md)'
    assert rows['--model-path']['source'].startswith('inventory llmops_model_dir, then the repository\'s name @ the '
                                                     'revision: Qwen/Qwen3.5-122B-A10B (profile %s: hf_repo)'
                                                     % MODEL_FILE)
    # SEV-SNP is a fact of the container's Proxmox host (pve1 in the example): NCCL_P2P_DISABLE and the custom
    # all-reduce that would bypass it.
    assert rows['NCCL_P2P_DISABLE']['source'].startswith('inventory llmops_host_sev_snp: true of pve-t (the '
                                                         'container\'s Proxmox host): host has SEV-SNP enabled')
    assert rows['--disable-custom-all-reduce']['source'].startswith('collection rule with NCCL_P2P_DISABLE=1')
    assert rows['CUDA_VISIBLE_DEVICES'] == dict(kind='env', name='CUDA_VISIBLE_DEVICES', value='0,1,2,3',
                                                source='inventory llmops_gpu_indices')


def test_the_profile_when_the_inventory_is_silent_and_the_inventory_over_it():
    assert by_name(resolve(llmops_tp_size=None))['--tp-size']['source'] == 'profile %s: serving.tp_size' % MODEL_FILE
    rows = by_name(resolve(llmops_reasoning_parser='deepseek-r1'))
    assert rows['--reasoning-parser']['value'] == 'deepseek-r1'
    assert rows['--reasoning-parser']['source'] == ('inventory llmops_reasoning_parser (overrides profile %s: '
                                                    'serving.reasoning_parser = qwen3)' % MODEL_FILE)
    rows = by_name(resolve(overrides={'llmops_http_port': 31000}, llmops_mem_fraction_static=0.8))
    assert rows['--port'] == dict(kind='flag', name='--port', value='31000', source=(
        'override llmops_http_port (deployment_overrides or the variant\'s overrides)'))
    assert rows['--mem-fraction-static'] == dict(kind='flag', name='--mem-fraction-static', value='0.8',
                                                 source='inventory llmops_mem_fraction_static')


def test_a_profile_tp_size_overridden_with_another_value():
    hosts, groups = seed(llmops_model_profile='qwen3.5-397b-a17b-nvfp4', llmops_tp_size=4, llmops_plan_must_fit=False,
                         llmops_extra_args=['--enable-torch-compile', '--cuda-graph-max-bs=64'],
                         llmops_environment={'NCCL_DEBUG': 'INFO'})
    d, problems = run('ct-t', hosts, groups)
    assert not problems, problems.message()
    rows = check_complete(d)
    assert rows['--tp-size']['source'] == ('inventory llmops_tp_size (overrides profile '
                                           'profiles/models/qwen3.5-397b-a17b-nvfp4.yml: serving.tp_size = 8)')
    assert rows['--moe-runner-backend']['source'] == ('profile profiles/models/qwen3.5-397b-a17b-nvfp4.yml: '
                                                      'serving.extra_args')
    assert rows['--cuda-graph-max-bs'] == dict(kind='flag', name='--cuda-graph-max-bs', value='64',
                                               source='inventory llmops_extra_args')
    assert rows['NCCL_DEBUG']['source'] == 'inventory llmops_environment.NCCL_DEBUG'


def test_speculative_flags_say_when_sglang_changes_what_was_asked():
    rows = by_name(resolve(llmops_speculative_num_steps=2))
    assert rows['--speculative-num-steps']['source'] == ('inventory llmops_speculative_num_steps (overrides profile '
                                                         '%s: serving.speculative.num_steps = 3)' % MODEL_FILE)
    assert rows['--speculative-num-draft-tokens']['value'] == '3'
    assert rows['--speculative-num-draft-tokens']['source'] == (
        'release rule: with --speculative-eagle-topk 1 SGLang uses steps + 1 draft tokens '
        '(speculative_hook._handle_eagle_family); profile %s: serving.speculative.num_draft_tokens asked for 4'
        % MODEL_FILE)


@pytest.mark.parametrize('model', ['qwen3-32b-eagle3', 'gpt-oss-120b', 'llama-3.3-70b-instruct'])
def test_other_profiles_have_a_source_for_every_word(model):
    hosts, groups = seed(llmops_model_profile=model, llmops_tp_size=None, llmops_gpu_indices=None,
                         llmops_plan_must_fit=False)
    d, problems = run('ct-t', hosts, groups)
    assert not problems, problems.message()
    rows = check_complete(d)
    if model == 'qwen3-32b-eagle3':
        assert rows['--speculative-num-steps']['source'].startswith('release rule defaults.speculative_auto_params')
        assert rows['--speculative-draft-model-path']['source'].startswith(
            'profile profiles/models/qwen3-32b-eagle3.yml: serving.speculative.draft')


@pytest.mark.parametrize('args, expected', [
    ((True, None, None, True, 4), 'inventory llmops_nccl_p2p_disable'),
    ((None, 'use_nccl_p2p_disable', None, True, 4), 'the gpu_p2p_check verdict use_nccl_p2p_disable of this host'),
    ((None, 'p2p_ok', None, True, 4), 'the gpu_p2p_check verdict p2p_ok of this host'),
    ((None, None, None, True, 4), 'inventory llmops_host_sev_snp: true of pve1'),
    ((None, None, False, False, 4), 'inventory llmops_nccl_p2p_trusted: false of pve1'),
    ((None, None, None, False, 1), 'collection rule: one GPU'),
    ((None, None, None, False, 4), 'collection rule: no verdict'),
])
def test_every_reason_of_the_nccl_decision_names_its_input(args, expected):
    """Each branch of sglang_flags.nccl_p2p_disable: its reason maps to the input that decided it."""
    disable, reason = sglang_flags.nccl_p2p_disable(*args)
    view = dict(rendered=dict(nccl_p2p_reason=reason), lxc_host='pve1', p2p_verdict=args[1] or '')
    assert dp._p2p(view).startswith(expected)  # pylint: disable=protected-access


def test_the_p2p_verdict_and_the_explicit_setting_in_a_resolution():
    rows = by_name(resolve(p2p_verdict='use_nccl_p2p_disable'))
    assert rows['NCCL_P2P_DISABLE']['source'].startswith('the gpu_p2p_check verdict use_nccl_p2p_disable of this host')
    rows = by_name(resolve(llmops_nccl_p2p_disable=True))
    assert rows['NCCL_P2P_DISABLE']['source'].startswith('inventory llmops_nccl_p2p_disable: set explicitly')


def test_secrets_are_redacted():
    hosts, groups = seed()
    d, problems = run('ct-t', hosts, groups, api_key='Zq-secret-94')
    assert not problems
    assert by_name(d)['SGLANG_API_KEY']['value'] == dp.REDACTED and 'Zq-secret-94' not in repr(d)
    d, problems = run('ct-t', hosts, groups, api_key='', require_secrets=False)
    assert not problems
    row = by_name(d)['SGLANG_API_KEY']
    assert row['value'] is None and row['source'].startswith('not written: no API key in this environment')


def test_the_unit_template_writes_the_directories_the_provenance_names():
    with open(os.path.join(ROOT, 'roles/sglang_server/templates/etc/systemd/system/sglang.service.j2')) as handle:
        found = re.findall(r'^Environment=([A-Z_]+)=(.*)$', handle.read(), re.M)
    # The template's one Jinja expression in these lines is the instance name.
    literal = [(k, re.sub(r'\{\{ *\w+ *\}\}', '{instance}', v)) for k, v in found if '{{ line }}' not in v]
    assert literal == [(name, value) for name, value, dummy in dp.UNIT_ENVIRONMENT]


def test_plan_md_shows_the_provenance_and_the_binding_running_requests():
    d = resolve()
    plan, markdown = d['plan'], d['plan']['report_markdown']
    lines = markdown.split('\n')
    start = lines.index('## Command line and environment: where each value comes from')
    table = [line for line in lines[start:] if line.startswith('| ')][1:]
    assert len(table) >= len(d['provenance'])
    for row, line in zip(d['provenance'], table):
        assert line.startswith('| %s | `%s` |' % (row['kind'], row['name'])) and line.endswith(' |'), line
    assert '| flag | `--tp-size` | `4` | inventory llmops_tp_size (overrides profile %s: serving.tp_size = 4' \
        % MODEL_FILE in markdown
    # The binding running-request count (21, bound by the mamba pool) among the levels 1/8/32, its context the KV
    # tokens shared by 21 requests.
    running, tokens = plan['max_running_requests'], plan['kv_cache_tokens']
    assert running not in [r['concurrency'] for r in plan['max_context_at_concurrency']]
    assert ('| **%d** (max running requests, bound by mamba slots) | %s | kv cache |'
            % (running, '{:,}'.format(min(tokens // running, plan['context_length'])))) in lines
    context_rows = [line for line in lines if re.match(r'^\| (\*\*)?\d+', line)]
    assert [int(re.match(r'^\| (?:\*\*)?(\d+)', line).group(1)) for line in context_rows][:4] == [1, 8, running, 32]
    # "tight" is defined where it appears: the headline and the verdict row.
    assert '| verdict | FITS (tight): tight = it starts, but max running requests %d < 32 |' % running in lines
    assert '*max running requests* = N is more than SGLang runs at once, so the rest queue (-)' in markdown


def test_a_planned_level_equal_to_the_running_requests_is_marked_not_repeated():
    plan = dict(resolve()['plan'])
    running = plan['max_running_requests']
    plan['max_context_at_concurrency'] = [dict(concurrency=running, max_context_tokens=5, bound_by='kv_cache')]
    lines = render_markdown(plan, 't').split('\n')
    assert '| **%d** (max running requests, bound by mamba slots) | 5 | kv cache |' % running in lines
    assert len([line for line in lines if re.match(r'^\| (\*\*)?\d+', line)]) == 1


def test_a_node_of_a_tp_group_names_the_group_for_its_flags_and_network():
    from test_deployment_tp_group import inventory, run as run_node
    hosts, groups = inventory()
    node, problems = run_node('gpu-node-b', hosts, groups)
    assert not problems, problems.message()
    rows = check_complete(node)
    assert rows['--host']['source'].startswith('TP group tp_deepseek: a node of rank >= 1 binds only')
    assert rows['--nnodes']['source'].startswith('TP group tp_deepseek: the nodes of the inventory group')
    assert rows['--dist-init-addr']['source'].startswith("TP group tp_deepseek: the head's llmops_node_address")
    assert rows['--node-rank']['source'] == 'inventory llmops_node_rank'
    assert rows['NCCL_SOCKET_IFNAME']['source'] == 'TP group tp_deepseek: inventory llmops_nccl_socket_ifname'
    assert rows['NCCL_IB_DISABLE']['source'].startswith('TP group tp_deepseek: llmops_nccl_ib_hca is null')
    assert rows['LLMOPS_TP_GROUP_LINK']['source'].startswith("TP group tp_deepseek: the launcher's group link")


def test_no_source_has_an_angle_bracket_markdown_would_take_for_a_tag():
    for row in resolve()['provenance']:
        assert '<' not in row['source'] and '>' not in row['source'].replace('>=', ''), row
