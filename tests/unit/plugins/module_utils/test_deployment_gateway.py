# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The gateway's resolution: worker URLs from the replicas' own variables, the smg command line, the refusals."""

from __future__ import annotations

import copy
import os
import re

import yaml

from collection_paths import ROOT

from test_deployment_refusals import bad_inputs, run  # noqa: F401  (the shared harness)

# The gateway pin, read where it is written (no pin literal in tests).
with open(os.path.join(ROOT, 'profiles', 'sglang_gateway.yml')) as _stream:
    GATEWAY_PIN = str(yaml.safe_load(_stream)['version'])


def fleet(gateway_vars=None, second=None):
    """The seed's container twice (ct-a, ct-b) behind a gateway host gw."""
    case = dict(id='a', host='proxmox')
    hosts = bad_inputs.hosts(case, '/nonexistent')
    ct = dict(hosts['ct-a'], llmops_http_host='10.0.0.11')
    hosts['ct-a'] = ct
    hosts['ct-b'] = dict(copy.deepcopy(ct), llmops_http_host='10.0.0.12')
    hosts['ct-b'].update(second or {})
    hosts['gw'] = dict(gateway_vars or {})
    groups = {'proxmox_hosts': ['pve-a'], 'sglang_servers': ['ct-a', 'ct-b'], 'sglang_gateways': ['gw']}
    return hosts, groups


def test_worker_urls_and_command_line():
    hosts, groups = fleet({'llmops_gateway_port': 8080, 'llmops_gateway_host': '0.0.0.0'})
    gw, problems = run('gw', hosts, groups, api_key='Zq-gw-secret')
    assert not problems, problems.message()
    assert gw['kind'] == 'sglang_gateway' and gw['workers'] == ['http://10.0.0.11:30000', 'http://10.0.0.12:30000']
    argv = gw['argv']
    assert argv[argv.index('--worker-urls') + 1:argv.index('--worker-urls') + 3] == gw['workers']
    assert argv[argv.index('--policy') + 1] == 'cache_aware'
    assert argv[argv.index('--health-check-interval-secs') + 1] == '10'
    assert argv[argv.index('--retry-max-retries') + 1] == '5'
    assert argv[argv.index('--prometheus-port') + 1] == '29000'
    # Never the key: not in argv, not anywhere in the published object.
    assert '--api-key' not in argv and 'Zq-gw-secret' not in repr(gw) and gw['auth']['api_key_set'] is True
    assert gw['timeout_stop_sec'] == gw['shutdown_grace'] + 30 == 210
    assert gw['http']['url'] == 'http://127.0.0.1:8080' and gw['prometheus']['url'] == 'http://127.0.0.1:29000/metrics'
    assert [r['unit'] for r in gw['replicas']] == ['sglang-qwen3.5-122b-a10b.service'] * 2
    assert gw['served_model_name'] == 'qwen3.5-122b' and gw['swap'] == dict(
        batch=1, min_serving=1, drain_settle_secs=5,
        worker_inflight={'path': '/v1/loads?include=core', 'fields': ['num_running_reqs', 'num_waiting_reqs']})
    assert gw['command'][:4] == ['/opt/smg/venv-%s/bin/python' % GATEWAY_PIN, '/usr/local/libexec/llmops/smg-launch', '--key-required',
                                 '--']


def test_off_switches_and_explicit_replicas():
    hosts, groups = fleet({'llmops_gateway_retries': 0, 'llmops_gateway_cb_failure_threshold': 0,
                           'llmops_gateway_replicas': ['ct-b'], 'llmops_gateway_policy': 'round_robin'})
    gw, problems = run('gw', hosts, groups)
    assert not problems, problems.message()
    assert '--disable-retries' in gw['argv'] and '--disable-circuit-breaker' in gw['argv']
    assert '--retry-max-retries' not in gw['argv'] and gw['workers'] == ['http://10.0.0.12:30000']
    assert any('one replica (ct-b): a rolling swap of it is an outage' in w for w in gw['warnings'])


def test_no_key_means_no_key_required_flag():
    hosts, groups = fleet({'llmops_allow_no_api_key': True})
    gw, problems = run('gw', hosts, groups, api_key='', require_secrets=False)
    assert not problems, problems.message()
    assert gw['auth']['api_key_set'] is False and '--key-required' not in gw['command']
    assert gw['command'][1:3] == ['/usr/local/libexec/llmops/smg-launch', '--']


def test_worker_address_wins_and_ipv6_is_bracketed():
    hosts, groups = fleet(second={'llmops_gateway_worker_address': 'fd00::12', 'llmops_http_port': 30300})
    gw, problems = run('gw', hosts, groups)
    assert not problems, problems.message()
    assert gw['workers'][1] == 'http://[fd00::12]:30300'


def test_loopback_worker_is_a_warning():
    hosts, groups = fleet(second={'llmops_http_host': '127.0.0.1', 'llmops_http_port': 30300})
    gw, problems = run('gw', hosts, groups)
    assert not problems and any('ct-b at http://127.0.0.1:30300, a loopback address' in w for w in gw['warnings'])


def flat(problems):
    return re.sub(r'\s+', ' ', problems.message())


def test_refusals_name_variable_value_rule_fix():
    hosts, groups = fleet({'llmops_gateway_replicas': ['ct-c'], 'llmops_gateway_policy': 'cache-aware',
                           'llmops_gateway_prometheus_port': 30080, 'llmops_gateway_swap_batch': 2,
                           'llmops_gateway_extra_args': ['--api-key=x']})
    dummy, problems = run('gw', hosts, groups)
    text = flat(problems)
    assert "llmops_gateway_replicas = 'ct-c': not a host of the group sglang_servers (ct-a, ct-b). Fix: use ct-b" in text
    assert "llmops_gateway_policy = 'cache-aware': not a --policy of smg %s" % GATEWAY_PIN in text and "use 'cache_aware'" in text
    assert 'llmops_gateway_prometheus_port = 30080: the same port as llmops_gateway_port' in text
    assert "llmops_gateway_extra_args = '--api-key=x': the role renders or forbids --api-key" in text
    assert 'nothing was changed on any host' in text


def test_wildcard_worker_address_refused():
    hosts, groups = fleet(second={'llmops_http_host': '0.0.0.0'})
    dummy, problems = run('gw', hosts, groups)
    assert "ct-b: llmops_gateway_worker_address: the gateway needs an address it can connect to, and ct-b binds " \
           "'0.0.0.0'" in flat(problems) and 'Fix: set llmops_gateway_worker_address on ct-b' in flat(problems)


def test_batch_must_leave_a_replica_and_names_must_match():
    hosts, groups = fleet({'llmops_gateway_swap_batch': 2}, second={'llmops_served_model_name': 'other'})
    dummy, problems = run('gw', hosts, groups)
    text = flat(problems)
    assert 'llmops_gateway_swap_batch = 2: the rolling swap would take all 2 replicas out of rotation at once. ' \
           'Fix: use at most 1' in text
    assert 'serve different model names (ct-a=qwen3.5-122b, ct-b=other)' in text


def test_no_key_refused_and_colocation_refused():
    hosts, groups = fleet()
    dummy, problems = run('gw', hosts, groups, api_key='')
    assert 'llmops_api_key: no API key: the gateway would serve every client' in flat(problems)
    groups['sglang_gateways'] = ['ct-a']
    dummy, problems = run('ct-a', hosts, groups)
    assert 'a host of sglang_gateways cannot also be in sglang_servers' in flat(problems)


def _table():
    with open(os.path.join(ROOT, 'profiles', 'sglang_gateway.yml')) as stream:
        return yaml.safe_load(stream)


def _other_release(table):
    others = sorted(v for v in table['releases'] if v != str(table['version']))
    assert others, 'the gateway table has no release besides the pin'
    return others[0]


def test_the_pin_by_default_and_another_release_by_llmops_gateway_version():
    table = _table()
    pin, other = str(table['version']), _other_release(table)
    hosts, groups = fleet()
    gw, problems = run('gw', hosts, groups)
    assert not problems, problems.message()
    assert gw['gateway']['version'] == pin and gw['gateway']['lock'].endswith(table['releases'][pin]['lock'])
    hosts, groups = fleet({'llmops_gateway_version': other})
    moved, problems = run('gw', hosts, groups)
    assert not problems, problems.message()
    g = moved['gateway']
    assert g['version'] == other and g['venv'] == '/opt/smg/venv-%s' % other and g['python'] == g['venv'] + '/bin/python'
    assert g['lock'].endswith('/' + table['releases'][other]['lock']) and os.path.isfile(g['lock'])
    assert moved['command'][0] == g['python']
    # The rendered flags are the other entry's: both releases spell them alike, so the argv is the pin's.
    flags = table['releases'][other]['flags']
    assert moved['argv'][0] == flags['host']['flag'] and flags['policy']['flag'] in moved['argv']
    assert moved['argv'] == gw['argv']


def test_a_release_not_in_the_table_is_refused():
    table = _table()
    hosts, groups = fleet({'llmops_gateway_version': '0.0.1'})
    gw, problems = run('gw', hosts, groups)
    assert gw is None
    text = flat(problems)
    assert 'llmops_gateway_version' in text and '0.0.1' in text and 'not a supported gateway release' in text
    assert 'make gateway-release VERSION=0.0.1' in text and 'use the pin %s' % table['version'] in text
    for version in table['releases']:
        assert version in text


def test_a_release_without_its_lock_is_refused(tmp_path):
    table = _table()
    other = _other_release(table)
    table['releases'][other] = dict(table['releases'][other], lock='locks/smg-%s-missing.txt' % other)
    (tmp_path / 'sglang_gateway.yml').write_text(yaml.safe_dump(table))
    hosts, groups = fleet({'llmops_gateway_version': other, 'llmops_profiles_dir': str(tmp_path)})
    gw, problems = run('gw', hosts, groups)
    assert gw is None
    text = flat(problems)
    assert 'llmops_gateway_version' in text and 'has an entry in profiles/sglang_gateway.yml but no pip lock' in text
    assert 'smg-%s-missing.txt' % other in text and 'make gateway-release VERSION=%s' % other in text
    # The same table with the lock present resolves: the refusal is the missing file, not the entry.
    (tmp_path / 'locks').mkdir()
    (tmp_path / 'locks' / ('smg-%s-missing.txt' % other)).write_text('# a lock\n')
    gw, problems = run('gw', hosts, groups)
    assert gw is not None and not problems, problems.message()


def test_a_release_with_a_known_issue_warns_where_it_applies(tmp_path):
    table = _table()
    flagged = [v for v, entry in table['releases'].items() if entry.get('known_issues')]
    assert flagged, 'no gateway release has known_issues (1.12.0 lost requests when a replica died)'
    for version in flagged:
        issue = table['releases'][version]['known_issues'][0]
        pinned = {} if version == str(table['version']) else {'llmops_gateway_version': version}
        gw, problems = run('gw', *fleet(pinned))
        assert not problems, problems.message()
        assert any(issue['text'] in w and issue['fix'] in w for w in gw['warnings']), gw['warnings']
        # One replica behind it: the issue (replica death under load with others to retry on) does not apply.
        gw, problems = run('gw', *fleet(dict(pinned, llmops_gateway_replicas=['ct-b'])))
        assert not any(issue['text'] in w for w in gw['warnings'])
    # The threshold is the entry's: the same issue from 3 replicas on says nothing with 2.
    version = flagged[0]
    table['releases'][version]['known_issues'] = [dict(table['releases'][version]['known_issues'][0], min_replicas=3)]
    (tmp_path / 'sglang_gateway.yml').write_text(yaml.safe_dump(table))
    (tmp_path / 'locks').mkdir()
    (tmp_path / table['releases'][version]['lock']).write_text('# a lock\n')
    gw, problems = run('gw', *fleet({'llmops_gateway_version': version, 'llmops_profiles_dir': str(tmp_path)}))
    assert not problems, problems.message()
    assert not any(table['releases'][version]['known_issues'][0]['text'] in w for w in gw['warnings'])
    assert gw['profiles']['dir'] == str(tmp_path)


def test_a_malformed_known_issue_is_refused_naming_the_entry(tmp_path):
    table = _table()
    other = _other_release(table)
    table['releases'][other] = dict(table['releases'][other], known_issues=[{'text': 'loses requests'}])
    (tmp_path / 'sglang_gateway.yml').write_text(yaml.safe_dump(table))
    (tmp_path / 'locks').mkdir()
    (tmp_path / table['releases'][other]['lock']).write_text('# a lock\n')
    gw, problems = run('gw', *fleet({'llmops_gateway_version': other, 'llmops_profiles_dir': str(tmp_path)}))
    text = flat(problems)
    assert gw is None and 'releases.%s.known_issues must be a list of' % other in text and 'loses requests' in text
