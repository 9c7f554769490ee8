# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Render the monitoring files of two fixture servers, as the monitoring_config action does, into a directory:
prometheus.yml, rules/llmops-sglang.rules.yml and llmops-sglang.json. The metric names are the pinned release's
(profiles/sglang_releases.yml), or another release's (tests/monitoring/test_promtool.py renders every release whose
metrics the table has); the servers:
  gpu-a  MTP (expected accept length 3.1 -> floor 1.55), max_running_requests 22, scraped at 10.0.0.1:30000
  gpu-b  no MTP, max_running_requests 48, scraped at 10.0.0.2:30000
tests/monitoring/rules_test.yml (promtool test rules) is written against exactly these.

Usage: render_fixture.py OUTDIR [threshold=value ...]
"""

from __future__ import absolute_import, division, print_function

import json
import os
import sys

# tests/tools/collection_paths.py: ROOT, the pin, the release table; it puts the checkout's .collections on sys.path.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tools'))
from collection_paths import PIN, release  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.llmops.inference.plugins.plugin_utils.monitoring import dashboard as dash  # noqa: E402
from ansible_collections.llmops.inference.plugins.plugin_utils.monitoring import prometheus as prom  # noqa: E402


def release_names(version=None):
    """The release (default: the pin) and its metric names by meaning."""
    version = version or PIN
    families = release(version)['metrics']['families']
    return version, dict((key, family['name']) for key, family in families.items())


def deployments(pin, names):
    def one(instance, max_running, spec):
        return dict(kind='sglang_server', instance=instance, unit='sglang-%s.service' % instance, refusal=None,
                    http=dict(host='0.0.0.0', port=30000), sglang=dict(version=pin),
                    metrics=dict(enabled=True, path='/metrics', names=names),
                    plan=dict(max_running_requests=max_running), speculative=spec)
    return {'gpu-a': one('qa', 22, dict(algorithm='NEXTN', expected_accept_length=3.1)), 'gpu-b': one('qb', 48, None)}


def build(rules_path, thresholds=None, version=None):
    """The fixture's scrape config, rules and dashboard as data (no Ansible needed: make parser uses it too)."""
    pin, names = release_names(version)
    found = deployments(pin, names)
    entries, warnings = prom.servers(sorted(found), found, {'gpu-a': '10.0.0.1', 'gpu-b': '10.0.0.2'})
    prom.check_options(thresholds or {}, {}, '5m')
    limits = dict((e['host'], prom.thresholds_of(e['deployment'], thresholds or {})) for e in entries)
    return dict(rules=prom.rule_file(entries, names, '5m', limits), names=names, warnings=warnings,
                config=prom.scrape_config(entries, '/metrics', '15s', '15s', [rules_path]),
                dashboard=dash.dashboard(names))


def render(out, thresholds=None, version=None):
    """Write the files as the monitoring_config action writes them (for the pin, or another release's metrics)."""
    from ansible_collections.llmops.inference.plugins.action.monitoring_config import to_yaml
    rules_path = os.path.join(out, 'rules', 'llmops-sglang.rules.yml')
    result = build(rules_path, thresholds, version)
    os.makedirs(os.path.dirname(rules_path))
    with open(rules_path, 'w') as stream:
        stream.write(to_yaml(result['rules'], ['fixture']))
    with open(os.path.join(out, 'prometheus.yml'), 'w') as stream:
        stream.write(to_yaml(result['config'], ['fixture']))
    with open(os.path.join(out, 'llmops-sglang.json'), 'w') as stream:
        json.dump(result['dashboard'], stream, indent=2, sort_keys=True)
    return result


if __name__ == '__main__':
    overrides = dict((k, float(v)) for k, v in (a.split('=', 1) for a in sys.argv[2:]))
    render(sys.argv[1], overrides)
