# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Plan vs. start-up log: the start-up of the seed (tests/fixtures/sglang_startup, the lines the lab's stand-ins replay:
printed by the pinned SGLang's own pool code for the rendered command line, tests/sglang/make_startup_fixture.py, with
SGLang's answer beside it in the .oracle.json) against the plan the resolver makes for it, with the right and with a
deliberately wrong hardware profile; the measured free memory feeding the next plan. The logged side is SGLang's, the
planned side the collection's: the record must report both and flag the difference, whatever it is."""

from __future__ import annotations

import json
import os
import shutil

import pytest
import yaml

from test_deployment import resolve  # the resolver harness (the seed deployment on its Proxmox container)

from ansible_collections.llmops.inference.plugins.module_utils.sglang import startup
from collection_paths import PIN, ROOT

FIXTURE = os.path.join(ROOT, 'tests', 'fixtures', 'sglang_startup', 'qwen3.5-122b-a10b-tp4-rtx-pro-6000.log')
with open(FIXTURE[:-len('.log')] + '.oracle.json') as _handle:
    # SGLang's own answer for the seed's command line (the oracle's pools): what the replayed lines state.
    SGLANG = json.load(_handle)['answer']['oracle']['pools']
# The record's rules (docs/sglang_server.md "The start-up record"): counts exact, KV tokens within 2 %.
COUNTS = ('mamba_cache_slots', 'max_running_requests', 'context_length')
TOKENS = ('kv_cache_tokens', 'max_total_num_tokens')


def replay():
    with open(FIXTURE) as handle:
        return [line for line in handle.read().splitlines() if line and not line.startswith('#')]


def context(deployment):
    return dict(host=deployment['host'], instance=deployment['instance'], gpu_profile=deployment['profiles']['gpu'],
                model_profile=deployment['profiles']['model'], tp_size=deployment['parallel']['tp_size'],
                sglang_version=deployment['sglang']['version'], start=dict(started_at=1796001966, pid='42'))


def rows(record):
    return dict((row['key'], row) for row in record['rows'])


@pytest.fixture
def off_profiles(tmp_path):
    """The collection's profiles with the seed GPU's startup_overhead_gib 3 GiB too high (a wrong estimate)."""
    profiles = tmp_path / 'profiles'
    shutil.copytree(os.path.join(ROOT, 'profiles'), profiles)
    path = profiles / 'hardware' / 'rtx-pro-6000-blackwell-server.yml'
    data = yaml.safe_load(path.read_text())
    data['startup_overhead_gib'] = data['startup_overhead_gib'] + 3.0
    path.write_text(yaml.safe_dump(data))
    return str(profiles)


def test_parse_reads_every_figure_of_the_start():
    logged = startup.parse(replay())
    # The figures of the lines in the fixture (SGLang's pool lines; the memory lines from the hardware profile's
    # estimate and the weights given to the generator). Memory is the lowest over the ranks, the weights are
    # target + draft of rank 0, the KV pool the target's.
    assert logged['free_before_load_gib'] == 94.19 and logged['free_after_load_gib'] == 35.16
    assert logged['weights_gib'] == round(57.14 + 1.89, 2)
    assert logged['mamba_cache_slots'] == 106 and logged['mamba_state_gib'] == round(0.07 + 3.76, 2)
    assert logged['mamba_spec_state_gib'] == round(3.09 + 0.03, 2)
    assert logged['kv_cache_tokens'] == logged['draft_kv_cache_tokens'] == logged['max_total_num_tokens'] == 685794
    assert logged['kv_cache_gib'] == 7.84 and logged['free_after_pools_gib'] == 19.69
    assert logged['cuda_graph_gib'] == round(1.85 + 0.31 + 0.17, 2) and logged['free_after_graphs_gib'] == 17.36
    assert logged['max_running_requests'] == 21 and logged['context_length'] == 262144
    assert logged['memory_baseline_gib'] == 1.4


def test_the_replayed_lines_state_sglangs_own_answer():
    logged = startup.parse(replay())
    assert logged['kv_cache_tokens'] == logged['max_total_num_tokens'] == SGLANG['max_total_num_tokens']
    assert logged['mamba_cache_slots'] == SGLANG['max_mamba_cache_size']
    assert logged['max_running_requests'] == SGLANG['max_running_requests']


def expected_verdict(key, planned, logged):
    """The record's rule for one judged row (docs/sglang_server.md), from the two independent numbers."""
    if key in COUNTS:
        return 'ok' if planned == logged else 'drift'
    return 'ok' if abs(logged - planned) <= planned * 0.02 else 'drift'


def test_the_lowest_rank_sets_the_memory_and_other_lines_do_not_count():
    lines = replay()
    lines.insert(9, '[2026-12-01 10:00:07 TP3] Load weight begin. avail mem=93.80 GB')
    lines.append('[2026-12-01 10:03:00] Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00')
    logged = startup.parse(lines)
    assert logged['free_before_load_gib'] == 93.80
    assert startup.parse(['INFO:     Uvicorn running on http://127.0.0.1:30000'])['kv_cache_tokens'] is None


def test_the_seed_start_reports_the_plan_against_sglang():
    """Planned (the resolver) and logged (SGLang) side by side; every difference beyond the rules is flagged with both
    numbers, and nothing else is."""
    deployment = resolve()
    plan = deployment['plan']
    record = startup.compare(plan, startup.parse(replay()), context(deployment))
    by_key = rows(record)
    drifting = []
    for key in COUNTS + TOKENS:
        row = by_key[key]
        assert row['planned'] == plan[key if key != 'max_total_num_tokens' else 'kv_cache_tokens'], row
        verdict = expected_verdict(key, row['planned'], row['logged'])
        assert row['verdict'] == verdict, row
        if verdict == 'drift':
            drifting.append(row)
    assert by_key['kv_cache_tokens']['logged'] == SGLANG['max_total_num_tokens']
    assert by_key['mamba_cache_slots']['logged'] == SGLANG['max_mamba_cache_size']
    assert record['verdict'] == ('drift' if drifting else 'ok')
    assert len(record['warnings']) == len(drifting)
    for row, warning in zip(drifting, record['warnings']):
        assert warning.startswith('%s: %s planned, %s logged by SGLang' % (
            row['label'], '{:,}'.format(row['planned']), '{:,}'.format(row['logged']))), warning
    assert bool(record['inputs_to_check']) == bool(drifting)
    assert by_key['cuda_graph_gib']['verdict'] == 'logged only' and by_key['cuda_graph_gib']['logged'] == 2.33
    assert record['measured']['free_memory_before_load_gib'] == 94.19
    assert record['measured']['gpu_profile'] == 'rtx-pro-6000-blackwell-server' and record['measured']['tp_size'] == 4
    table = startup.markdown(record)
    print(table)
    assert '| value | planned | logged | drift | verdict |' in table
    row = by_key['kv_cache_tokens']
    expected = '| KV cache tokens (#tokens) | {:,} | {:,} | {:+d}'.format(
        row['planned'], row['logged'], row['logged'] - row['planned'])
    assert expected in table


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    'planner defect (report, not fixed here): for the seed (Qwen3.5-122B-A10B TP4, NEXTN 3/1/4, extra_buffer, '
    '--mem-fraction-static 0.7851, 94.193 GiB free before / 35.164 after load) the pinned SGLang sizes 106 mamba slots '
    'and 685,794 KV tokens, the planner 105 and 684,739 (-0.15 %): the mamba pool is one slot short, so the lab\'s '
    'correct-profile start shows drift on mamba state slots'))
def test_the_planner_sizes_the_seed_pools_as_sglang_does():
    plan = resolve()['plan']
    sglang = (SGLANG['max_mamba_cache_size'], SGLANG['max_total_num_tokens'])
    assert (plan['mamba_cache_slots'], plan['kv_cache_tokens']) == sglang


def test_a_wrong_hardware_profile_drifts_and_names_its_startup_overhead(off_profiles):
    deployment = resolve(overrides=dict(llmops_profiles_dir=off_profiles))
    plan = deployment['plan']
    record = startup.compare(plan, startup.parse(replay()), context(deployment))
    by_key = rows(record)
    assert record['verdict'] == 'drift'
    assert by_key['free_before_load_gib']['verdict'] == 'differs'
    assert by_key['mamba_cache_slots']['verdict'] == 'drift'
    assert by_key['mamba_cache_slots']['planned'] < SGLANG['max_mamba_cache_size']
    assert by_key['kv_cache_tokens']['verdict'] == 'drift' and by_key['kv_cache_tokens']['drift_pct'] > 2
    slots = [w for w in record['warnings'] if w.startswith('mamba state slots')][0]
    # Both numbers and the planner input to check.
    assert '%d planned' % plan['mamba_cache_slots'] in slots and '%d logged' % SGLANG['max_mamba_cache_size'] in slots
    assert "hardware profile's startup_overhead_gib (rtx-pro-6000-blackwell-server: 4.40 GiB planned, 1.40 GiB " \
           'logged' in slots


def test_kv_tokens_within_two_percent_are_ok_and_counts_must_match():
    plan = dict(kv_cache_tokens=100000, mamba_cache_slots=10, max_running_requests=2, context_length=4096,
                free_before_load_gib=50.0, free_memory_source='calibration', gpu_memory_mib=81559)
    logged = dict(kv_cache_tokens=98000, max_total_num_tokens=102000, mamba_cache_slots=10, max_running_requests=2,
                  context_length=4096, free_before_load_gib=50.05)
    record = startup.compare(plan, logged)
    assert record['verdict'] == 'ok'
    record = startup.compare(plan, dict(logged, kv_cache_tokens=97999, max_running_requests=3))
    assert record['verdict'] == 'drift'
    assert [r['key'] for r in record['rows'] if r['verdict'] == 'drift'] == ['kv_cache_tokens', 'max_running_requests']
    assert 'beyond the 2 % threshold' in record['warnings'][0] and 'a count must match exactly' in record['warnings'][1]
    # Calibrated memory that was right: the hint is the planner's rules, not the profile.
    assert "planner's rules for this release" in record['inputs_to_check'][0]


def test_a_start_without_memory_lines_is_incomplete_not_drift():
    deployment = resolve()
    record = startup.compare(deployment['plan'], startup.parse(['[2026] The server is fired up and ready to roll!']),
                             context(deployment))
    assert record['verdict'] == 'incomplete' and record['warnings'] == [] and record['measured'] is None
    assert set(r['verdict'] for r in record['rows']) == {'not logged'}


def test_the_next_plan_of_the_host_uses_the_measured_free_memory(tmp_path):
    deployment = resolve()
    record = startup.compare(deployment['plan'], startup.parse(replay()), context(deployment))
    record_dir = str(tmp_path / 'deploy')
    where = startup.measurement_file(record_dir + '/ct-t', 'rtx-pro-6000-blackwell-server', 4)
    os.makedirs(os.path.dirname(where))
    with open(where, 'w') as handle:
        json.dump(record['measured'], handle)
    again = resolve(overrides=dict(llmops_record_dir=record_dir))
    assert again['record']['measured']['free_memory_before_load_gib'] == 94.19
    assert again['plan']['free_before_load_gib'] == 94.19 and again['plan']['free_memory_source'] == 'measured on this host'
    assert any(n.startswith('free memory before load: 94.19 GiB, measured by the start of') and where in n
               for n in again['notes'])
    assert '(measured on this host)' in '\n'.join(again['plan']['report_lines'])
    from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.resolve import summary
    assert 'free memory before load 94.19 GiB, measured on this host: %s' % where in summary(again)
    # An explicit calibration wins; so does switching it off; another TP size or release is not this measurement.
    assert resolve(overrides=dict(llmops_record_dir=record_dir, llmops_plan_free_memory_before_load_gib=90.0))[
        'plan']['free_before_load_gib'] == 90.0
    off = resolve(overrides=dict(llmops_record_dir=record_dir, llmops_plan_use_measured_memory=False))
    assert off['plan']['free_memory_source'] == 'profile estimate' and off['record']['measured'] is None
    with open(where, 'w') as handle:
        json.dump(dict(record['measured'], sglang_version='0.5.22'), handle)
    other = resolve(overrides=dict(llmops_record_dir=record_dir))
    assert other['plan']['free_memory_source'] == 'profile estimate'
    assert any('is not used (measured with sglang_version 0.5.22' in n for n in other['notes'])


def test_usable_measurement_refuses_what_is_not_one():
    good = dict(schema=1, gpu_profile='h200', tp_size=2, sglang_version=PIN, free_memory_before_load_gib=138.1)
    assert startup.usable_measurement(good, 'h200', 2, PIN) == (138.1, 'measured')
    assert startup.usable_measurement(dict(good, tp_size=4), 'h200', 2, PIN)[0] is None
    assert startup.usable_measurement(dict(good, free_memory_before_load_gib='x'), 'h200', 2, PIN)[0] is None
    assert startup.usable_measurement(['x'], 'h200', 2, PIN)[0] is None
    assert startup.measurement_file('/b/deploy/h/', 'h200', 2) == '/b/deploy/h/startup_memory/h200-tp2.json'


def test_the_fixture_is_what_its_saved_sglang_answer_renders(tmp_path):
    """The replayed lines are the generator's rendering of SGLang's saved answer, not edited by hand."""
    import subprocess
    import sys
    out = tmp_path / 'again.log'
    subprocess.check_call([sys.executable, os.path.join(ROOT, 'tests', 'sglang', 'make_startup_fixture.py'),
                           '--from-json', FIXTURE[:-len('.log')] + '.oracle.json', '--out', str(out)])
    with open(FIXTURE) as handle:
        assert out.read_text() == handle.read()
