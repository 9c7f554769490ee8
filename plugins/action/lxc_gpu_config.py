# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action of llmops.inference.lxc_gpu_config: the module run, as ansible.builtin.normal runs it (docs in the module).

make plan renders every container's GPU lines against its host's sysfs tree (playbooks/plan_gpu_split.yml). In check
mode against a tree other than / on the controller, the module's own code runs in the task's worker
instead of a new Python (plugins/plugin_utils/actions/in_process.py says when that is the same).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.plugin_utils.actions.in_process import TreeReaderAction


class ActionModule(TreeReaderAction):
    """The module run, or the module's code in this worker (TreeReaderAction)."""
