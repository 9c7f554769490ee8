# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""sglang_server_wait against replayed journals: the stand-in's real SGLang start-up logs, one journal entry per poll.

The journal text comes from running tests/sglang/standin_server.py (the same replay the molecule lab's units print),
so the module's loop - journal cursor, unit state, the classifier, the stall clock, redaction - is tested on every
signature without systemd; tests/lab covers the real journald path.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools
import json
import re
import os
import select
import socket
import subprocess
import sys
import time

import pytest

from module_harness import AnsibleExitJson, AnsibleFailJson, run

from ansible_collections.llmops.inference.plugins.module_utils.sglang.logs import milestones
from ansible_collections.llmops.inference.plugins.modules import sglang_server_wait
from collection_paths import PIN, ROOT

STANDIN = os.path.join(ROOT, 'tests', 'sglang', 'standin_server.py')
KEY = 'unit-Zq3vX9-secret'


def replay(scenario, port=None, seconds=2.0):
    """The stand-in's output for a scenario (scenarios that keep running are stopped after ``seconds``)."""
    env = dict(os.environ, SGLANG_STANDIN_SCENARIO=scenario, SGLANG_STANDIN_DELAY='0')
    cmd = [sys.executable, STANDIN, '--model-path', '/m', '--served-model-name', 'qwen3.5-122b', '--tp-size', '4',
           '--host', '127.0.0.1', '--port', str(port or free_port()), '--api-key', KEY]
    out, exited = collect(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env), seconds)
    return out.decode().splitlines(), exited


def collect(proc, quiet, deadline=120.0):
    """(output, exited) of a stand-in run: until it exits, or until it has been silent for ``quiet`` s after its
    first output (a scenario that keeps running: ready and serving, or stalled). Silence, not a total time, so that a
    loaded machine (make test runs these beside the lab) slows the run down without cutting its output short."""
    chunks, fd = [], proc.stdout.fileno()
    started = last = time.monotonic()
    while time.monotonic() - started < deadline:
        ready, dummy_w, dummy_x = select.select([fd], [], [], 0.1)
        if ready:
            data = os.read(fd, 65536)
            if not data:
                proc.wait()
                return b''.join(chunks), True
            chunks.append(data)
            last = time.monotonic()
        elif chunks and time.monotonic() - last >= quiet:
            break
    proc.kill()
    proc.wait()
    rest = proc.stdout.read()
    return b''.join(chunks) + (rest or b''), False


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class FakeHost(object):
    """systemctl show / journalctl -o json / a clock: one journal line appears per poll, then the unit exits."""

    def __init__(self, lines, exits, ready_after=None, previous=()):
        # The replaced process's last words (PID 41) come first: journalctl --since has whole seconds.
        old = [dict(MESSAGE=line, _PID='41') for line in previous]
        self.entries = [dict(entry, __CURSOR='c%d' % i) for i, entry in enumerate(
            old + [dict(MESSAGE=line, _PID='42') for line in lines])]
        self.exits = exits
        self.ready_after = ready_after
        self.shown = 0
        self.now = 1796001966.0

    def run_command(self, cmd, **kwargs):
        if cmd[0] == 'systemctl':
            done = self.shown >= len(self.entries) and self.exits
            state = ('ActiveState=failed\nSubState=failed' if done else 'ActiveState=active\nSubState=running')
            return 0, '%s\nNRestarts=0\nExecMainStatus=%d\nExecMainPID=42\nExecMainStartTimestamp=@1796001966\n' % (
                state, 1 if done else 0), ''
        if cmd[0] == 'journalctl':
            after = cmd[cmd.index('--after-cursor') + 1] if '--after-cursor' in cmd else None
            start = int(after[1:]) + 1 if after else 0
            batch = self.entries[start:self.shown + 1]
            self.shown = max(self.shown, start + len(batch))
            return 0, ''.join(json.dumps(e) + '\n' for e in batch), ''
        raise AssertionError('unexpected command %s' % cmd)

    def http_get(self, url, api_key=None, timeout=5):
        if self.ready_after is not None and self.shown >= self.ready_after:
            if url.endswith('/v1/models'):
                assert api_key == KEY
                return 200, json.dumps({'data': [{'id': 'qwen3.5-122b'}]})
            return 200, '{}'
        return None, 'connection refused'

    def time(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


@pytest.fixture
def host(monkeypatch):
    def install(lines, exits, ready_after=None, previous=()):
        fake = FakeHost(lines, exits, ready_after, previous)
        monkeypatch.setattr(sglang_server_wait.AnsibleModule, 'run_command',
                            lambda module, cmd, **kwargs: fake.run_command(cmd, **kwargs))
        monkeypatch.setattr(sglang_server_wait.AnsibleModule, 'get_bin_path', lambda self, name, *a, **k: None)
        monkeypatch.setattr(sglang_server_wait, 'http_get', fake.http_get)
        monkeypatch.setattr(sglang_server_wait, 'time', fake)
        return fake
    return install


ARGS = dict(unit='sglang-qwen', url='http://127.0.0.1:30000', api_key=KEY, served_model_name='qwen3.5-122b',
            timeout=120, stall_timeout=20)


@pytest.mark.parametrize('scenario, signature', [
    ('mtp_radix', 'mtp_radix_cache'),
    ('mamba_no_buffer', 'mamba_strategy'),
    ('not_enough_memory', 'not_enough_memory'),
    ('mamba_memory', 'mamba_cache_memory'),
    ('nvml_mismatch', 'nvml_driver_mismatch'),
    ('cuda_803', 'cuda_driver_mismatch_803'),
    ('cuda_35', 'cuda_driver_too_old_35'),
])
def test_each_failed_start_is_diagnosed_when_its_line_arrives(host, scenario, signature):
    lines, exited = replay(scenario)
    assert exited
    fake = host(lines, exits=True)
    # A tail long enough to hold SGLang's server_args line (before the weights and their shard bars).
    kind, out = run(sglang_server_wait.main, dict(ARGS, journal_lines=80))
    assert kind is AnsibleFailJson and not out['ready']
    assert out['diagnosis']['signature'] == signature
    assert 'Likely cause:' in out['msg'] and 'Fix:' in out['msg']
    # Reported on the poll that brought the line (1 s polls), not at the timeout.
    assert out['elapsed'] <= len(lines) + 2 and out['diagnosis']['seconds_after_signature'] <= 2
    assert fake.shown <= len(lines)
    assert KEY not in json.dumps(out) and "'api_key': '<redacted>'" in ' '.join(out['journal_tail'])


def test_port_in_use_is_diagnosed(host):
    with socket.socket() as busy:
        busy.bind(('127.0.0.1', 0))
        busy.listen(1)
        lines, exited = replay('healthy', port=busy.getsockname()[1])
    assert exited
    host(lines, exits=True)
    kind, out = run(sglang_server_wait.main, ARGS)
    assert kind is AnsibleFailJson and out['diagnosis']['signature'] == 'port_in_use'
    assert 'ss -ltnp' in out['diagnosis']['fix']


def test_nccl_stall_is_reported_after_the_stall_timeout(host):
    lines, exited = replay('stall', seconds=1.0)
    assert not exited and lines[-1].endswith('Init parallel begin.')
    fake = host(lines, exits=False)
    start = fake.now
    kind, out = run(sglang_server_wait.main, ARGS)
    assert kind is AnsibleFailJson and out['diagnosis']['signature'] == 'nccl_init_stall'
    assert 20 <= fake.now - start < 25 + len(lines)
    assert 'NCCL_P2P_DISABLE' in out['diagnosis']['fix'] and 'gpu_p2p_check' in out['diagnosis']['fix']


def test_the_replaced_process_shutdown_traceback_is_not_this_start(host):
    lines, dummy = replay('stall', seconds=1.0)
    previous = ['Exception ignored in: <module \'threading\' from \'/usr/lib/python3.11/threading.py\'>',
                'Traceback (most recent call last):', 'SystemExit: 0']
    host(lines, exits=False, previous=previous)
    kind, out = run(sglang_server_wait.main, ARGS)
    assert kind is AnsibleFailJson and out['diagnosis']['signature'] == 'nccl_init_stall'
    assert not any('threading' in line for line in out['journal_tail'])


def test_healthy_start_is_ready_with_milestones(host):
    lines, exited = replay('healthy', seconds=1.0)
    assert not exited and 'The server is fired up and ready to roll!' in lines[-1]
    host(lines, exits=False, ready_after=len(lines))
    kind, out = run(sglang_server_wait.main, ARGS)
    assert kind is AnsibleExitJson and out['ready'] and out['models'] == ['qwen3.5-122b']
    assert out['milestones'][0] == 'parallel_begin' and out['milestones'][-1] == 'ready'
    assert 'kv_cache' in out['milestones'] and 'mamba_cache' in out['milestones']


def test_a_timeout_names_the_last_milestone(host):
    lines, dummy = replay('healthy', seconds=1.0)
    host([line for line in lines if 'ready to roll' not in line], exits=False)
    kind, out = run(sglang_server_wait.main, dict(ARGS, timeout=len(lines) + 10))
    assert kind is AnsibleFailJson and out['diagnosis']['signature'] == 'timeout'
    assert 'last milestone: uvicorn_running' in out['diagnosis']['summary']


def test_check_mode_does_not_wait():
    kind, out = run(sglang_server_wait.main, dict(unit='sglang-x', url='http://127.0.0.1:1'), check_mode=True)
    assert kind is AnsibleExitJson and out['skipped_reason'].startswith('check mode')


def test_start_epoch():
    assert sglang_server_wait.start_epoch({'ExecMainStartTimestamp': '@1796001966'}) == 1796001966
    assert sglang_server_wait.start_epoch({'ExecMainStartTimestamp': ''}) is None


# What SGLang's own code sized for the seed's command line: the replayed start-up lines state it
# (tests/fixtures/sglang_startup/*.oracle.json, tests/sglang/make_startup_fixture.py).
with open(os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'sglang_startup',
                       'qwen3.5-122b-a10b-tp4-rtx-pro-6000.oracle.json')) as _handle:
    SGLANG = json.load(_handle)['answer']['oracle']['pools']
# The seed's plan as make plan prints it (docs/plan.md; test_sglang_startup.py compares with the resolver's own).
SEED_PLAN = dict(free_before_load_gib=94.193, weights_gib_per_gpu=59.029, free_after_load_gib=35.164,
                 mamba_cache_slots=105, kv_cache_tokens=684739, max_running_requests=21, context_length=262144,
                 headroom_gib=20.28, free_after_pools_gib=19.57, free_memory_source='profile estimate', gpu_memory_mib=97887,
                 sglang_rules='configurator')
CONTEXT = dict(host='sglang-ct', instance='qwen', gpu_profile='rtx-pro-6000-blackwell-server', tp_size=4,
               model_profile='qwen3.5-122b-a10b', sglang_version=PIN)


def test_a_ready_start_is_compared_with_its_plan(host):
    lines, exited = replay('healthy', seconds=1.0)
    host(lines, exits=False, ready_after=len(lines))
    kind, out = run(sglang_server_wait.main, dict(ARGS, plan=SEED_PLAN, plan_context=CONTEXT))
    record = out['startup']
    by_key = dict((row['key'], row) for row in record['rows'])
    # Planned is the plan given, logged is SGLang's; a count that differs is drift, and the module warns with both.
    assert by_key['mamba_cache_slots']['planned'] == SEED_PLAN['mamba_cache_slots']
    assert by_key['mamba_cache_slots']['logged'] == SGLANG['max_mamba_cache_size']
    assert by_key['kv_cache_tokens']['logged'] == SGLANG['max_total_num_tokens']
    drifting = [key for key in ('mamba_cache_slots', 'max_running_requests', 'context_length')
                if by_key[key]['planned'] != by_key[key]['logged']]
    drifting += [key for key in ('kv_cache_tokens', 'max_total_num_tokens')
                 if abs(by_key[key]['logged'] - by_key[key]['planned']) > 0.02 * by_key[key]['planned']]
    assert kind is AnsibleExitJson and record['verdict'] == ('drift' if drifting else 'ok')
    assert sorted(k for k, row in by_key.items() if row['verdict'] == 'drift') == sorted(drifting)
    warnings = out.get('warnings') or []
    assert len(warnings) == len(drifting)
    assert all(w.startswith('sglang-qwen.service: plan vs. start-up log: ') for w in warnings)
    assert record['context']['start'] == dict(started_at=1796001966, pid='42')
    assert record['measured']['free_memory_before_load_gib'] == 94.19
    assert '| max running requests | 21 | 21 | +0 | ok |' in record['markdown']


def test_a_start_that_drifts_from_its_plan_warns_with_both_numbers(host):
    lines, exited = replay('healthy', seconds=1.0)
    host(lines, exits=False, ready_after=len(lines))
    plan = dict(SEED_PLAN, free_before_load_gib=91.193, mamba_cache_slots=93, kv_cache_tokens=585000)
    kind, out = run(sglang_server_wait.main, dict(ARGS, plan=plan, plan_context=CONTEXT))
    assert kind is AnsibleExitJson and out['ready'] and out['startup']['verdict'] == 'drift'
    warning = [w for w in out['warnings'] if 'mamba state slots' in w][0]
    assert warning.startswith('sglang-qwen.service: plan vs. start-up log: mamba state slots: 93 planned, %d logged'
                              % SGLANG['max_mamba_cache_size'])
    assert "startup_overhead_gib (rtx-pro-6000-blackwell-server: 4.40 GiB planned, 1.40 GiB logged" in warning


@functools.lru_cache(maxsize=None)
def _journald_lines(scenario, seconds):
    return tuple(_run_standin(scenario, seconds))


def journald_lines(scenario, seconds=1.0):
    """The stand-in's output as journald stores it: one entry per newline (the shard bar's carriage returns stay
    inside its entry, journald-stream.c). One run per scenario for all the tests."""
    return list(_journald_lines(scenario, seconds))


def _run_standin(scenario, seconds):
    env = dict(os.environ, SGLANG_STANDIN_SCENARIO=scenario, SGLANG_STANDIN_DELAY='0')
    cmd = [sys.executable, STANDIN, '--model-path', '/m', '--served-model-name', 'qwen3.5-122b', '--tp-size', '4',
           '--host', '127.0.0.1', '--port', str(free_port()), '--api-key', KEY]
    out, dummy = collect(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env), seconds)
    return [line for line in out.decode().split('\n') if line]


def test_a_healthy_start_reports_its_milestones_with_the_last_start(host, tmp_path):
    lines = journald_lines('healthy')
    fake = host(lines, exits=False, ready_after=len(lines))
    previous = tmp_path / 'deployed.json'
    previous.write_text(json.dumps({'startup_progress': {'seconds': 412.0}}))
    progress_file = tmp_path / 'progress.json'
    kind, out = run(sglang_server_wait.main, dict(ARGS, previous_record=str(previous), progress_file=str(progress_file)))
    assert kind is AnsibleExitJson and out['ready']
    progress = out['progress']
    texts = [line.split(' - ')[0] for line in progress['lines']]
    # What the replayed log states, in its order: the figures come from its own lines.
    kv_tokens = int(re.search(r'#tokens: (\d+)', [x for x in lines if 'KV Cache is allocated' in x][0]).group(1))
    graphs = [re.search(r'Capture (.+?) CUDA graph begin', x).group(1) for x in lines if 'CUDA graph begin.' in x]
    shards = re.findall(r'(\d+)/(\d+) \[', [x for x in lines if 'checkpoint shards' in x][0])[-1]
    assert texts[:3] == ['parallel init (NCCL)', 'loading weights', 'weights 100%% (%s/%s shards)' % shards]
    assert texts[3].startswith('weights loaded (Qwen3_5MoeForConditionalGeneration, ')
    assert 'KV cache allocated (%d tokens)' % kv_tokens in texts
    assert [t for t in texts if t.startswith('capturing CUDA graph: ')] == ['capturing CUDA graph: ' + g for g in graphs]
    assert texts[-1] == 'ready'
    # The bar reached journald as one entry: one line for it, at its last percentage.
    assert len([t for t in texts if t.startswith('weights ') and '%' in t]) == 2
    assert all(line.endswith(', expected ~6m52s (last start)') for line in progress['lines'][:-1])
    assert progress['lines'][-1].endswith(' since start (last start: 6m52s)')
    # One journal entry per poll (1 s): the time since the unit's start is the poll's.
    assert progress['seconds'] == [m['at_s'] for m in progress['milestones'] if m['name'] == 'ready'][0]
    assert 0 < progress['seconds'] <= fake.now - 1796001966
    assert progress['expected_seconds'] == 412.0 and progress['started_at'] == 1796001966
    kept = json.loads(progress_file.read_text())
    assert kept['done'] and kept['lines'] == progress['lines']


def test_without_a_previous_record_the_lines_say_so(host, tmp_path):
    lines = journald_lines('healthy')
    host(lines, exits=False, ready_after=len(lines))
    kind, out = run(sglang_server_wait.main, dict(ARGS, previous_record=str(tmp_path / 'missing.json')))
    assert out['progress']['expected_seconds'] is None
    assert out['progress']['lines'][0].endswith(', no previous start recorded')
    assert out['progress']['lines'][-1].endswith(' (no previous start recorded)')


def test_the_schedulers_own_pids_count_from_this_start_on(host):
    # journald gives a forked writer (SGLang's TP schedulers) its own _PID; the replaced process's words came
    # before this start (monotonic time), the schedulers' after it.
    lines = journald_lines('healthy')
    fake = host(lines, exits=False, ready_after=len(lines))
    start = 5 * 10 ** 9
    for index, entry in enumerate(fake.entries):
        entry.update(_PID='42' if index % 3 else '77', __MONOTONIC_TIMESTAMP=str(start + index))
    fake.entries.insert(0, dict(MESSAGE='[2026-12-01 09:59:00 TP0] KV Cache is allocated. dtype: torch.bfloat16, '
                                        '#tokens: 1, K size: 0.01 GB, V size: 0.01 GB', _PID='41',
                                __MONOTONIC_TIMESTAMP=str(start - 10)))
    for index, entry in enumerate(fake.entries):
        entry['__CURSOR'] = 'c%d' % index
    fake.ready_after = len(fake.entries)
    show = fake.run_command

    def with_monotonic(cmd, **kwargs):
        rc, out, err = show(cmd, **kwargs)
        return rc, out + ('ExecMainStartTimestampMonotonic=%d\n' % start if cmd[0] == 'systemctl' else ''), err
    fake.run_command = with_monotonic
    kind, out = run(sglang_server_wait.main, ARGS)
    assert kind is AnsibleExitJson and out['milestones'][0] == 'parallel_begin'
    assert 'KV cache allocated (1 tokens)' not in ' '.join(out['progress']['lines'])
    # Every milestone line of this start counts, whichever process wrote it.
    every = [line for entry in fake.entries[1:] for line in entry['MESSAGE'].splitlines()]
    assert out['milestones'] == [name for name, dummy in milestones(every)]


def test_a_timeout_names_the_last_milestone_and_the_log(host):
    lines = journald_lines('healthy')
    host([line for line in lines if 'ready to roll' not in line], exits=False)
    kind, out = run(sglang_server_wait.main, dict(ARGS, timeout=len(lines) + 10))
    assert kind is AnsibleFailJson and out['diagnosis']['signature'] == 'timeout'
    assert out['diagnosis']['log'] == 'journalctl -u sglang-qwen.service --since @1796001966'
    assert out['diagnosis']['last_progress'].startswith('CUDA graph captured: ')
    assert 'last progress: CUDA graph captured: ' in out['diagnosis']['summary']
    assert out['msg'].endswith('Log: journalctl -u sglang-qwen.service --since @1796001966')


def test_the_ready_line_after_the_health_answer_is_read_and_without_it_the_answer_is_ready(host):
    lines = journald_lines('healthy')
    assert 'ready to roll' in lines[-1]
    # /health answers before the last line is in the journal: the wait reads it once more.
    host(lines, exits=False, ready_after=len(lines) - 1)
    kind, out = run(sglang_server_wait.main, ARGS)
    assert out['progress']['lines'][-1].startswith('ready - ') and out['milestones'][-1] == 'ready'
    # No ready line at all (a journal that lost it): the answer is the ready milestone.
    host(lines[:-1], exits=False, ready_after=len(lines) - 1)
    kind, out = run(sglang_server_wait.main, ARGS)
    assert out['progress']['lines'][-1].startswith('ready (/health and /v1/models answer) - ')
    assert out['progress']['seconds'] is not None
