# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The variables of one host, read once: unknown names, wrong types, out-of-range values, role variables.

PRIVATE to the collection. ``read()`` takes every variable with a collection prefix that is set for the host (as
Ansible's own precedence merged them), applies ``deployment_overrides`` on top, and returns the ``llmops_*``
settings coerced to their declared types with their source; every problem goes into the host's ``Problems``.
Role variables are checked against the roles' argument specs (``role_options``: generated from them by
tests/tools/role_docs.py), so a typo in ``sglang_benchmark_concurency`` fails before any host is touched.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmops.inference.plugins.module_utils.bench.report import METRICS
from ansible_collections.llmops.inference.plugins.module_utils.common.choosing import nearest
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.problems import (
    NOVALUE,
    check_bounds,
    coerce,
)
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.profile_schema import SERVING
from ansible_collections.llmops.inference.plugins.module_utils.sglang.flags import DECIDED_ENV
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.spec import (
    BY_NAME,
    COLLECTION_PREFIXES,
    PASSED_BY_PLAYBOOKS,
    RESULT_NAMES,
)

ROLES = ('deployment', 'sglang_server', 'sglang_benchmark', 'sglang_gateway', 'hf_model', 'gpu_partition', 'lxc_gpu')
_ENV_NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
# Settings where '' is a value of its own ("render none") rather than "unset".
_EMPTY_MEANS_NONE = ('llmops_reasoning_parser', 'llmops_tool_call_parser')


def role_of(name):
    """The role whose prefix a variable carries (longest prefix first), or None."""
    for role in sorted(ROLES, key=len, reverse=True):
        if name.startswith(role + '_'):
            return role
    return None


def _serving_keys(schema, name='', path='serving'):
    """{'speculative_algorithm': 'serving.speculative.algorithm', ...}: the model profile's serving keys, flattened."""
    out = {}
    for key, (dummy, dummy_required, nested) in schema.items():
        flat, where = (name + '_' + key).lstrip('_'), path + '.' + key
        out[flat] = where
        if isinstance(nested, dict):
            out.update(_serving_keys(nested, flat, where))
    return out


# llmops_<key> for a serving key of the model profile that is no inventory variable (llmops_speculative_algorithm):
# said so, rather than "rename it to" the nearest variable, which names another setting.
PROFILE_KEYS = _serving_keys(SERVING)


def _profile_key_problem(key):
    rule = 'no such variable: %s is a key of the model profile (profiles/models/<llmops_model_profile>.yml)' \
        % PROFILE_KEYS[key]
    fix = 'set it in the model profile, or in a copy of it under llmops_profiles_dir'
    if key.startswith('speculative'):
        fix += '; to turn speculative decoding off, set llmops_speculative_num_draft_tokens: 0 (what-if: make plan ' \
               'SPEC=off)'
    return rule, fix


def check_names(variables, role_options, problems, passed_by_playbooks=True):
    """Unknown collection-prefixed names (nearest known name), and role parameters the playbooks pass."""
    llmops_names = set(BY_NAME) | set(RESULT_NAMES)
    for name in sorted(variables):
        if not name.startswith(COLLECTION_PREFIXES):
            continue
        if name.startswith('llmops_'):
            if name not in llmops_names and name[len('llmops_'):] in PROFILE_KEYS:
                problems.add(name, variables[name], *_profile_key_problem(name[len('llmops_'):]))
            elif name not in llmops_names:
                close = nearest(name, llmops_names)
                problems.add(name, variables[name], 'no such variable (the llmops_* settings are listed in '
                             'docs/deployment_resolver.md)', 'rename it to %s' % close if close else 'remove it')
            continue
        role = role_of(name)
        known = role_options.get(role) or {}
        facts = set(known.get('_facts') or ())
        if name not in known and name not in facts:
            close = nearest(name, [k for k in known if not k.startswith('_')] + list(facts))
            problems.add(name, variables[name], 'not a variable of the %s role (its argument_specs)' % role,
                         'rename it to %s' % close if close else 'remove it')
            continue
        if passed_by_playbooks and name in PASSED_BY_PLAYBOOKS:
            problems.add(name, variables[name], 'the playbooks of this collection pass it from llmops_deployment, so '
                         'this value would be ignored', 'set %s instead' % PASSED_BY_PLAYBOOKS[name])


def check_role_types(variables, role_options, problems):
    """Types and choices of the role variables that are set, as their argument specs declare them."""
    for name in sorted(variables):
        role = role_of(name)
        if role is None or name.startswith('llmops_'):
            continue
        spec = (role_options.get(role) or {}).get(name)
        if not spec or spec.get('type') in (None, 'raw'):
            continue
        value = variables[name]
        if isinstance(value, str) and '{{' in value:
            continue  # an unrendered default expression
        entry = dict(name=name, type={'path': 'path'}.get(spec['type'], spec['type']), elements=spec.get('elements'),
                     default=spec.get('default'))
        value = coerce(entry, value, problems)
        if value is NOVALUE or value is None:
            continue
        choices = spec.get('choices')
        if choices:
            values = value if isinstance(value, list) else [value]
            for item in values:
                if item not in choices:
                    close = nearest(item, [str(c) for c in choices])
                    problems.add(name, item, 'not one of %s' % ', '.join(repr(c) for c in choices),
                                 "use %r" % close if close else 'use one of them')
                    break


def check_benchmark(variables, problems):
    """Benchmark inputs that would otherwise fail only after the download and the start."""
    levels = variables.get('sglang_benchmark_concurrency')
    if isinstance(levels, list):
        if not levels and not variables.get('sglang_benchmark_scenarios') and \
                not variables.get('sglang_benchmark_request_rates'):
            problems.add('sglang_benchmark_concurrency', levels, 'an empty sweep measures nothing',
                         'list concurrency levels, e.g. [1, 4, 16, 64], or set sglang_benchmark_sweep: false')
        for level in levels:
            if isinstance(level, bool) or not isinstance(level, int) or level < 1:
                problems.add('sglang_benchmark_concurrency', levels, 'every level must be a whole number >= 1 '
                             '(%r is not)' % (level,), 'remove or correct %r' % (level,))
                break
    for name in ('sglang_benchmark_min_prompts', 'sglang_benchmark_prompts_per_concurrency',
                 'sglang_benchmark_input_len', 'sglang_benchmark_output_len', 'sglang_benchmark_rate_num_prompts'):
        value = variables.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value < 1:
            problems.add(name, value, 'must be at least 1', 'set %s to a positive number' % name)
    interval = variables.get('sglang_benchmark_progress_interval')
    if isinstance(interval, int) and not isinstance(interval, bool) and not 1 <= interval <= 30:
        problems.add('sglang_benchmark_progress_interval', interval, 'must be between 1 and 30 seconds',
                     'set it to e.g. 15')
    thresholds = variables.get('sglang_benchmark_thresholds')
    if isinstance(thresholds, list):
        for index, gate in enumerate(thresholds):
            where = 'sglang_benchmark_thresholds[%d]' % index
            if not isinstance(gate, dict):
                problems.add(where, gate, 'must be a mapping {metric, min|max, concurrency?, variant?}',
                             'e.g. {metric: output_throughput, concurrency: 1, min: 150}')
                continue
            unknown = sorted(set(gate) - set(('metric', 'min', 'max', 'concurrency', 'variant', 'request_rate')))
            if unknown:
                close = nearest(unknown[0], ('metric', 'min', 'max', 'concurrency', 'variant', 'request_rate'))
                problems.add('%s.%s' % (where, unknown[0]), gate[unknown[0]], 'unknown key of a gate',
                             'rename it to %s' % close if close else 'remove it')
            metric = gate.get('metric')
            if metric not in METRICS:
                close = nearest(metric, METRICS)
                problems.add('%s.metric' % where, metric, 'not a metric of the report (%s)' % ', '.join(sorted(METRICS)),
                             'use %s' % close if close else 'use one of them')
            if 'min' not in gate and 'max' not in gate:
                problems.add(where, gate, 'a gate needs min or max', 'add min: <number> or max: <number>')
            for key in ('min', 'max'):
                if key in gate and (isinstance(gate[key], bool) or not isinstance(gate[key], (int, float))):
                    problems.add('%s.%s' % (where, key), gate[key], 'must be a number', 'give a number')


def read(variables, overrides, problems, scope):
    """The llmops_* settings of the host: (values, sources). values has every declared name, defaults applied."""
    merged = dict(variables)
    sources = {}
    for name in variables:
        if name.startswith('llmops_'):
            sources[name] = 'inventory'
    if overrides:
        if not isinstance(overrides, dict):
            problems.add('deployment_overrides', overrides, 'must be a mapping of llmops_* names to values',
                         'give e.g. {llmops_http_port: 30001}')
        else:
            for name, value in overrides.items():
                if name not in BY_NAME:
                    close = nearest(name, BY_NAME)
                    problems.add('deployment_overrides.%s' % name, value, 'no such llmops_* setting',
                                 'rename it to %s' % close if close else 'remove it')
                    continue
                merged[name] = value
                sources[name] = 'override'
    values = {}
    for name, entry in BY_NAME.items():
        raw = merged.get(name)
        if raw is None or (isinstance(raw, str) and raw == '' and name not in _EMPTY_MEANS_NONE):
            values[name] = entry['default'] if entry['default'] is None else _copy(entry['default'])
            if name not in sources or raw is None:
                sources[name] = 'default'
            continue
        value = coerce(entry, raw, problems)
        if value is not NOVALUE:
            value = check_bounds(entry, value, problems)
        if value is NOVALUE:
            sources[name] = 'invalid'  # already refused: later rules do not report it again as missing
            value = None
        values[name] = value
    check_privileged_port(values.get('llmops_http_port'), problems)
    env = values.get('llmops_environment') or {}
    for key, value in sorted(env.items()):
        if not _ENV_NAME.match(str(key)):
            problems.add('llmops_environment.%s' % key, value, 'not an environment variable name',
                         'use letters, digits and _ only, not starting with a digit')
        elif isinstance(value, (dict, list)):
            problems.add('llmops_environment.%s' % key, value, 'must be a string or number', 'give a scalar')
        elif str(key) in DECIDED_ENV:
            decided = DECIDED_ENV[key]
            then = '' if decided.startswith('nothing') else ' and set ' + decided.split(' ')[0]
            problems.add('llmops_environment.%s' % key, value, 'the collection renders %s itself and this entry would '
                         'override it in the unit; it is decided by %s' % (key, decided),
                         'remove %s from llmops_environment%s' % (key, then))
        elif str(key) in ('SGLANG_API_KEY', 'HF_TOKEN', 'HUGGING_FACE_HUB_TOKEN'):
            problems.add('llmops_environment.%s' % key, '<secret>', 'a secret would be written into the unit '
                         '(world-readable)', 'use llmops_api_key (SGLANG_API_KEY) or sglang_server_secret_environment')
    return values, sources


def check_privileged_port(port, problems):
    """The SGLang unit drops every capability (CapabilityBoundingSet= empty, a non-root service user: docs/
    sglang_server.md, hardening), so it cannot bind a port below 1024: SGLang would die at start-up with
    'Permission denied' after the download and the weight load."""
    if isinstance(port, int) and not isinstance(port, bool) and 0 < port < 1024:
        problems.add('llmops_http_port', port, 'ports below 1024 need CAP_NET_BIND_SERVICE, which the SGLang unit '
                     'drops (it runs without capabilities)', 'use a port of 1024 or more, e.g. 30000 (the default); '
                     'put the gateway (sglang_gateway) or a reverse proxy on 80/443')


def _copy(value):
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return value
