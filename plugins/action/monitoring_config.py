# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action of llmops.inference.monitoring_config: build the Prometheus and Grafana files on the controller (docs in
the module). The Ansible glue only: the servers' resolved llmops_deployment from hostvars, YAML/JSON text; the
configuration itself is plugin_utils/monitoring/prometheus.py and plugin_utils/monitoring/dashboard.py (pure, unit-tested)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import yaml

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.llmops.inference.plugins.plugin_utils.monitoring import dashboard as dash
from ansible_collections.llmops.inference.plugins.plugin_utils.monitoring import prometheus as prom
from ansible_collections.llmops.inference.plugins.plugin_utils.monitoring.promql import unknown_names

DEFAULTS = dict(hosts=None, target_addresses={}, thresholds={}, alert_for={}, rate_window='5m', scrape_interval='15s',
                evaluation_interval='15s', rules_path='/etc/prometheus/rules/llmops-sglang.rules.yml',
                extra_rule_files=[], extra_scrape_configs=[], extra_rule_groups=[], alertmanagers=[],
                dashboard_title='SGLang servers (llmops.inference)', dashboard_uid='llmops-sglang', job_name=prom.JOB)


def to_yaml(data, header):
    text = yaml.safe_dump(_plain(data), sort_keys=False, default_flow_style=False, width=120, allow_unicode=True)
    return '%s---\n%s' % (''.join('# %s\n' % line for line in header), text)


def _plain(value):
    """Ansible's tagged strings and lazy containers as plain Python types (safe_dump refuses subclasses)."""
    if isinstance(value, dict):
        return dict((str(k), _plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return str(value)


def summary(entries, thresholds, warnings, version, alert_for, window):
    """monitoring.md: what is scraped, each threshold with where it came from, and what was left out."""
    lines = ['# Monitoring of the SGLang servers', '',
             'Metric names of SGLang %s; rate window %s. Alerts and thresholds per server (null: no such alert):'
             % (version, window), '']
    lines += ['| server | target | alert | threshold | source | for |', '|---|---|---|---|---|---|']
    for entry in entries:
        lines.append('| %s | %s | %s | up == 0 | - | %s |' % (entry['host'], entry['target'], prom.ALERTS['down'][0],
                                                              alert_for.get('down', prom.ALERTS['down'][1])))
        for key, item in sorted(thresholds[entry['host']].items()):
            lines.append('| %s | %s | %s | %s | %s | %s |' % (
                entry['host'], entry['target'], prom.ALERTS[key][0],
                'null' if item['value'] is None else item['value'], item['source'],
                alert_for.get(key, prom.ALERTS[key][1])))
    if warnings:
        lines += ['', 'Warnings:', ''] + ['- %s' % w for w in warnings]
    return '\n'.join(lines) + '\n'


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(DEFAULTS)
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(DEFAULTS)
        args.update(dict((k, v) for k, v in self._task.args.items() if v is not None))
        if not isinstance(args['hosts'], list):
            raise AnsibleActionFail('monitoring_config: hosts must be a list of inventory hosts (monitoring_sglang_hosts)')
        hostvars = (task_vars or {}).get('hostvars') or {}
        deployments, addresses = {}, {}
        for host in args['hosts']:
            if host not in hostvars:
                raise AnsibleActionFail('monitoring_sglang_hosts: %s is not a host of the inventory' % host)
            deployments[host] = _plain(hostvars[host].get('llmops_deployment'))
            addresses[host] = str(hostvars[host].get('ansible_host') or host)
        try:
            prom.check_options(args['thresholds'], args['alert_for'], args['rate_window'])
            for key in ('scrape_interval', 'evaluation_interval'):
                if not prom.is_duration(args[key]):
                    raise prom.MonitoringError('monitoring_%s = %r: must be a Prometheus duration such as 15s'
                                               % (key, args[key]))
            entries, warnings = prom.servers(args['hosts'], deployments, addresses, args['target_addresses'])
            names = prom.release_names(entries)
            thresholds = dict((e['host'], prom.thresholds_of(e['deployment'], args['thresholds'])) for e in entries)
            rules = prom.rule_file(entries, names, args['rate_window'], thresholds, args['alert_for'],
                                   args['extra_rule_groups'], args['job_name'])
            path = (entries[0]['deployment']['metrics']['path'] if entries else '/metrics')
            config = prom.scrape_config(entries, path, args['scrape_interval'], args['evaluation_interval'],
                                        [args['rules_path']] + list(args['extra_rule_files']),
                                        args['extra_scrape_configs'], args['alertmanagers'], args['job_name'])
        except prom.MonitoringError as exc:
            raise AnsibleActionFail(str(exc))
        version = entries[0]['deployment']['sglang']['version'] if entries else None
        header = ['Generated by the llmops.inference.monitoring role from llmops_deployment (do not edit here).',
                  'Metric names: SGLang %s (profiles/sglang_releases.yml, checked against its collectors by '
                  'make parser).' % version]
        out = dict(changed=False, targets=[dict(host=e['host'], target=e['target'], labels=e['labels']) for e in entries],
                   thresholds=thresholds, notes=warnings, sglang_version=version, names=names,
                   prometheus_config=config, rules=rules,
                   prometheus_yml=to_yaml(config, header), rules_yml=to_yaml(rules, header),
                   summary_md=summary(entries, thresholds, warnings, version, args['alert_for'], args['rate_window']))
        if entries:
            known = set(names.values())
            histograms = [names[k] for k in ('ttft_seconds', 'itl_seconds', 'e2e_seconds')]
            board = dash.dashboard(names, args['job_name'], args['dashboard_title'], args['dashboard_uid'])
            problems = dash.check(board, known, histograms)
            own = set(args['extra_rule_groups'] and [g['name'] for g in args['extra_rule_groups']] or [])
            for group in rules['groups']:
                if group['name'] in own:
                    continue
                for rule in group['rules']:
                    bad = unknown_names(rule['expr'], known | set(['up']), histograms, (prom.RECORD_PREFIX,))
                    if bad:
                        problems.append('rule %s: %s not a metric of SGLang %s' % (
                            rule.get('alert') or rule.get('record'), ', '.join(bad), version))
            if problems:
                raise AnsibleActionFail('monitoring_config: the rendered files name metrics the release does not '
                                        'have: %s' % '; '.join(problems))
            out.update(dashboard=board, dashboard_json=json.dumps(board, indent=2, sort_keys=True) + '\n')
        else:
            out.update(dashboard=None, dashboard_json=None)
        if warnings:
            out['warnings'] = list(warnings)  # Ansible prints these (and keeps them out of the registered result)
        result.update(out)
        return result
