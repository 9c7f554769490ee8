# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Wait for an async sglang_bench_run job and print its progress on the controller (docs: modules/sglang_bench_wait.py).

The benchmark client runs as an async task on the serving host and writes a tqdm progress bar into its log; each
progress line is the end of that log (``tail -c 4096``) as run i/N, what it measures, requests done and elapsed time.
The polling loop is plugin_utils/actions/async_wait.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.common.formatting import fmt_duration
from ansible_collections.llmops.inference.plugins.module_utils.bench.client import log_tail, tqdm_progress
from ansible_collections.llmops.inference.plugins.plugin_utils.actions.async_wait import AsyncWaitAction, wait_args


def progress_text(tail):
    """What the client is doing, from the end of its log."""
    done = tqdm_progress(tail)
    if done:
        return '%d/%d requests (%d%%)' % (done[0], done[1], 100 * done[0] // max(done[1], 1))
    # The client's own status lines, not the library warnings printed while it imports.
    lines = [line.strip() for line in log_tail(tail, 8).splitlines()
             if line.strip() and 'warn' not in line.lower() and not line.startswith(' ')]
    if not lines:
        return 'loading the client (importing sglang)'
    return lines[-1][:100]


class ActionModule(AsyncWaitAction):
    PROGRESS_OPTION = 'log_file'
    _VALID_ARGS = wait_args(PROGRESS_OPTION)
    DEFAULT_LABEL = 'benchmark'

    def read_tail(self, path, task_vars):
        if not path:
            return ''
        res = self._execute_module(module_name='ansible.legacy.command', task_vars=task_vars,
                                   module_args={'argv': ['tail', '-c', '4096', path]})
        return res.get('stdout', '') if res.get('rc') == 0 else ''

    def progress_text(self, path, task_vars, now):
        return progress_text(self.read_tail(path, task_vars))

    def progress_line(self, host, label, text, elapsed):
        return '[%s] %s: %s, %s elapsed' % (host, label, text, fmt_duration(elapsed))

    def timeout_msg(self, jid, label, path, elapsed):
        return '%s still running after %s; the client keeps running on the host (log: %s)' % (
            label, fmt_duration(elapsed), path)
