# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Wait for an async hf_snapshot job and print its progress on the controller (docs: modules/hf_snapshot_wait.py).

The download runs as an async task that rewrites a JSON progress file on the target; each progress line is that
file (read with ``slurp``) as bytes done/total, rate, ETA and files. The polling loop is plugin_utils/actions/async_wait.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.common.formatting import fmt_duration
from ansible_collections.llmops.inference.plugins.module_utils.common.progress_file import progress_line
from ansible_collections.llmops.inference.plugins.plugin_utils.actions.async_wait import AsyncWaitAction, wait_args


class ActionModule(AsyncWaitAction):
    PROGRESS_OPTION = 'progress_file'
    _VALID_ARGS = wait_args(PROGRESS_OPTION)

    def read_progress(self, path, task_vars):
        """The progress dict the job wrote last, or None (not written yet, unreadable, half-written)."""
        return self.read_json(path, task_vars)

    def progress_text(self, path, task_vars, now):
        return progress_line(self.read_progress(path, task_vars), now)

    def timeout_msg(self, jid, label, path, elapsed):
        return 'hf_snapshot job %s still running after %s; it keeps running on the host (see %s)' % (
            jid, fmt_duration(elapsed), path)
