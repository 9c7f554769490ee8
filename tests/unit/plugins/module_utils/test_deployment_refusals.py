# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every bad input of tests/fixtures/bad_inputs.yml is refused by the resolver with the variable, value, rule, fix.

The same table runs through make plan and the deploy's validation in tests/integration/targets/bad_inputs.
"""

from __future__ import annotations

import importlib.util
import os
import re

import pytest

from ansible_collections.llmops.inference.plugins.action.deployment_info import FileLoader
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.resolve import resolve
from collection_paths import ROOT

_spec = importlib.util.spec_from_file_location('bad_inputs', os.path.join(ROOT, 'tests', 'fixtures', 'bad_inputs.py'))
bad_inputs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bad_inputs)
_spec = importlib.util.spec_from_file_location('role_options', os.path.join(ROOT, 'plugins', 'plugin_utils',
                                                                            'actions', 'role_options.py'))
role_options = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(role_options)


# The action's own profile loader: the tests read the profiles exactly as the playbooks do.
Loader = FileLoader


def run(host, all_hosts, groups, api_key='lab-key', require_secrets=True, overrides=None):
    variables = dict((k, v) for k, v in all_hosts[host].items() if k != 'llmops_api_key')
    request = dict(host=host, groups=groups, variables=variables, vars_of=lambda name: all_hosts.get(name, {}),
                   overrides=overrides if overrides is not None else variables.get('deployment_overrides') or {},
                   p2p_verdict='', require_secrets=require_secrets,
                   api_key=all_hosts[host].get('llmops_api_key') or api_key,
                   collection_profiles=os.path.join(ROOT, 'profiles'), role_options=role_options.ROLE_OPTIONS)
    return resolve(request, Loader())


def flat(text):
    return re.sub(r'\s+', ' ', text)


CASES = bad_inputs.cases()


def test_enough_cases():
    assert len(CASES) >= 40 and len(set(c['id'] for c in CASES)) == len(CASES)


@pytest.mark.parametrize('case', CASES, ids=[c['id'] for c in CASES])
def test_refused_with_variable_value_rule_fix(case, tmp_path):
    all_hosts = bad_inputs.hosts(case, str(tmp_path))
    pve, ct = bad_inputs.names(case)
    groups = bad_inputs.groups(case)
    target = {'proxmox': pve, 'gateway': 'gw-' + case['id']}.get(case.get('host'), ct)
    deployment, problems = run(target, all_hosts, groups)
    message = flat(problems.message()) if problems else ''
    for text in case['expect']:
        assert text in message, (case['id'], text, message)
    assert message.startswith('%s: ' % target) and 'nothing was changed on any host' in message
    for line in problems.lines():
        assert 'Fix: ' in line and len(line.split('Fix: ', 1)[1]) > 5, line
    # The other host of the case resolves cleanly: a refusal names the host it belongs to.
    other = ct if target != ct else pve
    if other == bad_inputs.SHARED_PVE:
        return
    dummy, other_problems = run(other, all_hosts, groups)
    assert not other_problems or case['id'] in ('address-to-vfio-and-container', 'lxc-node-on-vfio',
                                                'numa-on-both-sides', 'pci-address-short', 'pci-address-twice',
                                                'numa-node-without-cards'), other_problems.message()


def test_the_seed_resolves():
    case = dict(id='seed', host='proxmox')
    all_hosts = bad_inputs.hosts(case, '/nonexistent')
    groups = {'proxmox_hosts': ['pve-seed'], 'sglang_servers': ['ct-seed']}
    deployment, problems = run('ct-seed', all_hosts, groups)
    assert not problems, problems.message()
    assert deployment['plan']['fits'] and deployment['unit'] == 'sglang-qwen3.5-122b-a10b.service'
    argv = deployment['argv']
    # llmops_max_running_requests is unset: SGLang's own choice, no flag (the plan reports it).
    assert '--max-running-requests' not in argv
    pve, problems = run('pve-seed', all_hosts, groups)
    assert not problems, problems.message()
    assert pve['containers'][0]['addresses'] == ['0000:01:00.0', '0000:21:00.0', '0000:41:00.0', '0000:61:00.0']
    assert pve['vfio_addresses'] == ['0000:81:00.0', '0000:a1:00.0', '0000:c1:00.0', '0000:e1:00.0']


def test_no_api_key_refused_by_the_deploy_warned_by_the_plan():
    case = dict(id='nokey', host='proxmox')
    all_hosts = bad_inputs.hosts(case, '/nonexistent')
    groups = {'proxmox_hosts': ['pve-nokey'], 'sglang_servers': ['ct-nokey']}
    dummy, problems = run('ct-nokey', all_hosts, groups, api_key='')
    assert 'llmops_api_key: no API key' in flat(problems.message())
    deployment, problems = run('ct-nokey', all_hosts, groups, api_key='', require_secrets=False)
    assert not problems and any('no API key in this environment' in w for w in deployment['warnings'])
    all_hosts['ct-nokey']['llmops_allow_no_api_key'] = True
    deployment, problems = run('ct-nokey', all_hosts, groups, api_key='')
    assert not problems and deployment['auth'] == dict(api_key_set=False, allow_no_api_key=True)


def test_secret_never_in_the_deployment():
    case = dict(id='secret', host='proxmox')
    all_hosts = bad_inputs.hosts(case, '/nonexistent')
    groups = {'proxmox_hosts': ['pve-secret'], 'sglang_servers': ['ct-secret']}
    deployment, problems = run('ct-secret', all_hosts, groups, api_key='Zq-secret-94')
    assert not problems
    assert 'Zq-secret-94' not in repr(deployment) and deployment['auth']['api_key_set'] is True


@pytest.mark.parametrize('case', [c for c in bad_inputs.cases() if 'peers' in c or c.get('host') == 'gateway'],
                         ids=lambda c: c['id'])
def test_every_host_of_a_case_resolves_without_a_crash(case, tmp_path):
    """The other hosts of a case (the peers of a TP group, the gateway, the servers behind it) are resolved in the same
    run: a refusal on one node must not crash the resolution of another (an exception in the deploy's first play
    stops every host of the run, with any_errors_fatal, and hides every refusal)."""
    all_hosts = bad_inputs.hosts(case, str(tmp_path))
    groups = bad_inputs.groups(case)
    for host in sorted(all_hosts):
        deployment, problems = run(host, all_hosts, groups)
        assert deployment or problems, host
