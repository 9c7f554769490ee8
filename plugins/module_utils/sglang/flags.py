# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The SGLang command line and environment for a model profile and one SGLang release, as pure functions.

PRIVATE to the collection. ``render()`` turns a model profile, the VRAM plan, host facts and the role's settings
into an argv list (full flag names only: argparse's ``allow_abbrev`` makes ``--speculative-algo`` work by accident)
plus an environment dict, and ``preflight_checks()`` pre-checks the start-up validations SGLang runs before it
touches a GPU, answering with SGLang's own wording and the fix.

The release facts (flag names, environment rules, log milestones, argparse choices, defaults) are data in
profiles/sglang_releases.yml; ``release`` is always ``sglang_release.release(table, version)``. The model facts come
from model_config and the mamba strategy from sglang_defaults.resolve_mamba_strategy, the same functions the VRAM
planner uses, so the plan and the command line describe the same server.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmops.inference.plugins.module_utils.common.choosing import pick
from ansible_collections.llmops.inference.plugins.module_utils.model.config import (
    ModelConfigError,
    context_length,
    model_facts,
)
from ansible_collections.llmops.inference.plugins.module_utils.sglang.defaults import resolve_mamba_strategy
from ansible_collections.llmops.inference.plugins.module_utils.sglang.quant import quant_config
from ansible_collections.llmops.inference.plugins.module_utils.sglang.quant import resolve as resolve_quantization
from ansible_collections.llmops.inference.plugins.module_utils.sglang.layout import LayoutError, speculative_params
from ansible_collections.llmops.inference.plugins.module_utils.sglang.release import (
    CHOICE_OPTIONS, ReleaseError, check_choice)

# SGLang's names for the mamba strategy flag, in any release: only the release's own may appear in extra args.
_MAMBA_FLAG_NAMES = ('--mamba-scheduler-strategy', '--mamba-radix-cache-strategy')
# Environment the render decides itself, with what decides it: an llmops_environment entry of the same name would
# win in the unit (it is written last) and silently undo that decision, so the resolver refuses it.
DECIDED_ENV = {
    'CUDA_VISIBLE_DEVICES': 'llmops_gpu_indices (the nvidia-smi indices of the GPUs this server uses)',
    'CUDA_DEVICE_ORDER': 'nothing: always PCI_BUS_ID, so that the indices are the ones nvidia-smi prints',
    'NCCL_P2P_DISABLE': 'llmops_nccl_p2p_disable (true also adds --disable-custom-all-reduce, which custom '
                        'all-reduce needs: it ignores NCCL_P2P_DISABLE)',
    'PYTHONUNBUFFERED': 'nothing: always 1, so that the readiness check sees each line as SGLang prints it',
}
_ABBREVIATIONS = {'--speculative-algo': '--speculative-algorithm', '--tp': '--tp-size'}
# Options rendered as `--flag value` whose value must be one of the release's choices (when it records them).
_CHOICE_FLAGS = (('reasoning_parser', '--reasoning-parser'), ('tool_call_parser', '--tool-call-parser'),
                 ('quantization', '--quantization'), ('kv_cache_dtype', '--kv-cache-dtype'),
                 ('mamba_ssm_dtype', '--mamba-ssm-dtype'), ('attention_backend', '--attention-backend'))
_API_KEY_ENV = 'SGLANG_API_KEY'
# SGLang's switch for a context above the derived one (the target's and the draft's alike).
_ALLOW_LONGER_CONTEXT = 'SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN'


class FlagError(ValueError):
    """Inputs the renderer cannot turn into a command line (not an SGLang start-up refusal)."""


def speculative_settings(model, draft_tokens=None, steps=None, topk=None, algorithm=None, release=None, arch=None):
    """MTP settings from the profile with overrides; None when speculative decoding is off.

    A profile that names the algorithm but no draft tokens gets SGLang's auto choice for the target architecture
    (sglang_layout.speculative_params, given ``release`` and ``arch``), rendered explicitly.
    """
    spec = dict(((model or {}).get('serving') or {}).get('speculative') or {})
    draft = pick(draft_tokens, spec.get('num_draft_tokens'))
    if draft is None and spec.get('algorithm') and release is not None:
        steps_a, topk_a, draft = speculative_params(release, arch, spec['algorithm'], pick(steps, spec.get('num_steps')),
                                                    pick(topk, spec.get('eagle_topk')))
        steps, topk = pick(steps, steps_a), pick(topk, topk_a)
    if not draft:
        return None
    return dict(
        algorithm=pick(algorithm, spec.get('algorithm'), 'NEXTN'),
        num_steps=int(pick(steps, spec.get('num_steps'), int(draft) - 1)),
        eagle_topk=int(pick(topk, spec.get('eagle_topk'), 1)),
        num_draft_tokens=int(draft),
    )


def nccl_p2p_disable(explicit=None, verdict=None, host_p2p_trusted=None, host_sev_snp=None, tp_size=1):
    """Decide NCCL_P2P_DISABLE: (bool, reason). Explicit setting, then the gpu_p2p_check verdict, then the host."""
    if explicit is not None:
        return bool(explicit), 'set explicitly (llmops_nccl_p2p_disable=%s)' % bool(explicit)
    if verdict == 'use_nccl_p2p_disable':
        return True, 'gpu_p2p_check verdict use_nccl_p2p_disable (P2P corrupted or hung, NCCL clean without it)'
    if verdict == 'p2p_ok':
        return False, 'gpu_p2p_check verdict p2p_ok'
    if tp_size <= 1:
        return False, 'single GPU: no NCCL peer traffic'
    if host_sev_snp:
        return True, 'host has SEV-SNP enabled: the IOMMU enforces RMP on all DMA and GPU P2P is silently corrupted'
    if host_p2p_trusted is False:
        return True, 'host profile marks NCCL P2P as untrusted (llmops_nccl_p2p_trusted: false)'
    return False, 'no P2P verdict and nothing in the host profile against P2P'


def gpus_per_node(tp_size, nnodes=1, pp_size=1):
    """The GPUs one node of a server runs: tp x pp over its nodes (entrypoints/engine.py:2045-2075
    _calculate_rank_ranges: node r runs TP ranks [r*k, (r+1)*k), k = tp / nnodes). None when that is not a whole
    positive number: the tp_nnodes pre-check refuses the server, so no node has a GPU count to check against.

    The one computation of it: the resolver's GPU index and container checks, the TP group's ranks and this
    renderer's gpu_count pre-check all use it."""
    if not all(isinstance(v, int) for v in (tp_size, nnodes, pp_size)):
        return None
    if tp_size < 1 or nnodes < 1 or pp_size < 1 or (tp_size * pp_size) % nnodes:
        return None
    return tp_size * pp_size // nnodes


def planned(server, plan, key):
    """The operator's value of a memory option (server options) when given, else the plan's: the one rule for
    --max-running-requests, --mem-fraction-static, --context-length and the chunked prefill size."""
    return pick(server.get(key), plan.get(key))


def _check(out, name, message, fix):
    out.append(dict(check=name, message=message, fix=fix))


def _facts(release, model):
    try:
        return model_facts((model or {}).get('config'), release['architectures'])
    except ModelConfigError as exc:
        raise FlagError(str(exc))


def _choice(release, option, value):
    """FlagError when value is not one of the release's argparse choices for option (argparse would refuse it)."""
    try:
        message = check_choice(release, option, value)
    except ReleaseError as exc:
        raise FlagError(str(exc))
    if message:
        raise FlagError(message)


def render(release, model, plan=None, host=None, server=None, facts=None):
    """Render the SGLang argv (without the launcher prefix) and environment.

    release: sglang_release.release(table, version) (flags, choices, defaults, architectures of one release)
    model:   a model profile (profiles/models/*.yml parsed)
    plan:    VRAM plan values: mem_fraction_static, max_running_requests, context_length, chunked_prefill_size,
             page_size (vram_plan_info output; the role requests an explicit max_running_requests from it)
    host:    gpu_indices, compute_capability, gpu_name (the GPU profile, for messages), p2p_verdict, p2p_trusted,
             sev_snp, nnodes, node_rank, dist_init_addr, dist_timeout, node_env (the inter-node network environment
             of a multi-node group)
    server:  model_path, served_model_name, host, port, tp_size, and optional flag overrides (see the module doc)
    facts:   model_config.model_facts() of the profile's config when the caller computed them once already (the
             resolver hands the planner the same); None: computed here

    Returns dict(version, argv, env, warnings, notes, preflight, speculative, nccl_p2p_disable, nccl_p2p_reason,
    mamba_strategy, rules, quantization (format, method, render, defaults of the release's rules, or None)).
    Raises FlagError for inputs that cannot be rendered at all (including a value that is not one of the release's
    argparse choices).

    The sections run in the order of the command line, each on the one render state ``r`` (_render_inputs):
    server and parallelism, speculative decoding, the mamba strategy, the memory plan, GPUs and NCCL, extra
    arguments, then the start-up pre-checks.
    """
    r = _render_inputs(release, model, plan, host, server, facts)
    _render_server(r)
    _render_speculative(r)
    _render_mamba(r)
    _render_memory(r)
    _render_gpus(r)
    _render_extra(r)
    r['preflight'].extend(preflight_checks(release, r['facts'], dict(
        tp=r['tp'], pp=r['pp'], nnodes=r['nnodes'], node_rank=r['node_rank'], served=r['served'],
        page_size=r['page_size'], chunked=planned(r['server'], r['plan'], 'chunked_prefill_size'),
        context=r['context'], spec=r['spec'], attention_backend=r['attention_backend'],
        compute_capability=r['host'].get('compute_capability'), env=r['env'], draft_config=r['draft_config'])))

    out_rules = dict((k, v) for k, v in r['rules'].items() if k != 'mamba_choices')
    out_rules['version'] = r['version']
    return dict(version=r['version'], argv=r['argv'], env=r['env'], warnings=r['warnings'], notes=r['notes'],
                preflight=r['preflight'], speculative=r['spec'], nccl_p2p_disable=r['disable_p2p'],
                nccl_p2p_reason=r['p2p_reason'], mamba_strategy=r['strategy'], rules=out_rules,
                quantization=r['quant']['resolved'])


def _render_inputs(release, model, plan, host, server, facts):
    """The render state: the inputs, the values every section reads, and the lists the sections fill."""
    if not isinstance(release, dict) or not release.get('flags') or not release.get('defaults'):
        raise FlagError('release is required: sglang_release.release(table, version) of profiles/sglang_releases.yml')
    plan = plan or {}
    host = host or {}
    server = dict(server or {})
    facts = facts if facts is not None else _facts(release, model)
    serving = (model or {}).get('serving') or {}
    warnings, notes, preflight = [], [], []

    model_path = server.get('model_path')
    if not model_path:
        raise FlagError('model_path is required (the checkpoint directory on the server)')
    served = pick(server.get('served_model_name'), (model or {}).get('served_model_name'))
    tp = int(pick(server.get('tp_size'), serving.get('tp_size'), 1))
    pp = int(pick(server.get('pp_size'), 1))
    nnodes = int(pick(host.get('nnodes'), 1))
    try:
        spec = speculative_settings(model, server.get('speculative_num_draft_tokens'),
                                    server.get('speculative_num_steps'), server.get('speculative_eagle_topk'),
                                    server.get('speculative_algorithm'), release, facts['arch'])
    except LayoutError as exc:
        raise FlagError(str(exc))
    quant = quantization_flags(release, model, host, server, warnings, notes, preflight)
    attention_backend = server.get('attention_backend')
    values = dict(reasoning_parser=pick(server.get('reasoning_parser'), serving.get('reasoning_parser')),
                  tool_call_parser=pick(server.get('tool_call_parser'), serving.get('tool_call_parser')),
                  quantization=quant['quantization'], kv_cache_dtype=server.get('kv_cache_dtype'),
                  mamba_ssm_dtype=server.get('mamba_ssm_dtype'), attention_backend=attention_backend)
    for option, dummy in _CHOICE_FLAGS:
        # "auto" of the dtype options renders nothing (SGLang's default), so it needs no choice of its own.
        if values[option] and not (option in ('kv_cache_dtype', 'mamba_ssm_dtype') and values[option] == 'auto'):
            _choice(release, option, values[option])
    return dict(
        release=release, version=release['version'], rules=release['flags'], defaults=release['defaults'],
        model=model, plan=plan, host=host, server=server, facts=facts, serving=serving,
        warnings=warnings, notes=notes, preflight=preflight, argv=[], env={},
        model_path=model_path, served=served, tp=tp, pp=pp, nnodes=nnodes, node_rank=host.get('node_rank'), spec=spec,
        radix=pick(server.get('radix_cache'), True),
        page_size=pick(server.get('page_size'), plan.get('page_size_explicit')),
        chunked=server.get('chunked_prefill_size'), attention_backend=attention_backend, quant=quant,
        values=values, draft_config=None, context=None, strategy=None, disable_p2p=None, p2p_reason=None)


def _render_server(r):
    """The checkpoint, the served name, where it listens, TP / DP / PP, the nodes, quantization and the parsers."""
    server, host, argv, preflight = r['server'], r['host'], r['argv'], r['preflight']
    tp, pp, nnodes, node_rank = r['tp'], r['pp'], r['nnodes'], r['node_rank']
    argv += ['--model-path', str(r['model_path'])]
    if r['served']:
        argv += ['--served-model-name', str(r['served'])]
    argv += ['--host', str(pick(server.get('host'), '127.0.0.1')), '--port', str(int(pick(server.get('port'), 30000)))]
    argv += ['--tp-size', str(tp)]
    # DP attention (arg_groups/parallel_hook.py:39-61 rewrites --dp-size N --enable-dp-attention to attn_dp_size N).
    dp = int(pick(server.get('dp_size'), 1))
    if dp > 1 and server.get('enable_dp_attention'):
        argv += ['--dp-size', str(dp), '--enable-dp-attention']
    if dp > 1 and not server.get('enable_dp_attention'):
        _check(preflight, 'dp_attention', 'dp_size %d without enable_dp_attention would start %d replicas of the '
               'whole server (%d GPUs each).' % (dp, dp, tp), 'Set llmops_enable_dp_attention: true, or llmops_dp_size: 1.')
    elif dp > 1 and tp % dp:
        _check(preflight, 'dp_attention', 'tp_size %d is not divisible by dp_size %d (SGLang asserts tp_size %% '
               'attn_dp_size == 0, arg_groups/parallel_hook.py:326).' % (tp, dp),
               'Use an llmops_dp_size that divides llmops_tp_size %d.' % tp)
    if pp > 1:
        argv += ['--pp-size', str(pp)]
    if nnodes > 1:
        if node_rank is None or not host.get('dist_init_addr'):
            raise FlagError('a profile spanning %d nodes needs node_rank and dist_init_addr (host:port of rank 0)'
                            % nnodes)
        argv += ['--nnodes', str(nnodes), '--node-rank', str(int(node_rank)), '--dist-init-addr',
                 str(host['dist_init_addr'])]
        if host.get('dist_timeout') is not None:
            argv += ['--dist-timeout', str(int(host['dist_timeout']))]
    quantization = r['quant']['quantization']
    if quantization:
        argv += ['--quantization', str(quantization)]
    for flag, value in sorted(r['quant']['render'].items()):
        argv += [flag, str(value)]
    for key, flag in (('reasoning_parser', '--reasoning-parser'), ('tool_call_parser', '--tool-call-parser')):
        if r['values'][key]:
            argv += [flag, str(r['values'][key])]


def _render_speculative(r):
    """Speculative decoding (MTP). NEXTN 3/1/4 is also SGLang's auto choice for Qwen3.5; rendered explicitly so the
    unit says what runs."""
    spec, facts, preflight, argv = r['spec'], r['facts'], r['preflight'], r['argv']
    draft_path = r['server'].get('speculative_draft_model_path')
    r['draft_config'] = (((r['serving'].get('speculative') or {}).get('draft') or {}).get('config')) if spec else None
    if spec and spec['algorithm'].upper() == 'EAGLE3':
        # EAGLE-3 loads its own draft checkpoint: --speculative-draft-model-path (speculative_hook.py has no
        # built-in EAGLE-3 head for any target).
        if not draft_path:
            _check(preflight, 'draft_path', 'speculative algorithm EAGLE3 without a draft checkpoint directory.',
                   'Give the profile serving.speculative.draft {hf_repo, hf_revision, config}; the deploy downloads it '
                   'beside the model.')
    elif spec and (facts['sized'] or facts['mtp_layers_known']) and facts['mtp_layers'] < 1:
        _check(preflight, 'mtp_layers', 'The model profile declares no MTP layers (mtp_num_hidden_layers / '
               'num_nextn_predict_layers 0 or missing): the checkpoint has no MTP head for '
               '--speculative-algorithm %s.' % spec['algorithm'],
               'Set speculative_num_draft_tokens: 0 (no MTP) or use a checkpoint with MTP layers.')
    if spec:
        if spec['eagle_topk'] == 1 and spec['num_draft_tokens'] != spec['num_steps'] + 1:
            # speculative_hook._handle_eagle_family: with topk 1 the draft tokens are steps + 1 whatever is asked;
            # the unit states what runs (and the plan plans it).
            r['notes'].append('with --speculative-eagle-topk 1 SGLang forces --speculative-num-draft-tokens to steps '
                              '+ 1: rendered %d instead of the %d asked for'
                              % (spec['num_steps'] + 1, spec['num_draft_tokens']))
            spec = r['spec'] = dict(spec, num_draft_tokens=spec['num_steps'] + 1)
        argv += ['--speculative-algorithm', spec['algorithm'], '--speculative-num-steps', str(spec['num_steps']),
                 '--speculative-eagle-topk', str(spec['eagle_topk']),
                 '--speculative-num-draft-tokens', str(spec['num_draft_tokens'])]
        if draft_path and spec['algorithm'].upper() == 'EAGLE3':
            argv += ['--speculative-draft-model-path', str(draft_path)]


def _render_mamba(r):
    """Hybrid GDN models: the mamba radix-cache strategy as the release resolves it (the planner's resolution), under
    the name this release uses, always explicit with the radix cache on so the unit says what runs; the overlap
    schedule goes off when that resolution turns it off."""
    server, spec, argv = r['server'], r['spec'], r['argv']
    try:
        mamba = resolve_mamba_strategy(r['release'], r['facts'], server.get('mamba_strategy') or 'auto', r['radix'],
                                       bool(server.get('disable_overlap_schedule')), r['page_size'],
                                       spec['num_draft_tokens'] if spec else 0, r['attention_backend'])
    except ReleaseError as exc:
        raise FlagError(str(exc))
    strategy = r['strategy'] = mamba['strategy']
    r['preflight'].extend(mamba['refusals'])
    r['notes'].extend(mamba['notes'])
    if strategy:
        argv += [r['rules']['mamba_flag'], strategy]
    if r['facts']['hybrid']:
        # kv_cache_configurator.py:3303-3324 (slots, split over DP workers) and :3345-3356 (the pool's share).
        if server.get('max_mamba_cache_size') is not None:
            argv += ['--max-mamba-cache-size', str(int(server['max_mamba_cache_size']))]
        if server.get('mamba_full_memory_ratio') is not None:
            argv += ['--mamba-full-memory-ratio', ('%.4f' % float(server['mamba_full_memory_ratio'])).rstrip('0').rstrip('.')]
    if not r['radix']:
        argv += ['--disable-radix-cache']
    if mamba['disable_overlap_schedule']:
        argv += ['--disable-overlap-schedule']


def _render_memory(r):
    """Memory plan: the plan's values. max_running_requests only when the operator asked for one (the resolver passes
    it capped by the plan); unset, SGLang's own choice stands and the plan reports it. Then the dtypes, the attention
    backend, the watchdog and the metrics."""
    server, plan, argv = r['server'], r['plan'], r['argv']
    running = planned(server, plan, 'max_running_requests')
    if running is not None:
        argv += ['--max-running-requests', str(int(running))]
    elif r['spec'] and plan.get('max_running_requests_bound_by') in (None, 'speculative_default'):
        spec_default = r['defaults']['speculative_max_running_requests']
        r['warnings'].append('no --max-running-requests: SGLang %s resets it to %d for speculative decoding ("Max '
                             'running requests is reset to %d for speculative decoding..."), then caps it by the '
                             'pools; set llmops_max_running_requests for more'
                             % (r['version'], spec_default, spec_default))
    fraction = planned(server, plan, 'mem_fraction_static')
    if fraction is not None:
        fraction = float(fraction)
        if not 0.0 < fraction < 1.0:
            raise FlagError('mem_fraction_static %s is outside (0, 1)' % fraction)
        argv += ['--mem-fraction-static', ('%.4f' % fraction).rstrip('0').rstrip('.')]
    context = r['context'] = planned(server, plan, 'context_length')
    if context is not None:
        argv += ['--context-length', str(int(context))]
    if r['page_size'] is not None:
        argv += ['--page-size', str(int(r['page_size']))]
    if r['chunked'] is not None:
        argv += ['--chunked-prefill-size', str(int(r['chunked']))]
    for key, flag in (('kv_cache_dtype', '--kv-cache-dtype'), ('mamba_ssm_dtype', '--mamba-ssm-dtype'),
                      ('attention_backend', '--attention-backend')):
        value = r['values'][key]
        if value and value != 'auto':
            argv += [flag, str(value)]
    if server.get('watchdog_timeout') is not None:
        argv += ['--watchdog-timeout', str(int(server['watchdog_timeout']))]
    if server.get('enable_metrics'):
        argv += ['--enable-metrics']


def _render_gpus(r):
    """GPUs and NCCL: CUDA_VISIBLE_DEVICES in nvidia-smi order, the GPU count per node, the P2P decision, the
    speculative v2 switch, unbuffered output and a group node's network environment."""
    host, env, rules, preflight = r['host'], r['env'], r['rules'], r['preflight']
    tp, pp, nnodes = r['tp'], r['pp'], r['nnodes']
    indices = host.get('gpu_indices')
    if indices:
        bad = [str(i) for i in indices if not re.match(r'^\d+$', str(i).strip())]
        if bad:
            raise FlagError('CUDA_VISIBLE_DEVICES takes nvidia-smi indices, not %s: SGLang int()s every entry to decide '
                            'custom all-reduce (use llmops.inference.gpu_info to map UUIDs/bus ids to indices)'
                            % ', '.join(bad))
        indices = [int(str(i).strip()) for i in indices]
        if len(set(indices)) != len(indices):
            raise FlagError('duplicate GPU index in %s' % indices)
        env['CUDA_VISIBLE_DEVICES'] = ','.join(str(i) for i in indices)
        # nvidia-smi numbers GPUs by PCI bus id; CUDA's default order is fastest first, so without this the indices
        # name other cards whenever the GPUs differ (CUDA C Programming Guide, "CUDA Environment Variables").
        env['CUDA_DEVICE_ORDER'] = 'PCI_BUS_ID'
        per_node = gpus_per_node(tp, nnodes, pp)
        if per_node is not None and len(indices) < per_node:
            _check(preflight, 'gpu_count', 'tp_size %d x pp_size %d over %d node(s) needs %d GPUs per node; '
                   'CUDA_VISIBLE_DEVICES lists %d.' % (tp, pp, nnodes, per_node, len(indices)),
                   'List %d GPU indices in llmops_gpu_indices or lower the TP size.'
                   % per_node)
    disable_p2p, p2p_reason = nccl_p2p_disable(r['server'].get('nccl_p2p_disable'), host.get('p2p_verdict'),
                                               host.get('p2p_trusted'), host.get('sev_snp'), tp * pp)
    r['disable_p2p'], r['p2p_reason'] = disable_p2p, p2p_reason
    if host.get('p2p_verdict') == 'nccl_broken':
        _check(preflight, 'nccl_broken', 'gpu_p2p_check verdict nccl_broken: the NCCL all-reduce failed both with '
               'and without P2P.', 'Fix NCCL on the host first (llmops.inference.gpu_p2p_check return values say '
               'which phase failed and why); the server would hang in "%s"' % rules['parallel_begin'])
    if disable_p2p:
        env['NCCL_P2P_DISABLE'] = '1'
        # Custom all-reduce uses CUDA IPC peer access and ignores NCCL_P2P_DISABLE.
        if tp * pp > 1 and '--disable-custom-all-reduce' not in r['argv']:
            r['argv'] += ['--disable-custom-all-reduce']
        r['notes'].append('NCCL_P2P_DISABLE=1: %s; NCCL falls back to shared memory, so /dev/shm must be large'
                          % p2p_reason)
    if r['spec'] and r['facts']['hybrid'] and rules['spec_v2_env'] == 'required':
        env['SGLANG_ENABLE_SPEC_V2'] = '1'
    # Unbuffered stdout: journald (and the readiness check's stall detector) sees each line when it is printed.
    env['PYTHONUNBUFFERED'] = '1'
    # A node of a multi-node group: the inter-node interface of NCCL and gloo, InfiniBand on or off.
    for key, value in sorted((host.get('node_env') or {}).items()):
        env[str(key)] = str(value)


def _render_extra(r):
    """The profile's and the operator's extra arguments (full flag names, never --api-key) and environment."""
    server, rules, env = r['server'], r['rules'], r['env']
    extra = ([str(a) for a in (r['serving'].get('extra_args') or [])]
             + [str(a) for a in (server.get('extra_args') or [])])
    for arg in extra:
        if arg.startswith('--') and '=' not in arg:
            if arg in _ABBREVIATIONS:
                raise FlagError('extra argument %s: use the full flag name (%s)' % (arg, _ABBREVIATIONS[arg]))
            if arg in _MAMBA_FLAG_NAMES and arg != rules['mamba_flag']:
                raise FlagError('extra argument %s: use the full flag name of sglang %s (%s)'
                                % (arg, r['version'], rules['mamba_flag'] or 'none: the release has no mamba strategy'))
        if arg == '--api-key' or arg.startswith('--api-key='):
            raise FlagError('--api-key must not be an extra argument: it would be visible in the unit, the process '
                            'command line and the logs; set llmops_api_key (SGLANG_API_KEY)')
    r['argv'] += extra
    if server.get('extra_env'):
        for key, value in sorted(server['extra_env'].items()):
            env[str(key)] = str(value)
    if rules['spec_v2_env'] == 'removed' and 'SGLANG_ENABLE_SPEC_V2' in env:
        r['warnings'].append('SGLANG_ENABLE_SPEC_V2 was removed in sglang %s; setting it only prints a warning'
                             % r['version'])


def quantization_flags(release, model, host, server, warnings, notes, preflight):
    """--quantization and the other flags the checkpoint's quantization needs on this GPU (release data).

    An explicit value (server option, else the profile's serving.quantization) is rendered as given. Otherwise the
    release's quantization rules decide per compute capability: usually nothing (SGLang detects the method from the
    checkpoint), a flag where the release's server-argument pipeline needs to see it (NVFP4 on SM110/SM120), and a
    refusal (pre-check ``quantization_arch``, or ``quantization_unsupported`` where no GPU runs the format) where no
    row of the checkpoint's format covers the GPU. A flag the extra arguments already carry is left to them.
    Returns dict(quantization, render (other flags), resolved).
    """
    serving = (model or {}).get('serving') or {}
    explicit = pick(server.get('quantization'), serving.get('quantization'))
    extra = set(str(a).split('=', 1)[0]
                for a in list(serving.get('extra_args') or []) + list(server.get('extra_args') or []))
    rules = release.get('quantization')
    if not rules:
        if quant_config((model or {}).get('config')) is not None:
            warnings.append('sglang %s: the release table has no quantization rules for it (quantization: key), so '
                            'the checkpoint\'s quantization was not checked against the GPU and no flag was derived '
                            'from it' % release['version'])
        return dict(quantization=explicit, render={}, resolved=None)
    resolved = resolve_quantization(rules, (model or {}).get('config'), host.get('compute_capability'),
                                    (model or {}).get('name'), host.get('gpu_name'))
    if resolved['refusal']:
        preflight.append(resolved['refusal'])
    notes.extend(resolved['notes'])
    render = dict(resolved['render'])
    quantization = explicit
    wanted = render.pop('--quantization', None)
    if quantization is None and '--quantization' not in extra:
        quantization = wanted
    for flag in sorted(render):
        dest = flag[2:].replace('-', '_')
        if dest in CHOICE_OPTIONS:
            _choice(release, dest, render[flag])
        if flag in extra:
            notes.append('%s: the extra arguments set %s; the release rule would render %s' % (
                resolved['format'], flag, render.pop(flag)))
    chosen = [f for f in resolved['defaults'] if f not in extra and f not in render]
    if chosen:
        notes.append('sglang %s picks %s itself for %s on compute capability %s (not rendered)' % (
            release['version'], ', '.join('%s %s' % (f, resolved['defaults'][f]) for f in chosen),
            resolved['format'], host.get('compute_capability')))
    return dict(quantization=quantization, render=render, resolved=dict(
        format=resolved['format'], method=resolved['method'], render=resolved['render'],
        defaults=resolved['defaults']))


def preflight_checks(release, facts, s):
    """SGLang start-up validations that need no GPU. Each: dict(check, message (SGLang's words), fix)."""
    rules = release['flags']
    blackwell = release['architectures']['blackwell_gdn_backends']
    out = []
    if (s['tp'] * s['pp']) % s['nnodes'] != 0:
        _check(out, 'tp_nnodes', 'tp_size must be divisible by number of nodes',
               'Make tp_size x pp_size (%d x %d) a multiple of nnodes (%d).' % (s['tp'], s['pp'], s['nnodes']))
    if s['nnodes'] > 1 and s['node_rank'] is not None and not 0 <= int(s['node_rank']) < s['nnodes']:
        _check(out, 'node_rank', 'node_rank %s is outside 0..%d.' % (s['node_rank'], s['nnodes'] - 1),
               'Give every node of the profile a distinct rank below nnodes.')
    if s['served'] and ':' in str(s['served']):
        _check(out, 'served_model_name',
               "served_model_name cannot contain a colon (':') character. The colon is reserved for the "
               "'model:adapter' syntax used in LoRA adapter specification. Invalid value: '%s'" % s['served'],
               'Use a name without ":", e.g. %s.' % str(s['served']).replace(':', '-'))
    page = s['page_size'] or 1
    if s['chunked'] is not None and int(s['chunked']) > 0 and int(s['chunked']) % page != 0:
        _check(out, 'chunked_prefill_page', 'chunked_prefill_size must be divisible by page_size',
               'Use a --chunked-prefill-size that is a multiple of --page-size %d (e.g. %d).'
               % (page, (int(s['chunked']) // page + 1) * page))
    if facts['context']:
        _longer_context(out, 'context_length', 'User-specified', s['context'], facts['context'], s['env'],
                        'Lower llmops_context_length to at most %d.' % int(facts['context']))
    spec = s['spec']
    draft_config = s.get('draft_config')
    if spec and isinstance(draft_config, dict) and s['env'].get(_ALLOW_LONGER_CONTEXT) != '1':
        # The draft worker is built with the target's context length (speculative/eagle_worker_v2.py:229) and its
        # ModelConfig refuses one above its own derived context (configs/model_config.py:1291-1316).
        text = draft_config.get('text_config') if isinstance(draft_config.get('text_config'), dict) else draft_config
        try:
            derived = context_length(text, text.get('model_type'))
        except ModelConfigError:
            derived = 0
        target = int(s['context']) if s['context'] is not None else facts['context']
        if derived:
            _longer_context(out, 'draft_context_length', "Target model's", target, derived, s['env'],
                            'Lower llmops_context_length to at most %d (the draft\'s own limit), or set '
                            'llmops_environment: {SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN: "1"} to let the draft run '
                            'past its trained length.' % derived)
    backend = s['attention_backend']
    if spec and backend == 'trtllm_mha' and spec['eagle_topk'] > 1:
        _check(out, 'trtllm_topk', 'trtllm_mha backend only supports topk = 1 for speculative decoding.',
               'Set --speculative-eagle-topk 1 or another attention backend.')
    if spec and rules['spec_v2_topk1'] and spec['eagle_topk'] > 1 and facts['hybrid']:
        _check(out, 'spec_v2_topk', 'Spec v2 currently only supports topk = 1 for speculative decoding.',
               'Set --speculative-eagle-topk 1 (Qwen3.5 MTP uses 3/1/4).')
    if s['pp'] > 1 and spec:
        _check(out, 'pp_spec', rules['pp_spec_message'], 'Drop pipeline parallelism or MTP.')
    cc = str(s['compute_capability'] or '')
    major = cc.split('.', maxsplit=1)[0] if cc else ''
    if backend == 'fa3' and major and int(major) >= 10:
        _check(out, 'fa3_blackwell', 'FlashAttention v3 Backend requires SM>=80 and SM<=90. Please use '
               '`--attention-backend flashinfer`.', 'Drop llmops_attention_backend or use flashinfer.')
    if backend and facts['hybrid'] and major in blackwell and backend not in blackwell[major]:
        _check(out, 'gdn_blackwell_backend', 'Only %s backends are supported on Blackwell GPUs for hybrid GDN models'
               % ', '.join(blackwell[major]),
               'Use --attention-backend %s on SM%s0.' % (blackwell[major][0], major))
    return out


def _longer_context(out, check, whose, context, derived, env, fix):
    """SGLang's one refusal of a context length above a derived one (configs/model_config.py:1291-1316), for the
    target's own limit (whose 'User-specified') and for the EAGLE-3 draft's (whose "Target model's"), unless the
    environment sets SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1."""
    if not context or int(context) <= int(derived) or env.get(_ALLOW_LONGER_CONTEXT) == '1':
        return
    _check(out, check, "Warning: %s context_length (%d) is greater than the derived context_length (%d). This may "
           "lead to incorrect model outputs or CUDA errors. Note that the derived context_length may differ from "
           "max_position_embeddings in the model's config. To allow overriding this maximum, set the env var "
           "%s=1" % (whose, int(context), int(derived), _ALLOW_LONGER_CONTEXT), fix)


def systemd_quote(arg):
    """One ExecStart= word: double-quoted, with systemd's escapes ($ and % are specifiers/variables there)."""
    text = str(arg)
    if text and re.match(r'^[A-Za-z0-9_@%+=:,./-]+$', text) and '%' not in text:
        return text
    text = text.replace('\\', '\\\\').replace('"', '\\"').replace('$', '$$').replace('%', '%%')
    return '"%s"' % text


def exec_start(argv):
    """An ExecStart= value for an argv list (no shell involved)."""
    return ' '.join(systemd_quote(a) for a in argv)


def format_preflight(version, checks):
    """One message for the failed pre-checks: SGLang's wording plus the fix, numbered."""
    lines = ['SGLang %s would refuse to start with this configuration (checked before the service was touched):'
             % version]
    for index, item in enumerate(checks, 1):
        lines.append('%d. [%s] SGLang: "%s" Fix: %s' % (index, item['check'], item['message'], item['fix']))
    return '\n'.join(lines)
