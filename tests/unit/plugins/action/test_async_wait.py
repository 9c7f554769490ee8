# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The two *_wait actions on their shared loop (plugin_utils/actions/async_wait.py), with async_status and the progress
reads faked at the _execute_module boundary and a fake clock (no sleeping)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json
import re

import pytest

from unittest.mock import MagicMock

from ansible.errors import AnsibleActionFail

from ansible_collections.llmops.inference.plugins.action import hf_snapshot_wait, sglang_bench_wait
from ansible_collections.llmops.inference.plugins.plugin_utils.actions import async_wait


def make_action(module, args, responses, clock):
    """An action whose _execute_module answers from ``responses(name, module_args)`` and records every call."""
    task = MagicMock()
    task.args = args
    task.async_val = 0
    task.check_mode = False
    connection = MagicMock()
    action = module.ActionModule(task, connection, MagicMock(), MagicMock(), MagicMock(), MagicMock())
    action.calls = []

    def execute(module_name=None, module_args=None, task_vars=None, **kwargs):
        action.calls.append((module_name, dict(module_args)))
        return responses(module_name, module_args, clock.now)

    action._execute_module = execute
    action.get_shell_option = lambda option, default=None: default
    action._remote_expand_user = lambda path, **kw: path.replace('~', '/home/u')
    return action


def job(finish_at, result):
    """async_status answers: running until ``finish_at`` (fake clock), then finished with ``result``."""
    def status(args, now):
        if args['mode'] == 'cleanup':
            return {'erased': '/home/u/.ansible_async/' + args['jid']}
        if now < finish_at:
            return {'started': 1, 'finished': 0, 'ansible_job_id': args['jid']}
        return dict(result, started=1, finished=1, ansible_job_id=args['jid'], results_file='/x', stdout='', stderr='')
    return status


def test_hf_wait_prints_progress_and_returns_the_job_result(clock, printed):
    status = job(1000.0 + 40, {'changed': True, 'path': '/srv/models/o/m', 'bytes': 10})
    progress = {'phase': 'download', 'label': 'o/m@abc', 'bytes_done': 5 * 10 ** 9, 'bytes_total': 10 ** 10,
                'rate_bps': 10 ** 9, 'eta_s': 5, 'files_done': 2, 'files_total': 4, 'updated': 1000.0 + 14}

    def responses(name, args, now):
        if name == 'ansible.legacy.async_status':
            return status(args, now)
        assert name == 'ansible.legacy.slurp' and args == {'src': '/p.json'}
        return {'content': base64.b64encode(json.dumps(progress).encode()).decode()}

    action = make_action(hf_snapshot_wait, {'jid': 'j1', 'progress_file': '/p.json', 'interval': 15}, responses, clock)
    res = action.run(task_vars={'inventory_hostname': 'h1'})
    assert res['changed'] and res['path'] == '/srv/models/o/m' and res['bytes'] == 10
    for key in async_wait.ASYNC_KEYS:
        assert key not in res
    assert res['wait_seconds'] >= 40
    # One line per 15 s interval, in the hf format, with the job's own numbers.
    assert len(printed) == 2, printed
    assert printed[0].startswith('[h1] download o/m@abc: 5.0 GB / 10.0 GB (50.0%), 1.0 GB/s, ETA 5s, 2/4 files (')
    assert printed[0].endswith(' elapsed)')
    # The job's results file is cleaned up with the async dir expanded on the target.
    assert action.calls[-1] == ('ansible.legacy.async_status',
                                {'jid': 'j1', 'mode': 'cleanup', '_async_dir': '/home/u/.ansible_async'})
    # Fast first polls (1 s, then doubling), never sleeping past the next print.
    assert clock.sleeps[:3] == [1.0, 2.0, 4.0] and max(clock.sleeps) <= 15


def test_hf_wait_quick_job_returns_within_a_second_without_reading_progress(clock, printed):
    status = job(1000.5, {'changed': False})
    action = make_action(hf_snapshot_wait, {'jid': 'j2', 'progress_file': '/p.json'},
                         lambda name, args, now: status(args, now), clock)
    res = action.run(task_vars={})
    assert res == {'changed': False, 'wait_seconds': 1.0}
    assert printed == [] and all(name == 'ansible.legacy.async_status' for name, _a in action.calls)


def test_interval_is_capped_at_30_seconds(clock, printed):
    status = job(1000.0 + 65, {'changed': False})
    action = make_action(hf_snapshot_wait, {'jid': 'j3', 'interval': 600},
                         lambda name, args, now: status(args, now), clock)
    action.run(task_vars={'inventory_hostname': 'h'})
    assert len(printed) == 2 and 'waiting for the first progress report' in printed[0]


def test_unknown_job_fails_at_once(clock):
    def responses(name, args, now):
        return {'failed': True, 'msg': 'could not find job', 'started': 0}
    action = make_action(hf_snapshot_wait, {'jid': 'nope'}, responses, clock)
    res = action.run(task_vars={})
    assert res['failed'] and res['msg'] == 'async job nope: could not find job'


def test_a_failed_job_result_is_passed_through(clock):
    status = job(1001.0, {'failed': True, 'msg': 'not enough space', 'path': '/m'})
    action = make_action(hf_snapshot_wait, {'jid': 'j4'}, lambda name, args, now: status(args, now), clock)
    res = action.run(task_vars={})
    assert res['failed'] and res['msg'] == 'not enough space'


def test_hf_wait_timeout_message(clock, printed):
    status = job(10 ** 9, {})
    action = make_action(hf_snapshot_wait, {'jid': 'j5', 'progress_file': '/p.json', 'timeout': 20},
                         lambda name, args, now: status(args, now) if 'mode' in args else {'failed': True}, clock)
    res = action.run(task_vars={})
    assert res['failed'] and res['ansible_job_id'] == 'j5'
    assert re.match(r'^hf_snapshot job j5 still running after \d+s; it keeps running on the host \(see /p\.json\)$', res['msg'])


def test_unknown_option_is_refused(clock):
    action = make_action(hf_snapshot_wait, {'jid': 'j', 'log_file': '/x'}, lambda *a: {}, clock)
    with pytest.raises(AnsibleActionFail, match='log_file'):
        action.run(task_vars={})


def test_sglang_bench_wait_reads_the_log_and_keeps_its_format(clock, printed):
    status = job(1000.0 + 20, {'changed': True, 'records': 3})
    tails = iter(['Loading tokenizer\n', ' 40%|####      | 8/20 [00:04<00:06,  1.9it/s]'])

    def responses(name, args, now):
        if name == 'ansible.legacy.async_status':
            return status(args, now)
        assert name == 'ansible.legacy.command' and args == {'argv': ['tail', '-c', '4096', '/r/mtp-c16.log']}
        return {'rc': 0, 'stdout': next(tails)}

    action = make_action(sglang_bench_wait, {'jid': 'b1', 'log_file': '/r/mtp-c16.log', 'interval': 8}, responses, clock)
    res = action.run(task_vars={'inventory_hostname': 'gpu1'})
    assert res['changed'] and res['records'] == 3 and 'finished' not in res
    assert len(printed) == 2, printed
    assert printed[0].startswith('[gpu1] benchmark: Loading tokenizer, ') and printed[0].endswith(' elapsed')
    assert printed[1].startswith('[gpu1] benchmark: 8/20 requests (40%), ')


def test_sglang_bench_wait_label_and_timeout_message(clock, printed):
    status = job(10 ** 9, {})
    action = make_action(sglang_bench_wait, {'jid': 'b2', 'log_file': '/r/x.log', 'label': 'run 3/8', 'timeout': 5,
                                             'interval': 2},
                         lambda name, args, now: status(args, now) if name.endswith('async_status') else {'rc': 1}, clock)
    res = action.run(task_vars={'inventory_hostname': 'gpu1'})
    assert res['msg'].startswith('run 3/8 still running after ')
    assert res['msg'].endswith('; the client keeps running on the host (log: /r/x.log)')
    assert printed and printed[0].startswith('[gpu1] run 3/8: loading the client (importing sglang), ')


def test_sglang_progress_text():
    assert sglang_bench_wait.progress_text('') == 'loading the client (importing sglang)'
    assert sglang_bench_wait.progress_text('UserWarning: x\nStarting initial single prompt test run...\n') == \
        'Starting initial single prompt test run...'


def test_fmt_duration():
    assert [async_wait.fmt_duration(s) for s in (None, 0, 59.4, 61, 3599, 3600, 7325)] == [
        '?', '0s', '59s', '1m01s', '59m59s', '1h00m', '2h02m']
