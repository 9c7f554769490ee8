# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Wait for an SGLang server and print its start-up progress on the controller (docs: modules/sglang_server_wait.py).

A module cannot stream output, so this action runs the module of the same name as an async job whose
``progress_file`` (in the async directory) holds the progress lines it formatted (module_utils/sglang/progress.py);
every ``progress_interval`` seconds it reads the file and prints each new line, and a line at least every 30 s. The
job's result is the module's own (same options, same return values). In check mode, or when the task has the
``async`` keyword, the module runs as any module does. The polling loop is plugin_utils/actions/async_wait.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import secrets

from ansible_collections.llmops.inference.plugins.module_utils.common.formatting import fmt_duration
from ansible_collections.llmops.inference.plugins.plugin_utils.actions import async_wait

MODULE = 'llmops.inference.sglang_server_wait'
# Seconds the job may run beyond the module's own timeout (its last journal reads and the verdict).
JOB_MARGIN = 300


class ActionModule(async_wait.AsyncWaitAction):
    PROGRESS_OPTION = 'progress_file'
    # The module validates its own options.
    _VALID_ARGS = frozenset()
    _supports_async = True
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(async_wait.AsyncWaitAction, self).run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        if self._task.check_mode or self._task.async_val:
            wrap = bool(self._task.async_val) and not self._connection.has_native_async
            result.update(self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars,
                                               wrap_async=wrap))
            if not wrap:
                self._remove_tmp_path(self._connection._shell.tmpdir)
            return result
        timeout = int(args.get('timeout') or 1800)
        unit = str(args.get('unit', ''))
        self._unit = unit if '.' in unit else unit + '.service'
        async_dir = self._remote_expand_user(self.get_shell_option('async_dir', default='~/.ansible_async'))
        path = '%s/sglang_server_wait.%s.json' % (async_dir.rstrip('/'), secrets.token_hex(6))
        self._printed = 0
        self._last_line = None
        job = self._start_job(dict(args, progress_file=path), timeout + JOB_MARGIN, task_vars)
        if job.get('failed') or not job.get('ansible_job_id'):
            result.update(job)
            return result
        status = self.wait_for_job(job['ansible_job_id'], path, task_vars, async_wait.MAX_INTERVAL,
                                   timeout + JOB_MARGIN, self._unit,
                                   max_poll=max(1, int(args.get('progress_interval') or 5)))
        # The lines written after the last poll are in the job's own result.
        lines = (status.get('progress') or {}).get('lines') or []
        self._print(task_vars, lines[self._printed:])
        self._execute_module(module_name='ansible.legacy.file', module_args={'path': path, 'state': 'absent'},
                             task_vars=task_vars)
        self._remove_tmp_path(self._connection._shell.tmpdir)
        result.update(status)
        return result

    def _start_job(self, module_args, limit, task_vars):
        """The module as an async job (the async wrapper of ``_execute_module``, with this limit in seconds)."""
        self._task.async_val = limit
        try:
            return self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars,
                                        wrap_async=True)
        finally:
            self._task.async_val = 0

    def _print(self, task_vars, lines):
        host = (task_vars or {}).get('inventory_hostname', '?')
        for line in lines:
            async_wait.display.display('[%s] %s: %s' % (host, self._unit, line))
            self._last_line = line
        self._printed += len(lines)
        return bool(lines)

    def read_progress(self, path, task_vars):
        """The progress the job wrote last, or None (not written yet, unreadable, half-written)."""
        return self.read_json(path, task_vars)

    def report_progress(self, host, label, path, task_vars, now, elapsed, due):
        """Every new progress line at once; with none for 30 s, a line saying the wait goes on."""
        lines = (self.read_progress(path, task_vars) or {}).get('lines') or []
        if self._print(task_vars, lines[self._printed:]):
            return True
        if due:
            last = ', last: %s' % self._last_line if self._last_line else ', no milestone yet'
            async_wait.display.display('[%s] %s: waiting for the next start-up milestone%s (%s waited)'
                                       % (host, self._unit, last, fmt_duration(elapsed)))
        return due

    def timeout_msg(self, jid, label, path, elapsed):
        return ('sglang_server_wait job %s for %s still running after %s (last: %s); it keeps running on the host '
                '(progress: %s)' % (jid, label, fmt_duration(elapsed), self._last_line or 'no milestone', path))
