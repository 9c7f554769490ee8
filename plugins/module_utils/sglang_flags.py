# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The SGLang command line and environment for a model profile, per SGLang release, as pure functions.

PRIVATE to the collection. ``render()`` turns a model profile, the VRAM plan, host facts and the role's settings
into an argv list (full flag names only: argparse's ``allow_abbrev`` makes ``--speculative-algo`` work by accident)
plus an environment dict, and ``preflight()`` pre-checks the start-up validations SGLang runs before it touches a
GPU, answering with SGLang's own wording and the fix.

Version facts come from each release's wheel on PyPI (``server_args.py``, ``environ.py``, ``arg_groups/``); only
releases that were read are listed, anything else is refused rather than guessed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# The collection's pin lives in profiles/sglang.yml; this is only the newest release with recorded rules.
NEWEST = '0.5.23'

_SCHEDULER = '--mamba-scheduler-strategy'
_RADIX = '--mamba-radix-cache-strategy'

# version -> rules. Keys:
#   mamba_flag           name of the mamba radix-cache strategy flag (None: the release has neither)
#   mamba_choices        its argparse choices
#   mamba_auto           what "auto" resolves to for Qwen3.5 with overlap on
#   spec_v2_env          SGLANG_ENABLE_SPEC_V2: 'required' (default False, MTP + radix needs it =1), 'default_on'
#                        (default True, leave it), 'removed' (setting it only prints a removal warning)
#   spec_radix_no_buffer MTP + radix cache + no_buffer raises the ValueError of PR #19391
#   no_buffer_needs_no_overlap  an explicit no_buffer asserts --disable-overlap-schedule
#   extra_buffer_needs_radix  extra_buffer with --disable-radix-cache is refused
#   spec_v2_topk1        spec v2 refuses --speculative-eagle-topk > 1 on hybrid models
#   pp_spec_message      SGLang's refusal of pipeline parallelism with speculative decoding
#   parallel_begin       the log line before NCCL/torch.distributed init (the stall window opens here)
#   parallel_end         ... and the line that closes it
_APR = dict(mamba_flag=_SCHEDULER, mamba_choices=('auto', 'no_buffer', 'extra_buffer'), mamba_auto='no_buffer',
            spec_radix_no_buffer=True, no_buffer_needs_no_overlap=False, extra_buffer_needs_radix=True,
            spec_v2_topk1=True,
            pp_spec_message='Pipeline parallelism is not compatible with overlap schedule, speculative decoding',
            parallel_begin='Init torch distributed begin.', parallel_end='Init torch distributed ends.')
_HEAD = dict(mamba_flag=_RADIX, mamba_choices=('auto', 'no_buffer', 'extra_buffer', 'extra_buffer_lazy'),
             mamba_auto='extra_buffer', spec_v2_env='removed', spec_radix_no_buffer=False,
             no_buffer_needs_no_overlap=True, extra_buffer_needs_radix=True,
             # Not in 0.5.23's source (spec v2 is the only worker there); 0.5.15-0.5.22 not read for it.
             spec_v2_topk1=False,
             pp_spec_message='Pipeline parallelism is not compatible with overlap schedule, speculative decoding',
             parallel_begin='Init torch distributed begin.', parallel_end='Init torch distributed ends.')
VERSION_RULES = {
    '0.5.9': dict(_APR, spec_v2_env='required'),
    '0.5.10': dict(_APR, spec_v2_env='required'),
    '0.5.11': dict(_APR, spec_v2_env='default_on'),
    '0.5.12': dict(_APR, spec_v2_env='default_on'),
    # 0.5.15 / 0.5.18 still accept --mamba-scheduler-strategy as a deprecated alias; the role never renders it.
    '0.5.15': dict(_HEAD),
    '0.5.18': dict(_HEAD),
    # 0.5.20+: the old name is gone ("unrecognized arguments: --mamba-scheduler-strategy extra_buffer").
    '0.5.20': dict(_HEAD),
    '0.5.22': dict(_HEAD),
    # 0.5.23 moved the distributed bootstrap to distributed/bootstrap.py and renamed its milestones.
    # Its mamba hook no longer refuses extra_buffer without the radix cache, and PP + MTP has its own message
    # (arg_groups/mamba_hook.py, arg_groups/validation_hook.py).
    '0.5.23': dict(_HEAD, parallel_begin='Init parallel begin.', parallel_end='Init parallel ends.',
                   extra_buffer_needs_radix=False,
                   pp_spec_message='PP + speculative decoding (MTP) is only supported on prefill nodes '
                                   '(disaggregation-mode=prefill)'),
}

SPEC_DEFAULT_MAX_RUNNING = 48
MAMBA_TRACK_INTERVAL = 256
FLA_CHUNK_SIZE = 64
# Architectures with Gated DeltaNet (mamba-style) layers and extra_buffer support (overrides.py, Qwen subset).
HYBRID_GDN_ARCHS = frozenset([
    'Qwen3NextForCausalLM', 'Qwen3_5ForConditionalGeneration', 'Qwen3_5MoeForConditionalGeneration',
    'Qwen3_5ForCausalLM', 'Qwen3_5MoeForCausalLM',
])
# attention_registry.py (#35080): backends hybrid GDN models may use on Blackwell.
BLACKWELL_GDN_BACKENDS = {'12': ('triton', 'trtllm_mha', 'flashinfer'), '10': ('triton', 'trtllm_mha', 'fa4')}
_API_KEY_ENV = 'SGLANG_API_KEY'


class FlagError(ValueError):
    """Inputs the renderer cannot turn into a command line (not an SGLang start-up refusal)."""


def rules_for(version):
    """(version, rules) of a release; FlagError for releases whose source was not read."""
    version = str(version or NEWEST).strip().lstrip('v')
    if version not in VERSION_RULES:
        raise FlagError('no flag rules recorded for sglang %s; known: %s (read that release\'s server_args.py and '
                        'add it to sglang_flags.VERSION_RULES)' % (version, ', '.join(sorted(VERSION_RULES, key=_vkey))))
    rules = dict(VERSION_RULES[version])
    rules['version'] = version
    return version, rules


def _vkey(version):
    return tuple(int(part) for part in re.findall(r'\d+', version))


def _pick(*values):
    """First value that is not None."""
    for value in values:
        if value is not None:
            return value
    return None


def _text_config(model):
    config = (model or {}).get('config') or {}
    return config.get('text_config') or config


def model_facts(model):
    """Architecture facts of a model profile (profiles/models/*.yml) the flag rules need."""
    config = (model or {}).get('config') or {}
    text = _text_config(model)
    archs = config.get('architectures') or text.get('architectures') or []
    arch = archs[0] if archs else None
    quant = (config.get('quantization_config') or {}).get('quant_method')
    return dict(
        arch=arch,
        hybrid=arch in HYBRID_GDN_ARCHS or bool(text.get('linear_num_value_heads')),
        max_context=text.get('max_position_embeddings'),
        mtp_layers=text.get('mtp_num_hidden_layers'),
        quantization=quant,
    )


def speculative_settings(model, draft_tokens=None, steps=None, topk=None, algorithm=None):
    """MTP settings from the profile with overrides; None when speculative decoding is off."""
    spec = dict(((model or {}).get('serving') or {}).get('speculative') or {})
    draft = _pick(draft_tokens, spec.get('num_draft_tokens'))
    if not draft:
        return None
    return dict(
        algorithm=_pick(algorithm, spec.get('algorithm'), 'NEXTN'),
        num_steps=int(_pick(steps, spec.get('num_steps'), int(draft) - 1)),
        eagle_topk=int(_pick(topk, spec.get('eagle_topk'), 1)),
        num_draft_tokens=int(draft),
    )


def nccl_p2p_disable(explicit=None, verdict=None, host_p2p_trusted=None, host_sev_snp=None, tp_size=1):
    """Decide NCCL_P2P_DISABLE: (bool, reason). Explicit setting, then the gpu_p2p_check verdict, then the host."""
    if explicit is not None:
        return bool(explicit), 'set explicitly (sglang_server_nccl_p2p_disable=%s)' % bool(explicit)
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


def _check(out, name, message, fix):
    out.append(dict(check=name, message=message, fix=fix))


def render(version, model, plan=None, host=None, server=None):
    """Render the SGLang argv (without the launcher prefix) and environment.

    model:  a model profile (profiles/models/*.yml parsed)
    plan:   VRAM plan values: mem_fraction_static, max_running_requests, context_length, chunked_prefill_size,
            page_size (vram_plan_info output; the role requests an explicit max_running_requests from it)
    host:   gpu_indices, compute_capability, p2p_verdict, p2p_trusted, sev_snp, nnodes, node_rank, dist_init_addr
    server: model_path, served_model_name, host, port, tp_size, and optional flag overrides (see the module doc)

    Returns dict(version, argv, env, warnings, notes, preflight, speculative, nccl_p2p_disable, mamba_strategy).
    Raises FlagError for inputs that cannot be rendered at all.
    """
    version, rules = rules_for(version)
    plan = plan or {}
    host = host or {}
    server = dict(server or {})
    facts = model_facts(model)
    serving = (model or {}).get('serving') or {}
    warnings, notes, preflight = [], [], []

    model_path = server.get('model_path')
    if not model_path:
        raise FlagError('model_path is required (the checkpoint directory on the server)')
    served = _pick(server.get('served_model_name'), (model or {}).get('served_model_name'))
    tp = int(_pick(server.get('tp_size'), serving.get('tp_size'), 1))
    pp = int(_pick(server.get('pp_size'), 1))
    nnodes = int(_pick(host.get('nnodes'), 1))
    node_rank = host.get('node_rank')
    spec = speculative_settings(model, server.get('speculative_num_draft_tokens'),
                                server.get('speculative_num_steps'), server.get('speculative_eagle_topk'),
                                server.get('speculative_algorithm'))
    radix = _pick(server.get('radix_cache'), True)
    page_size = _pick(server.get('page_size'), plan.get('page_size_explicit'))
    chunked = server.get('chunked_prefill_size')
    disable_overlap = bool(server.get('disable_overlap_schedule'))
    attention_backend = server.get('attention_backend')
    quantization = _pick(server.get('quantization'), serving.get('quantization'), facts['quantization'])

    argv = ['--model-path', str(model_path)]
    if served:
        argv += ['--served-model-name', str(served)]
    argv += ['--host', str(_pick(server.get('host'), '127.0.0.1')), '--port', str(int(_pick(server.get('port'), 30000)))]
    argv += ['--tp-size', str(tp)]
    if pp > 1:
        argv += ['--pp-size', str(pp)]
    if nnodes > 1:
        if node_rank is None or not host.get('dist_init_addr'):
            raise FlagError('a profile spanning %d nodes needs node_rank and dist_init_addr (host:port of rank 0)'
                            % nnodes)
        argv += ['--nnodes', str(nnodes), '--node-rank', str(int(node_rank)), '--dist-init-addr',
                 str(host['dist_init_addr'])]
    if quantization:
        argv += ['--quantization', str(quantization)]
    for key, flag in (('reasoning_parser', '--reasoning-parser'), ('tool_call_parser', '--tool-call-parser')):
        value = _pick(server.get(key), serving.get(key))
        if value:
            argv += [flag, str(value)]

    # Speculative decoding (MTP). NEXTN 3/1/4 is also SGLang's auto choice for Qwen3.5; rendered explicitly so the
    # unit says what runs.
    strategy = None
    if spec:
        if facts['mtp_layers'] == 0:
            _check(preflight, 'mtp_layers', 'The model profile declares mtp_num_hidden_layers: 0: the checkpoint has '
                   'no MTP head for --speculative-algorithm %s.' % spec['algorithm'],
                   'Set sglang_server_speculative_num_draft_tokens: 0 (no MTP) or use a checkpoint with MTP layers.')
        argv += ['--speculative-algorithm', spec['algorithm'], '--speculative-num-steps', str(spec['num_steps']),
                 '--speculative-eagle-topk', str(spec['eagle_topk']),
                 '--speculative-num-draft-tokens', str(spec['num_draft_tokens'])]
        if spec['eagle_topk'] == 1 and spec['num_draft_tokens'] != spec['num_steps'] + 1:
            notes.append('with --speculative-eagle-topk 1 SGLang forces --speculative-num-draft-tokens to steps + 1 '
                         '(%d)' % (spec['num_steps'] + 1))

    # Hybrid GDN models: the mamba radix-cache strategy, under the name this release uses.
    requested_strategy = server.get('mamba_strategy') or 'auto'
    if facts['hybrid'] and radix:
        flag = rules['mamba_flag']
        if requested_strategy not in ('auto',) and (flag is None or requested_strategy not in rules['mamba_choices']):
            raise FlagError('mamba strategy %r does not exist in sglang %s (choices: %s)'
                            % (requested_strategy, version, ', '.join(rules['mamba_choices'] if flag else ())))
        if requested_strategy == 'auto' and spec:
            # MTP with radix cache needs extra_buffer ("MTP requires V2 mamba radix cache"); say so explicitly.
            strategy = 'extra_buffer'
        elif requested_strategy == 'auto':
            strategy = None
        else:
            strategy = requested_strategy
        if strategy:
            argv += [flag, strategy]
        resolved = strategy or rules['mamba_auto']
        if spec and resolved != 'extra_buffer' and not resolved.startswith('extra_buffer'):
            if rules['spec_radix_no_buffer']:
                _check(preflight, 'spec_radix_mamba',
                       'Speculative decoding for %s is not compatible with radix cache when using '
                       '--mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, please use '
                       '--mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1.' % facts['arch'],
                       'Leave sglang_server_mamba_strategy at auto (renders %s extra_buffer) or disable the radix cache.'
                       % rules['mamba_flag'])
        if resolved == 'no_buffer' and rules['no_buffer_needs_no_overlap'] and not disable_overlap:
            _check(preflight, 'mamba_no_buffer_overlap',
                   'no_buffer do not support overlap schedule. Try to set disable_overlap_schedule=True.',
                   'Set sglang_server_disable_overlap_schedule: true, or use the extra_buffer strategy.')
        if resolved == 'no_buffer' and page_size not in (None, 1) and rules['no_buffer_needs_no_overlap']:
            _check(preflight, 'mamba_no_buffer_page', 'no_buffer only supports page_size=1.',
                   'Drop sglang_server_page_size or use the extra_buffer strategy.')
        if resolved == 'no_buffer' and attention_backend == 'trtllm_mha' and rules['no_buffer_needs_no_overlap']:
            _check(preflight, 'mamba_no_buffer_backend', 'no_buffer do not support trtllm_mha attention backend.',
                   'Use the extra_buffer strategy or another --attention-backend.')
        if resolved.startswith('extra_buffer'):
            if facts['arch'] not in HYBRID_GDN_ARCHS:
                _check(preflight, 'mamba_extra_buffer_arch',
                       'extra_buffer is not supported for %s; use no_buffer.' % facts['arch'],
                       'Set sglang_server_mamba_strategy: no_buffer.')
            if spec and MAMBA_TRACK_INTERVAL < spec['num_draft_tokens']:
                _check(preflight, 'mamba_track_interval',
                       'mamba_track_interval (%d) must be >= speculative_num_draft_tokens (%d).'
                       % (MAMBA_TRACK_INTERVAL, spec['num_draft_tokens']),
                       'Lower --speculative-num-draft-tokens.')
            if page_size not in (None, 1):
                if MAMBA_TRACK_INTERVAL % page_size != 0:
                    _check(preflight, 'mamba_page_size', 'mamba_track_interval %% page_size == 0 failed '
                           '(mamba_track_interval=%d, page_size=%d).' % (MAMBA_TRACK_INTERVAL, page_size),
                           'Use a page size that divides 256, e.g. 64.')
                elif max(FLA_CHUNK_SIZE, page_size) % min(FLA_CHUNK_SIZE, page_size) != 0:
                    _check(preflight, 'mamba_page_size',
                           'For SSM models with extra buffer, either FLA_CHUNK_SIZE or page_size must be divisible '
                           'by the other, got FLA_CHUNK_SIZE=%d, page_size=%d' % (FLA_CHUNK_SIZE, page_size),
                           'Use --page-size 64 (the cookbook value with extra_buffer).')
    elif facts['hybrid'] and not radix and requested_strategy.startswith('extra_buffer') and \
            rules['extra_buffer_needs_radix']:
        _check(preflight, 'mamba_extra_buffer_radix',
               'mamba extra_buffer is not compatible with --disable-radix-cache Overlap scheduling is already '
               'supported with no_buffer + disable_radix_cache. Please use %s no_buffer instead.'
               % (rules['mamba_flag'] or _SCHEDULER),
               'Keep the radix cache on, or set sglang_server_mamba_strategy: auto.')
    if not radix:
        argv += ['--disable-radix-cache']
    if disable_overlap:
        argv += ['--disable-overlap-schedule']

    # Memory plan: explicit values so SGLang does not silently pick its own (48 running requests under MTP).
    running = _pick(server.get('max_running_requests'), plan.get('max_running_requests'))
    if running is not None:
        argv += ['--max-running-requests', str(int(running))]
    elif spec:
        warnings.append('no --max-running-requests: SGLang %s resets it to %d for speculative decoding ("Max running '
                        'requests is reset to 48 for speculative decoding..."); give a plan or '
                        'sglang_server_max_running_requests' % (version, SPEC_DEFAULT_MAX_RUNNING))
    fraction = _pick(server.get('mem_fraction_static'), plan.get('mem_fraction_static'))
    if fraction is not None:
        fraction = float(fraction)
        if not 0.0 < fraction < 1.0:
            raise FlagError('mem_fraction_static %s is outside (0, 1)' % fraction)
        argv += ['--mem-fraction-static', ('%.4f' % fraction).rstrip('0').rstrip('.')]
    context = _pick(server.get('context_length'), plan.get('context_length'))
    if context is not None:
        argv += ['--context-length', str(int(context))]
    if page_size is not None:
        argv += ['--page-size', str(int(page_size))]
    if chunked is not None:
        argv += ['--chunked-prefill-size', str(int(chunked))]
    for key, flag in (('kv_cache_dtype', '--kv-cache-dtype'), ('mamba_ssm_dtype', '--mamba-ssm-dtype'),
                      ('attention_backend', '--attention-backend')):
        value = server.get(key)
        if value and value != 'auto':
            argv += [flag, str(value)]
    if server.get('watchdog_timeout') is not None:
        argv += ['--watchdog-timeout', str(int(server['watchdog_timeout']))]
    if server.get('enable_metrics'):
        argv += ['--enable-metrics']

    # GPUs and NCCL.
    env = {}
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
        per_node = tp * pp // max(nnodes, 1)
        if len(indices) < per_node:
            _check(preflight, 'gpu_count', 'tp_size %d x pp_size %d over %d node(s) needs %d GPUs per node; '
                   'CUDA_VISIBLE_DEVICES lists %d.' % (tp, pp, nnodes, per_node, len(indices)),
                   'List %d GPU indices in sglang_server_gpu_indices (llmops_gpu_indices) or lower the TP size.'
                   % per_node)
    disable_p2p, p2p_reason = nccl_p2p_disable(server.get('nccl_p2p_disable'), host.get('p2p_verdict'),
                                               host.get('p2p_trusted'), host.get('sev_snp'), tp * pp)
    if host.get('p2p_verdict') == 'nccl_broken':
        _check(preflight, 'nccl_broken', 'gpu_p2p_check verdict nccl_broken: the NCCL all-reduce failed both with '
               'and without P2P.', 'Fix NCCL on the host first (llmops.inference.gpu_p2p_check return values say '
               'which phase failed and why); the server would hang in "%s"' % rules['parallel_begin'])
    if disable_p2p:
        env['NCCL_P2P_DISABLE'] = '1'
        # Custom all-reduce uses CUDA IPC peer access and ignores NCCL_P2P_DISABLE.
        if tp * pp > 1 and '--disable-custom-all-reduce' not in argv:
            argv += ['--disable-custom-all-reduce']
        notes.append('NCCL_P2P_DISABLE=1: %s; NCCL falls back to shared memory, so /dev/shm must be large' % p2p_reason)
    if spec and facts['hybrid'] and rules['spec_v2_env'] == 'required':
        env['SGLANG_ENABLE_SPEC_V2'] = '1'
    # Unbuffered stdout: journald (and the readiness check's stall detector) sees each line when it is printed.
    env['PYTHONUNBUFFERED'] = '1'

    extra = [str(a) for a in (serving.get('extra_args') or [])] + [str(a) for a in (server.get('extra_args') or [])]
    for arg in extra:
        if arg.startswith('--') and '=' not in arg:
            full = arg
            if full in ('--speculative-algo', '--tp', '--mamba-scheduler-strategy') and \
                    not (full == '--mamba-scheduler-strategy' and rules['mamba_flag'] == _SCHEDULER):
                raise FlagError('extra argument %s: use the full flag name (%s)' % (arg, {
                    '--speculative-algo': '--speculative-algorithm', '--tp': '--tp-size',
                    '--mamba-scheduler-strategy': rules['mamba_flag']}[full]))
        if arg == '--api-key' or arg.startswith('--api-key='):
            raise FlagError('--api-key must not be an extra argument: it would be visible in the unit, the process '
                            'command line and the logs; set sglang_server_api_key')
    argv += extra
    if server.get('extra_env'):
        for key, value in sorted(server['extra_env'].items()):
            env[str(key)] = str(value)
    if rules['spec_v2_env'] == 'removed' and 'SGLANG_ENABLE_SPEC_V2' in env:
        warnings.append('SGLANG_ENABLE_SPEC_V2 was removed in sglang %s; setting it only prints a warning' % version)

    preflight.extend(preflight_checks(version, rules, facts, dict(
        tp=tp, pp=pp, nnodes=nnodes, node_rank=node_rank, served=served, page_size=page_size,
        chunked=_pick(chunked, plan.get('chunked_prefill_size')), context=context, spec=spec,
        attention_backend=attention_backend, compute_capability=host.get('compute_capability'), env=env)))

    return dict(version=version, argv=argv, env=env, warnings=warnings, notes=notes, preflight=preflight,
                speculative=spec, nccl_p2p_disable=disable_p2p, nccl_p2p_reason=p2p_reason,
                mamba_strategy=strategy or (rules['mamba_auto'] if facts['hybrid'] and radix else None),
                rules=dict((k, v) for k, v in rules.items() if k != 'mamba_choices'))


def preflight_checks(version, rules, facts, s):
    """SGLang start-up validations that need no GPU. Each: dict(check, message (SGLang's words), fix)."""
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
    if s['context'] is not None and facts['max_context'] and int(s['context']) > int(facts['max_context']) and \
            s['env'].get('SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN') != '1':
        _check(out, 'context_length',
               'Warning: User-specified context_length (%d) is greater than the derived context_length (%d). This may '
               'lead to incorrect model outputs or CUDA errors. Note that the derived context_length may differ from '
               'max_position_embeddings in the model\'s config. To allow overriding this maximum, set the env var '
               'SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1' % (int(s['context']), int(facts['max_context'])),
               'Lower sglang_server_context_length to at most %d.' % int(facts['max_context']))
    spec = s['spec']
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
               '--attention-backend flashinfer.', 'Drop sglang_server_attention_backend or use flashinfer.')
    if backend and facts['hybrid'] and major in BLACKWELL_GDN_BACKENDS and backend not in BLACKWELL_GDN_BACKENDS[major]:
        _check(out, 'gdn_blackwell_backend', 'Only %s backends are supported on Blackwell GPUs for hybrid GDN models'
               % ', '.join(BLACKWELL_GDN_BACKENDS[major]),
               'Use --attention-backend %s on SM%s0.' % (BLACKWELL_GDN_BACKENDS[major][0], major))
    return out


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
