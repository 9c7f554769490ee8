# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action of llmops.inference.tp_group_check: the nodes of the host's TP group against each other (docs in the
module). Only the Ansible glue is here: the group from llmops_deployment, every node's registered result from
hostvars, the pin's pip locks read on the controller. The checks are plugin_utils/deployment/tp_group_preflight.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import tp_group_preflight
from ansible_collections.llmops.inference.plugins.module_utils.host import node_facts as tp_node_facts

_STAGES = ('facts', 'probe', 'model', 'nodes')


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(('stage', 'facts_var', 'probe_var', 'model_var', 'nodes_var', 'install'))
    _requires_connection = False

    def _results(self, task_vars, group, name, keep_failed=False):
        """host -> the host's registered result (None when it has none: not in this run, or it failed before)."""
        hostvars = task_vars.get('hostvars') or {}
        out = {}
        for item in group['ranks']:
            value = None
            if item['host'] in hostvars and name in hostvars[item['host']]:
                value = self._templar.template(hostvars[item['host']][name])
            usable = isinstance(value, dict) and not value.get('skipped') and (keep_failed or not value.get('failed'))
            out[item['host']] = value if usable else None
        return out

    def _lock_nccl(self, template, facts):
        """{python X.Y: NCCL of that Python's lock of the pin} for the Pythons the nodes report."""
        out = {}
        for python in sorted(set(f.get('python') for f in facts.values() if f and f.get('python'))):
            path = (template or '').replace('{python}', python)
            try:
                with open(path) as handle:
                    out[python] = tp_node_facts.lock_nccl(handle.read())
            except (IOError, OSError):
                out[python] = None
        return out

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        args = self._task.args
        stage = args.get('stage', 'facts')
        deployment = task_vars.get('llmops_deployment') or {}
        group = deployment.get('tp_group')
        result['changed'] = False
        if stage not in _STAGES:
            result.update(failed=True, msg='stage must be one of %s, got %r' % (', '.join(_STAGES), stage))
            return result
        if not group:
            result.update(skipped=True, msg='%s is not a node of a multi-node TP group' % task_vars.get('inventory_hostname'))
            return result
        host = task_vars.get('inventory_hostname')
        if stage == 'facts':
            facts = self._results(task_vars, group, args.get('facts_var') or 'tp_node')
            install = boolean(args.get('install', True), strict=False)
            lock_nccl = self._lock_nccl((deployment.get('sglang') or {}).get('lock_template'), facts) if install else {}
            deployments = self._results(task_vars, group, 'llmops_deployment')
            revisions = dict((h, ((d or {}).get('model') or {}).get('repo_id') and (
                d['model']['repo_id'], d['model']['revision'])) for h, d in deployments.items())
            problems, warnings = tp_group_preflight.check_facts(
                group, facts, (deployment.get('sglang') or {}).get('version'), install=install, lock_nccl=lock_nccl,
                check_gpus=bool((deployment.get('deploy') or {}).get('check_gpus', True)), revisions=revisions)
            result.update(warnings=warnings, lock_nccl=lock_nccl,
                          probe_plan=tp_group_preflight.probe_plan(group, facts) if not problems else {})
        elif stage == 'nodes':
            problems = tp_group_preflight.check_nodes(group, self._results(task_vars, group,
                                                                           args.get('nodes_var') or 'tp_nccl',
                                                                           keep_failed=True))
            result['warnings'] = []
        elif stage == 'model':
            problems = tp_group_preflight.check_model(group, self._results(task_vars, group,
                                                                           args.get('model_var') or 'hf_model_result'))
            result['warnings'] = []
        else:
            probes = self._results(task_vars, group, args.get('probe_var') or 'tp_probe')
            problems = tp_group_preflight.check_probe(group, probes)
            result['warnings'] = []
            result['probes'] = dict((h, dict(ok=(p or {}).get('ok'), seconds=(p or {}).get('seconds')))
                                    for h, p in probes.items())
        result['problems'] = problems
        if problems:
            result.update(failed=True, msg=tp_group_preflight.message(group, host, problems, stage))
        else:
            result['msg'] = '%s: TP group %s, %d nodes: %s' % (
                host, group['name'], group['nnodes'],
                {'facts': 'versions, model revision, GPUs, interfaces and the rendezvous ports agree',
                 'probe': 'every node reached every other node\'s rendezvous and NCCL/gloo ports',
                 'model': 'every node verified the same model files',
                 'nodes': 'one all-reduce over every node\'s ranks summed exactly on every node'}[stage])
        return result
