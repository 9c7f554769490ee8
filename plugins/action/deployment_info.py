# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action of llmops.inference.deployment_info: resolve the host's deployment on the controller (docs in the module).

Only the Ansible glue lives here: the host's variables as Ansible's precedence merged them (rendered), the groups,
the other hosts' variables, the profile files read from the controller (once per run) and SGLang's own parser run
as a subprocess. The resolution itself is plugin_utils/deployment/resolve.py (pure, unit-tested).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess

import yaml

from ansible.errors import AnsibleError
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.problems import NOVALUE
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.inputs import role_of
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.resolve import resolve, summary
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.spec import COLLECTION_PREFIXES
from ansible_collections.llmops.inference.plugins.plugin_utils.actions.role_options import ROLE_OPTIONS

COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PARSER_CHECK = os.path.join(COLLECTION_ROOT, 'plugins', 'module_utils', 'sglang', 'parser_check.py')
# Names whose value is a secret or the published result itself: never templated into the inputs.
_SKIP = ('llmops_api_key', 'llmops_deployment')


def _same(raw, default):
    """A variable's raw (untemplated) value equals a role default (strings compared as text)."""
    try:
        if isinstance(default, str):
            return isinstance(raw, str) and str(raw) == default
        return raw == default
    # Tagged or lazy values that do not compare are not the default.
    except Exception:  # pylint: disable=broad-except
        return False


# libyaml's parser where PyYAML has it: the same safe constructor, about ten times faster than the pure-Python
# parser (profiles/sglang_releases.yml: 8 ms instead of 76 ms here). Each host's resolution runs in a worker of its
# own, so each parses the profiles it reads: make plan over 64 hosts spent seconds in this parser.
_SafeLoader = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)


class FileLoader(object):
    """Profile files on the controller, parsed once per resolution (keyed by path, mtime and size)."""

    cache = {}

    def load(self, path):
        try:
            stat = os.stat(path)
        except OSError as exc:
            raise IOError(str(exc))
        key = (path, stat.st_mtime_ns, stat.st_size)
        if key not in self.cache:
            with open(path) as handle:
                try:
                    self.cache[key] = yaml.load(handle, Loader=_SafeLoader)  # nosec B506: a safe loader
                except yaml.YAMLError as exc:
                    raise ValueError('invalid YAML: %s' % exc)
        return self.cache[key]

    @staticmethod
    def names(directory):
        try:
            return sorted(name[:-4] for name in os.listdir(directory) if name.endswith('.yml'))
        except OSError:
            return []


def parse_with_sglang(python, argvs):
    """SGLang's own argument parser (llmops_parser_python) on the rendered command lines, all in one process.

    A list of (ok, version or message), one per argv in ``argvs``.
    """
    if not os.access(python, os.X_OK):
        return [(False, '%s is not an executable Python' % python)] * len(argvs)
    try:
        proc = subprocess.run([python, PARSER_CHECK], input=json.dumps([list(a) for a in argvs]).encode(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [(False, 'could not run %s: %s' % (python, exc))] * len(argvs)
    try:
        results = json.loads(proc.stdout.decode().strip().splitlines()[-1])
        if not isinstance(results, list) or len(results) != len(argvs):
            raise ValueError('not one result per command line')
    except (ValueError, IndexError):
        return [(False, '%s printed no result (rc=%d): %s' % (python, proc.returncode, proc.stderr.decode()[-800:]))
                ] * len(argvs)
    return [(True, r.get('version')) if r.get('ok') else (False, r.get('error') or 'refused') for r in results]


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(('overrides', 'p2p_verdict', 'require_secrets', 'model_commit'))
    _requires_connection = False

    def _vars_of(self, source, errors=None):
        """Every variable with a collection prefix that source (task_vars or a hostvars entry) holds, rendered.

        A role variable whose raw value is its role's own default is skipped: the defaults of every role of the play
        are in scope, and they are the role's, not the operator's.
        """
        out = {}
        for name in list(source.keys()):
            if not isinstance(name, str) or not name.startswith(COLLECTION_PREFIXES) or name in _SKIP:
                continue
            spec = (ROLE_OPTIONS.get(role_of(name)) or {}).get(name) or {}
            if 'default' in spec and _same(source[name], spec['default']):
                continue
            try:
                out[name] = self._templar.template(source[name])
            except AnsibleError as exc:
                if errors is not None:
                    errors[name] = str(exc)
        return out

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        args = self._task.args
        hostvars = task_vars.get('hostvars') or {}
        errors = {}
        variables = self._vars_of(task_vars, errors)
        api_key = self._templar.template(task_vars['llmops_api_key']) if 'llmops_api_key' in task_vars else ''
        request = dict(
            host=task_vars.get('inventory_hostname'),
            groups=dict((k, list(v)) for k, v in (task_vars.get('groups') or {}).items()),
            variables=variables,
            vars_of=lambda name: self._vars_of(hostvars[name]) if name in hostvars else {},
            overrides=args.get('overrides') or {},
            p2p_verdict=args.get('p2p_verdict') or '',
            model_commit=args.get('model_commit') or '',
            inventory_dir=task_vars.get('inventory_dir') or '',
            playbook_dir=task_vars.get('playbook_dir') or '',
            require_secrets=boolean(args.get('require_secrets', True), strict=False),
            api_key=api_key or os.environ.get('SGLANG_API_KEY', ''),
            collection_profiles=os.path.join(COLLECTION_ROOT, 'profiles'),
            role_options=ROLE_OPTIONS,
            parse=parse_with_sglang,
        )
        try:
            deployment, problems = resolve(request, FileLoader())
        except Exception as exc:  # pylint: disable=broad-except
            # A resolver bug on one host must not surface as a bare exception: with failed_when: false and
            # any_errors_fatal it would hide every other host's refusal. It is reported like a refusal instead.
            why = 'the resolver failed on this host: %s: %s' % (type(exc).__name__, exc)
            fix = 'report it as a bug of llmops.inference with this inventory; nothing was changed on any host'
            result.update(changed=False, failed=True, deployment=None,
                          problems=[dict(variable=request['host'], rule=why, fix=fix, kind='bug')],
                          msg='%s: %s. Fix: %s.' % (request['host'], why, fix))
            return result
        for name, message in sorted(errors.items()):
            problems.add(name, NOVALUE, 'cannot be rendered: %s' % message, 'fix the template or the value')
        result['changed'] = False
        result['deployment'] = deployment
        result['problems'] = [dict((k, v) for k, v in item.items() if k in ('variable', 'rule', 'fix', 'kind'))
                              for item in problems.items]
        if problems:
            result['failed'] = True
            result['msg'] = problems.message()
        else:
            result['msg'] = summary(deployment)
        return result
