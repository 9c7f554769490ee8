# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared controller side of the ``*_wait`` actions (hf_snapshot_wait, sglang_bench_wait).

Ansible modules cannot stream output, so long work runs as an async task that leaves its progress on the target
(a JSON file, a log). An action derived from :class:`AsyncWaitAction` polls ``async_status``, reads that progress at
a fixed interval through :meth:`AsyncWaitAction.progress_text`, prints one line per interval through Display (no
"FAILED - RETRYING" noise), cleans up the job's results file and returns the job's own result. Options common to
every wait action: ``jid``, ``interval`` (at most 30 s), ``timeout``, ``label``; their documentation is the doc
fragment ``llmops.inference.async_wait``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json
import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

# The same duration format as the progress lines the hf_snapshot module writes on the target ('42s', '3m07s').
from ansible_collections.llmops.inference.plugins.module_utils.common.formatting import fmt_duration

display = Display()

# Keys async_status adds around the job's own result.
ASYNC_KEYS = ('ansible_job_id', 'started', 'finished', 'results_file', 'erased', 'stdout', 'stderr', 'stdout_lines',
              'stderr_lines')
# The contract of every wait action: a progress line at least every 30 s.
MAX_INTERVAL = 30


def wait_args(progress_option):
    """The options of a wait action whose progress location is ``progress_option``."""
    return frozenset(('jid', 'interval', 'timeout', 'label', progress_option))


class AsyncWaitAction(ActionBase):
    """Wait for an async job, printing a progress line per interval; subclasses say where the progress is."""

    TRANSFERS_FILES = False
    # The option naming where the job leaves its progress on the target (e.g. progress_file, log_file); subclasses
    # also set _VALID_ARGS = wait_args(PROGRESS_OPTION).
    PROGRESS_OPTION = None
    DEFAULT_LABEL = None
    # Seconds before the second status poll; it doubles up to the print interval, so a short job returns at once.
    FIRST_POLL = 1.0

    # ---- what a subclass provides -----------------------------------------------------------------------------

    def progress_text(self, path, task_vars, now):
        """One line describing the job's progress, read from ``path`` (the PROGRESS_OPTION) on the target."""
        raise NotImplementedError

    # ---- shared by the subclasses ------------------------------------------------------------------------------

    def read_json(self, path, task_vars):
        """The JSON document at ``path`` on the target (slurp), or None: not written yet, unreadable, half-written."""
        if not path:
            return None
        res = self._execute_module(module_name='ansible.legacy.slurp', module_args={'src': path}, task_vars=task_vars)
        if res.get('failed') or 'content' not in res:
            return None
        try:
            return json.loads(base64.b64decode(res['content']).decode('utf-8'))
        except (ValueError, TypeError):
            return None

    def progress_line(self, host, label, text, elapsed):
        return '[%s] %s%s (%s elapsed)' % (host, label + ' ' if label else '', text, fmt_duration(elapsed))

    def report_progress(self, host, label, path, task_vars, now, elapsed, due):
        """Called at every poll; prints what there is to print and says whether it printed. ``due``: the print
        interval has passed since the last line. By default one progress_text line per interval."""
        if not due:
            return False
        display.display(self.progress_line(host, label, self.progress_text(path, task_vars, now), elapsed))
        return True

    def timeout_msg(self, jid, label, path, elapsed):
        return 'async job %s still running after %s; it keeps running on the host (see %s)' % (
            jid, fmt_duration(elapsed), path)

    # ---- the loop ---------------------------------------------------------------------------------------------

    def _status(self, jid, async_dir, task_vars, mode='status'):
        return self._execute_module(module_name='ansible.legacy.async_status', task_vars=task_vars,
                                    module_args={'jid': jid, 'mode': mode, '_async_dir': async_dir})

    def run(self, tmp=None, task_vars=None):
        result = super(AsyncWaitAction, self).run(tmp, task_vars)
        del tmp
        _unused, args = self.validate_argument_spec(argument_spec={
            'jid': {'type': 'str', 'required': True},
            self.PROGRESS_OPTION: {'type': 'path'},
            'interval': {'type': 'int', 'default': 15},
            'timeout': {'type': 'int', 'default': 86400},
            'label': {'type': 'str'},
        })
        interval = min(max(args['interval'], 1), MAX_INTERVAL)
        label = args['label'] or self.DEFAULT_LABEL or ''
        result.update(self.wait_for_job(args['jid'], args[self.PROGRESS_OPTION], task_vars, interval,
                                        args['timeout'], label))
        return result

    def wait_for_job(self, jid, path, task_vars, interval, timeout, label, max_poll=None):
        """Poll async job ``jid`` until it finishes, calling report_progress at every poll (polls at most
        ``max_poll`` seconds apart, default ``interval``); the job's own result (the async keys removed, plus
        wait_seconds), or a failure (job not found, ``timeout`` passed)."""
        async_dir = self._remote_expand_user(self.get_shell_option('async_dir', default='~/.ansible_async'))
        host = (task_vars or {}).get('inventory_hostname', '?')
        started = time.time()
        next_print = started + interval
        poll = self.FIRST_POLL
        while True:
            status = self._status(jid, async_dir, task_vars)
            if status.get('finished'):
                break
            if status.get('failed') and not status.get('started'):
                status['msg'] = 'async job %s: %s' % (jid, status.get('msg', 'not found'))
                return status
            now = time.time()
            if now - started > timeout:
                return dict(failed=True, ansible_job_id=jid, msg=self.timeout_msg(jid, label, path, now - started))
            if self.report_progress(host, label, path, task_vars, now, now - started, now >= next_print):
                next_print = now + interval
            time.sleep(min(poll, max(0.2, next_print - time.time())))
            poll = min(poll * 2, max_poll or interval)
        self._status(jid, async_dir, task_vars, mode='cleanup')
        for key in ASYNC_KEYS:
            status.pop(key, None)
        status['wait_seconds'] = round(time.time() - started, 1)
        return status
