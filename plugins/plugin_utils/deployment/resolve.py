# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One host's resolution from start to end, without Ansible: names, profiles, settings, server or Proxmox host.

PRIVATE to the collection. The deployment_info action hands over what only Ansible knows (the host's rendered
variables, the groups, the other hosts' variables) and a loader for the profile files; everything else happens
here, so unit tests drive exactly the code the playbooks run.

``resolve(request, loader)``: request = dict(host, groups, variables (name -> value: every variable with a
collection prefix the host has), vars_of (callable: host -> such a dict, for the container's Proxmox host and a
Proxmox host's containers), overrides, p2p_verdict, require_secrets, api_key, collection_profiles, role_options,
parse (optional callable (python, [argv, ...]) -> [(ok, message), ...]: SGLang's own parser, every command line
in one call), playbook_dir (optional: the default llmops_record_dir is build/deploy beside it)). loader = object
with ``load(path)`` (parsed YAML or JSON; raises IOError/OSError/ValueError) and ``names(directory)`` (profile
names without .yml).
Returns (deployment, Problems).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath

from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import server as server_resolver
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import gateway as deployment_gateway
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import hosts as deployment_hosts
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import inputs as deployment_inputs
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import tp_group as deployment_tp_group
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import model_revision
from ansible_collections.llmops.inference.plugins.module_utils.common.choosing import nearest
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.problems import NOVALUE, Problems
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.profile_schema import (
    check_hardware,
    check_model,
    check_pin,
)


def _add_found(problems, found):
    for where, value, rule, fix in found:
        problems.add('profiles/' + where, value if value is not None else NOVALUE, rule, fix, kind='profile')


def load_profiles(settings, problems, loader, default_dir):
    """pin, release table, model and GPU profile of a server, each schema-checked; loaded once per run."""
    directory = settings['llmops_profiles_dir'] or default_dir
    out = dict(dir=directory, pin=None, table=None, model=None, gpu=None,
               model_names=loader.names(posixpath.join(directory, 'models')),
               gpu_names=loader.names(posixpath.join(directory, 'hardware')))
    if not directory.startswith('/'):
        problems.add('llmops_profiles_dir', directory, 'must be an absolute path', 'give the absolute path')
        return out
    for key, name, checker in (('pin', 'sglang.yml', check_pin), ('table', 'sglang_releases.yml', None)):
        try:
            data = loader.load(posixpath.join(directory, name))
        except (IOError, OSError, ValueError) as exc:
            problems.add('llmops_profiles_dir', directory, 'cannot read %s: %s' % (name, exc),
                         'point llmops_profiles_dir at a directory with sglang.yml, sglang_releases.yml, models/ and '
                         'hardware/ (or leave it null)', kind='profile')
            continue
        if checker:
            found = checker(data)
            _add_found(problems, found)
            if found:
                continue
        out[key] = data
    for key, setting, sub, checker in (('model', 'llmops_model_profile', 'models', check_model),
                                       ('gpu', 'llmops_gpu_profile', 'hardware', check_hardware)):
        name = settings[setting]
        if not name:
            continue
        names = out['model_names' if key == 'model' else 'gpu_names']
        if name not in names:
            close = nearest(name, names)
            problems.add(setting, name, 'no profile %s/%s/%s.yml (known: %s)' % (directory, sub, name,
                         ', '.join(names) or 'none'), 'use %s' % close if close else 'add the profile', kind='profile')
            continue
        try:
            data = loader.load(posixpath.join(directory, sub, name + '.yml'))
        except (IOError, OSError, ValueError) as exc:
            problems.add(setting, name, 'cannot read the profile: %s' % exc, 'fix the YAML', kind='profile')
            continue
        found = checker(name, data)
        _add_found(problems, found)
        if not found:
            out[key] = data
    # Every model profile that reads and passes its schema, for the plan's "what else fits" table.
    out['models'] = {}
    for name in out['model_names']:
        try:
            data = loader.load(posixpath.join(directory, 'models', name + '.yml'))
        except (IOError, OSError, ValueError):
            continue
        if not check_model(name, data):
            out['models'][name] = data
    return out


def load_lock(request, settings, problems, loader):
    """(path, parsed lock or None) of the model revision lock; a missing file is an empty lock."""
    path = settings['llmops_model_lock_file'] or posixpath.join(request.get('inventory_dir') or '.', 'llmops-lock.yml')
    try:
        data = loader.load(path)
    except (IOError, OSError):
        return path, None
    except ValueError as exc:
        problems.add('llmops_model_lock_file', path, 'cannot read the lock: %s' % exc,
                     'restore it from version control, or delete it to lock again', kind='lock')
        return path, None
    found = model_revision.check_lock(data, path)
    for where, value, rule, fix in found:
        problems.add(where, value if value is not None else NOVALUE, rule, fix, kind='lock')
    return path, (None if found else data)


def _server(request, loader, settings, sources, problems):
    profiles = load_profiles(settings, problems, loader, request['collection_profiles'])
    lock_file, lock = load_lock(request, settings, problems, loader)
    lxc_vars = None
    lxc_host = settings['llmops_lxc_host']
    if lxc_host and lxc_host in (request.get('groups') or {}).get('proxmox_hosts', []):
        lxc_vars, dummy = deployment_inputs.read(request['vars_of'](lxc_host), {}, Problems(lxc_host), 'proxmox')
    record_dir = settings['llmops_record_dir'] or posixpath.join(
        posixpath.dirname((request.get('playbook_dir') or request['collection_profiles']).rstrip('/')), 'build', 'deploy')
    if not record_dir.startswith('/'):
        problems.add('llmops_record_dir', record_dir, 'must be an absolute path (a directory on the controller)',
                     'give the absolute path, or null for build/deploy beside the playbooks directory')
    ctx = dict(host=request['host'], groups=request['groups'], settings=settings, sources=sources,
               record=dict(dir=posixpath.join(record_dir, request['host']), load=loader.load),
               profiles=profiles, lxc_vars=lxc_vars, api_key=request.get('api_key') or '',
               # The container's own lxc_gpu role variables the resolver decides from (its GPUs, its cpuset).
               lxc_role=dict((k, v) for k, v in request['variables'].items() if k in ('lxc_gpu_addresses', 'lxc_gpu_cpuset')),
               p2p_verdict=request.get('p2p_verdict') or '', require_secrets=request.get('require_secrets', True),
               model_lock=lock, model_lock_file=lock_file, model_commit=request.get('model_commit') or None,
               problems=problems)
    # A node of a multi-node TP group: its peers' variables, checked against the head's (docs/multinode.md).
    ctx['tp_group'] = deployment_tp_group.read(request, settings, problems)
    ctx['record_base'] = record_dir
    deployment, problems = server_resolver.resolve_server(ctx)
    variants = server_resolver.check_variants(settings['llmops_variants'], problems)
    if deployment is None or problems:
        return deployment, problems
    for variant in variants:
        merged = dict(request.get('overrides') or {})
        merged.update(variant['overrides'])
        v_problems = Problems(request['host'])
        v_settings, v_sources = deployment_inputs.read(request['variables'], merged, v_problems, 'server')
        v_deployment, v_problems = server_resolver.resolve_server(
            dict(ctx, settings=v_settings, sources=v_sources, problems=v_problems), variant=variant['name'])
        problems.items.extend(v_problems.items)
        if v_deployment is not None:
            v_deployment.pop('variants', None)
            entry = dict(variant)
            entry['deployment'] = v_deployment
            if entry['mtp'] is None:
                entry['mtp'] = bool(v_deployment.get('speculative'))
            deployment['variants'].append(entry)
    parse = request.get('parse')
    python = settings['llmops_parser_python']
    if python and parse and not problems:
        items = [('', deployment)] + [('variant %s: ' % v['name'], v['deployment']) for v in deployment['variants']]
        for (label, item), (ok, message) in zip(items, parse(python, [i['argv'] for _l, i in items])):
            if ok:
                item['sglang']['parsed_by'] = '%s (sglang %s)' % (python, message)
            else:
                problems.add(label + 'llmops_extra_args', settings['llmops_extra_args'],
                             "SGLang's own argument parser (%s) refuses the command line: %s" % (python, message),
                             'use flags and values the pinned SGLang accepts (sglang serve --help)', kind='parser')
    return deployment, problems


def _proxmox(request, loader, settings, problems):
    containers = []
    for name in (request.get('groups') or {}).get('sglang_servers', []):
        ct_vars = request['vars_of'](name)
        if ct_vars.get('llmops_lxc_host') != request['host']:
            continue
        ct_settings, dummy = deployment_inputs.read(ct_vars, {}, Problems(name), 'server')
        containers.append(dict(host=name, ctid=ct_settings['llmops_lxc_ctid'],
                               numa_node=ct_settings['llmops_lxc_numa_node'],
                               addresses=ct_vars.get('lxc_gpu_addresses') or []))
    directory = settings['llmops_profiles_dir'] or request['collection_profiles']
    ctx = dict(host=request['host'], settings=settings, variables=request['variables'], containers=containers,
               gpu_names=loader.names(posixpath.join(directory, 'hardware')), problems=problems)
    return deployment_hosts.resolve_proxmox(ctx)


def _gateway(request, loader, settings, problems):
    directory = settings['llmops_profiles_dir'] or request['collection_profiles']
    try:
        profile = loader.load(posixpath.join(directory, 'sglang_gateway.yml'))
    except (IOError, OSError, ValueError):
        profile = None
    groups = request.get('groups') or {}
    replica_settings, served = {}, {}
    for name in settings['llmops_gateway_replicas'] or groups.get('sglang_servers', []):
        if name not in groups.get('sglang_servers', []):
            continue
        replica_settings[name], dummy = deployment_inputs.read(request['vars_of'](name), {}, Problems(name), 'server')
        model = replica_settings[name]['llmops_model_profile']
        r_dir = replica_settings[name]['llmops_profiles_dir'] or request['collection_profiles']
        try:
            served[name] = (loader.load(posixpath.join(r_dir, 'models', '%s.yml' % model)) or {}).get(
                'served_model_name') if model else None
        except (IOError, OSError, ValueError):
            served[name] = None  # the replica's own resolution refuses its profile
    ctx = dict(host=request['host'], settings=settings, groups=groups, replica_settings=replica_settings,
               served_names=served, gateway_profile=profile, profiles_dir=directory,
               api_key=request.get('api_key') or '', require_secrets=request.get('require_secrets', True),
               problems=problems)
    return deployment_gateway.resolve_gateway(ctx)


def resolve(request, loader):
    host = request['host']
    problems = Problems(host)
    variables = request['variables']
    deployment_inputs.check_names(variables, request.get('role_options') or {}, problems)
    deployment_inputs.check_role_types(variables, request.get('role_options') or {}, problems)
    deployment_inputs.check_benchmark(variables, problems)
    settings, sources = deployment_inputs.read(variables, request.get('overrides') or {}, problems, 'any')
    groups = request.get('groups') or {}
    if host in groups.get('sglang_gateways', []):
        if host in groups.get('sglang_servers', []) or host in groups.get('proxmox_hosts', []):
            problems.add('sglang_gateways', host, 'a host of sglang_gateways cannot also be in sglang_servers or '
                         'proxmox_hosts (each inventory host has one llmops_deployment)',
                         'give the gateway an inventory host of its own (it may be the same machine: ansible_host)')
            return None, problems
        return _gateway(request, loader, settings, problems)
    if host in groups.get('sglang_servers', []):
        return _server(request, loader, settings, sources, problems)
    if host in groups.get('proxmox_hosts', []):
        return _proxmox(request, loader, settings, problems)
    return dict(schema=1, kind='other', host=host), problems


def summary(deployment):
    """One line for the operator."""
    if not deployment:
        return ''
    if deployment.get('kind') == 'sglang_server':
        measured = (deployment.get('record') or {}).get('measured')
        return '%s: %s@%s -> %s, %s on %s, TP%s; plan: %s%s' % (
            deployment['host'], deployment['model']['repo_id'], deployment['model']['revision'],
            deployment['model']['path'], deployment['unit'], deployment['http']['url'],
            deployment['parallel']['tp_size'], (deployment['plan'] or {}).get('verdict'),
            ' (free memory before load %.2f GiB, measured on this host: %s)' % (
                measured['free_memory_before_load_gib'], measured['file']) if measured else '')
    if deployment.get('kind') == 'proxmox_host':
        return '%s: %d GPU(s), vfio-pci %s, nvidia %s, containers %s' % (
            deployment['host'], len(deployment['gpus']), ', '.join(deployment['vfio_addresses']) or 'none',
            ', '.join(deployment['nvidia_addresses']) or 'none',
            ', '.join(c['host'] for c in deployment['containers']) or 'none')
    if deployment.get('kind') == 'sglang_gateway':
        return '%s: smg %s on %s, policy %s, %d replica(s): %s' % (
            deployment['host'], deployment['gateway']['version'], deployment['http']['url'], deployment['policy'],
            len(deployment['replicas']), ', '.join('%s (%s)' % (r['host'], r['url']) for r in deployment['replicas']))
    return '%s: %s' % (deployment.get('host'), deployment.get('kind'))
