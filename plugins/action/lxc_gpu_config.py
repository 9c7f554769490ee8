# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action of llmops.inference.lxc_gpu_config: the module run, as ansible.builtin.normal runs it (docs in the module).

make plan renders every container's GPU lines against its host's sysfs tree (playbooks/plan_gpu_split.yml).
Planned against a tree other than / in check mode on the controller (make plan), the module's own code runs in
the task's worker instead of a new Python (plugins/plugin_utils/actions/in_process.py says when that is the same);
everywhere else this is the normal module run.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible.plugins.action.normal import ActionModule as NormalAction
from ansible.utils.vars import merge_hash

from ansible_collections.llmops.inference.plugins.plugin_utils.actions import in_process


class ActionModule(NormalAction):

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        if in_process.why_not_here(self, task_vars, self._task.args.get('root', '/')):
            return super(ActionModule, self).run(tmp, task_vars)
        self._supports_check_mode = True
        result = ActionBase.run(self, tmp, task_vars)
        return merge_hash(result, in_process.run_here(self, task_vars))
