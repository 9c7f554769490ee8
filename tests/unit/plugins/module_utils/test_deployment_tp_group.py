# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A multi-node TP group resolved: inventories/multinode's two nodes, their command lines, environment and picture,
and every refusal of the group (naming the node) before any host is touched."""

from __future__ import annotations

import copy
import json
import os
import re

import pytest
import yaml

from test_deployment_refusals import ROOT, Loader, role_options

from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import tp_group as tpg
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.resolve import resolve as _resolve
from ansible_collections.llmops.inference.plugins.module_utils.sglang.startup import measurement_file
from collection_paths import PIN

INVENTORY = os.path.join(ROOT, 'inventories', 'multinode')


def _load(*parts):
    with open(os.path.join(INVENTORY, *parts)) as handle:
        return yaml.safe_load(handle) or {}


def inventory():
    """({host: merged vars}, groups) of inventories/multinode, group vars under host vars as Ansible merges them."""
    shared = _load('group_vars', 'tp_deepseek.yml')
    hosts = dict((h, dict(shared, **_load('host_vars', '%s.yml' % h))) for h in ('gpu-node-a', 'gpu-node-b'))
    groups = {'sglang_servers': ['gpu-node-a', 'gpu-node-b'], 'tp_deepseek': ['gpu-node-a', 'gpu-node-b']}
    return hosts, groups


def run(host, hosts, groups, overrides=None):
    variables = dict((k, v) for k, v in hosts[host].items() if k.startswith(('llmops_', 'deployment_')))
    request = dict(host=host, groups=groups, variables=variables,
                   vars_of=lambda name: dict((k, v) for k, v in hosts.get(name, {}).items()),
                   overrides=overrides or {}, p2p_verdict='', require_secrets=True, api_key='k',
                   inventory_dir='/nonexistent', collection_profiles=os.path.join(ROOT, 'profiles'),
                   role_options=role_options.ROLE_OPTIONS)
    return _resolve(request, Loader())


def message(problems):
    return re.sub(r'\s+', ' ', problems.message()) if problems else ''


def flag(argv, name):
    return argv[argv.index(name) + 1] if name in argv else None


def test_the_two_nodes_of_the_example_render_one_server():
    hosts, groups = inventory()
    head, problems = run('gpu-node-a', hosts, groups)
    assert not problems, problems.message()
    node, problems = run('gpu-node-b', hosts, groups)
    assert not problems, problems.message()
    for d, rank in ((head, '0'), (node, '1')):
        names = ('--tp-size', '--nnodes', '--node-rank', '--dist-init-addr', '--dist-timeout')
        assert [flag(d['argv'], f) for f in names] == ['16', '2', rank, '10.10.0.1:20000', '600']
        assert d['environment']['NCCL_SOCKET_IFNAME'] == d['environment']['GLOO_SOCKET_IFNAME'] == 'ens5f0'
        assert d['environment']['NCCL_IB_DISABLE'] == '1' and 'NCCL_IB_HCA' not in d['environment']
        assert d['gpus']['count'] == 8 and d['parallel']['nnodes'] == 2 and d['parallel']['tp_size'] == 16
    # Only the head serves clients; the follower's health stub is on loopback.
    assert flag(head['argv'], '--host') == '0.0.0.0' and flag(node['argv'], '--host') == '127.0.0.1'
    assert node['http']['url'] == 'http://127.0.0.1:30000' and node['tp_group']['role'] == 'follower'
    # One server: the command lines differ in nothing but the rank and the bind address.

    def strip(argv):
        return [a for i, a in enumerate(argv)
                if not (argv[i - 1:i] in (['--node-rank'], ['--host']) or a in ('--node-rank', '--host'))]

    assert strip(head['argv']) == strip(node['argv'])

    def link(env):
        return dict((k, v) for k, v in env.items() if k != 'LLMOPS_TP_GROUP_LINK')

    assert link(head['environment']) == link(node['environment'])
    assert head['plan']['kv_cache_tokens'] == node['plan']['kv_cache_tokens']
    # The launcher's group link: each node listens one port below the rendezvous and watches the other node.
    assert json.loads(node['environment']['LLMOPS_TP_GROUP_LINK']) == dict(
        host='gpu-node-b', listen='10.10.0.2:19999', peers=[dict(host='gpu-node-a', address='10.10.0.1', port=19999)],
        formed_when=['Init parallel ends.'], stop_grace=10)
    ranks = head['tp_group']['ranks']
    assert [(r['host'], r['node_rank'], r['address'], r['tp_ranks']) for r in ranks] == [
        ('gpu-node-a', 0, '10.10.0.1', [0, 7]), ('gpu-node-b', 1, '10.10.0.2', [8, 15])]
    assert head['tp_group']['port_block'] == [20000] and head['tp_group']['head'] == 'gpu-node-a'
    json.dumps(head)  # the published fact is plain data


def test_the_plan_shows_the_topology():
    hosts, groups = inventory()
    node, dummy = run('gpu-node-b', hosts, groups)
    md = node['plan']['report_markdown']
    assert '## Tensor-parallel group tp_deepseek: TP16 over 2 nodes' in md
    assert '| gpu-node-b | 1 | 10.10.0.2 | ens5f0 | 0,1,2,3,4,5,6,7 | 8-15 | health stub only |' in md
    picture = md.split('```text\n', 2)[-1].split('```', 1)[0].splitlines()
    boxes = [line for line in picture if line.startswith(('+', '|'))]
    assert len(set(len(line) for line in boxes)) == 1, picture  # the boxes close
    assert any('TP   8 9 10 11 12 13 14 15' in line for line in picture)
    assert any('health stub 127.0.0.1:30000 (always 200: never trusted)' in line for line in picture)
    assert 'clients / gateway --HTTP 0.0.0.0:30000--> gpu-node-a' in node['plan']['report_lines']


def test_dp_attention_reserves_the_zmq_ports_and_a_clash_with_http_is_refused():
    assert tpg.port_block(20000, False) == [20000]
    assert tpg.port_block(20000, True) == list(range(20000, 20007))
    assert tpg.port_block(65530, True) == [65523, 65524, 65525, 65526, 65527, 65528, 65530]
    hosts, groups = inventory()
    for h in hosts.values():
        h.update(llmops_dp_size=2, llmops_enable_dp_attention=True, llmops_dist_init_port=29997)
    dummy, problems = run('gpu-node-a', hosts, groups)
    assert 'llmops_dist_init_port = 29997: the head binds the rendezvous ports 29997-30003, and llmops_http_port ' \
           '30000 is one of them' in message(problems)


def test_infiniband_and_the_interface():
    hosts, groups = inventory()
    for h in hosts.values():
        h['llmops_nccl_ib_hca'] = 'mlx5_0,mlx5_1'
    hosts['gpu-node-b']['llmops_nccl_socket_ifname'] = 'ens6f0'
    node, problems = run('gpu-node-b', hosts, groups)
    assert not problems, problems.message()
    assert node['environment']['NCCL_IB_HCA'] == 'mlx5_0,mlx5_1' and 'NCCL_IB_DISABLE' not in node['environment']
    assert node['environment']['GLOO_SOCKET_IFNAME'] == 'ens6f0'


def refused(mutate, host='gpu-node-b', groups=None):
    hosts, default_groups = inventory()
    mutate(hosts)
    deployment, problems = run(host, hosts, groups or default_groups)
    return message(problems)


@pytest.mark.parametrize('mutate,host,expect', [
    (lambda h: h['gpu-node-b'].pop('llmops_node_rank'), 'gpu-node-b',
     ['llmops_node_rank: is required on every node of TP group tp_deepseek', 'Fix: set llmops_node_rank: <0..1> in '
      'the host_vars of gpu-node-b']),
    (lambda h: h['gpu-node-b'].update(llmops_node_rank=0), 'gpu-node-b',
     ['llmops_node_rank = 0: rank 0 of TP group tp_deepseek is also given to gpu-node-a']),
    (lambda h: h['gpu-node-b'].update(llmops_node_rank=2), 'gpu-node-b',
     ['llmops_node_rank = 2: TP group tp_deepseek has 2 nodes, so the ranks are 0..1']),
    # The head sees the hole its peer left.
    (lambda h: h['gpu-node-b'].pop('llmops_node_rank'), 'gpu-node-a',
     ['llmops_tp_group = \'tp_deepseek\': rank 1 of the 2 nodes is not given (gpu-node-b has none or an invalid one)']),
    (lambda h: h['gpu-node-b'].update(llmops_model_profile='kimi-k2.5'), 'gpu-node-b',
     ["llmops_model_profile = 'kimi-k2.5': differs within TP group tp_deepseek: the head gpu-node-a (rank 0) has "
      "'deepseek-v3'", 'Fix: set llmops_model_profile once in the group_vars of tp_deepseek']),
    (lambda h: h['gpu-node-b'].update(llmops_mem_fraction_static=0.8), 'gpu-node-b',
     ['llmops_mem_fraction_static = 0.8: differs within TP group tp_deepseek']),
    (lambda h: h['gpu-node-b'].update(llmops_dist_init_port=20001), 'gpu-node-b',
     ['llmops_dist_init_port = 20001: differs within TP group tp_deepseek: the head gpu-node-a (rank 0) has 20000']),
    (lambda h: h['gpu-node-b'].pop('llmops_nccl_socket_ifname'), 'gpu-node-b',
     ['llmops_nccl_socket_ifname: is required on every node of TP group tp_deepseek']),
    (lambda h: h['gpu-node-b'].update(llmops_nccl_socket_ifname='^docker,lo'), 'gpu-node-b',
     ["llmops_nccl_socket_ifname = '^docker,lo': must be an interface name", 'gloo reads GLOO_SOCKET_IFNAME literally']),
    (lambda h: h['gpu-node-b'].update(llmops_node_address='127.0.0.1'), 'gpu-node-b',
     ["llmops_node_address = '127.0.0.1': a wildcard or loopback address cannot be reached from the other nodes"]),
    (lambda h: h['gpu-node-b'].update(llmops_node_address='10.10.0.1'), 'gpu-node-b',
     ["llmops_node_address = '10.10.0.1': is also the address of gpu-node-a"]),
    (lambda h: h['gpu-node-b'].update(llmops_node_address='10.10.0.300'), 'gpu-node-b',
     ["llmops_node_address = '10.10.0.300': not an IPv4/IPv6 address or a host name"]),
    (lambda h: h['gpu-node-b'].update(llmops_environment={'NCCL_SOCKET_IFNAME': 'eth0'}), 'gpu-node-b',
     ["llmops_environment.NCCL_SOCKET_IFNAME = 'eth0': a TP group renders NCCL_SOCKET_IFNAME"]),
    (lambda h: h['gpu-node-b'].update(llmops_gpu_indices=[0, 1, 2, 3]), 'gpu-node-b',
     ['llmops_gpu_indices = [0, 1, 2, 3]: TP 16 over 2 nodes needs exactly 8 GPU indices on each node']),
    (lambda h: [x.update(llmops_variants=[{'name': 'no-mtp'}]) for x in h.values()], 'gpu-node-a',
     ['llmops_variants = ["no-mtp"]: A/B variants restart the service of one host']),
    (lambda h: h['gpu-node-b'].update(llmops_tp_group='tp_other'), 'gpu-node-a',
     ["llmops_tp_group = 'tp_deepseek': gpu-node-b of the group tp_deepseek names another TP group ('tp_other')"]),
    (lambda h: [x.update(llmops_tp_size=12) for x in h.values()], 'gpu-node-a',
     ['llmops_gpu_indices = [0, 1, 2, 3, 4, 5, 6, 7]: TP 12 over 2 nodes needs exactly 6 GPU indices on each node']),
], ids=['rank-missing', 'rank-twice', 'rank-out-of-range', 'head-sees-the-hole', 'model-differs', 'flag-differs',
        'port-differs', 'interface-missing', 'interface-nccl-syntax', 'address-loopback', 'address-twice',
        'address-invalid', 'env-conflict', 'gpus-per-node', 'variants', 'two-groups', 'tp-per-node'])
def test_refusals_name_the_node_the_variable_and_the_fix(mutate, host, expect):
    text = refused(mutate, host)
    for item in expect:
        assert item in text, text
    assert text.startswith('%s: ' % host) and 'nothing was changed on any host' in text


def test_membership_refusals():
    groups = {'sglang_servers': ['gpu-node-a', 'gpu-node-b'], 'tp_deepseek': ['gpu-node-a', 'gpu-node-b']}
    text = refused(lambda h: None, groups={'sglang_servers': ['gpu-node-a', 'gpu-node-b'], 'tp_deepsek': ['gpu-node-a']})
    assert "llmops_tp_group = 'tp_deepseek': no inventory group of that name" in text and 'or use tp_deepsek' in text
    text = refused(lambda h: None, groups=dict(groups, tp_deepseek=['gpu-node-a']))
    assert 'gpu-node-b is not a host of the inventory group tp_deepseek (gpu-node-a)' in text
    text = refused(lambda h: None, 'gpu-node-a', groups=dict(groups, tp_deepseek=['gpu-node-a']))
    assert "the group has one node (gpu-node-a): a TP group spans at least 2 hosts" in text
    text = refused(lambda h: None, groups=dict(groups, sglang_servers=['gpu-node-b']))
    assert 'gpu-node-a is not in sglang_servers' in text
    # The group's variables on a single-node server.
    hosts, dummy = inventory()
    single = dict((k, v) for k, v in hosts['gpu-node-b'].items() if k != 'llmops_tp_group')
    single['llmops_tp_size'] = 8
    deployment, problems = run('solo', {'solo': single}, {'sglang_servers': ['solo']})
    text = message(problems)
    assert "llmops_node_rank = 1: is set but llmops_tp_group is not" in text
    assert "llmops_node_address = '10.10.0.2': is set but llmops_tp_group is not" in text


def test_the_group_plans_with_the_smallest_measured_free_memory(tmp_path):
    hosts, groups = inventory()
    record = str(tmp_path / 'deploy')
    for h in hosts.values():
        h['llmops_record_dir'] = record
    base = dict(schema=1, gpu_profile='h100-80gb', tp_size=16, sglang_version=PIN, instance='deepseek-v3',
                start='2026-12-01T00:00:00Z')

    def write(host, gib):
        _write(measurement_file(os.path.join(record, host), 'h100-80gb', 16), dict(base, free_memory_before_load_gib=gib))

    write('gpu-node-a', 78.9)
    only_one, dummy = run('gpu-node-b', hosts, groups)
    assert only_one['record']['measured'] is None  # one node measured is not the group's figure
    write('gpu-node-b', 77.5)
    for host in ('gpu-node-a', 'gpu-node-b'):
        d, problems = run(host, hosts, groups)
        assert not problems, problems.message()
        assert d['record']['measured']['free_memory_before_load_gib'] == 77.5
        assert d['record']['measured']['node'] == 'gpu-node-b'
        assert d['plan']['free_before_load_gib'] == 77.5
        assert any('the smallest of the 2 nodes of TP group tp_deepseek (measured on gpu-node-b' in n for n in d['notes'])


def _write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as handle:
        json.dump(data, handle)


def test_address_rules():
    assert tpg.address_problem('10.0.0.1') is None and tpg.address_problem('fd00::2') is None
    assert tpg.address_problem('node-b.cluster.local') is None
    for bad in ('0.0.0.0', '::', '::1', '127.0.1.1', 'localhost'):
        assert 'loopback' in tpg.address_problem(bad)
    assert tpg.host_port('fd00::1', 20000) == '[fd00::1]:20000' and tpg.host_port('10.0.0.1', 1) == '10.0.0.1:1'


def test_every_server_setting_is_either_per_node_or_compared():
    """A new llmops_* variable is compared between the nodes unless it is listed as per node: the list is not stale."""
    from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.spec import BY_NAME
    stale = [name for name in tpg.PER_NODE if name not in BY_NAME and name != 'llmops_gateway_worker_address']
    assert not stale
    assert copy.deepcopy(tpg.NETWORK_ENV) == ('NCCL_SOCKET_IFNAME', 'GLOO_SOCKET_IFNAME', 'NCCL_IB_DISABLE', 'NCCL_IB_HCA')


def test_a_node_that_reports_nothing_is_refused_at_every_stage():
    """The group starts as one: a node missing from any stage's results is named, with the same fix."""
    from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import tp_group_preflight
    group = {'name': 'tp_lab', 'port_block': [20000],
             'ranks': [{'host': 'a', 'node_rank': 0, 'address': '10.0.0.1'},
                       {'host': 'b', 'node_rank': 1, 'address': '10.0.0.2'}]}
    for check, what in ((tp_group_preflight.check_probe, 'its TCP probe'),
                        (tp_group_preflight.check_model, 'a verified model'),
                        (tp_group_preflight.check_nodes, 'the all-reduce across the nodes')):
        results = {'a': {'connect': [], 'listen': [], 'verdict': 'nodes_ok', 'repo_id': 'r', 'revision': 'c'}}
        problems = check(group, results)
        texts = [p['message'] for p in problems if p['node'] == 'b']
        assert texts and texts[0].startswith('did not report ' + what), (check.__name__, problems)
        assert all('for every node of TP group tp_lab together' in p['fix'] for p in problems if p['node'] == 'b')
