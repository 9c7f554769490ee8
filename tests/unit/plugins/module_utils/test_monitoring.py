# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The monitoring configuration (plugin_utils/monitoring/prometheus.py, plugin_utils/monitoring/dashboard.py, promql.py): targets,
thresholds from the plan, refusals, and every rule and dashboard query naming a metric of the pinned release.
promtool itself checks and tests the rendered files in tests/monitoring (make monitoring)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest

from ansible_collections.llmops.inference.plugins.plugin_utils.monitoring import dashboard as dash
from ansible_collections.llmops.inference.plugins.plugin_utils.monitoring import prometheus as prom
from ansible_collections.llmops.inference.plugins.plugin_utils.monitoring import promql

from collection_paths import PIN, release

FAMILIES = release()['metrics']['families']
NAMES = dict((key, family['name']) for key, family in FAMILIES.items())
KNOWN = set(NAMES.values())
HISTOGRAMS = [f['name'] for f in FAMILIES.values() if f['type'] == 'histogram']


def deployment(**kw):
    d = dict(kind='sglang_server', instance='q', unit='sglang-q.service', refusal=None,
             http=dict(host='0.0.0.0', port=30000), sglang=dict(version=PIN),
             metrics=dict(enabled=True, path='/metrics', names=dict(NAMES)), plan=dict(max_running_requests=22),
             speculative=dict(algorithm='NEXTN', expected_accept_length=3.1))
    for key, value in kw.items():
        d[key] = value
    return d


def render(deployments, overrides=None, **kw):
    hosts = sorted(deployments)
    entries, warnings = prom.servers(hosts, deployments, dict((h, '10.0.0.%d' % (i + 1)) for i, h in enumerate(hosts)))
    thresholds = dict((e['host'], prom.thresholds_of(e['deployment'], overrides or {})) for e in entries)
    rules = prom.rule_file(entries, prom.release_names(entries), '5m', thresholds, **kw)
    return entries, warnings, thresholds, rules


def alerts(group):
    return dict((r['alert'], r) for r in group['rules'] if 'alert' in r)


def test_promql_metric_names():
    expr = ('histogram_quantile(0.99, sum by (le, llmops_host) (rate(sglang:time_to_first_token_seconds_bucket'
            '{job="sglang",llmops_host=~"$host"}[$__rate_interval]))) > 10 and on (llmops_host) up{a="b"} == 1')
    assert promql.metric_names(expr) == ['sglang:time_to_first_token_seconds_bucket', 'up']
    assert promql.metric_names('sum without (pid) (increase(x_total[5m] offset 1m)) / 1e3 > bool 0.5') == ['x_total']
    assert promql.metric_names('vector(1) + time()') == []
    assert promql.unknown_names('rate(sglang:time_to_first_token_seconds_bucket[1m]) + sglang:nope', KNOWN,
                                HISTOGRAMS) == ['sglang:nope']
    assert promql.unknown_names('llmops:sglang_x:rate5m > 1', KNOWN, (), ('llmops:',)) == []
    assert promql.selector(dict(b='x"y', a=1)) == '{a="1",b="x\\"y"}'


@pytest.mark.parametrize('bind, override, expected, warned', [
    ('0.0.0.0', None, '10.0.0.1:30000', False),
    ('::', None, '10.0.0.1:30000', False),
    ('192.0.2.7', None, '192.0.2.7:30000', False),
    ('fd00::7', None, '[fd00::7]:30000', False),
    ('127.0.0.1', None, '127.0.0.1:30000', True),
    ('127.0.0.1', 'gw.example:8443', 'gw.example:8443', False),
])
def test_scrape_targets(bind, override, expected, warned):
    target, warning = prom.target_of('ct', deployment(http=dict(host=bind, port=30000)), '10.0.0.1', override)
    assert target == expected
    assert bool(warning) is warned
    if warned:
        assert 'llmops_http_host: 0.0.0.0' in warning and 'monitoring_target_addresses.ct' in warning


def test_thresholds_come_from_each_servers_plan():
    mtp = prom.thresholds_of(deployment(), {})
    assert mtp['queue_depth'] == dict(value=22, source='plan max_running_requests')
    assert mtp['accept_length_min']['value'] == 1.55 and '3.1' in mtp['accept_length_min']['source']
    assert mtp['kv_cache_usage'] == dict(value=0.95, source='default')
    plain = prom.thresholds_of(deployment(speculative=None, plan=dict(max_running_requests=48)),
                               {'accept_length_min': 2.0, 'queue_depth': 5})
    # No MTP, no accept-length alert, whatever the variable says; an explicit value beats the plan.
    assert plain['accept_length_min']['value'] is None
    assert plain['queue_depth'] == dict(value=5, source='monitoring_thresholds')
    unknown = prom.thresholds_of(deployment(speculative=dict(algorithm='NEXTN')), {})
    assert unknown['accept_length_min']['value'] == 1.5


@pytest.mark.parametrize('thresholds, alert_for, window, fragment', [
    ({'kv_usage': 0.9}, {}, '5m', 'monitoring_thresholds.kv_usage: unknown threshold (known: accept_length_min'),
    ({'kv_cache_usage': 95}, {}, '5m', 'monitoring_thresholds.kv_cache_usage = 95: a ratio between 0 and 1'),
    ({'ttft_p99_seconds': 'ten'}, {}, '5m', "ttft_p99_seconds = 'ten': must be a number >= 0"),
    ({'retractions': True}, {}, '5m', 'retractions = True: must be a number'),
    ({}, {'ttft': '5m'}, '5m', 'monitoring_alert_for.ttft: unknown alert'),
    ({}, {'down': '1 minute'}, '5m', "monitoring_alert_for.down = '1 minute': must be a Prometheus duration"),
    ({}, {}, '5', "monitoring_rate_window = '5': must be a Prometheus duration"),
])
def test_bad_options_are_refused_naming_the_variable(thresholds, alert_for, window, fragment):
    with pytest.raises(prom.MonitoringError) as exc:
        prom.check_options(thresholds, alert_for, window)
    assert fragment in str(exc.value)


def test_servers_left_out_or_refused():
    deployments = dict(a=deployment(), b=deployment(refusal='sglang-ct: 1 problem\n1. ...'),
                       c=deployment(metrics=dict(enabled=False, path='/metrics', names=dict(NAMES))))
    entries, warnings = prom.servers(['a', 'b', 'c'], deployments)
    assert [e['host'] for e in entries] == ['a']
    assert entries[0]['labels'] == dict(llmops_host='a', llmops_instance='q')
    assert any(w.startswith('b: not scraped, the deploy would refuse it') for w in warnings)
    assert any('c: not scraped, llmops_enable_metrics is false' in w for w in warnings)
    with pytest.raises(prom.MonitoringError) as exc:
        prom.servers(['a', 'x'], dict(a=deployment()))
    assert 'x has no resolved llmops_deployment' in str(exc.value)
    # Refused before it was resolved (an unknown model profile: no kind, only the refusal): left out with a warning,
    # so that the refusal, not a monitoring error, is what the run reports (issue #27 point 6).
    early = {'problems': ['llmops_model_profile'], 'refusal': "d: 1 problem\n1. llmops_model_profile = 'x': no profile"}
    entries, warnings = prom.servers(['a', 'd'], dict(a=deployment(), d=early))
    assert [e['host'] for e in entries] == ['a'] and warnings[-1].startswith('d: not scraped, the deploy would refuse')
    with pytest.raises(prom.MonitoringError) as exc:
        prom.servers(['a', 'b'], dict(a=deployment(), b=deployment()), dict(a='h', b='h'))
    assert 'a and b would both be scraped at h:30000' in str(exc.value)
    # Loopback binds (the default 127.0.0.1) are each their own host's: kept, with a warning each and one for all.
    local = deployment(http=dict(host='127.0.0.1', port=30000))
    entries, warnings = prom.servers(['a', 'b'], dict(a=local, b=dict(local)))
    assert [e['target'] for e in entries] == ['127.0.0.1:30000', '127.0.0.1:30000']
    assert warnings[-1].startswith('a, b bind a loopback address: one Prometheus cannot scrape them all')
    with pytest.raises(prom.MonitoringError) as exc:
        prom.servers(['a'], dict(a=deployment(metrics=dict(enabled=True, path='/metrics', names={}))))
    assert 'has no metric names in profiles/sglang_releases.yml' in str(exc.value)


def test_rules_per_server_with_its_thresholds():
    entries, dummy, thresholds, rules = render(dict(
        a=deployment(), b=deployment(instance='r', speculative=None, plan=dict(max_running_requests=48))))
    names = [g['name'] for g in rules['groups']]
    assert names == ['llmops-sglang-recording', 'llmops-sglang-a', 'llmops-sglang-b']
    a, b = alerts(rules['groups'][1]), alerts(rules['groups'][2])
    assert sorted(a) == ['SGLangAcceptLengthCollapsed', 'SGLangHTTP5xxRate', 'SGLangITLP99High',
                         'SGLangKVCacheNearFull', 'SGLangQueueDepthHigh', 'SGLangRequestsRetracted',
                         'SGLangTTFTP99High', 'SGLangTargetDown']
    assert 'SGLangAcceptLengthCollapsed' not in b
    assert a['SGLangQueueDepthHigh']['expr'].endswith('> 22') and b['SGLangQueueDepthHigh']['expr'].endswith('> 48')
    assert 'llmops_host="a"' in a['SGLangQueueDepthHigh']['expr']
    assert a['SGLangTargetDown']['expr'] == 'up{job="sglang",llmops_host="a"} == 0'
    assert a['SGLangTargetDown']['for'] == '1m' and a['SGLangTargetDown']['labels']['severity'] == 'critical'
    assert 'for' not in a['SGLangRequestsRetracted']  # 0s: fires at the first retraction
    assert a['SGLangAcceptLengthCollapsed']['expr'].endswith('< 1.55')
    assert '10.0.0.1:30000/metrics' in a['SGLangTargetDown']['annotations']['description']
    # Every expression reads metrics of the release (or the collection's own recorded series).
    for group in rules['groups']:
        for rule in group['rules']:
            assert promql.unknown_names(rule['expr'], KNOWN | {'up'}, HISTOGRAMS, (prom.RECORD_PREFIX,)) == [], rule
            assert promql.metric_names(rule['expr']), rule
    recorded = set(r['record'] for r in rules['groups'][0]['rules'])
    for group in rules['groups'][1:]:
        for rule in group['rules']:
            for name in promql.metric_names(rule['expr']):
                assert not name.startswith(prom.RECORD_PREFIX) or name in recorded, (name, rule)


def test_overrides_and_extra_groups():
    dummy, dummy2, dummy3, rules = render(dict(a=deployment()), dict(kv_cache_usage=0.8, ttft_p99_seconds=20),
                                          alert_for=dict(down='10s'),
                                          extra_groups=[dict(name='gateway', rules=[dict(alert='X', expr='up == 0')])])
    a = alerts(rules['groups'][1])
    assert a['SGLangKVCacheNearFull']['expr'].endswith('> 0.8') and a['SGLangTTFTP99High']['expr'].endswith('> 20')
    assert a['SGLangTargetDown']['for'] == '10s'
    assert rules['groups'][-1]['name'] == 'gateway'
    with pytest.raises(prom.MonitoringError) as exc:
        render(dict(a=deployment()), extra_groups=[dict(name='llmops-sglang-a', rules=[])])
    assert "group name 'llmops-sglang-a' is used twice" in str(exc.value)
    with pytest.raises(prom.MonitoringError):
        render(dict(a=deployment()), extra_groups=[dict(rules=[])])


def test_scrape_config_and_extra_jobs():
    entries, dummy, dummy2, dummy3 = render(dict(a=deployment(), b=deployment(instance='r')))
    gateway = dict(job_name='smg', static_configs=[dict(targets=['gw:29000'])])
    config = prom.scrape_config(entries, '/metrics', '15s', '15s', ['/etc/prometheus/rules/x.yml'], [gateway],
                                ['am:9093'])
    assert config['global'] == dict(scrape_interval='15s', evaluation_interval='15s')
    assert config['alerting'] == dict(alertmanagers=[dict(static_configs=[dict(targets=['am:9093'])])])
    job = config['scrape_configs'][0]
    assert job['job_name'] == 'sglang' and job['metrics_path'] == '/metrics'
    assert [c['targets'] for c in job['static_configs']] == [['10.0.0.1:30000'], ['10.0.0.2:30000']]
    assert config['scrape_configs'][1] is gateway
    for bad, fragment in (([dict(static_configs=[])], 'with a job_name'), ([dict(job_name='sglang')], 'used twice')):
        with pytest.raises(prom.MonitoringError) as exc:
            prom.scrape_config(entries, '/metrics', '15s', '15s', [], bad)
        assert fragment in str(exc.value)
    assert 'alerting' not in prom.scrape_config([], '/metrics', '15s', '15s', [])


def test_release_names_must_agree():
    entries, dummy = prom.servers(['a', 'b'], dict(a=deployment(), b=deployment(metrics=dict(
        enabled=True, path='/metrics', names=dict(NAMES, running_requests='sglang:other')))), dict(a='x', b='y'))
    with pytest.raises(prom.MonitoringError) as exc:
        prom.release_names(entries)
    assert 'b exports other metric names' in str(exc.value)


def test_the_dashboard_reads_only_release_metrics_and_imports():
    board = dash.dashboard(NAMES)
    assert dash.check(board, KNOWN, HISTOGRAMS) == []
    titles = [p['title'] for p in board['panels']]
    for wanted in ('Generation throughput', 'Running and queued requests', 'KV cache usage', 'Time to first token',
                   'Inter-token latency', 'End-to-end request latency', 'Speculative accept length',
                   'GPU memory per rank (SGLang)'):
        assert wanted in titles
    read = set()
    for dummy, expr in dash.queries(board):
        read |= set(promql.family_of(n, set(HISTOGRAMS)) for n in promql.metric_names(expr))
    assert read <= KNOWN
    for key in ('running_requests', 'queued_requests', 'token_usage', 'ttft_seconds', 'itl_seconds', 'e2e_seconds',
                'accept_length', 'verify_calls', 'weight_memory_gb', 'kv_cache_memory_gb', 'graph_memory_gb'):
        assert NAMES[key] in read, key


def test_the_dashboard_check_finds_what_grafana_or_the_release_would_refuse():
    board = dash.dashboard(NAMES)
    broken = copy.deepcopy(board)
    broken['panels'][0]['targets'][0]['expr'] = 'rate(sglang_generation_tokens_total[5m])'
    broken['panels'][1]['gridPos'] = dict(board['panels'][0]['gridPos'])
    broken['panels'][2]['targets'][1]['refId'] = 'A'
    broken['panels'][3]['id'] = 1
    del broken['templating']['list'][0]
    problems = dash.check(broken, KNOWN, HISTOGRAMS)
    assert any('sglang_generation_tokens_total not a metric of the release' in p for p in problems)
    assert any('panel 2: overlaps another panel' in p for p in problems)
    assert any('panel 3: refIds missing or repeated' in p for p in problems)
    assert any('panel 1: missing or duplicate id' in p for p in problems)
    assert 'no datasource variable' in problems
