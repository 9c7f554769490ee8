# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Resolve one SGLang server's deployment, once: precedence, validation, the VRAM plan, the command line.

PRIVATE to the collection. ``resolve_server(ctx)`` returns ``(deployment, problems)``: the documented
``llmops_deployment`` object (docs/deployment_resolver.md, schema 1) and the refusals found, each naming the variable, the
value, the rule and the fix. The planner runs once and the renderer once, on the same resolved inputs, so the plan
and the command line cannot describe two different servers. Variants (``llmops_variants``) are resolved the same
way, with their overrides on top.

``ctx`` (built by the deployment_info action from the host's variables; see plugins/action/deployment_info.py):
  host, groups (group name -> hosts), settings + sources (deployment_inputs.read), profiles (pin, table, model,
  gpu, model_names, gpu_names, dir), lxc_vars (the llmops_* settings of the container's Proxmox host, or None),
  env_api_key_set, api_key, p2p_verdict, variables (raw, for the variants), role_options.
"""


from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os
import posixpath
import re

from ansible_collections.llmops.inference.plugins.module_utils.sglang import flags as sglang_flags
from ansible_collections.llmops.inference.plugins.module_utils.sglang import layout as sglang_layout
from ansible_collections.llmops.inference.plugins.module_utils.sglang import release as sglang_release
from ansible_collections.llmops.inference.plugins.module_utils.sglang import startup as sglang_startup
from ansible_collections.llmops.inference.plugins.module_utils.model.config import ModelConfigError
from ansible_collections.llmops.inference.plugins.module_utils.model.config import model_facts as config_facts
from ansible_collections.llmops.inference.plugins.module_utils.common.choosing import nearest
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.problems import NOVALUE, Problems
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import fits as deployment_fits
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import provenance as deployment_provenance
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import tp_group as deployment_tp_group
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import tp_group_topology
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.engine import plan_inputs, render, run_plan
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.server_checks import (
    API_KEY,
    INSTANCE,
    check_draft,
    check_gpus,
    check_lxc,
    check_model,
    check_release_choice,
    facts_of_host,
    source_of,
    speculative_of,
)
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.spec import BY_NAME, SERVING_SETTINGS
from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan
from ansible_collections.llmops.inference.plugins.module_utils.planner.vram_report import render_markdown, render_text

SCHEMA = 1
_VARIANT = re.compile(r'^[A-Za-z0-9_.-]{1,64}$')
_VARIANT_KEYS = ('name', 'description', 'overrides', 'mtp')


def _settings_table(settings, sources, plan, rendered, model, draft_source, steps_source, tp_source):
    serving = model.get('serving') or {}
    table = {}
    for key in SERVING_SETTINGS:
        name = 'llmops_' + key
        value = settings.get(name)
        source = source_of(sources, name, 'default')
        if key == 'tp_size':
            value, source = settings['_tp'], tp_source
        elif key in ('mem_fraction_static', 'max_running_requests', 'context_length'):
            if value is None and plan and key == 'max_running_requests':
                # Not on the command line: SGLang's own choice, as the plan computes it (the total over DP workers).
                value = plan.get('max_running_requests_total')
                source = 'sglang default (no flag; the plan: bound by %s)' % str(
                    plan.get('max_running_requests_bound_by') or '?').replace('_', ' ')
            elif value is None and plan:
                value, source = plan.get(key), 'plan'
        elif key in ('speculative_num_draft_tokens', 'speculative_num_steps'):
            value, source = settings['_' + key], draft_source if key.endswith('tokens') else steps_source
        elif key in ('reasoning_parser', 'tool_call_parser'):
            if value is None:
                value, source = serving.get(key), 'profile' if serving.get(key) else 'sglang default'
        elif key == 'served_model_name':
            value = rendered['served']
            source = source if settings.get(name) is not None else 'profile'
        elif key == 'mamba_strategy':
            value = rendered['mamba_strategy']
            if settings.get(name) in (None, 'auto'):
                source = 'sglang default (auto resolved by the pinned release)'
        elif source == 'default':
            source = 'collection default' if BY_NAME[name]['default'] is not None else 'sglang default'
        table[key] = dict(value=value, source=source)
    return table


def _profile_file(settings, sub, name):
    """A profile file as the plan names it: profiles/<sub>/<name>.yml, or under llmops_profiles_dir."""
    return '%s/%s/%s.yml' % ((settings['llmops_profiles_dir'] or 'profiles').rstrip('/'), sub, settings[name])


def _record(ctx, settings, gpu, tp, version, instance):
    """Where the controller keeps this host's deployment record, and the measured free memory before load the plan
    uses (an earlier start of this host with the same GPU profile, TP size and SGLang release), with a note."""
    where = ctx.get('record') or {}
    out = dict(dir=where.get('dir'), instance_dir=None, startup_memory_file=None, measured=None, note=None)
    if not where.get('dir') or not settings['llmops_gpu_profile'] or not isinstance(tp, int):
        return out
    out['instance_dir'] = '%s/%s' % (where['dir'], instance)
    out['startup_memory_file'] = sglang_startup.measurement_file(where['dir'], settings['llmops_gpu_profile'], tp)
    if settings['llmops_plan_free_memory_before_load_gib'] is not None or not settings['llmops_plan_use_measured_memory']:
        return out
    group = ctx.get('tp_group')
    if group and ctx.get('record_base'):
        return _group_record(ctx, settings, gpu, tp, version, out, group)
    try:
        data = where['load'](out['startup_memory_file'])
    except (IOError, OSError, ValueError):
        return out  # nothing measured yet (or unreadable): the profile's estimate
    value, why = sglang_startup.usable_measurement(data, settings['llmops_gpu_profile'], tp, version)
    if value is None:
        out['note'] = 'free memory before load: %s is not used (%s); the plan uses the hardware profile\'s estimate' % (
            out['startup_memory_file'], why)
        return out
    estimate = (gpu.get('memory_total_mib') or 0) / 1024.0 - float(gpu.get('startup_overhead_gib') or 0)
    out['measured'] = dict(free_memory_before_load_gib=value, file=out['startup_memory_file'],
                           instance=data.get('instance'), start=data.get('start'), profile_estimate_gib=round(estimate, 3))
    out['note'] = ('free memory before load: %.2f GiB, measured by the start of %s on this host (%s, TP%d, SGLang %s; '
                   '%s), used instead of the hardware profile\'s estimate %.2f GiB (memory.total - startup_overhead_gib)'
                   % (value, data.get('instance') or '?', settings['llmops_gpu_profile'], tp, version,
                      out['startup_memory_file'], estimate))
    return out


def _group_record(ctx, settings, gpu, tp, version, out, group):
    """The measured free memory of a TP group: every node's own measurement, the smallest one. SGLang sizes the
    pools of every rank from the minimum over the ranks (distributed/bootstrap.py:193-212: get_available_gpu_memory
    with distributed=True all-reduces the minimum), so one node's figure alone would overestimate the others'."""
    found = []
    for item in group['ranks']:
        path = sglang_startup.measurement_file(posixpath.join(ctx['record_base'], item['host']),
                                               settings['llmops_gpu_profile'], tp)
        try:
            data = ctx['record']['load'](path)
        except (IOError, OSError, ValueError):
            return out  # a node without a measurement: the profile's estimate for all
        value, why = sglang_startup.usable_measurement(data, settings['llmops_gpu_profile'], tp, version)
        if value is None:
            out['note'] = ('free memory before load: %s of node %s is not used (%s); the plan uses the hardware '
                           'profile\'s estimate' % (path, item['host'], why))
            return out
        found.append((value, item['host'], path, data))
    value, host, path, data = min(found, key=lambda f: f[0])
    estimate = (gpu.get('memory_total_mib') or 0) / 1024.0 - float(gpu.get('startup_overhead_gib') or 0)
    out['measured'] = dict(free_memory_before_load_gib=value, file=path, instance=data.get('instance'),
                           start=data.get('start'), profile_estimate_gib=round(estimate, 3), node=host)
    out['note'] = ('free memory before load: %.2f GiB, the smallest of the %d nodes of TP group %s (measured on %s, '
                   '%s), used instead of the hardware profile\'s estimate %.2f GiB; SGLang sizes every rank from the '
                   'minimum' % (value, len(found), group['name'], host, path, estimate))
    return out


def _metrics_of(release, enabled, url_host, port):
    """What the server exports to Prometheus: the release's metric names by meaning (profiles/sglang_releases.yml)."""
    table = release.get('metrics') or {}
    path = table.get('path', '/metrics')
    return dict(enabled=bool(enabled), path=path, url='http://%s:%s%s' % (url_host, port, path),
                prefix=table.get('prefix'), source=table.get('source'),
                names=dict((key, family['name']) for key, family in sorted((table.get('families') or {}).items())))


def resolve_server(ctx, variant=None):
    """(deployment, problems) of one SGLang server; deployment is None when nothing could be resolved.

    The sections run in this order on one resolution state ``r`` (_resolve_release), each adding its refusals to
    problems: the profiles and the release, where the server runs (instance, model, TP size, GPUs, container, TP
    group), the API key, the release's choices, speculative decoding, the plan and the command line, the documented
    object, its warnings and settings table."""
    problems = ctx.get('problems') or Problems(ctx['host'])
    r = _resolve_release(ctx, problems)
    if r is None:
        return None, problems
    _resolve_placement(ctx, r)
    _check_api_key(ctx, r)
    _check_choices(r)
    _resolve_speculative(r)
    _plan_and_render(ctx, r, variant)
    deployment = _deployment(ctx, r)
    _finish(r, deployment)
    if variant:
        where = 'variant %s: ' % variant
        for item in problems.items:
            if not item.get('_prefixed'):
                item['variable'] = where + item['variable']
                item['_prefixed'] = True
    return deployment, problems


def _resolve_release(ctx, problems):
    """The resolution state with the profiles and the pinned release, or None when either is missing."""
    settings, sources = ctx['settings'], ctx['sources']
    prof = ctx['profiles']
    for name in ('llmops_model_profile', 'llmops_gpu_profile'):
        if not settings[name]:
            problems.add(name, NOVALUE, 'is required for a host of sglang_servers', 'set %s (one of: %s)' % (
                name, ', '.join(prof['model_names' if 'model' in name else 'gpu_names'])))
    model, gpu = prof.get('model'), prof.get('gpu')
    if model is None or gpu is None or prof.get('pin') is None:
        return None
    version, packages = _sglang_version(settings, prof['pin'])
    try:
        release = sglang_release.release(prof['table'], version)
    except sglang_release.ReleaseError as exc:
        if settings['llmops_sglang_version']:
            problems.add('llmops_sglang_version', settings['llmops_sglang_version'], str(exc),
                         'name a supported release (one with planner and flag rules and a lock in profiles/locks/), '
                         'or remove it to use the pin %s of profiles/sglang.yml' % prof['pin'].get('version'),
                         kind='release')
        else:
            problems.add('profiles/sglang.yml.version', prof['pin'].get('version'), str(exc),
                         'pin a release that has both planner and flag rules, or add the missing rules', kind='release')
        return None
    if version != sglang_release.normalize_version(prof['pin']['version']) and not glob.glob(
            os.path.join(prof['dir'], 'locks', 'sglang-%s-py*.txt' % version)):
        problems.add('llmops_sglang_version', settings['llmops_sglang_version'],
                     'sglang %s has rules in profiles/sglang_releases.yml but no pip lock in %s/locks/: a host would '
                     'install an unproved resolution' % (version, prof['dir'].rstrip('/')),
                     'add its lock and proof (make sglang-release VERSION=%s; docs/upgrade.md), or remove '
                     'llmops_sglang_version to use the pin %s' % (version, prof['pin'].get('version')), kind='release')
        return None
    return dict(problems=problems, settings=settings, sources=sources, prof=prof, model=model, gpu=gpu,
                release=release, sglang_version=version, sglang_packages=packages, serving=model.get('serving') or {},
                plan=None, plan_error=None, rendered=None, provenance=[])


def _sglang_version(settings, pin):
    """The SGLang release this server runs and its pip requirements: llmops_sglang_version, else the pin of
    profiles/sglang.yml (with its packages); another release is sglang==<version>, whose lock pins its kernel."""
    pinned = sglang_release.normalize_version(pin['version'])
    wanted = settings['llmops_sglang_version']
    version = sglang_release.normalize_version(wanted) if wanted else pinned
    if version == pinned:
        return version, ['%s==%s' % (k, v) for k, v in sorted((pin.get('packages') or {}).items())]
    return version, ['sglang==%s' % version]


def _resolve_placement(ctx, r):
    """Where the server runs: its instance name, the model directory, the TP size, this node's GPUs, the container,
    the TP group's ranks and ports, the host's facts."""
    settings, problems, release = r['settings'], r['problems'], r['release']
    instance = r['instance'] = settings['llmops_instance_name'] or settings['llmops_model_profile']
    if not INSTANCE.match(instance or ''):
        problems.add('llmops_instance_name', instance, 'letters, digits, dot, dash and underscore only (it names the '
                     'unit sglang-<name>.service)', 'e.g. %s' % re.sub(r'[^A-Za-z0-9_.-]+', '-', instance or 'x'))
    r['model_facts'] = check_model(ctx, settings, r['model'], problems)
    tp = settings['llmops_tp_size']
    tp_source = source_of(r['sources'], 'llmops_tp_size', 'profile')
    if tp is None:
        tp, tp_source = r['serving'].get('tp_size'), 'profile'
    r['tp'], r['tp_source'] = tp, tp_source
    settings = r['settings'] = dict(settings)
    settings['_tp'] = tp
    group = r['group'] = ctx.get('tp_group')
    nnodes = r['nnodes'] = group['nnodes'] if group else 1
    # The GPUs of this node: a node of a TP group holds tp / nnodes of them (sglang_flags refuses the rest).
    per_node = sglang_flags.gpus_per_node(tp, nnodes)
    node_tp = r['node_tp'] = tp if per_node is None else per_node
    # A node whose group was refused has no per-node GPU count to check against (the group's refusal says why).
    r['indices'] = check_gpus(ctx, settings, tp if group or not settings['llmops_tp_group'] else None, problems,
                              nnodes)
    r['lxc'] = check_lxc(ctx, settings, node_tp, problems)
    if group and isinstance(tp, int):
        deployment_tp_group.finish(group, tp, bool(settings['llmops_enable_dp_attention'] and
                                                   (settings['llmops_dp_size'] or 1) > 1),
                                   settings['llmops_http_port'], problems,
                                   formed_when=[(release.get('flags') or {}).get('parallel_end')])
    r['host_facts'] = facts_of_host(ctx, settings)


def _check_api_key(ctx, r):
    """The API key the unit gets from the controller's environment: required unless allowed off, printable ASCII."""
    settings, problems = r['settings'], r['problems']
    key_set = r['key_set'] = bool(ctx.get('api_key'))
    r['key_warning'] = None
    if not key_set and not settings['llmops_allow_no_api_key'] and not ctx.get('require_secrets', True):
        r['key_warning'] = ('no API key in this environment: the deploy refuses to serve without one (export '
                            'SGLANG_API_KEY on the controller, or set llmops_allow_no_api_key: true)')
    elif not key_set and not settings['llmops_allow_no_api_key']:
        problems.add('llmops_api_key', NOVALUE, 'no API key: SGLANG_API_KEY is not set on the controller and the '
                     'inventory sets none', 'export SGLANG_API_KEY on the controller (or set llmops_api_key from a '
                     'vault); llmops_allow_no_api_key: true serves without authentication')
    elif key_set and not API_KEY.match(ctx['api_key']):
        problems.add('llmops_api_key', '<secret>', 'must be printable ASCII without control characters (a newline, a '
                     'tab or a non-ASCII character cannot travel in the Authorization header as is) and without blanks '
                     'at either end (servers trim them)', 'generate one with: openssl rand -hex 32')


def _check_choices(r):
    """Values the pinned release's argparse must accept: dtypes, backend, mamba strategy, the parsers (the
    inventory's, else the profile's)."""
    settings, problems, release = r['settings'], r['problems'], r['release']
    for name, key in (('llmops_mamba_strategy', 'mamba_strategy'), ('llmops_mamba_ssm_dtype', 'mamba_ssm_dtype'),
                      ('llmops_kv_cache_dtype', 'kv_cache_dtype'), ('llmops_attention_backend', 'attention_backend')):
        check_release_choice(problems, release, name, settings[name], key, extra=('auto',))
    for key in ('reasoning_parser', 'tool_call_parser'):
        name = 'llmops_' + key
        value = settings[name]
        if value is None:
            value = r['serving'].get(key)
            if value:
                check_release_choice(problems, release, name, value, key,
                                     where="the profile's serving.%s: " % key)
        elif value:
            check_release_choice(problems, release, name, value, key)


def _resolve_speculative(r):
    """Speculative decoding: draft tokens, steps and topk (the inventory's, the profile's, or SGLang's auto choice
    for the architecture), with their sources, and the EAGLE-3 draft checkpoint."""
    settings, problems, release, model = r['settings'], r['problems'], r['release'], r['model']
    serving = r['serving']
    draft, steps, draft_source, steps_source = speculative_of(settings, serving, r['sources'])
    # The profile config's architecture facts, once for this server: the speculative auto parameters, the plan and the
    # command line read the same (None: a config they refuse, each with its own words, as before).
    arch_facts = r['arch_facts'] = vram_plan.model_facts_once(model.get('config'), release)
    spec_profile = serving.get('speculative') or {}
    topk = spec_profile.get('eagle_topk')
    if (not draft and settings['llmops_speculative_num_draft_tokens'] is None and spec_profile.get('algorithm')
            and spec_profile.get('num_draft_tokens') is None):
        # The profile names the algorithm only: steps / topk / draft tokens as SGLang chooses them for the target
        # architecture (speculative_hook.py:1430-1461), rendered explicitly.
        try:
            arch = (arch_facts or config_facts(model.get('config'), release['architectures']))['arch']
            steps, topk, draft = sglang_layout.speculative_params(release, arch, spec_profile['algorithm'], steps, topk)
            draft_source = 'sglang default (auto for %s)' % arch
            steps_source = steps_source if settings['llmops_speculative_num_steps'] is not None else draft_source
        except (ModelConfigError, sglang_layout.LayoutError) as exc:
            problems.add('llmops_speculative_num_steps', settings['llmops_speculative_num_steps'], str(exc),
                         'give num_steps, eagle_topk and num_draft_tokens in the profile\'s serving.speculative')
    r.update(draft=draft, steps=steps, draft_source=draft_source, steps_source=steps_source)
    settings['_speculative_num_draft_tokens'], settings['_speculative_num_steps'] = draft, steps
    settings['_speculative_eagle_topk'] = topk if draft else None
    settings['_speculative_algorithm'] = spec_profile.get('algorithm') if draft else None
    draft_dir = r['draft_dir'] = check_draft(settings, model, r['model_facts'], problems) if draft else None
    r['model_facts']['draft'] = draft_dir
    settings['_draft_model_path'] = draft_dir['path'] if draft_dir else None
    settings['_draft_model_config'] = spec_profile['draft'].get('config') if draft_dir else None


def _plan_and_render(ctx, r, variant):
    """The VRAM plan (once) and the command line (once), when nothing was refused so far; the provenance of every
    flag, then the plan's reports."""
    settings, problems, prof, gpu = r['settings'], r['problems'], r['prof'], r['gpu']
    if settings['llmops_plan_concurrency'] is not None and not settings['llmops_plan_concurrency']:
        problems.add('llmops_plan_concurrency', [], 'needs at least one level', 'e.g. [1, 8, 32]')
    venv = r['venv'] = settings['llmops_sglang_venv'] or '/opt/sglang/venv-%s' % r['sglang_version']
    r['launcher'] = settings['llmops_sglang_launcher'] or [venv + '/bin/python', '-m', 'sglang.launch_server']
    record = r['record'] = _record(ctx, settings, gpu, r['tp'], r['sglang_version'], r['instance'])
    if record['measured'] is not None:
        settings['llmops_plan_free_memory_before_load_gib'] = record['measured']['free_memory_before_load_gib']
    if problems:
        return
    model, release, tp, draft, steps = r['model'], r['release'], r['tp'], r['draft'], r['steps']
    inputs = plan_inputs(ctx, settings, model, gpu, release, tp, draft, steps, r['model_facts'].get('path'),
                         r['arch_facts'])
    plan, r['plan_error'] = run_plan(ctx, settings, inputs, problems)
    r['plan'] = plan
    if plan is None:
        return
    if record['measured'] is not None:
        plan['free_memory_source'] = 'measured on this host'
    if not plan['fits'] and settings['llmops_plan_must_fit']:
        problems.add('llmops_plan_min_headroom_gib', settings['llmops_plan_min_headroom_gib'],
                     '%s: %s' % (plan['verdict'], (plan['limits'] or [''])[0]),
                     'read the plan (make plan, plan.md) and apply one of its recommendations, or set '
                     'llmops_plan_must_fit: false', kind='plan_fit')
    rendered = r['rendered'] = render(ctx, settings, model, gpu, release, plan, tp, draft, steps, r['model_facts'],
                                      r['host_facts'], r['indices'], problems, r['arch_facts'])
    if rendered:
        r['provenance'] = deployment_provenance.rows(dict(
            settings=settings, sources=r['sources'], model=model, gpu=gpu, release=release, plan=plan,
            rendered=rendered, model_facts=r['model_facts'], group=r['group'], lxc_host=settings['llmops_lxc_host'],
            launcher=r['launcher'], instance=r['instance'], api_key_set=r['key_set'], draft_source=r['draft_source'],
            steps_source=r['steps_source'], tp_source=r['tp_source'], speculative=dict(draft=draft, steps=steps),
            p2p_verdict=ctx.get('p2p_verdict') or '',
            release_entry=((prof.get('table') or {}).get('releases') or {}).get(r['sglang_version']) or {},
            model_file=_profile_file(settings, 'models', 'llmops_model_profile'),
            gpu_file=_profile_file(settings, 'hardware', 'llmops_gpu_profile')))
    _plan_reports(ctx, r, variant, inputs['max_tp'])


def _plan_reports(ctx, r, variant, max_tp):
    """plan.md and the console lines of the plan, the TP group's topology, and (not for a variant) what else fits."""
    plan, group, gpu, settings = r['plan'], r['group'], r['gpu'], r['settings']
    gpu_name = gpu.get('display_name') or gpu.get('name')
    title = '%s: %s on %s%dx %s, TP%d' % (
        ctx['host'], r['model'].get('name'), '%d nodes x ' % r['nnodes'] if group else '', r['node_tp'],
        gpu_name, r['tp'])
    flags = r['rendered']['argv'] if r['rendered'] else None
    plan['report_markdown'] = render_markdown(plan, title, flags, r['provenance'])
    plan['report_lines'] = render_text(plan, title)
    plan['title'] = title
    if group and group.get('port_block'):
        shown = (deployment_tp_group.public(group), group['head_http_host'], settings['llmops_http_port'],
                 'sglang-%s.service' % r['instance'], gpu_name)
        plan['report_markdown'] += tp_group_topology.markdown(*shown)
        plan['report_lines'] += [''] + tp_group_topology.picture(*shown)
    if variant is None:
        # The GPUs this server can use (the container's), else what the host has (one node of a TP group).
        max_gpus = len(r['indices']) if r['indices'] else (max_tp or r['node_tp'])
        fits = deployment_fits.table(r['prof'].get('models') or {}, gpu, r['release'], max_gpus,
                                     current=settings['llmops_model_profile'])
        plan['what_else_fits'] = fits
        plan['report_markdown'] += '\n'.join(deployment_fits.markdown(fits, gpu_name, max_gpus)) + '\n'


def _deployment(ctx, r):
    """The documented llmops_deployment object of the server (docs/deployment_resolver.md, schema 1)."""
    settings, prof, release, gpu, group = r['settings'], r['prof'], r['release'], r['gpu'], r['group']
    rendered, plan, indices, instance = r['rendered'], r['plan'], r['indices'], r['instance']
    venv, launcher = r['venv'], r['launcher']
    argv = rendered['argv'] if rendered else []
    command = list(launcher) + argv
    environment = rendered['env'] if rendered else {}
    http_host = settings['llmops_http_host'] if not group or group['is_head'] else '127.0.0.1'
    url_host = '127.0.0.1' if http_host in ('0.0.0.0', '::', '') else http_host
    if ':' in url_host and not url_host.startswith('['):
        url_host = '[%s]' % url_host
    spec = None
    if rendered and rendered.get('speculative'):
        spec = dict(rendered['speculative'])
        spec['expected_accept_length'] = (r['serving'].get('speculative') or {}).get('expected_accept_length')
    return dict(
        schema=SCHEMA, kind='sglang_server', host=ctx['host'], instance=instance, unit='sglang-%s.service' % instance,
        profiles=dict(dir=prof['dir'], model=settings['llmops_model_profile'], gpu=settings['llmops_gpu_profile']),
        sglang=dict(version=r['sglang_version'], packages=r['sglang_packages'],
                    venv=venv, python=venv + '/bin/python', launcher=list(launcher),
                    # The pip lock of the pin for the host's Python X.Y (controller path; tests/tools/sglang_lock.py).
                    lock_template='%s/locks/sglang-%s-py{python}.txt' % (prof['dir'].rstrip('/'), r['sglang_version']),
                    rules=dict(family=release.get('planner_family'), source=release.get('source')),
                    # Packages of the programs the release runs from PATH (numactl for its NUMA binding).
                    host_packages=sorted(set(p['package'] for p in (release.get('host_programs') or {}).values())),
                    # The pip check lines of the release's install overrides: the only ones the installer accepts.
                    pip_check_accepted=sglang_release.pip_check_accepted(r['sglang_version'],
                                                                         release.get('install_overrides')),
                    parser_python=settings['llmops_parser_python']),
        model=r['model_facts'],
        gpus=dict(profile=settings['llmops_gpu_profile'], display_name=gpu.get('display_name') or gpu.get('name'),
                  indices=indices, count=len(indices) if indices else r['node_tp'],
                  compute_capability=gpu.get('compute_capability'),
                  memory_total_mib=gpu.get('memory_total_mib')),
        parallel=dict(tp_size=r['tp'], pp_size=1, nnodes=r['nnodes'], node_rank=group['node_rank'] if group else 0,
                      dist_init_addr=group['dist_init_addr'] if group else None,
                      dist_timeout=group['dist_timeout'] if group else None, dp_size=settings['llmops_dp_size'],
                      enable_dp_attention=settings['llmops_enable_dp_attention'],
                      attn_tp_size=plan['attn_tp_size'] if plan else None),
        http=dict(host=http_host, port=settings['llmops_http_port'],
                  url='http://%s:%s' % (url_host, settings['llmops_http_port'])),
        auth=dict(api_key_set=r['key_set'], allow_no_api_key=settings['llmops_allow_no_api_key']),
        metrics=_metrics_of(release, settings['llmops_enable_metrics'], url_host, settings['llmops_http_port']),
        lxc=r['lxc'], host_facts=r['host_facts'], tp_group=deployment_tp_group.public(group),
        settings=None, plan=plan, plan_error=r['plan_error'],
        argv=argv, command=command, exec_start=sglang_flags.exec_start(command), provenance=r['provenance'],
        environment=environment,
        environment_lines=[sglang_flags.systemd_quote('%s=%s' % kv) for kv in sorted(environment.items())],
        speculative=spec, mamba_strategy=rendered['mamba_strategy'] if rendered else None,
        nccl=dict(p2p_disable=bool(rendered and rendered['nccl_p2p_disable']),
                  reason=rendered['nccl_p2p_reason'] if rendered else None, p2p_verdict=ctx.get('p2p_verdict') or ''),
        deploy=dict(check_driver=settings['llmops_deploy_check_driver'],
                    check_gpus=settings['llmops_deploy_check_gpus'], p2p_check=settings['llmops_deploy_p2p_check'],
                    p2p_recheck=settings['llmops_p2p_recheck'],
                    remove_previous_model=settings['llmops_remove_previous_model']),
        record=dict((k, v) for k, v in r['record'].items() if k != 'note'),
        notes=list(rendered['notes']) if rendered else [],
        warnings=list(rendered['warnings']) if rendered else [],
        variants=[],
    )


def _finish(r, deployment):
    """The resolver's own warnings and notes, then the settings table (value and source of every serving setting)."""
    settings, plan, rendered = r['settings'], r['plan'], r['rendered']
    if r['key_warning']:
        deployment['warnings'].append(r['key_warning'])
    if r['record']['note']:
        deployment['notes'].append(r['record']['note'])
    asked = settings['llmops_max_running_requests']
    if plan and asked is not None and plan.get('max_running_requests_total') != asked:
        deployment['warnings'].append(
            'llmops_max_running_requests %d: SGLang caps it to %d (%s)%s; the unit renders %d'
            % (asked, plan['max_running_requests'], plan.get('max_running_requests_bound_by'),
               ' per DP worker x %d workers' % plan['attn_dp_size'] if plan.get('attn_dp_size', 1) > 1 else '',
               plan['max_running_requests_total']))
    if r['model_facts']['lock']['note']:
        deployment['warnings'].append(r['model_facts']['lock']['note'])
    if r['draft_dir'] and r['draft_dir']['note']:
        deployment['warnings'].append(r['draft_dir']['note'])
    if rendered and rendered.get('speculative'):
        # What runs (topk 1 forces draft tokens = steps + 1), not what was asked.
        settings['_speculative_num_draft_tokens'] = rendered['speculative']['num_draft_tokens']
    if rendered:
        deployment['settings'] = _settings_table(settings, r['sources'], plan, dict(
            served=r['model_facts']['served_model_name'], mamba_strategy=deployment['mamba_strategy']), r['model'],
            r['draft_source'], r['steps_source'], r['tp_source'])


def check_variants(variants, problems):
    """The shape of llmops_variants; returns the valid entries."""
    out, names = [], set()
    for index, variant in enumerate(variants or []):
        where = 'llmops_variants[%d]' % index
        if not isinstance(variant, dict):
            problems.add(where, variant, 'must be a mapping {name, description, overrides, mtp}',
                         'e.g. {name: no-mtp, overrides: {llmops_speculative_num_draft_tokens: 0}}')
            continue
        unknown = sorted(set(variant) - set(_VARIANT_KEYS))
        for key in unknown:
            close = nearest(key, _VARIANT_KEYS)
            problems.add('%s.%s' % (where, key), variant[key], 'unknown key of a variant (%s)' % ', '.join(_VARIANT_KEYS),
                         'rename it to %s' % close if close else 'remove it')
        name = variant.get('name')
        if not isinstance(name, str) or not _VARIANT.match(name):
            problems.add('%s.name' % where, name, 'letters, digits, . _ - (it names result directories)',
                         'e.g. no-mtp')
            continue
        if name in names or name == 'original':
            problems.add('%s.name' % where, name, 'names must be unique and not "original"', 'rename it')
            continue
        names.add(name)
        overrides = variant.get('overrides') or {}
        if not isinstance(overrides, dict):
            problems.add('%s.overrides' % where, overrides, 'must be a mapping of llmops_* settings',
                         'e.g. {llmops_speculative_num_draft_tokens: 0}')
            continue
        bad = [k for k in overrides if k not in BY_NAME]
        for key in bad:
            close = nearest(key, BY_NAME)
            problems.add('%s.overrides.%s' % (where, key), overrides[key], 'no such llmops_* setting',
                         'rename it to %s' % close if close else 'remove it')
        if bad:
            continue
        out.append(dict(name=name, description=str(variant.get('description') or ''), overrides=dict(overrides),
                        mtp=variant.get('mtp')))
    return out
