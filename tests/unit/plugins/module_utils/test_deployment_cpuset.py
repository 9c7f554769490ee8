# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The container's cpuset, decided once by the resolver from the inventory's topology (issue #27 point 7).

llmops_host_gpus (GPU -> NUMA node) and llmops_host_numa_cpus (NUMA node -> CPU list) of the Proxmox host, and the
container's lxc_gpu_cpuset / lxc_gpu_addresses, give llmops_deployment.lxc.cpuset: what make plan's lxc_gpu.conf,
the deploy's lxc_gpu role and the SGLang unit all render. The refusals are in tests/fixtures/bad_inputs.yml."""

from __future__ import annotations

import importlib.util
import os

import pytest

from ansible_collections.llmops.inference.plugins.action.deployment_info import FileLoader
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.hosts import container_cpuset, numa_cpus
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.resolve import resolve
from collection_paths import ROOT


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, *path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bad_inputs = _load('bad_inputs', ('tests', 'fixtures', 'bad_inputs.py'))
role_options = _load('role_options', ('plugins', 'plugin_utils', 'actions', 'role_options.py'))


def resolve_case(server=None, proxmox=None):
    case = dict(id='cpuset', host='proxmox', server=server or {}, proxmox=proxmox or {})
    all_hosts = bad_inputs.hosts(case, '/nonexistent')
    groups = {'proxmox_hosts': ['pve-cpuset'], 'sglang_servers': ['ct-cpuset']}
    out = {}
    for host in ('ct-cpuset', 'pve-cpuset'):
        request = dict(host=host, groups=groups, variables=dict(all_hosts[host]),
                       vars_of=lambda name: all_hosts.get(name, {}), overrides={}, p2p_verdict='',
                       require_secrets=False, api_key='lab-key', collection_profiles=os.path.join(ROOT, 'profiles'),
                       role_options=role_options.ROLE_OPTIONS)
        out[host] = resolve(request, FileLoader())
    return out['ct-cpuset'], out['pve-cpuset']


def test_the_seed_container_is_pinned_to_numa_node_0():
    (ct, problems), (pve, pve_problems) = resolve_case()
    assert not problems and not pve_problems, (problems.message(), pve_problems.message())
    assert ct['lxc']['addresses'] == ['0000:01:00.0', '0000:21:00.0', '0000:41:00.0', '0000:61:00.0']
    assert ct['lxc']['cpuset'] == dict(source='auto', cpus='0-63,128-191', mems='0',
                                       origin='llmops_host_numa_cpus of pve-cpuset (node 0: 0-63,128-191)')
    assert pve['numa_cpus'] == {'0': '0-63,128-191', '1': '64-127,192-255'}


def test_a_card_of_the_other_node_widens_cpus_and_mems():
    # -e JSON gives string keys; a list given out of order is printed as the kernel prints it.
    (ct, problems), dummy = resolve_case(
        server={'lxc_gpu_addresses': ['0000:81:00.0']},
        proxmox={'llmops_host_numa_cpus': {'0': '128-191,0-63', '1': '64-127,192-255'},
                 'llmops_host_vfio_numa_nodes': [], 'llmops_host_nvidia_numa_nodes': [0, 1]})
    assert not problems, problems.message()
    assert ct['lxc']['cpuset']['cpus'] == '0-255' and ct['lxc']['cpuset']['mems'] == '0-1'
    assert len(ct['lxc']['addresses']) == 5


@pytest.mark.parametrize('value, expected', [
    ('', dict(source='none', cpus=None, mems=None, origin="lxc_gpu_cpuset: ''")),
    (None, dict(source='none', cpus=None, mems=None, origin="lxc_gpu_cpuset: ''")),
    ('0-31', dict(source='explicit', cpus='0-31', mems=None, origin='lxc_gpu_cpuset')),
])
def test_opt_out_and_an_explicit_list_need_no_topology(value, expected):
    (ct, problems), dummy = resolve_case(server={'lxc_gpu_cpuset': value} if value is not None else {},
                                         proxmox={'llmops_host_numa_cpus': None})
    if value is None:
        # Not set at all is auto: refused without the topology (bad_inputs.yml has the message).
        assert problems and ct['lxc']['cpuset'] is None
        return
    assert not problems, problems.message()
    assert ct['lxc']['cpuset'] == expected


def test_numa_cpus_and_container_cpuset_pure():
    assert numa_cpus({0: '0-3', '1': 5}) == ({0: '0-3', 1: '5'}, [])
    cpus, errors = numa_cpus({True: '0-3', 2: ''})
    assert cpus == {} and [e[0] for e in errors] == ['llmops_host_numa_cpus.2', 'llmops_host_numa_cpus.True']
    decided, refusal = container_cpuset('auto', {0: '0-3', 1: '4-7'}, [1], 'pve')
    assert refusal is None and (decided['cpus'], decided['mems']) == ('4-7', '1')
    decided, refusal = container_cpuset('auto', {0: '0-3'}, [0, 1], 'pve')
    assert decided is None and 'gives none for node(s) [1]' in refusal[0] and 'node1/cpulist' in refusal[1]
