# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Where each value of the SGLang command line and of the unit's environment comes from (llmops_deployment.provenance).

PRIVATE to the collection. ``rows(view)`` returns one row per launcher, per rendered flag (in argv order) and per
environment variable of the unit (in the unit's order: the unit's own directories, ``Environment=`` lines, then the
EnvironmentFile), each ``dict(kind, name, value, source)``: kind ``command``, ``flag`` or ``env``; value the rendered
word (None for a flag without a value; ``<redacted>`` for a secret); source where it came from, in the words of
docs/deployment_resolver.md ("Provenance"): ``profile <file>: <key>``, ``inventory <variable>`` (``(overrides
profile <key> = <value>)`` where the profile has one), ``override <variable>``, ``collection default of
<variable>``, ``collection rule: ...``, ``release rule ...``, ``planner: plan.<field> ...``, ``TP group ...``.

Nothing is decided here: every value is the one the renderer wrote (``rendered``) and every source is read from what
the resolver already used to decide it (the sources of deployment_inputs.read, the model profile, the release table,
the plan, the host facts and the renderer's own reasons). ``view`` (built by deployment.resolve_server): settings,
sources, model (the profile), model_file, release, release_entry (the pin's entry of the release table), plan,
rendered, model_facts, group, lxc_host, launcher, instance, api_key_set, draft_source, steps_source, tp_source,
speculative (what was asked before the renderer's topk-1 rule), p2p_verdict.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.spec import BY_NAME

REDACTED = '<redacted>'
# The unit's own Environment= lines before the resolved environment (the sglang_server role's unit template writes
# them; a unit test holds the two to the same names and values, so the resolver never reads another role's files):
# (name, value with {instance}, why).
UNIT_ENVIRONMENT = (
    ('HOME', '%S/sglang/{instance}', 'the service\'s StateDirectory'),
    ('XDG_CACHE_HOME', '%C/sglang/{instance}', 'the service\'s CacheDirectory'),
    ('TRITON_CACHE_DIR', '%C/sglang/{instance}/triton', 'Triton\'s kernel cache inside the CacheDirectory'),
)
# Flags rendered straight from one llmops_* setting: flag -> (variable, the model profile's key for it or None).
_SETTING_FLAGS = {
    '--port': ('llmops_http_port', None),
    '--tp-size': ('llmops_tp_size', 'serving.tp_size'),
    '--dp-size': ('llmops_dp_size', None),
    '--enable-dp-attention': ('llmops_enable_dp_attention', None),
    '--reasoning-parser': ('llmops_reasoning_parser', 'serving.reasoning_parser'),
    '--tool-call-parser': ('llmops_tool_call_parser', 'serving.tool_call_parser'),
    '--max-mamba-cache-size': ('llmops_max_mamba_cache_size', None),
    '--mamba-full-memory-ratio': ('llmops_mamba_full_memory_ratio', None),
    '--disable-radix-cache': ('llmops_radix_cache', None),
    '--page-size': ('llmops_page_size', None),
    '--chunked-prefill-size': ('llmops_chunked_prefill_size', None),
    '--kv-cache-dtype': ('llmops_kv_cache_dtype', None),
    '--mamba-ssm-dtype': ('llmops_mamba_ssm_dtype', None),
    '--attention-backend': ('llmops_attention_backend', None),
    '--watchdog-timeout': ('llmops_watchdog_timeout', None),
    '--enable-metrics': ('llmops_enable_metrics', None),
    '--node-rank': ('llmops_node_rank', None),
    '--dist-timeout': ('llmops_dist_timeout', None),
}
# The renderer's reasons for NCCL_P2P_DISABLE (sglang_flags.nccl_p2p_disable), by how they start -> the input.
_P2P_INPUTS = (
    ('set explicitly', 'inventory llmops_nccl_p2p_disable'),
    ('gpu_p2p_check verdict', 'the gpu_p2p_check verdict {verdict} of this host (deployment_p2p_verdict)'),
    ('host has SEV-SNP', 'inventory llmops_host_sev_snp: true{of}'),
    ('host profile marks', 'inventory llmops_nccl_p2p_trusted: false{of}'),
    ('single GPU', 'collection rule: one GPU has no NCCL peer traffic'),
    ('no P2P verdict', 'collection rule: no verdict and nothing in the host facts against P2P'),
)
UNKNOWN = 'no provenance rule for this flag (a bug of llmops.inference: report it)'


def _show(value):
    return value if isinstance(value, str) else json.dumps(value)


def _profile_value(model, dotted):
    data = model or {}
    for key in dotted.split('.'):
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def setting(view, name, profile_key=None):
    """The source of one llmops_* setting as the resolver took it, or None when nothing but SGLang decides it."""
    src = view['sources'].get(name, 'default')
    prof = _profile_value(view['model'], profile_key) if profile_key else None
    if src in ('inventory', 'override'):
        text = 'inventory %s' % name if src == 'inventory' else \
            'override %s (deployment_overrides or the variant\'s overrides)' % name
        if prof is not None:
            same = ', the same value' if prof == view['settings'].get(name) else ''
            text += ' (overrides profile %s: %s = %s%s)' % (view['model_file'], profile_key, _show(prof), same)
        return text
    if prof is not None:
        return 'profile %s: %s' % (view['model_file'], profile_key)
    if BY_NAME[name]['default'] not in (None, [], {}):
        return 'collection default of %s (docs/reference.md)' % name
    return None


def _model_path(view):
    facts, settings = view['model_facts'], view['settings']
    if settings['llmops_model_path']:
        return setting(view, 'llmops_model_path')
    repo = setting(view, 'llmops_model_repo_id') or 'profile %s: hf_repo' % view['model_file']
    asked = setting(view, 'llmops_model_revision') or (
        'profile %s: hf_revision' % view['model_file'] if view['model'].get('hf_revision') else
        'collection default: no llmops_model_revision, no hf_revision in the profile')
    return ('%s, then the repository\'s name @ the revision: %s (%s) at %s (%s; revision %s)'
            % (setting(view, 'llmops_model_dir') or 'llmops_model_dir', facts['repo_id'], repo, facts['revision'],
               asked, facts['revision_source']))


def _served(view):
    if view['settings']['llmops_served_model_name'] is not None:
        return setting(view, 'llmops_served_model_name', 'served_model_name')
    if view['model'].get('served_model_name'):
        return 'profile %s: served_model_name' % view['model_file']
    return 'collection rule: the model path (no llmops_served_model_name, no served_model_name in the profile)'


def _host(view):
    group = view['group']
    if group and not group['is_head']:
        return ('TP group %s: a node of rank >= 1 binds only SGLang\'s health stub, on loopback (docs/multinode.md)'
                % group['name'])
    return setting(view, 'llmops_http_host')


def _spec(view, flag):
    """The speculative-decoding flags: the profile's serving.speculative, the operator's steps and draft tokens,
    SGLang's automatic choice, and the topk-1 rule that forces the draft tokens."""
    spec_profile = (view['model'].get('serving') or {}).get('speculative') or {}
    rendered = view['rendered']['speculative'] or {}
    auto = 'release rule defaults.speculative_auto_params(_by_arch) (profiles/sglang_releases.yml: SGLang %s\'s ' \
           'automatic choice for the target architecture)' % view['release']['version']
    if flag == '--speculative-algorithm':
        if spec_profile.get('algorithm'):
            return 'profile %s: serving.speculative.algorithm' % view['model_file']
        return 'collection default NEXTN (MTP: the profile names no algorithm)'
    if flag == '--speculative-eagle-topk':
        if spec_profile.get('eagle_topk') is not None:
            return 'profile %s: serving.speculative.eagle_topk' % view['model_file']
        return auto if view['draft_source'].startswith('sglang default (auto') else 'collection default 1'
    if flag == '--speculative-draft-model-path':
        return ('profile %s: serving.speculative.draft (hf_repo@hf_revision) beside the model, under %s'
                % (view['model_file'], setting(view, 'llmops_model_dir') or 'the model\'s directory'))
    if flag == '--speculative-num-steps':
        source, name, key = view['steps_source'], 'llmops_speculative_num_steps', 'serving.speculative.num_steps'
        if view['speculative']['steps'] is None:
            return 'collection rule: draft tokens - 1 (no num_steps in the profile)'
    else:
        source, name, key = view['draft_source'], 'llmops_speculative_num_draft_tokens', \
            'serving.speculative.num_draft_tokens'
    if source.startswith('sglang default (auto'):
        text = auto
    else:
        text = setting(view, name, key) or 'profile %s: %s' % (view['model_file'], key)
    asked = view['speculative']['draft']
    if flag == '--speculative-num-draft-tokens' and rendered.get('num_draft_tokens') != asked:
        text = ('release rule: with --speculative-eagle-topk 1 SGLang uses steps + 1 draft tokens '
                '(speculative_hook._handle_eagle_family); %s asked for %s' % (text, asked))
    return text


def _mamba(view):
    settings = view['settings']
    if settings['llmops_mamba_strategy'] not in (None, 'auto'):
        return setting(view, 'llmops_mamba_strategy')
    return ('release rule: SGLang %s resolves mamba strategy auto (%s) to %s (profiles/sglang_releases.yml: '
            'flags.mamba_auto = %s, with the overlap schedule, the page size and the architecture\'s extra_buffer '
            'support; flags.mamba_flag names the flag)'
            % (view['release']['version'], setting(view, 'llmops_mamba_strategy') or 'unset',
               view['rendered']['mamba_strategy'], view['release']['flags'].get('mamba_auto')))


def _overlap(view):
    if view['settings']['llmops_disable_overlap_schedule']:
        return setting(view, 'llmops_disable_overlap_schedule')
    return ('release rule: SGLang %s turns the overlap schedule off with the mamba strategy %s it resolved '
            '(profiles/sglang_releases.yml: flags.mamba_auto; sglang_defaults.resolve_mamba_strategy)'
            % (view['release']['version'], view['rendered']['mamba_strategy'] or '(none)'))


def _planned(view, flag):
    plan = view['plan'] or {}
    if flag == '--max-running-requests':
        text = setting(view, 'llmops_max_running_requests')
        asked = view['settings']['llmops_max_running_requests']
        if asked != plan.get('max_running_requests_total'):
            text += (', capped by the planner to plan.max_running_requests_total (asked %s; bound by %s)'
                     % (asked, str(plan.get('max_running_requests_bound_by')).replace('_', ' ')))
        return text
    name = 'llmops_' + flag[2:].replace('-', '_')
    if view['settings'][name] is not None:
        return setting(view, name)
    if flag == '--mem-fraction-static':
        heur = plan.get('mem_fraction_heuristic') or {}
        return ('planner: plan.mem_fraction_static (SGLang %s\'s own default for this GPU, %s%s; memory from the '
                'hardware profile %s: memory_total_mib)' % (
                    view['release']['version'], heur.get('before_vlm_factor'),
                    ' x the vision factor %s' % heur['vlm_factor'] if heur.get('vlm_factor') not in (None, 1.0) else '',
                    view['gpu_file']))
    return ('planner: plan.context_length (the context length SGLang %s derives from the config in the profile %s)'
            % (view['release']['version'], view['model_file']))


def _quantization(view, flag):
    resolved = view['rendered'].get('quantization') or {}
    serving = view['model'].get('serving') or {}
    if flag == '--quantization' and serving.get('quantization') is not None:
        return 'profile %s: serving.quantization' % view['model_file']
    if resolved and flag in (resolved.get('render') or {}):
        return ('release rule quantization_rules.%s, format %s on compute capability %s (profiles/sglang_releases.yml; '
                'the checkpoint\'s quantization_config in the profile %s, the GPU in %s)'
                % (view['release_entry'].get('quantization'), resolved.get('format'),
                   view['gpu'].get('compute_capability'), view['model_file'], view['gpu_file']))
    return None


def _group(view, flag):
    group = view['group'] or {}
    if flag == '--nnodes':
        return 'TP group %s: the nodes of the inventory group named by inventory llmops_tp_group' % group.get('name')
    return ('TP group %s: the head\'s llmops_node_address and llmops_dist_init_port (%s)'
            % (group.get('name'), setting(view, 'llmops_dist_init_port')))


def flag_source(view, flag):
    """The source of one rendered flag (not an extra argument)."""
    if flag in _SETTING_FLAGS:
        name, key = _SETTING_FLAGS[flag]
        if flag == '--tp-size':
            return setting(view, name, key)
        return setting(view, name, key) or 'inventory %s' % name
    special = {
        '--model-path': _model_path, '--served-model-name': _served, '--host': _host,
        '--disable-overlap-schedule': _overlap,
    }
    if flag in special:
        return special[flag](view)
    if flag.startswith('--speculative-'):
        return _spec(view, flag)
    if flag == view['release']['flags'].get('mamba_flag'):
        return _mamba(view)
    if flag in ('--max-running-requests', '--mem-fraction-static', '--context-length'):
        return _planned(view, flag)
    if flag in ('--nnodes', '--dist-init-addr'):
        return _group(view, flag)
    if flag == '--disable-custom-all-reduce':
        return ('collection rule with NCCL_P2P_DISABLE=1: custom all-reduce uses CUDA IPC peer access and ignores '
                'NCCL_P2P_DISABLE (sglang_flags.render)')
    return _quantization(view, flag) or UNKNOWN


def _pairs(words):
    """[(flag, value or None)] of an argv part; '--flag=value' is split, a second bare word joins the value."""
    out = []
    for word in words:
        if word.startswith('--'):
            name, eq, value = word.partition('=')
            out.append([name, value if eq else None, bool(eq)])
        elif out and out[-1][1] is None and not out[-1][2]:
            out[-1][1] = word
        elif out:
            out[-1][1] = '%s %s' % (out[-1][1], word)
        else:
            out.append([word, None, False])
    return [(name, value) for name, value, dummy in out]


def _p2p(view):
    reason = view['rendered']['nccl_p2p_reason'] or ''
    where = ' of %s (the container\'s Proxmox host)' % view['lxc_host'] if view['lxc_host'] else ''
    for start, text in _P2P_INPUTS:
        if reason.startswith(start):
            return '%s: %s' % (text.format(verdict=view['p2p_verdict'], of=where), reason)
    return UNKNOWN


def _env_source(view, key):
    settings = view['settings']
    if key in (settings['llmops_environment'] or {}):
        return 'inventory llmops_environment.%s' % key
    group = view['group']
    if group and key in ('NCCL_SOCKET_IFNAME', 'GLOO_SOCKET_IFNAME', 'NCCL_IB_HCA'):
        name = 'llmops_nccl_ib_hca' if key == 'NCCL_IB_HCA' else 'llmops_nccl_socket_ifname'
        return 'TP group %s: %s' % (group['name'], setting(view, name) or 'inventory ' + name)
    if group and key == 'NCCL_IB_DISABLE':
        return 'TP group %s: llmops_nccl_ib_hca is null, so NCCL uses TCP on llmops_nccl_socket_ifname' % group['name']
    if group and key == 'LLMOPS_TP_GROUP_LINK':
        return 'TP group %s: the launcher\'s group link (docs/multinode.md)' % group['name']
    rules = {
        'CUDA_VISIBLE_DEVICES': lambda: setting(view, 'llmops_gpu_indices') or 'inventory llmops_gpu_indices',
        'CUDA_DEVICE_ORDER': lambda: ('collection rule with CUDA_VISIBLE_DEVICES: nvidia-smi numbers GPUs by PCI bus '
                                      'id, CUDA fastest first (sglang_flags.render)'),
        'NCCL_P2P_DISABLE': lambda: _p2p(view),
        'SGLANG_ENABLE_SPEC_V2': lambda: ('release rule flags.spec_v2_env = %s (profiles/sglang_releases.yml, '
                                          'SGLang %s)' % (view['release']['flags'].get('spec_v2_env'),
                                                          view['release']['version'])),
        'PYTHONUNBUFFERED': lambda: 'collection rule: journald sees each line when it is printed (sglang_flags.render)',
    }
    return rules[key]() if key in rules else UNKNOWN


def _launcher(view):
    if view['settings']['llmops_sglang_launcher']:
        return setting(view, 'llmops_sglang_launcher')
    version = ('%s (%s)' % (view['settings']['llmops_sglang_version'], setting(view, 'llmops_sglang_version'))
               if view['settings']['llmops_sglang_version'] else 'the version in profiles/sglang.yml')
    venv = setting(view, 'llmops_sglang_venv') or 'collection default /opt/sglang/venv-VERSION, VERSION %s' % version
    return 'collection default: the venv\'s bin/python -m sglang.launch_server, the venv from %s' % venv


def rows(view):
    """The provenance rows of one rendered server (see the module doc)."""
    rendered, settings = view['rendered'], view['settings']
    argv = list(rendered['argv'])
    profile_extra = [str(a) for a in ((view['model'].get('serving') or {}).get('extra_args') or [])]
    inventory_extra = [str(a) for a in (settings['llmops_extra_args'] or [])]
    tail = len(profile_extra) + len(inventory_extra)
    main = argv[:len(argv) - tail] if tail else argv
    out = [dict(kind='command', name='launcher', value=' '.join(view['launcher']), source=_launcher(view))]
    out += [dict(kind='flag', name=name, value=value, source=flag_source(view, name)) for name, value in _pairs(main)]
    for words, source in ((profile_extra, 'profile %s: serving.extra_args' % view['model_file']),
                          (inventory_extra, setting(view, 'llmops_extra_args') or 'inventory llmops_extra_args')):
        out += [dict(kind='flag', name=name, value=value, source=source) for name, value in _pairs(words)]
    for name, value, why in UNIT_ENVIRONMENT:
        out.append(dict(kind='env', name=name, value=value.format(instance=view['instance']),
                        source='collection rule: %s (written by the sglang_server role\'s unit)' % why))
    for key, value in sorted(rendered['env'].items()):
        out.append(dict(kind='env', name=key, value=value, source=_env_source(view, key)))
    if view['api_key_set']:
        out.append(dict(kind='env', name='SGLANG_API_KEY', value=REDACTED,
                        source='inventory llmops_api_key (secret), else SGLANG_API_KEY in the controller\'s '
                               'environment; in the unit\'s EnvironmentFile (0600) only'))
    else:
        out.append(dict(kind='env', name='SGLANG_API_KEY', value=None,
                        source='not written: no API key in this environment (%s)' % (
                            'llmops_allow_no_api_key: true serves without one' if settings['llmops_allow_no_api_key']
                            else 'the deploy refuses until SGLANG_API_KEY is exported or llmops_api_key is set')))
    return out
