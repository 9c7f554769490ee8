# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The sglang_server_wait action: the module as an async job, its progress lines printed as they arrive, its own
result returned; check mode and the task keyword async run the module as before. The job, async_status and the
progress file are faked at the _execute_module boundary, with a fake clock (no sleeping)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json

from unittest.mock import MagicMock

from ansible_collections.llmops.inference.plugins.action import sglang_server_wait

MODULE = 'llmops.inference.sglang_server_wait'
ARGS = {'unit': 'sglang-qwen', 'url': 'http://127.0.0.1:30000', 'timeout': 600, 'progress_interval': 5}
# What the module writes, by the time it wrote it (seconds after the job started).
WRITTEN = [(3, 'parallel init (NCCL) - 2s since start, expected ~6m52s (last start)'),
           (4, 'loading weights - 2s since start, expected ~6m52s (last start)'),
           (100, 'weights 100% (4/4 shards) - 97s since start, expected ~6m52s (last start)'),
           (100, 'weights loaded (Qwen3_5MoeForConditionalGeneration, 57.14 GB per GPU) - 1m37s since start, '
                 'expected ~6m52s (last start)'),
           (171, 'KV cache allocated (685794 tokens) - 2m50s since start, expected ~6m52s (last start)')]
LAST = 'ready - 6m40s since start (last start: 6m52s)'


def make_action(args, clock, finish_after=400, result=None, check_mode=False, async_val=0):
    task = MagicMock()
    task.args = args
    task.async_val = async_val
    task.check_mode = check_mode
    action = sglang_server_wait.ActionModule(task, MagicMock(), MagicMock(), MagicMock(), MagicMock(), MagicMock())
    action.calls = []
    started = clock.now
    final = dict(result or {}, changed=False, ready=True, progress=dict(lines=[line for t, line in WRITTEN] + [LAST]))

    def execute(module_name=None, module_args=None, task_vars=None, wrap_async=False, **kwargs):
        action.calls.append((module_name, dict(module_args), wrap_async, task.async_val))
        if module_name == MODULE and not wrap_async:
            return dict(final, direct=True)
        if module_name == MODULE:
            return {'started': 1, 'finished': 0, 'ansible_job_id': 'j42', 'results_file': '/r', 'changed': True}
        if module_name == 'ansible.legacy.async_status':
            if module_args['mode'] == 'cleanup':
                return {'erased': '/r'}
            if clock.now - started < finish_after:
                return {'started': 1, 'finished': 0, 'ansible_job_id': 'j42'}
            return dict(final, started=1, finished=1, ansible_job_id='j42', results_file='/r')
        if module_name == 'ansible.legacy.slurp':
            lines = [line for t, line in WRITTEN if t <= clock.now - started]
            if not lines:
                return {'failed': True, 'msg': 'file not found'}
            data = json.dumps(dict(lines=lines, done=False)).encode()
            return {'content': base64.b64encode(data).decode()}
        if module_name == 'ansible.legacy.file':
            return {'changed': True}
        raise AssertionError(module_name)

    action._execute_module = execute
    action._remove_tmp_path = lambda *a, **k: None
    action.get_shell_option = lambda option, default=None: default
    action._remote_expand_user = lambda path, **kw: path.replace('~', '/root')
    action._connection.has_native_async = False
    return action


def test_the_job_prints_each_progress_line_once_as_it_arrives(clock, printed):
    action = make_action(dict(ARGS), clock)
    res = action.run(task_vars={'inventory_hostname': 'sglang-ct'})
    assert res['ready'] and res['progress']['lines'][-1] == LAST and 'finished' not in res and res['wait_seconds'] >= 400
    milestones = [line for line in printed if 'waiting for the next' not in line]
    assert milestones == ['[sglang-ct] sglang-qwen.service: %s' % line for t, line in WRITTEN] + [
        '[sglang-ct] sglang-qwen.service: ' + LAST]
    # The module ran as an async job with its progress file in the async dir, then the file was removed.
    name, args, wrap, limit = action.calls[0]
    assert name == MODULE and wrap and limit == 600 + sglang_server_wait.JOB_MARGIN
    assert args['progress_file'].startswith('/root/.ansible_async/sglang_server_wait.') and args['unit'] == 'sglang-qwen'
    assert action._task.async_val == 0
    removed = [a for n, a, w, l in action.calls if n == 'ansible.legacy.file']
    assert removed == [{'path': args['progress_file'], 'state': 'absent'}]
    # Polls at most progress_interval apart, so a line is printed within 5 s of being written.
    assert max(clock.sleeps) <= 5


def test_a_quiet_stretch_prints_a_line_at_least_every_30_seconds(clock, printed):
    make_action(dict(ARGS), clock).run(task_vars={'inventory_hostname': 'h'})
    waiting = [line for line in printed if 'waiting for the next start-up milestone' in line]
    # Between the line at 4 s and the one at 100 s, and between 171 s and the end at 400 s.
    assert len(waiting) >= (100 - 4) // 30 + (400 - 171) // 30 - 2
    assert waiting[0].startswith('[h] sglang-qwen.service: waiting for the next start-up milestone, last: loading weights')


def test_check_mode_and_the_async_keyword_run_the_module_as_before(clock, printed):
    action = make_action(dict(ARGS), clock, check_mode=True)
    res = action.run(task_vars={})
    assert res['direct'] and printed == []
    assert [(n, a, w) for n, a, w, l in action.calls] == [(MODULE, ARGS, False)]
    # async: 900, poll: 0 on the task: the async wrapper's job, polled by the play (async_status), as for any module.
    action = make_action(dict(ARGS), clock, async_val=900)
    res = action.run(task_vars={})
    assert res['ansible_job_id'] == 'j42' and printed == []
    assert action.calls == [(MODULE, ARGS, True, 900)]


def test_a_failed_start_is_the_modules_failure(clock, printed):
    failure = dict(failed=True, msg='sglang-qwen.service did not become ready: ... Log: journalctl -u '
                                    'sglang-qwen.service --since @1796001966')
    res = make_action(dict(ARGS), clock, finish_after=120, result=failure).run(task_vars={})
    assert res['failed'] and res['msg'] == failure['msg']


def test_a_job_that_outlives_its_limit_names_the_last_milestone(clock, printed):
    res = make_action(dict(ARGS, timeout=60), clock, finish_after=10 ** 6).run(task_vars={})
    assert res['failed'] and res['ansible_job_id'] == 'j42'
    assert 'still running after' in res['msg'] and '(last: KV cache allocated (685794 tokens)' in res['msg']
