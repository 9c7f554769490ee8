# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""llmops_sglang_version: one server on another supported SGLang release (issue #29): that release's rules plan and
render it, its own virtualenv, its lock and requirements, its install overrides; an unsupported one is refused
naming the variable, the value, the rule and the fix, before anything runs."""

from __future__ import annotations

import os

import pytest

from collection_paths import PIN, ROOT, pin_profile, release_table_data
from test_deployment import resolve, seed
from test_deployment_refusals import Loader, role_options

OTHER = '0.5.22'


def test_the_pin_by_default():
    d = resolve()
    assert d['sglang']['version'] == PIN
    assert d['sglang']['packages'] == ['%s==%s' % kv for kv in sorted(pin_profile()['packages'].items())]
    assert d['sglang']['venv'] == '/opt/sglang/venv-%s' % PIN
    assert d['sglang']['pip_check_accepted'] == []


def test_another_supported_release_moves_this_server_alone():
    assert OTHER != PIN and OTHER in release_table_data()['releases']
    d = resolve(llmops_sglang_version=OTHER)
    s = d['sglang']
    assert s['version'] == OTHER and s['packages'] == ['sglang==%s' % OTHER]
    assert s['venv'] == '/opt/sglang/venv-%s' % OTHER and d['command'][0] == s['venv'] + '/bin/python'
    assert s['lock_template'].endswith('/locks/sglang-%s-py{python}.txt' % OTHER)
    assert os.path.isfile(os.path.join(ROOT, 'profiles', 'locks', 'sglang-%s-py3.11.txt' % OTHER))
    assert s['pip_check_accepted'] == [
        'sglang %s has requirement cuda-tile==1.6.0rc5, but you have cuda-tile 1.6.0.' % OTHER]
    assert d['plan']['sglang_version'] == OTHER
    launcher = [row for row in d['provenance'] if row['kind'] == 'command'][0]
    assert 'VERSION %s (inventory llmops_sglang_version)' % OTHER in launcher['source']


def refusals(version):
    """The resolver's refusal text for the seed server with llmops_sglang_version set to version."""
    from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.resolve import resolve as _resolve
    hosts, groups = seed(llmops_sglang_version=version)
    variables = dict((k, v) for k, v in hosts['ct-t'].items() if k != 'llmops_api_key')
    request = dict(host='ct-t', groups=groups, variables=variables, vars_of=lambda name: hosts.get(name, {}),
                   overrides={}, p2p_verdict='', require_secrets=True, api_key='k', model_commit='',
                   inventory_dir='/nonexistent', collection_profiles=os.path.join(ROOT, 'profiles'),
                   role_options=role_options.ROLE_OPTIONS)
    dummy, problems = _resolve(request, Loader())
    return problems.message()


@pytest.mark.parametrize('value, fragment', [
    ('0.5.20', 'has flag rules but no planner rules'),
    ('9.9.9', 'has no entry for it; known releases:'),
])
def test_an_unsupported_release_is_refused_naming_the_variable(value, fragment):
    message = refusals(value)
    assert 'llmops_sglang_version' in message and value in message and fragment in message
    assert 'name a supported release' in message and 'the pin %s of profiles/sglang.yml' % PIN in message


def test_a_release_with_rules_but_no_lock_is_refused():
    """0.5.11 has planner and flag rules but no lock: a host would install an unproved resolution."""
    assert not os.path.exists(os.path.join(ROOT, 'profiles', 'locks', 'sglang-0.5.11-py3.11.txt'))
    message = refusals('0.5.11')
    assert 'llmops_sglang_version' in message and 'no pip lock' in message
    assert 'make sglang-release VERSION=0.5.11' in message
