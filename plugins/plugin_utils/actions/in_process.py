# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run one of this collection's modules inside the controller's task worker, where that is the same as running it.

make plan runs two modules per host pair against a sysfs tree on the controller (gpu_partition and lxc_gpu_config,
both in check mode). Run the usual way, each run starts a Python process that imports ansible.module_utils.basic from
the AnsiballZ zip, compiling it from source every time: about 0.2 s of CPU per run, a third of the whole plan of a
host. The worker that runs the task is already that Python, with the same ansible-core, forked for this one task.

`why_not_here` says when running the module here cannot differ from running it: the connection is local,
the module's interpreter is the controller's own Python, check mode is on, the module only reads a tree other than /
(its `root` option), no become and no async. `run_here` then runs the module's own code as the AnsiballZ wrapper does
(ansible.module_utils._internal._ansiballz._loader: the arguments through basic._ANSIBLE_ARGS and _ANSIBLE_PROFILE,
runpy as __main__), and reads its output with the action's own _parse_returned_data, as _execute_module does. Any
other case, and any ansible-core without those names, takes the module run (ActionBase._execute_module).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import io
import json
import os
import runpy
import sys

from ansible.module_utils import basic
from ansible.plugins.action import ActionBase
from ansible.plugins.action.normal import ActionModule as NormalAction
from ansible.utils.vars import merge_hash

try:  # ansible-core 2.19: the encoder AnsiballZ uses for the module's arguments
    from ansible.module_utils.common.json import Direction, get_module_encoder
    from ansible.vars.clean import remove_internal_keys
except ImportError:  # pragma: no cover - an older ansible-core: always the module run
    get_module_encoder = None


def _interpreter(action, task_vars):
    value = task_vars.get('ansible_python_interpreter')
    if value is None:
        return None
    return os.path.abspath(str(action._templar.template(value)))


def why_not_here(action, task_vars, root):
    """Why the module cannot run in this process ('' when it can): each condition of the module docstring."""
    if get_module_encoder is None or not hasattr(basic, '_ANSIBLE_PROFILE'):
        return 'this ansible-core has no AnsiballZ argument profile'
    checks = [
        (action._connection.transport == 'local', 'the connection is not local'),
        (_interpreter(action, task_vars) == os.path.abspath(sys.executable),
         'the module interpreter is not the controller Python'),
        (bool(action._play_context.check_mode), 'check mode is off'),
        (bool(root) and os.path.realpath(str(root)) != '/', 'the tree read is /'),
        (not action._play_context.become, 'become is on'),
        (not action._task.async_val, 'the task is async'),
    ]
    return next((why for ok, why in checks if not ok), '')


def _module_fqn(resolved_action):
    """ansible_collections.<ns>.<coll>.plugins.modules.<name> of a module's FQCN."""
    namespace, collection, name = resolved_action.split('.', 2)
    return 'ansible_collections.%s.%s.plugins.modules.%s' % (namespace, collection, name)


def _run(fqn, encoded, profile):
    """(exit code, stdout) of the module's code run as __main__ with these arguments."""
    saved = (basic._ANSIBLE_ARGS, basic._ANSIBLE_PROFILE, getattr(basic, '_PARSED_MODULE_ARGS', None))
    basic._ANSIBLE_ARGS, basic._ANSIBLE_PROFILE = encoded, profile
    if hasattr(basic, '_PARSED_MODULE_ARGS'):
        basic._PARSED_MODULE_ARGS = None
    out = io.StringIO()
    code = 0
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_module(fqn, run_name='__main__', alter_sys=False)
    except SystemExit as ex:
        code = ex.code if isinstance(ex.code, int) else (0 if ex.code is None else 1)
    finally:
        basic._ANSIBLE_ARGS, basic._ANSIBLE_PROFILE = saved[0], saved[1]
        if hasattr(basic, '_PARSED_MODULE_ARGS'):
            basic._PARSED_MODULE_ARGS = saved[2]
    return code, out.getvalue()


def run_here(action, task_vars):
    """The module's result as _execute_module returns it, the module's code run in this process."""
    name = action._task.resolved_action or action._task.action
    module_args = dict(action._task.args)
    action._update_module_args(name, module_args, task_vars)
    bits, _path = action._configure_module(module_name=name, module_args=module_args, task_vars=task_vars)
    profile = bits.serialization_profile
    encoded = json.dumps({'ANSIBLE_MODULE_ARGS': module_args},
                         cls=get_module_encoder(profile, Direction.CONTROLLER_TO_MODULE)).encode()
    try:
        code, stdout = _run(_module_fqn(name), encoded, profile)
    # A module crash is a failed task, as on a host.
    except Exception as ex:  # pylint: disable=broad-except
        return dict(failed=True, msg='%s raised %s: %s (run in the controller process; see the module)'
                    % (name, type(ex).__name__, ex))
    data = action._parse_returned_data(dict(rc=code, stdout=stdout, stderr=''), profile)
    remove_internal_keys(data)
    return data


class TreeReaderAction(NormalAction):
    """The action of a module that reads a tree (its ``root`` option): the normal module run, or the module's own
    code in this worker where why_not_here finds nothing that could differ."""

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        if why_not_here(self, task_vars, self._task.args.get('root', '/')):
            return super(TreeReaderAction, self).run(tmp, task_vars)
        self._supports_check_mode = True
        result = ActionBase.run(self, tmp, task_vars)
        return merge_hash(result, run_here(self, task_vars))
