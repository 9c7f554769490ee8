# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The monitoring role's Prometheus files checked by the real promtool (Debian's prometheus package; `make
monitoring` installs it): the scrape config and the rules pass `promtool check config` / `check rules` (its lint
included), and `promtool test rules` (tests/monitoring/rules_test.yml) fires every alert on the series meant to fire
it and no other; with thresholds that should not fire, the same tests fail. Nothing here is skipped: without
promtool every test fails, saying how to get it."""

from __future__ import absolute_import, division, print_function

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import render_fixture  # noqa: E402  (a sibling file)
from collection_paths import release_table_data  # noqa: E402  (render_fixture put tests/tools on sys.path)
from ansible_collections.llmops.inference.plugins.plugin_utils.monitoring import dashboard as monitoring_dashboard  # noqa: E402


def promtool(*args, **kw):
    tool = shutil.which('promtool')
    if not tool:
        pytest.fail('promtool not found: install Debian\'s prometheus package (make monitoring does: '
                    'apt-get install --no-install-recommends prometheus)')
    proc = subprocess.run([tool] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False, **kw)
    return proc.returncode, proc.stdout


@pytest.fixture(name='rendered')
def fixture_rendered(tmp_path):
    out = tmp_path / 'fixture'
    result = render_fixture.render(str(out))
    shutil.copy(os.path.join(HERE, 'rules_test.yml'), str(out))
    return out, result


def test_config_and_rules_pass_promtool_check(rendered):
    out, result = rendered
    rc, text = promtool('check', 'config', str(out / 'prometheus.yml'))
    assert rc == 0, text
    assert 'SUCCESS: 1 rule files found' in text, text
    rules = sum(len(group['rules']) for group in result['rules']['groups'])
    rc, text = promtool('check', 'rules', str(out / 'rules' / 'llmops-sglang.rules.yml'))
    assert rc == 0, text
    assert 'SUCCESS: %d rules found' % rules in text, text
    # The recording group, gpu-a's 8 alerts (MTP) and gpu-b's 7.
    assert rules == 9 + 8 + 7


def test_every_alert_fires_on_its_series_and_no_other(rendered):
    out, dummy = rendered
    rc, text = promtool('test', 'rules', 'rules_test.yml', cwd=str(out))
    assert rc == 0, text
    assert 'SUCCESS' in text


def test_the_rule_tests_fail_when_the_thresholds_would_not_fire(tmp_path):
    out = tmp_path / 'strict'
    render_fixture.render(str(out), dict(kv_cache_usage=0.99, accept_length_min=1.4, ttft_p99_seconds=20.0))
    shutil.copy(os.path.join(HERE, 'rules_test.yml'), str(out))
    rc, text = promtool('test', 'rules', 'rules_test.yml', cwd=str(out))
    assert rc != 0, text
    failed = sorted(set(re.findall(r'alertname: (\w+), time', text)))
    assert failed == ['SGLangAcceptLengthCollapsed', 'SGLangKVCacheNearFull', 'SGLangTTFTP99High'], text


def test_a_broken_config_is_refused_by_promtool(rendered):
    out, dummy = rendered
    text = (out / 'prometheus.yml').read_text()
    (out / 'broken.yml').write_text(text.replace('scrape_interval: 15s', 'scrape_interval: fifteen'))
    rc, dummy = promtool('check', 'config', str(out / 'broken.yml'))
    assert rc != 0


def test_the_dashboard_json_imports_and_reads_release_metrics(rendered):
    out, result = rendered
    with open(str(out / 'llmops-sglang.json')) as stream:
        board = json.load(stream)
    names = result['names']
    histograms = [names[k] for k in ('ttft_seconds', 'itl_seconds', 'e2e_seconds')]
    assert monitoring_dashboard.check(board, set(names.values()), histograms) == []
    # Every query of the dashboard is valid PromQL for Prometheus' own parser (promtool's query runs need a server;
    # the rules file does not): the panel queries go through `promtool check rules` as recording rules.
    queries = [expr.replace('$__rate_interval', '5m').replace('$host', '.*')
               for dummy, expr in monitoring_dashboard.queries(board)]
    group = dict(groups=[dict(name='dashboard', rules=[dict(record='llmops:dashboard_query_%d' % i, expr=q)
                                                       for i, q in enumerate(queries)])])
    (out / 'dashboard_queries.yml').write_text(json.dumps(group))
    rc, text = promtool('check', 'rules', str(out / 'dashboard_queries.yml'))
    assert rc == 0, text


# Every release whose metrics the table has (each checked against that release's own collectors by
# make parser SGLANG_PIN=<release>): its rules and dashboard are generated from its names.
RELEASES_WITH_METRICS = sorted(v for v, e in release_table_data()['releases'].items() if e.get('metrics'))
SERIES_SUFFIXES = {'histogram': ('_bucket', '_sum', '_count')}


def release_series(version):
    """Every series name the release exposes for the families the table reads (histograms as their series)."""
    families = render_fixture.release(version)['metrics']['families']
    out = set()
    for family in families.values():
        out.add(family['name'])
        out.update(family['name'] + suffix for suffix in SERIES_SUFFIXES.get(family['type'], ()))
    return out


def foreign_metrics(exprs, series, prefix='sglang:'):
    """The metric names the expressions use that the release does not expose (sorted)."""
    used = set(name for expr in exprs for name in re.findall(r'%s[A-Za-z0-9_:]+' % re.escape(prefix), expr))
    return sorted(used - series)


def rendered_exprs(out, result):
    with open(str(out / 'llmops-sglang.json')) as stream:
        board = json.load(stream)
    rules = [rule['expr'] for group in result['rules']['groups'] for rule in group['rules']]
    return rules + [expr for dummy, expr in monitoring_dashboard.queries(board)]


def test_there_are_releases_besides_the_pin_with_metrics():
    assert render_fixture.PIN in RELEASES_WITH_METRICS and len(RELEASES_WITH_METRICS) >= 2, RELEASES_WITH_METRICS


@pytest.mark.parametrize('version', RELEASES_WITH_METRICS)
def test_each_release_rules_pass_promtool_and_name_only_its_metrics(version, tmp_path):
    out = tmp_path / version
    result = render_fixture.render(str(out), version=version)
    rc, text = promtool('check', 'rules', str(out / 'rules' / 'llmops-sglang.rules.yml'))
    assert rc == 0, text
    exprs = rendered_exprs(out, result)
    assert len(exprs) > 20
    assert foreign_metrics(exprs, release_series(version)) == []


def test_a_rule_naming_a_metric_the_release_lacks_is_found(tmp_path):
    """The check above, shown failing: a rule on a renamed metric (the prefix flip sglang: -> sglang_ of older
    releases is the same kind of change) and one on a family the release does not have."""
    version = RELEASES_WITH_METRICS[0]
    out = tmp_path / 'planted'
    result = render_fixture.render(str(out), version=version)
    exprs = rendered_exprs(out, result) + ['rate(sglang:no_such_metric_total[5m]) > 0',
                                           'sglang:num_running_reqs_bucket > 1']
    assert foreign_metrics(exprs, release_series(version)) == ['sglang:no_such_metric_total',
                                                               'sglang:num_running_reqs_bucket']
