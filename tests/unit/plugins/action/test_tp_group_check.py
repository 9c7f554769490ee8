# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The tp_group_check action over a two-node group's registered results (hostvars), every stage: the facts that
agree and the probe plan they give, each kind of disagreement named with its node and fix, a real TCP probe on
127.0.0.1/127.0.0.2 run from that plan, the model and the all-reduce; the module's documentation matches the action."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import socket
import threading

from unittest.mock import MagicMock

import pytest
import yaml

from ansible.errors import AnsibleActionFail

from ansible_collections.llmops.inference.plugins.action import tp_group_check
from ansible_collections.llmops.inference.plugins.module_utils.host import tcp_probe
from ansible_collections.llmops.inference.plugins.modules import tp_group_check as tp_group_check_doc

PIN = '0.4.10'  # the deployment's SGLang version as this test states it (any version: only equality matters)


def group(addresses=('10.0.0.1', '10.0.0.2'), port_block=(20000,)):
    return {'name': 'tp_lab', 'nnodes': 2, 'gpus_per_node': 8, 'port_block': list(port_block),
            'ranks': [{'host': 'a', 'node_rank': 0, 'address': addresses[0], 'ifname': 'eth1', 'gpu_indices': []},
                      {'host': 'b', 'node_rank': 1, 'address': addresses[1], 'ifname': 'eth1', 'gpu_indices': []}]}


def node_facts(address, probe_port, **changes):
    out = {'driver': '580.95.05', 'python': '3.11', 'gpu_count': 8, 'unit_active': False,
           'venv': {'sglang': PIN, 'torch': '2.9.1', 'nccl': 'nvidia-nccl-cu13 2.28.9', 'path': '/opt/sglang/venv'},
           'interfaces': {'eth1': {'exists': True, 'up': True, 'addresses': [address]}},
           'ephemeral_range': [32768, 60999], 'listening': [], 'probe_ports': [probe_port]}
    out.update(changes)
    return out


def deployment(grp, lock_template=None, revision='c0ffee'):
    return {'tp_group': grp, 'sglang': {'version': PIN, 'lock_template': lock_template},
            'deploy': {'check_gpus': True}, 'model': {'repo_id': 'org/model', 'revision': revision}}


def run(args, hostvars, host='a', grp=None, dep=None):
    grp = grp or group()
    task = MagicMock()
    task.args = args
    task.async_val = 0
    templar = MagicMock()
    templar.template.side_effect = lambda value: value
    connection = MagicMock()
    connection._shell.tmpdir = None  # pylint: disable=protected-access
    action = tp_group_check.ActionModule(task, connection, MagicMock(), MagicMock(), templar, MagicMock())
    task_vars = {'inventory_hostname': host, 'llmops_deployment': dep or deployment(grp), 'hostvars': hostvars}
    return action.run(task_vars=task_vars)


def hostvars_with(name, values, grp=None, dep=None):
    """Every node's registered result under name, and its llmops_deployment (as the deploy play has them)."""
    dep = dep or deployment(grp or group())
    return dict((host, {name: value, 'llmops_deployment': dep}) for host, value in values.items())


@pytest.fixture
def lock(tmp_path):
    (tmp_path / 'sglang-py3.11.txt').write_text('numpy==2.3.1 \\\n    --hash=sha256:aa\n'
                                                'nvidia-nccl-cu13==2.28.9 \\\n    --hash=sha256:bb\n')
    return str(tmp_path / 'sglang-py{python}.txt')


def test_facts_that_agree_give_the_probe_plan(lock):
    dep = deployment(group(), lock_template=lock)
    hv = hostvars_with('tp_node', {'a': node_facts('10.0.0.1', 40001), 'b': node_facts('10.0.0.2', 40002)}, dep=dep)
    result = run({'stage': 'facts'}, hv, dep=dep)
    assert not result.get('failed'), result
    assert result['problems'] == [] and result['warnings'] == [] and result['changed'] is False
    assert result['lock_nccl'] == {'3.11': 'nvidia-nccl-cu13 2.28.9'}
    assert result['msg'] == ('a: TP group tp_lab, 2 nodes: versions, model revision, GPUs, interfaces and the '
                             'rendezvous ports agree')
    # the head listens on the rendezvous block and its probe port, b on its own; each reaches all of the other's
    assert result['probe_plan'] == {
        'a': {'address': '10.0.0.1', 'listen': [20000, 40001],
              'connect': [{'host': 'b', 'address': '10.0.0.2', 'port': 40002}],
              'expect': {'20000': ['b'], '40001': ['b']}},
        'b': {'address': '10.0.0.2', 'listen': [40002],
              'connect': [{'host': 'a', 'address': '10.0.0.1', 'port': 20000},
                          {'host': 'a', 'address': '10.0.0.1', 'port': 40001}],
              'expect': {'40002': ['a']}}}


def test_every_disagreement_is_named_with_its_node_and_fix(lock):
    dep = deployment(group(), lock_template=lock)
    a = node_facts('10.0.0.1', 40001, listening=[20000], ephemeral_range=[10000, 60999])
    b = node_facts('10.0.0.2', 40002, driver='570.86.15', gpu_count=4,
                   interfaces={'eth1': {'exists': True, 'up': False, 'addresses': ['10.0.0.9']}})
    result = run({'stage': 'facts'}, hostvars_with('tp_node', {'a': a, 'b': b}, dep=dep), dep=dep)
    assert result['failed'] is True and result['probe_plan'] == {}
    got = [(p['node'], p['rank'], p['check']) for p in result['problems']]
    assert got == [('b', 1, 'driver'), ('b', 1, 'gpus'), ('b', 1, 'interface'), ('b', 1, 'address'),
                   ('a', 0, 'ports')]
    by_check = dict((p['check'], p) for p in result['problems'])
    assert by_check['driver']['message'].startswith('NVIDIA kernel module 570.86.15, the head a has 580.95.05')
    assert by_check['driver']['fix'] == 'install driver 580.95.05 on b (or upgrade every node to one version)'
    assert by_check['gpus']['message'] == 'nvidia-smi lists 4 GPU(s), its share of TP16 over 2 nodes is 8'
    assert by_check['interface']['message'] == 'interface eth1 is down'
    assert by_check['address']['message'] == 'llmops_node_address 10.0.0.2 is not an address of eth1 (it has 10.0.0.9)'
    assert by_check['ports']['fix'].startswith('stop what listens there (ss -ltnp "sport = :20000")')
    assert result['warnings'] == ['a: the rendezvous port 20000 lies in the head\'s ephemeral range 10000-60999 '
                                  '(net.ipv4.ip_local_port_range): an outgoing connection may hold one when the group '
                                  'starts; prefer an llmops_dist_init_port below 10000']
    lines = result['msg'].splitlines()
    assert lines[0] == 'a: TP group tp_lab (facts): 5 problems, nothing was changed on any host:'
    assert lines[1] == ('1. b (rank 1): %s. Fix: install driver 580.95.05 on b (or upgrade every node to one '
                        'version).' % by_check['driver']['message'])
    assert [line.split(' ', 1)[0] for line in lines[1:]] == ['1.', '2.', '3.', '4.', '5.']


def test_without_install_the_virtualenvs_are_compared_and_must_be_the_pin():
    b = node_facts('10.0.0.2', 40002, venv={'sglang': '0.4.9', 'torch': '2.9.1', 'nccl': 'nvidia-nccl-cu13 2.28.9',
                                            'path': '/opt/sglang/venv'})
    hv = hostvars_with('tp_node', {'a': node_facts('10.0.0.1', 40001), 'b': b})
    result = run({'stage': 'facts', 'install': 'no'}, hv)
    assert result['lock_nccl'] == {}  # no lock is read when nothing is installed
    assert [p['message'] for p in result['problems']] == [
        'SGLang 0.4.9 in /opt/sglang/venv, the head a has 0.4.10',
        'SGLang 0.4.9 in its virtualenv, the deployment pins 0.4.10']


def test_a_node_that_failed_or_serves_another_revision_is_refused():
    hv = hostvars_with('tp_node', {'a': node_facts('10.0.0.1', 40001), 'b': dict(node_facts('10.0.0.2', 40002))})
    hv['b']['tp_node']['failed'] = True
    result = run({'stage': 'facts'}, hv)
    assert [(p['node'], p['check']) for p in result['problems']] == [('b', 'reported')]
    assert result['problems'][0]['message'].startswith('did not report its facts')
    hv = hostvars_with('tp_node', {'a': node_facts('10.0.0.1', 40001), 'b': node_facts('10.0.0.2', 40002)})
    hv['b']['llmops_deployment'] = deployment(group(), revision='beef00')
    result = run({'stage': 'facts'}, hv)
    [problem] = result['problems']
    assert problem['node'] == 'b' and problem['check'] == 'model'
    assert problem['message'].startswith('serves org/model@beef00, the head a org/model@c0ffee')


def _free_port(address):
    with socket.socket() as sock:
        sock.bind((address, 0))
        return sock.getsockname()[1]


def test_a_real_probe_from_the_plan_passes_and_a_missing_node_fails():
    """The facts stage's plan run with tcp_probe by two nodes on loopback addresses, then judged by the probe stage."""
    addresses = ('127.0.0.1', '127.0.0.2')
    grp = group(addresses, port_block=(_free_port('127.0.0.1'),))
    dep = deployment(grp)
    facts = {'a': node_facts(addresses[0], _free_port(addresses[0])),
             'b': node_facts(addresses[1], _free_port(addresses[1]))}
    plan = run({'stage': 'facts', 'install': False}, hostvars_with('tp_node', facts, dep=dep), grp=grp,
               dep=dep)['probe_plan']
    results = {}

    def probe(host, timeout):
        p = plan[host]
        results[host] = tcp_probe.probe(host, p['address'], p['listen'], p['connect'], p['expect'], timeout)

    threads = [threading.Thread(target=probe, args=(host, 10)) for host in ('a', 'b')]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    result = run({'stage': 'probe'}, hostvars_with('tp_probe', results, dep=dep), grp=grp, dep=dep)
    assert not result.get('failed'), result['problems']
    assert set(result['probes']) == {'a', 'b'} and all(p['ok'] for p in result['probes'].values())
    assert result['msg'].endswith('every node reached every other node\'s rendezvous and NCCL/gloo ports')

    # b never runs its probe: a cannot reach b's port, and b is named for not reporting
    results = {}
    probe('a', 1)
    result = run({'stage': 'probe'}, hostvars_with('tp_probe', {'a': results['a'], 'b': None}, dep=dep), grp=grp,
                 dep=dep)
    got = [(p['node'], p['message']) for p in result['problems']]
    b_port = plan['b']['listen'][0]
    assert got[0][0] == 'a' and got[0][1].startswith(
        'cannot reach b at 127.0.0.2:%d, a port of its ephemeral range (NCCL/gloo): Connection refused' % b_port)
    assert got[1] == ('b', 'did not report its TCP probe')
    assert result['problems'][0]['fix'].startswith('open TCP %d and the ephemeral port range of b to a' % b_port)


def test_a_rendezvous_port_that_cannot_be_reached_is_named_as_such():
    probes = {'a': {'ok': True, 'listen': [], 'connect': []},
              'b': {'ok': False, 'listen': [{'port': 40002, 'bound': False, 'error': 'Address already in use (errno 98)'}],
                    'connect': [{'host': 'a', 'address': '10.0.0.1', 'port': 20000, 'ok': False,
                                 'error': 'No route to host (errno 113)', 'attempts': 40}]}}
    result = run({'stage': 'probe'}, hostvars_with('tp_probe', probes), host='b')
    assert [p['message'] for p in result['problems']] == [
        'cannot listen on 10.0.0.2:40002: Address already in use (errno 98)',
        'cannot reach a at 10.0.0.1:20000, the rendezvous (--dist-init-addr): No route to host (errno 113) after 40 '
        'attempt(s)']
    assert result['msg'].startswith('b: TP group tp_lab (probe): 2 problems')


def test_the_model_stage():
    same = {'repo_id': 'org/model', 'revision': 'c0ffee', 'files': 5, 'bytes': 1000, 'path': '/models/m'}
    result = run({'stage': 'model'}, hostvars_with('hf_model_result', {'a': same, 'b': dict(same)}))
    assert result['problems'] == [] and result['msg'].endswith('every node verified the same model files')
    result = run({'stage': 'model'}, hostvars_with('hf_model_result', {'a': same, 'b': dict(same, files=4, bytes=900)}))
    [problem] = result['problems']
    assert problem['message'] == ('verified org/model@c0ffee (4 files, 900 bytes) in /models/m, the head a verified '
                                  'org/model@c0ffee (5 files, 1000 bytes)')


def test_the_nodes_stage_keeps_a_failed_result_to_name_why():
    broken = {'verdict': 'nodes_broken', 'reason': 'node 1: rank 1 failed in the rendezvous',
              'diagnosis': {'fix': 'open llmops_dist_init_port'}}
    failed = {'failed': True, 'msg': 'gpu_p2p_check: torch is not importable'}
    result = run({'stage': 'nodes', 'nodes_var': 'nccl'},
                 hostvars_with('nccl', {'a': broken, 'b': failed}))
    assert [(p['node'], p['message'], p['fix']) for p in result['problems']] == [
        ('a', 'node 1: rank 1 failed in the rendezvous', 'open llmops_dist_init_port'),
        ('b', 'did not report the all-reduce across the nodes: gpu_p2p_check: torch is not importable',
         'run the deploy for every node of TP group tp_lab together')]
    fine = {'a': {'verdict': 'nodes_ok'}, 'b': {'verdict': 'nodes_ok'}}
    ok = run({'stage': 'nodes', 'nodes_var': 'nccl'}, hostvars_with('nccl', fine))
    assert ok['problems'] == [] and 'summed exactly on every node' in ok['msg']


def test_outside_a_group_bad_stage_and_unknown_option():
    dep = deployment(None)
    result = run({}, {}, dep=dep)
    assert result['skipped'] is True and result['msg'] == 'a is not a node of a multi-node TP group'
    result = run({'stage': 'network'}, {})
    assert result['failed'] is True and result['msg'] == "stage must be one of facts, probe, model, nodes, got 'network'"
    with pytest.raises(AnsibleActionFail, match='probe_timeout'):
        run({'stage': 'facts', 'probe_timeout': 5}, {})


def test_the_documentation_matches_the_action():
    doc = yaml.safe_load(tp_group_check_doc.DOCUMENTATION)
    assert set(doc['options']) == set(tp_group_check.ActionModule._VALID_ARGS)  # pylint: disable=protected-access
    assert tuple(doc['options']['stage']['choices']) == tp_group_check._STAGES  # pylint: disable=protected-access
    assert yaml.safe_load(tp_group_check_doc.RETURN)['problems']['returned'] == 'always'
