# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""tests/tools/plan_gate.py without Ansible: hand-made snapshots and plan directories, expected texts written here."""

from __future__ import annotations

import copy
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tools'))
import plan_gate  # noqa: E402  (tests/tools is not a package)

NO_VOLATILE = ([], [])


def server(**key_numbers):
    base = {'verdict': 'FITS', 'kv_cache_tokens': 684739, 'max_running_requests': 21}
    base.update(key_numbers)
    return {
        'kind': 'sglang_server', 'refusal': None, 'key_numbers': base,
        'command': ['/opt/venv/bin/python', '-m', 'sglang.launch_server', '--tp-size', '4',
                    '--context-length', '262144', '--enable-metrics'],
        'environment': {'CUDA_VISIBLE_DEVICES': '0,1,2,3'},
        'warnings': [],
        'files': {'unit.service': ['[Service]', 'User=sglang', 'ExecStart=/opt/venv/bin/python ... 262144']},
        'settings': {'context_length': {'value': 262144, 'source': 'plan'}},
        'profiles': ['profiles/models/m.yml'],
    }


def snapshot(**hostvars):
    inputs = {'llmops_context_length': None, 'llmops_tp_size': 4}
    inputs.update(hostvars)
    return {
        'schema': 1,
        'inputs': {'collection_version': '0.1.0', 'files': {'profiles/sglang_releases.yml': 'sha256:aa'},
                   'profiles': {'profiles/models/m.yml': {'config.hidden_size': 3072}},
                   'hosts': {'pve1': {'llmops_host_vfio_numa_nodes': [1]}, 'ct': inputs}},
        'hosts': {'pve1': {'kind': 'proxmox_host', 'refusal': None, 'key_numbers': {'vfio_addresses': ['0000:81:00.0']},
                           'command': [], 'environment': {}, 'warnings': [],
                           'files': {'gpu_partition.txt': ['0000:81:00.0 nvidia -> vfio-pci']}, 'settings': {},
                           'profiles': []},
                  'ct': server()},
        'monitoring': {'prometheus/prometheus.yml': ['scrape_configs:', '- job_name: sglang']},
    }


def changed_context():
    old, new = snapshot(), snapshot(llmops_context_length=131072)
    ct = new['hosts']['ct']
    ct['key_numbers']['kv_cache_tokens'] = 512000
    ct['command'][ct['command'].index('262144')] = '131072'
    ct['files']['unit.service'][2] = 'ExecStart=/opt/venv/bin/python ... 131072'
    ct['settings']['context_length'] = {'value': 131072, 'source': 'inventory'}
    return old, new


def test_same_snapshot_is_no_change():
    result = plan_gate.compare(snapshot(), snapshot())
    assert not plan_gate.has_changes(result)
    assert plan_gate.report(result, 'ref.json') == 'plan unchanged: the plan is the approved one (ref.json)'


def test_changed_value_names_input_and_effect():
    old, new = changed_context()
    result = plan_gate.compare(old, new)
    assert result['inputs'] == {'ct': ['llmops_context_length null -> 131,072 '
                                       '(resolved: 262,144 from plan -> 131,072 from inventory)']}
    assert result['hosts'] == {'ct': ['KV tokens 684,739 -> 512,000', 'argv: --context-length 262144 -> 131072',
                                      'unit.service: ExecStart= follows the argv above']}
    text = plan_gate.report(result, 'ref.json')
    assert text.splitlines()[:2] == [
        'PLAN CHANGED against the approved plan ref.json',
        '  ct: KV tokens 684,739 -> 512,000 because llmops_context_length null -> 131,072 '
        '(resolved: 262,144 from plan -> 131,072 from inventory)']


def test_output_change_without_input_change_blames_the_collection():
    old, new = snapshot(), snapshot()
    new['hosts']['ct']['key_numbers']['kv_cache_tokens'] = 700000
    result = plan_gate.compare(old, new)
    line = plan_gate.report(result, 'r').splitlines()[1]
    assert line == ('  ct: KV tokens 684,739 -> 700,000 (no recorded input changed: the collection itself changed, '
                    'e.g. its planner)')


def test_other_hosts_input_is_named_for_a_dependent_host():
    old, new = snapshot(), snapshot(llmops_lxc_numa_node=1)
    new['hosts']['pve1']['files']['gpu_partition.txt'] = ['0000:01:00.0 nvidia -> vfio-pci']
    result = plan_gate.compare(old, new)
    assert plan_gate.headline('pve1', result['hosts']['pve1'], result) == (
        'pve1: gpu_partition.txt: -0000:81:00.0 nvidia -> vfio-pci because llmops_lxc_numa_node <absent> -> 1 on ct')


def test_profile_change_is_charged_to_its_users_and_shared_files_to_all():
    old, new = snapshot(), snapshot()
    new['inputs']['profiles']['profiles/models/m.yml']['config.hidden_size'] = 4096
    new['inputs']['files']['profiles/sglang_releases.yml'] = 'sha256:bb'
    new['inputs']['collection_version'] = '0.2.0'
    result = plan_gate.compare(old, new)
    assert result['inputs'] == {
        'ct': ['profiles/models/m.yml: config.hidden_size 3,072 -> 4,096'],
        '*': ['collection version (galaxy.yml) 0.1.0 -> 0.2.0', 'profiles/sglang_releases.yml changed (content)']}
    assert not result['hosts'], 'inputs alone change no output here'
    assert plan_gate.has_changes(result), 'changed inputs are a change to approve'
    assert '(the plan itself is the same; approving records the new inputs)' in plan_gate.report(result, 'r')


def test_refusal_is_the_message_first_refusal_first():
    old = snapshot()
    new = snapshot(llmops_tp_size=2)
    new['hosts']['pve1']['refusal'] = 'pve1: 1 problem:\n1. llmops_host_gpus is empty. Fix: list the GPUs.'
    new['hosts']['ct'] = dict(server(), refusal='ct: 1 problem:\n1. llmops_gpu_indices = [0, 1, 2, 3]: TP 2 ...')
    text = plan_gate.report(plan_gate.compare(old, new), 'ref.json', plan_gate.refusals_of(new))
    assert text.splitlines()[:5] == [
        'PLAN REFUSED: the deploy would refuse pve1, ct',
        'pve1: 1 problem:',
        '1. llmops_host_gpus is empty. Fix: list the GPUs.',
        'ct: 1 problem:',
        '1. llmops_gpu_indices = [0, 1, 2, 3]: TP 2 ...']
    assert '  ct: llmops_tp_size 4 -> 2' in text
    assert text.endswith('A refused host has no plan to compare: fix the refusal, then run make plan-check again.')


def test_argv_changes():
    old = ['py', '-m', 'x', '--a', '1', '--flag', '--b', 'two', 'words']
    new = ['py', '-m', 'x', '--a', '2', '--b', 'two', 'words', '--c', '3']
    assert plan_gate.argv_changes(old, new) == ['--a 1 -> 2', '+ --c 3', '- --flag']
    assert plan_gate.argv_changes(['p', '--a', '--b'], ['p', '--b', '--a']) == ['the same flags in another order']
    assert plan_gate.argv_changes(old, old) == []


def test_line_changes_are_short():
    old = ['line %d' % i for i in range(40)]
    new = ['LINE %d' % i for i in range(40)]
    lines = plan_gate.line_changes(old, new, limit=4, width=10)
    assert lines == ['-line 0', '-line 1', '-line 2', '-line 3', '... 76 more changed lines']
    assert plan_gate.line_changes(['x' * 30], [], width=10) == ['-xxxxxx...']


def test_fmt():
    assert [plan_gate.fmt(v) for v in (684739, 0.7851, None, True, '', 'a', [1, 2])] == [
        '684,739', '0.7851', 'null', 'true', '""', 'a', '[1, 2]']


def test_normalise_volatile():
    repl = plan_gate.volatile_replacements(root='/work/co', home='/home/ci', hostnames=['runner-7.example', 'vm'],
                                           out_dir='/work/co/build/plan-check/x', inventory_dir='/work/co/inv/a')
    text = ('/work/co/build/plan-check/x/_sysfs /work/co/inv/a/llmops-lock.yml /work/co/roles /home/ci/.cache '
            'planned on runner-7.example at 2026-12-03T07:16:06Z; vm is short')
    assert plan_gate.normalise({'k': [text]}, repl) == {'k': [
        '<plan-dir>/_sysfs <inventory>/llmops-lock.yml <checkout>/roles <home>/.cache planned on <controller> at '
        '<time>; vm is short']}


def test_secrets_never_recorded():
    out = plan_gate.inventory_inputs({'llmops_api_key': 'sk-123', 'llmops_hf_token': None,
                                      'vaulted': {'__ansible_vault': '$ANSIBLE_VAULT;1.1;AES256...'}, 'x': 1})
    assert out == {'llmops_api_key': '<secret: set>', 'llmops_hf_token': None, 'vaulted': '<vault: set>', 'x': 1}


def test_flatten():
    assert plan_gate.flatten({'a': {'b': 1, 'c': [1, 2]}, 'd': [{'e': None}], 'f': {}}) == {
        'a.b': 1, 'a.c': [1, 2], 'd[0].e': None, 'f': {}}


def test_host_order_follows_the_plays_groups():
    listing = {'all': {'children': ['sglang_servers', 'proxmox_hosts']},
               'sglang_servers': {'hosts': ['ct'], 'children': ['replicas']},
               'replicas': {'hosts': ['r1', 'ct']},
               'proxmox_hosts': {'hosts': ['pve1']},
               'prometheus_servers': {'hosts': ['prom']}}
    assert plan_gate.host_order(listing) == ['pve1', 'ct', 'r1']


def test_host_snapshot_from_a_plan_directory(tmp_path):
    host = tmp_path / 'ct'
    (host / 'files' / 'etc').mkdir(parents=True)
    (host / 'deployment.json').write_text(json.dumps({
        'kind': 'sglang_server', 'refusal': None, 'unit': 'sglang-m.service', 'model': {'path': '/m@main'},
        'gpus': {'indices': [0, 1]}, 'settings': {'tp_size': {'value': 2, 'source': 'inventory', 'extra': 1}}}))
    (host / 'plan.json').write_text(json.dumps({'plan': {
        'verdict': 'FITS', 'kv_cache_tokens': 1000, 'report_markdown': 'not kept',
        'max_context_at_concurrency': [{'concurrency': 8, 'max_context_tokens': 125}],
        'decode_roofline_tok_s': {'mtp': 1.5, 'no_mtp': 1.0}}}))
    (host / 'sglang_argv.json').write_text(json.dumps({
        'command': ['py', '--x', '1'], 'environment': {'A': '1'}, 'warnings': ['w2', 'w1', 'w2']}))
    (host / 'files' / 'etc' / 'u.service').write_text('[Service]\nExecStart=%s/py\n' % tmp_path)
    (host / 'lxc_gpu.conf').write_text('dev0: /dev/nvidia0\n')
    repl = plan_gate.volatile_replacements(root='/nowhere', home='/nohome', hostnames=[], out_dir=str(tmp_path))
    snap = plan_gate.host_snapshot('ct', str(tmp_path), repl)
    assert snap == {
        'kind': 'sglang_server', 'refusal': None,
        'key_numbers': {'verdict': 'FITS', 'kv_cache_tokens': 1000, 'max_context_at_8': 125, 'decode_tok_s_mtp': 1.5,
                        'decode_tok_s_no_mtp': 1.0, 'model_path': '/m@main', 'unit': 'sglang-m.service',
                        'gpu_indices': [0, 1]},
        'command': ['py', '--x', '1'], 'environment': {'A': '1'}, 'warnings': ['w1', 'w2'],
        'files': {'files/etc/u.service': ['[Service]', 'ExecStart=<plan-dir>/py'], 'lxc_gpu.conf': ['dev0: /dev/nvidia0']},
        'settings': {'tp_size': {'value': 2, 'source': 'inventory'}}}


def test_accept_refuses_a_refused_plan(tmp_path, monkeypatch, capsys):
    snap = snapshot()
    snap['hosts']['ct']['refusal'] = 'ct: 1 problem:\n1. bad'
    monkeypatch.setattr(plan_gate, 'snapshot_of_inventory', lambda *a: copy.deepcopy(snap))
    ref = tmp_path / 'ref.json'
    rc = plan_gate.main(['--root', str(tmp_path), 'accept', str(tmp_path), '--reference', str(ref)])
    assert rc == plan_gate.EXIT_REFUSED
    assert not ref.exists()
    assert 'nothing recorded: a plan the deploy refuses cannot be approved' in capsys.readouterr().out


@pytest.mark.parametrize('change, status', [(False, plan_gate.EXIT_OK), (True, plan_gate.EXIT_CHANGED)])
def test_check_exit_status_and_reports(tmp_path, monkeypatch, capsys, change, status):
    old, new = changed_context()
    if not change:
        new = copy.deepcopy(old)
    monkeypatch.setattr(plan_gate, 'snapshot_of_inventory', lambda *a: copy.deepcopy(new))
    ref = tmp_path / 'ref.json'
    ref.write_text(json.dumps(old))
    summary = tmp_path / 'summary.md'
    out = tmp_path / 'out'
    rc = plan_gate.main(['--root', str(tmp_path), 'check', str(tmp_path), '--reference', str(ref), '--out', str(out),
                         '--summary', str(summary), '--annotate', 'github'])
    assert rc == status
    printed = capsys.readouterr().out
    junit = (out / 'junit.xml').read_text()
    if change:
        assert '::error title=plan changed' in printed and 'KV tokens 684,739 -> 512,000 because' in printed
        assert '<failure message="KV tokens 684,739 -&gt; 512,000 because llmops_context_length' in junit
        assert 'CHANGED (needs approval)' in summary.read_text()
    else:
        assert '::error' not in printed and '<failure' not in junit
        assert summary.read_text().startswith('## Plan gate: %s unchanged' % tmp_path)
    assert json.loads(ref.read_text()) == old, 'check never writes the reference'
