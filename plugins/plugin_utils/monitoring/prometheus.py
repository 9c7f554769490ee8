# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Prometheus configuration for the SGLang servers of an inventory: targets, thresholds, scrape config, rules.

PRIVATE to the collection. Pure, stdlib only; the action llmops.inference.monitoring_config calls it with each
server's resolved ``llmops_deployment`` and writes nothing. Every metric name comes from the deployment's
``metrics.names`` (the pinned release's table in profiles/sglang_releases.yml), by meaning; thresholds are the
role's variables, and where their default is ``null`` the server's own plan decides (queue depth: its
max_running_requests; accept-length floor: half the profile's expected MTP accept length).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmops.inference.plugins.plugin_utils.monitoring.promql import selector

JOB = 'sglang'
RECORD_PREFIX = 'llmops:'
# threshold -> (default, kind, description). None: from the server's plan.
THRESHOLDS = {
    'kv_cache_usage': (0.95, 'ratio', 'KV/state pool usage (sglang token_usage, the pool that runs out first) above'),
    'queue_depth': (None, 'count', 'requests waiting above (null: the server\'s planned max_running_requests, i.e. '
                                   'more than one full batch waits)'),
    'retractions': (0, 'count', 'requests retracted (KV exhausted mid-decode) within the rate window above'),
    'ttft_p99_seconds': (10.0, 'seconds', 'p99 time to first token above (a bucket bound of SGLang\'s histogram)'),
    'itl_p99_seconds': (0.2, 'seconds', 'p99 inter-token latency above (a bucket bound of SGLang\'s histogram)'),
    'accept_length_min': (None, 'tokens', 'MTP accept length (generated tokens per verify forward) below (null: half '
                                          'the model profile\'s expected accept length; servers without MTP: no alert)'),
    'http_5xx_ratio': (0.05, 'ratio', 'share of HTTP responses with a 5xx status above'),
}
# alert key -> (alert name, default for:, severity)
ALERTS = {
    'down': ('SGLangTargetDown', '1m', 'critical'),
    'kv_cache_usage': ('SGLangKVCacheNearFull', '5m', 'warning'),
    'queue_depth': ('SGLangQueueDepthHigh', '5m', 'warning'),
    'retractions': ('SGLangRequestsRetracted', '0s', 'warning'),
    'ttft_p99_seconds': ('SGLangTTFTP99High', '10m', 'warning'),
    'itl_p99_seconds': ('SGLangITLP99High', '10m', 'warning'),
    'accept_length_min': ('SGLangAcceptLengthCollapsed', '15m', 'warning'),
    'http_5xx_ratio': ('SGLangHTTP5xxRate', '5m', 'warning'),
}
_DURATION = re.compile(r'^(\d+(ms|s|m|h|d|w|y))+$')
_WILDCARD = ('0.0.0.0', '::', '', '[::]')
_LOOPBACK = ('127.0.0.1', 'localhost', '::1', '[::1]')
# Names of the families the rules read (meaning keys of the release table).
RULE_FAMILIES = ('token_usage', 'queued_requests', 'retracted_requests', 'ttft_seconds', 'itl_seconds', 'e2e_seconds',
                 'generation_tokens', 'verify_calls', 'http_responses')


class MonitoringError(ValueError):
    """An input the monitoring configuration cannot be built from (the message names variable, value, rule, fix)."""


def is_duration(value):
    return isinstance(value, str) and bool(_DURATION.match(value))


def _host_port(host, port):
    host = str(host)
    if ':' in host and not host.startswith('['):
        host = '[%s]' % host
    return '%s:%s' % (host, port)


def target_of(host, deployment, ansible_host=None, address=None):
    """(scrape address, warning or None) of one server: ``address`` (monitoring_target_addresses) wins; a wildcard
    bind is reached at the inventory address; a loopback bind only from the server itself."""
    if address:
        return str(address), None
    http = deployment.get('http') or {}
    bind, port = str(http.get('host') or ''), http.get('port')
    if bind in _WILDCARD:
        return _host_port(ansible_host or host, port), None
    if bind in _LOOPBACK:
        return _host_port('127.0.0.1', port), (
            '%s: SGLang binds %s (llmops_http_host), so only a Prometheus on %s itself can scrape %s; set '
            'llmops_http_host: 0.0.0.0 (every path but /health and /metrics still needs the API key) or give '
            'monitoring_target_addresses.%s' % (host, bind, host, _host_port('127.0.0.1', port), host))
    return _host_port(bind, port), None


def check_options(thresholds, alert_for, rate_window):
    """Refuse unknown threshold or alert keys and values of the wrong kind (variable, value, rule, fix)."""
    for key, value in (thresholds or {}).items():
        if key not in THRESHOLDS:
            raise MonitoringError('monitoring_thresholds.%s: unknown threshold (known: %s)'
                                  % (key, ', '.join(sorted(THRESHOLDS))))
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise MonitoringError('monitoring_thresholds.%s = %r: must be a number >= 0 (or null: %s)'
                                  % (key, value, 'the plan decides' if THRESHOLDS[key][0] is None else 'the default %s'
                                     % THRESHOLDS[key][0]))
        if THRESHOLDS[key][1] == 'ratio' and value > 1:
            raise MonitoringError('monitoring_thresholds.%s = %r: a ratio between 0 and 1 (e.g. %s)'
                                  % (key, value, THRESHOLDS[key][0]))
    for key, value in (alert_for or {}).items():
        if key not in ALERTS:
            raise MonitoringError('monitoring_alert_for.%s: unknown alert (known: %s)' % (key, ', '.join(sorted(ALERTS))))
        if not is_duration(value):
            raise MonitoringError('monitoring_alert_for.%s = %r: must be a Prometheus duration such as 5m or 30s'
                                  % (key, value))
    if not is_duration(rate_window):
        raise MonitoringError('monitoring_rate_window = %r: must be a Prometheus duration such as 5m' % (rate_window,))


def thresholds_of(deployment, overrides):
    """threshold -> dict(value, source) for one server; value None: that alert is not rendered for it."""
    out = {}
    plan = deployment.get('plan') or {}
    spec = deployment.get('speculative') or {}
    for key, (default, dummy, dummy2) in sorted(THRESHOLDS.items()):
        value = (overrides or {}).get(key)
        if key == 'accept_length_min' and not spec:
            out[key] = dict(value=None, source='no MTP on this server')
        elif value is not None:
            out[key] = dict(value=value, source='monitoring_thresholds')
        elif key == 'queue_depth':
            out[key] = dict(value=plan.get('max_running_requests'), source='plan max_running_requests')
        elif key == 'accept_length_min':
            expected = spec.get('expected_accept_length')
            if expected:
                out[key] = dict(value=round(float(expected) / 2.0, 2),
                                source='half the profile\'s expected accept length %s' % expected)
            else:
                out[key] = dict(value=1.5, source='the profile states no expected accept length')
        else:
            out[key] = dict(value=default, source='default')
    return out


def servers(hosts, deployments, ansible_hosts=None, addresses=None):
    """The servers to scrape: [{host, instance, target, labels, deployment}] and the warnings about the others.
    Refuses (MonitoringError) a host with no resolved deployment, two servers at one reachable address and release
    tables without metric names (loopback targets of several servers are each their own host's, with a warning)."""
    out, warnings, seen, loopback = [], [], {}, []
    for host in hosts:
        deployment = deployments.get(host)
        if isinstance(deployment, dict) and deployment.get('refusal'):
            # Refused before it was resolved (an unknown profile, a misspelled key): the refusal is the run's error,
            # reported by whoever resolved it; monitoring must not mask it with an error of its own.
            warnings.append('%s: not scraped, the deploy would refuse it (%s)' % (host, deployment['refusal'].splitlines()[0]))
            continue
        if not isinstance(deployment, dict) or deployment.get('kind') != 'sglang_server':
            raise MonitoringError(
                'monitoring_sglang_hosts: %s has no resolved llmops_deployment of an SGLang server: run '
                'llmops.inference.deployment for it first (in the same play or an earlier one)' % host)
        metrics = deployment.get('metrics') or {}
        if not metrics.get('enabled'):
            warnings.append('%s: not scraped, llmops_enable_metrics is false (SGLang serves no /metrics)' % host)
            continue
        if not metrics.get('names'):
            raise MonitoringError(
                '%s: SGLang %s has no metric names in profiles/sglang_releases.yml (releases."%s".metrics): read its '
                'srt/observability/metrics_collector.py and add them' % (
                    host, (deployment.get('sglang') or {}).get('version'), (deployment.get('sglang') or {}).get('version')))
        target, warning = target_of(host, deployment, (ansible_hosts or {}).get(host), (addresses or {}).get(host))
        if warning:
            warnings.append(warning)
            loopback.append(host)
        elif target in seen:
            raise MonitoringError('monitoring_target_addresses: %s and %s would both be scraped at %s: give each its own '
                                  'address' % (seen[target], host, target))
        seen[target] = host
        out.append(dict(host=host, instance=deployment.get('instance'), target=target, deployment=deployment,
                        labels=dict(llmops_host=host, llmops_instance=deployment.get('instance'))))
    if len(loopback) > 1:
        # Each is "127.0.0.1 of its own host": valid targets (their labels differ), but no one Prometheus reaches all.
        warnings.append('%s bind a loopback address: one Prometheus cannot scrape them all; run it on each server '
                        '(playbooks/monitoring.yml -e llmops_play_hosts=<server>) or bind a reachable address'
                        % ', '.join(loopback))
    return out, warnings


def release_names(entries):
    """The one set of metric names (meaning -> name) the servers share; refuses two releases' names."""
    names = None
    for entry in entries:
        mine = entry['deployment']['metrics']['names']
        if names is not None and mine != names:
            raise MonitoringError('%s exports other metric names than the other servers (another SGLang release): '
                                  'render one configuration per release' % entry['host'])
        names = mine
    return names or {}


def scrape_config(entries, metrics_path, scrape_interval, evaluation_interval, rule_files, extra_scrape_configs=(),
                  alertmanagers=(), job=JOB):
    """prometheus.yml as data."""
    config = {'global': dict(scrape_interval=scrape_interval, evaluation_interval=evaluation_interval)}
    if alertmanagers:
        config['alerting'] = dict(alertmanagers=[dict(static_configs=[dict(targets=list(alertmanagers))])])
    config['rule_files'] = list(rule_files)
    jobs = []
    if entries:
        jobs.append(dict(job_name=job, metrics_path=metrics_path,
                         static_configs=[dict(targets=[e['target']], labels=e['labels']) for e in entries]))
    names = set(j['job_name'] for j in jobs)
    for extra in extra_scrape_configs or ():
        if not isinstance(extra, dict) or not extra.get('job_name'):
            raise MonitoringError('monitoring_extra_scrape_configs: each entry is a Prometheus scrape_config with a '
                                  'job_name, got %r' % (extra,))
        if extra['job_name'] in names:
            raise MonitoringError('monitoring_extra_scrape_configs: job_name %r is used twice' % extra['job_name'])
        names.add(extra['job_name'])
        jobs.append(extra)
    config['scrape_configs'] = jobs
    return config


def _record(name, window):
    return '%ssglang_%s:%s' % (RECORD_PREFIX, name, 'rate%s' % window)


def recording_rules(names, window, job=JOB):
    """The recording group: latency quantiles, accept length, 5xx share and token rate per server."""
    by = 'llmops_host, llmops_instance'
    sel = selector(dict(job=job))
    rules = []
    for key, short in (('ttft_seconds', 'ttft_seconds'), ('itl_seconds', 'itl_seconds'), ('e2e_seconds', 'e2e_seconds')):
        for quantile in (0.5, 0.99):
            rules.append(dict(record=_record('%s_p%d' % (short, round(quantile * 100)), window), expr=(
                'histogram_quantile(%s, sum by (le, %s) (rate(%s_bucket%s[%s])))' % (quantile, by, names[key], sel, window))))
    rules.append(dict(record=_record('accept_length', window), expr=(
        'sum by (%s) (rate(%s%s[%s])) / sum by (%s) (rate(%s%s[%s]))' % (
            by, names['generation_tokens'], sel, window, by, names['verify_calls'], sel, window))))
    rules.append(dict(record=_record('http_5xx_ratio', window), expr=(
        'sum by (%s) (rate(%s%s[%s])) / sum by (%s) (rate(%s%s[%s]))' % (
            by, names['http_responses'], '{%s,status_code=~"5.."}' % sel[1:-1], window,
            by, names['http_responses'], sel, window))))
    rules.append(dict(record=_record('generation_tokens', window), expr='sum by (%s) (rate(%s%s[%s]))' % (
        by, names['generation_tokens'], sel, window)))
    return dict(name='llmops-sglang-recording', rules=rules)


def _alert(key, host, expr, summary, description, alert_for):
    name, default_for, severity = ALERTS[key]
    rule = dict(alert=name, expr=expr)
    duration = (alert_for or {}).get(key, default_for)
    if duration not in ('0s', '0m'):
        rule['for'] = duration
    # The host label (the series carry it too) keeps the per-server copies of an alert distinct for promtool's lint.
    rule['labels'] = dict(severity=severity, llmops_host=host)
    rule['annotations'] = dict(summary=summary, description=description)
    return rule


def alert_rules(entry, names, thresholds, window, alert_for=None, job=JOB):
    """The alert group of one server, its thresholds written into the expressions."""
    host, deployment = entry['host'], entry['deployment']
    by = 'llmops_host, llmops_instance'
    sel = selector(dict(job=job, llmops_host=host))
    mine = selector(dict(llmops_host=host))
    who = '{{ $labels.llmops_host }} ({{ $labels.llmops_instance }})'
    unit = deployment.get('unit')
    t = dict((k, v['value']) for k, v in thresholds.items())
    specs = [('down', 'up%s == 0' % sel, '%s: SGLang /metrics unreachable' % who,
              'Prometheus cannot scrape %s%s: the service is down, restarting, or --enable-metrics is off. Check '
              '`systemctl status %s` and its journal on the host.' % (entry['target'], deployment['metrics']['path'], unit))]
    if t['kv_cache_usage'] is not None:
        specs.append(('kv_cache_usage', 'max by (%s) (%s%s) > %s' % (by, names['token_usage'], sel, t['kv_cache_usage']),
                      '%s: KV cache {{ $value | humanizePercentage }} full' % who,
                      'The KV/state pool that runs out first is above %s%%: new requests queue and running ones get '
                      'retracted. Lower the concurrency or give the KV cache more memory (plan.md recommendations: '
                      '--mem-fraction-static, --kv-cache-dtype fp8_e4m3).' % round(t['kv_cache_usage'] * 100, 1)))
    if t['queue_depth'] is not None:
        running = (deployment.get('plan') or {}).get('max_running_requests')
        specs.append(('queue_depth', 'sum by (%s) (%s%s) > %s' % (by, names['queued_requests'], sel, t['queue_depth']),
                      '%s: {{ $value }} requests waiting' % who,
                      'More than %s requests wait (%s); the server runs at most %s at once. Add replicas or lower the '
                      'offered load.' % (t['queue_depth'], thresholds['queue_depth']['source'], running)))
    if t['retractions'] is not None:
        specs.append(('retractions', 'sum by (%s) (increase(%s%s[%s])) > %s'
                      % (by, names['retracted_requests'], sel, window, t['retractions']),
                      '%s: {{ $value }} requests retracted in %s' % (who, window),
                      'SGLang ran out of KV cache mid-decode and retracted running requests (they restart later, so '
                      'latency jumps). Lower --max-running-requests or give the KV cache more memory.'))
    for key, record, what in (('ttft_p99_seconds', 'ttft_seconds_p99', 'time to first token'),
                              ('itl_p99_seconds', 'itl_seconds_p99', 'inter-token latency')):
        if t[key] is not None:
            specs.append((key, '%s%s > %s' % (_record(record, window), mine, t[key]),
                          '%s: p99 %s {{ $value | humanizeDuration }}' % (who, what),
                          'The p99 %s over %s is above %ss.' % (what, window, t[key])))
    if t['accept_length_min'] is not None:
        specs.append(('accept_length_min', '%s%s < %s' % (_record('accept_length', window), mine, t['accept_length_min']),
                      '%s: MTP accept length {{ $value | printf "%%.2f" }}' % who,
                      'Generated tokens per verify forward fell below %s (%s): speculative decoding costs more than it '
                      'saves. Check the workload (sampling temperature, output language) or benchmark with MTP off '
                      '(llmops_speculative_num_draft_tokens: 0).'
                      % (t['accept_length_min'], thresholds['accept_length_min']['source'])))
    if t['http_5xx_ratio'] is not None:
        specs.append(('http_5xx_ratio', '%s%s > %s' % (_record('http_5xx_ratio', window), mine, t['http_5xx_ratio']),
                      '%s: {{ $value | humanizePercentage }} of responses are 5xx' % who,
                      'More than %s%% of HTTP responses over %s are server errors; the journal of %s says why.'
                      % (round(t['http_5xx_ratio'] * 100, 1), window, unit)))
    rules = [_alert(key, host, expr, summary, description, alert_for) for key, expr, summary, description in specs]
    return dict(name='llmops-sglang-%s' % re.sub(r'[^A-Za-z0-9_.-]+', '-', host), rules=rules)


def rule_file(entries, names, window, thresholds_by_host, alert_for=None, extra_groups=(), job=JOB):
    """The rules file as data: the recording group, one alert group per server, then the extra groups."""
    groups = [recording_rules(names, window, job)] if entries else []
    for entry in entries:
        groups.append(alert_rules(entry, names, thresholds_by_host[entry['host']], window, alert_for, job))
    seen = set(g['name'] for g in groups)
    for group in extra_groups or ():
        if not isinstance(group, dict) or not group.get('name') or not isinstance(group.get('rules'), list):
            raise MonitoringError('monitoring_extra_rule_groups: each entry is a Prometheus rule group {name, rules}, '
                                  'got %r' % (group,))
        if group['name'] in seen:
            raise MonitoringError('monitoring_extra_rule_groups: group name %r is used twice' % group['name'])
        seen.add(group['name'])
        groups.append(group)
    return dict(groups=groups)
