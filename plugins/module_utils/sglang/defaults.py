# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""SGLang's own server-argument and memory-planning rules, as pure functions of one resolved release.

PRIVATE to the collection. The facts (per-release values, planner rule families, architecture sets) are data in
profiles/sglang_releases.yml; ``release`` below is always ``sglang_release.release(table, version)``, and each rule
names the SGLang source it mirrors. Two planner families exist because SGLang moved its memory planner in between
(``release['planner']['family']``: ``apr`` = model_executor/model_runner_kv_cache_mixin.py, ``configurator`` =
mem_cache/kv_cache_configurator.py); their differences are keys of the family, not branches on its name.

``resolve_mamba_strategy`` is the ONE resolution of the mamba radix-cache strategy: the planner sizes the pools with
its result and the renderer writes it on the command line, so the plan and the argv cannot disagree.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

from ansible_collections.llmops.inference.plugins.module_utils.sglang.release import ReleaseError, check_choice

GIB = 1 << 30


class SglangRuleError(ValueError):
    """An input SGLang itself would reject; the message quotes SGLang where it has one."""


def capacity_defaults(release, gpu_mem_mib, tp_size):
    """chunked_prefill_size and decode CUDA-graph max_bs SGLang picks from memory.total (MiB) and TP size."""
    planner = release['planner']
    if gpu_mem_mib is None:
        return planner['unknown_gpu']['chunked_prefill_size'], planner['unknown_gpu']['cuda_graph_max_bs']
    for limit_gib, chunk, bs_small, bs_large in planner['buckets']:
        if limit_gib is None or gpu_mem_mib < limit_gib * 1024:
            return chunk, (bs_small if tp_size < 4 else bs_large)
    raise AssertionError('unreachable: the last bucket has no limit (sglang_release validates it)')


def prefill_graph_sizes(max_bs):
    """cuda_graph_hook.generate_prefill_cuda_graph_batch_sizes (same list as 0.5.11's piecewise tokens)."""
    sizes = (list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32))
             + list(range(576, 1024 + 1, 64)) + list(range(1280, 4096 + 1, 256))
             + list(range(4608, max_bs + 1, 512)))
    return [size for size in sizes if size <= max_bs]


def vlm_factor(vision_config, class_defaults=None):
    """adjust_mem_fraction_for_vlm: a ViT-size factor. SGLang reads num_hidden_layers (default 24), not depth, from
    the vision config object: a key the checkpoint lacks is the architecture's config-class default when it has one
    (``class_defaults``: release architectures.vision_config_defaults)."""
    if vision_config is None:
        return 1.0
    class_defaults = class_defaults or {}
    layers = vision_config.get('num_hidden_layers', class_defaults.get('num_hidden_layers', 24))
    hidden = vision_config.get('hidden_size', class_defaults.get('hidden_size', 1024))
    ratio = layers * hidden ** 2 / float(24 * 1024 ** 2)
    dynamic = max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))
    return 0.95 * dynamic


def _activation_tokens(release, chunked_prefill_size):
    if chunked_prefill_size and chunked_prefill_size > 0:
        return max(chunked_prefill_size, 2048)
    return max(release['defaults']['max_prefill_tokens'], 2048)


def default_mem_fraction(release, gpu_mem_mib, tp_size, chunked_prefill_size, decode_max_bs, prefill_graph, spec,
                         multimodal, vision_config, pp_size=1, mla=False, attn_dp_size=1, vision_defaults=None,
                         model_path=None):
    """The mem_fraction_static SGLang derives when the flag is unset, with the reserve that produced it (MiB).

    mla: the model uses MLA attention; memory_hook.reserve_for_graph_mb then reserves a flat 1.5 GiB for the prefill
    graphs instead of 8 MiB per captured size.
    attn_dp_size: DP attention adds decode max_bs x attn_dp_size x 3 MiB, and x 1.5 more above max_bs 300
    (arg_groups/memory_hook.py:370-378). The heuristic runs before DP attention divides chunked_prefill_size
    (arg_groups/pipeline.py: memory hook first), so ``chunked_prefill_size`` is the undivided value here.
    model_path: the --model-path SGLang gets (a Llama-2 name caps the prefill graphs at 4096 tokens; None: no cap).
    """
    planner = release['planner']
    reserved = 512 + _activation_tokens(release, chunked_prefill_size) * 1.5 + tp_size * pp_size / 8.0 * 1024
    reserved += decode_max_bs * 2
    if attn_dp_size > 1:
        dp = planner['dp_attention_graph_reserve']
        reserved += decode_max_bs * attn_dp_size * dp['mib_per_bs']
        if decode_max_bs > dp['large_bs']:
            reserved += decode_max_bs * attn_dp_size * dp['extra_mib_per_bs']
    prefill_sizes = []
    if prefill_graph and chunked_prefill_size and chunked_prefill_size > 0:
        max_bs = min(8192, chunked_prefill_size) if mla else chunked_prefill_size
        if model_path and 'llama-2' in str(model_path).lower():
            # arg_groups/memory_hook.py:258-262: "For Llama2 series models, max_bs is limited to 4096" (by the
            # --model-path name).
            max_bs = min(max_bs, 4096)
        prefill_sizes = prefill_graph_sizes(max_bs)
        reserved += 1.5 * 1024 if mla else len(prefill_sizes) * 8
    if gpu_mem_mib is not None and gpu_mem_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    if spec:
        reserved += planner['spec_reserve_mib']
    if gpu_mem_mib is None:
        fraction = planner['unknown_gpu']['mem_fraction_static']
    else:
        fraction = round((gpu_mem_mib - reserved) / float(gpu_mem_mib), 3)
    factor = vlm_factor(vision_config, vision_defaults) if multimodal else 1.0
    return dict(mem_fraction_static=fraction * factor, before_vlm_factor=fraction, vlm_factor=factor,
                reserved_mib=reserved, prefill_graph_sizes=len(prefill_sizes))


def runtime_reserve_mib(release, gpu_mem_mib, tp_size, chunked_prefill_size, pp_size=1):
    """runtime_context.pre_capture_activation_reserve_mb: what SGLang budgets for activations outside the pools.

    ``chunked_prefill_size`` is the value at run time: under DP attention chunked_prefill_size // attn_dp_size
    (arg_groups/parallel_hook.py:327-332; runtime_context.py:1797-1819 reads the scheduler's value).
    """
    reserved = 512 + _activation_tokens(release, chunked_prefill_size) * 1.5 + tp_size * pp_size / 8.0 * 1024
    if gpu_mem_mib is not None and gpu_mem_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return reserved


def _refuse(out, check, message, fix):
    out['refusals'].append(dict(check=check, message=message, fix=fix))


def resolve_mamba_strategy(release, facts, requested='auto', radix_cache=True, disable_overlap_schedule=False,
                           page_size=None, spec_draft_tokens=0, attention_backend=None):
    """Resolve the mamba radix-cache strategy the way the release does, and check it the way its start-up does.

    release:  sglang_release.release(); its flags (mamba_auto, the no_buffer / extra_buffer rules), defaults
              (mamba_track_interval, fla_chunk_size) and the extra_buffer architectures (via ``facts``)
    facts:    model_config.model_facts() of the model (arch, hybrid, extra_buffer_supported)
    requested: the strategy asked for (auto, no_buffer, extra_buffer, extra_buffer_lazy)

    Returns dict(strategy (None for a non-hybrid model or with the radix cache off), disable_overlap_schedule (after
    the resolution), overlap_turned_off (the resolution turned it off: render --disable-overlap-schedule), notes,
    refusals (dict(check, message (SGLang's words), fix) for every start-up validation it fails; empty when SGLang
    starts)). Raises ReleaseError for a strategy the release does not have at all.

    Rules (overrides._mamba_radix_cache_resolution, mamba_hook.validate_mamba_*; older releases server_args.py
    _handle_mamba_radix_cache):
    * auto on a release whose auto is extra_buffer: extra_buffer when the overlap schedule is on or page > 1 and the
      architecture supports it, else no_buffer with the overlap schedule turned off;
    * auto on a release whose auto is no_buffer: no_buffer (overlap turned off without MTP) - except with MTP and the
      radix cache, which that release refuses for no_buffer (PR #19391): then extra_buffer, the fix SGLang's own
      message names, so the default configuration starts;
    * explicit values are validated, never changed.
    """
    flags, defaults = release['flags'], release['defaults']
    requested = requested or 'auto'
    if requested != 'auto':
        if flags['mamba_flag'] is None:
            raise ReleaseError('mamba strategy %r: sglang %s has no mamba radix-cache strategy flag'
                               % (requested, release['version']))
        message = check_choice(release, 'mamba_strategy', requested)
        if message:
            raise ReleaseError(message)
    disable_overlap = bool(disable_overlap_schedule)
    out = dict(requested=requested, strategy=None, disable_overlap_schedule=disable_overlap,
               overlap_turned_off=False, notes=[], refusals=[])
    if not facts['hybrid'] or flags['mamba_flag'] is None:
        return out
    arch = facts['arch']
    flag = flags['mamba_flag']
    spec = bool(spec_draft_tokens)
    if not radix_cache:
        if requested.startswith('extra_buffer'):
            if flags['extra_buffer_needs_radix']:
                _refuse(out, 'mamba_extra_buffer_radix',
                        'mamba extra_buffer is not compatible with --disable-radix-cache Overlap scheduling is already '
                        'supported with no_buffer + disable_radix_cache. Please use %s no_buffer instead.' % flag,
                        'Keep the radix cache on, or set mamba_strategy: auto.')
            else:
                out['notes'].append('%s has no effect with --disable-radix-cache (no mamba radix cache)' % requested)
        return out

    strategy, disable_overlap = _auto_strategy(release, facts, requested, disable_overlap, page_size, spec, out)
    out['overlap_turned_off'] = disable_overlap and not disable_overlap_schedule
    out['strategy'] = strategy
    out['disable_overlap_schedule'] = disable_overlap
    if strategy == 'no_buffer':
        _check_no_buffer(flags, arch, out, spec, disable_overlap, page_size, attention_backend)
    else:
        _check_extra_buffer(defaults, facts, out, strategy, spec, spec_draft_tokens, disable_overlap, page_size)
    return out


def _auto_strategy(release, facts, requested, disable_overlap, page_size, spec, out):
    """(strategy, disable_overlap) of ``requested`` with the radix cache on: auto resolved as the release does
    (notes into ``out``), an explicit strategy as given."""
    flags = release['flags']
    arch, flag = facts['arch'], flags['mamba_flag']
    strategy = requested
    wants_paging = page_size is not None and page_size > 1
    if strategy == 'auto':
        if flags['mamba_auto'] == 'extra_buffer':
            if (not disable_overlap or wants_paging) and facts['extra_buffer_supported']:
                strategy = 'extra_buffer'
            else:
                strategy = 'no_buffer'
                if not disable_overlap:
                    out['notes'].append('mamba strategy auto resolves to no_buffer for %s, which turns the overlap '
                                        'schedule off' % arch)
                disable_overlap = True
        elif spec and flags['spec_radix_no_buffer'] and facts['extra_buffer_supported']:
            strategy = 'extra_buffer'
            out['notes'].append('sglang %s resolves mamba strategy auto to no_buffer, which it refuses with MTP and the '
                                'radix cache; %s extra_buffer is rendered instead' % (release['version'], flag))
        else:
            strategy = 'no_buffer'
            if not spec:
                disable_overlap = True
    return strategy, disable_overlap


def _check_no_buffer(flags, arch, out, spec, disable_overlap, page_size, attention_backend):
    """The start-up validations of no_buffer (mamba_hook.validate_mamba_no_buffer), refusals into ``out``."""
    flag = flags['mamba_flag']
    if spec and flags['spec_radix_no_buffer']:
        _refuse(out, 'spec_radix_mamba',
                'Speculative decoding for %s is not compatible with radix cache when using '
                '--mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, please use '
                '--mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1.' % arch,
                'Leave mamba_strategy at auto (renders %s extra_buffer) or disable the radix cache.' % flag)
    if flags['no_buffer_needs_no_overlap']:
        if not disable_overlap:
            _refuse(out, 'mamba_no_buffer_overlap',
                    'no_buffer do not support overlap schedule. Try to set disable_overlap_schedule=True.',
                    'Set disable_overlap_schedule: true (--disable-overlap-schedule), or use the extra_buffer '
                    'strategy.')
        if page_size not in (None, 1):
            _refuse(out, 'mamba_no_buffer_page', 'no_buffer only supports page_size=1.',
                    'Drop page_size or use the extra_buffer strategy.')
        if attention_backend == 'trtllm_mha':
            _refuse(out, 'mamba_no_buffer_backend', 'no_buffer do not support trtllm_mha attention backend.',
                    'Use the extra_buffer strategy or another --attention-backend.')
    elif page_size not in (None, 1):
        out['notes'].append('no_buffer with radix cache forces page_size=1')


def _check_extra_buffer(defaults, facts, out, strategy, spec, spec_draft_tokens, disable_overlap, page_size):
    """The start-up validations of extra_buffer and extra_buffer_lazy (validate_mamba_extra_buffer checks both
    alike), refusals into ``out``."""
    arch = facts['arch']
    track, fla = defaults['mamba_track_interval'], defaults['fla_chunk_size']
    if strategy == 'extra_buffer_lazy' and disable_overlap:
        # kv_cache_configurator._calculate_mamba_ratio asserts it at start-up.
        _refuse(out, 'mamba_lazy_overlap',
                'Lazy extra buffer requires overlap schedule (--disable-overlap-schedule is incompatible)',
                'Drop disable_overlap_schedule, or use mamba_strategy: extra_buffer.')
    if not facts['extra_buffer_supported']:
        _refuse(out, 'mamba_extra_buffer_arch', 'extra_buffer is not supported for %s; use no_buffer.' % arch,
                'Set mamba_strategy: no_buffer (with disable_overlap_schedule: true).')
    # validate_mamba_extra_buffer's bare asserts print no message: the pre-check quotes the statement.
    if spec and track < spec_draft_tokens:
        _refuse(out, 'mamba_track_interval', 'assert view.mamba_track_interval >= view.speculative_num_draft_tokens '
                '(mamba_track_interval %d, speculative_num_draft_tokens %d)' % (track, spec_draft_tokens),
                'Lower --speculative-num-draft-tokens.')
    if page_size not in (None, 1):
        if track % page_size != 0:
            _refuse(out, 'mamba_page_size', 'assert view.mamba_track_interval %% view.page_size == 0 '
                    '(mamba_track_interval %d, page_size %d)' % (track, page_size),
                    'Use a page size that divides %d, e.g. 64.' % track)
        elif max(fla, page_size) % min(fla, page_size) != 0:
            _refuse(out, 'mamba_page_size',
                    'For SSM models, either chunk_size or page_size must be divisible by the other, got '
                    'chunk_size=%d, page_size=%d' % (fla, page_size),
                    'Use --page-size 64 (the cookbook value with extra_buffer).')


def mamba_ratio(release, strategy, radix_cache, disable_overlap):
    """_calculate_mamba_ratio: mamba slots one running request may hold."""
    if not radix_cache:
        return 1
    extra = 0
    # allocation_sizing.get_mamba_tracking_slots: the lazy extra buffer defers its second tracking slot (1), the
    # eager one holds 2 with the overlap schedule and 1 without.
    if strategy == 'extra_buffer_lazy':
        extra = 1
    elif strategy == 'extra_buffer':
        extra = 1 if disable_overlap else 2
    return release['defaults']['mamba_cache_ratio'] + extra


def mamba_pool(release, rest_gib, per_slot, ratio, spec_draft_tokens, max_running, radix_cache,
               max_mamba_cache_size=None, mamba_full_memory_ratio=None, attn_dp_size=1):
    """Size the mamba/GDN state pool from the budget left after weights (GiB).

    Mirrors kv_cache_configurator._handle_max_mamba_cache (planner family with padded_mamba_pool) or
    model_runner_kv_cache_mixin.handle_max_mamba_cache (without). Returns dict with slots (max_mamba_cache_size,
    per DP worker), spec_state_bytes, pool_bytes (charged), rest_gib (left for the KV cache) and mode
    (explicit / from_max_running_requests / memory).

    The pinned release (mem_cache/kv_cache_configurator.py:3229-3409), three modes:
    1. --max-mamba-cache-size given (:3303-3324): K = max_mamba_cache_size // attn_dp_size; with spec it reserves
       per_slot x (min(max(1, max_running // attn_dp_size), K // ratio) + 1) x D;
    2. radix cache off and max_running_requests set (:3325-3344): K = max(1, max_running // attn_dp_size); spec
       reserves per_slot x (K + 1) x D;
    3. otherwise (:3345-3386): K from the budget share r / (1 + r), r = --mamba-full-memory-ratio (default 0.9),
       jointly with the spec reservation; its cap divides max_running by attn_dp_size too.
    """
    full_memory_ratio = release['defaults']['mamba_full_memory_ratio']
    if mamba_full_memory_ratio is not None:
        full_memory_ratio = mamba_full_memory_ratio
    spec = bool(spec_draft_tokens)
    spec_bytes = 0.0
    dp = max(1, int(attn_dp_size or 1))
    mode = 'memory'
    if not release['planner']['padded_mamba_pool'] and (max_mamba_cache_size is not None or dp > 1
                                                        or mamba_full_memory_ratio is not None):
        raise SglangRuleError('--max-mamba-cache-size, --mamba-full-memory-ratio and DP attention are modelled for '
                              'the configurator planner (0.5.18 on) only, not for sglang %s' % release['version'])
    if not release['planner']['padded_mamba_pool']:
        if spec:
            spec_bytes = float(per_slot * max_running * spec_draft_tokens)
            rest_gib -= spec_bytes / GIB
        if not radix_cache and max_running is not None:
            slots = max_running
        else:
            budget = rest_gib * full_memory_ratio / (1 + full_memory_ratio)
            slots = int((budget * GIB) // per_slot)
        charged = slots * per_slot
    else:
        if max_mamba_cache_size is not None:
            mode = 'explicit'
            slots = max_mamba_cache_size // dp
            if spec:
                capped = min(max(1, max_running // dp), slots // ratio)
                spec_bytes = float(per_slot * (capped + 1) * spec_draft_tokens)
                rest_gib -= spec_bytes / GIB
        elif not radix_cache and max_running is not None:
            mode = 'from_max_running_requests'
            slots = max(1, max_running // dp)
            if spec:
                spec_bytes = float(per_slot * (slots + 1) * spec_draft_tokens)
                rest_gib -= spec_bytes / GIB
        else:
            budget_bytes = rest_gib * full_memory_ratio / (1 + full_memory_ratio) * GIB
            if spec:
                slots = int((budget_bytes - per_slot * (1 + spec_draft_tokens))
                            // (per_slot * (1 + spec_draft_tokens / float(ratio))))
                capped = min(max(1, max_running // dp), slots // ratio)
                spec_bytes = float(per_slot * (capped + 1) * spec_draft_tokens)
                rest_gib -= spec_bytes / GIB
            else:
                slots = int((budget_bytes - per_slot) // per_slot)
        charged = (slots + 1) * per_slot
    if slots <= 0:
        raise SglangRuleError(
            'Not enough GPU memory for hybrid (mamba/linear-attention) state cache. Computed max_mamba_cache_size=%d '
            '(total_rest_memory=%.2f GB, mamba_cache_per_req=%.2f MB).' % (slots, rest_gib, per_slot / float(1 << 20)))
    return dict(slots=slots, spec_state_bytes=spec_bytes, pool_bytes=charged, rest_gib=rest_gib - charged / GIB,
                allocated_slots=slots + 1, mode=mode, full_memory_ratio=full_memory_ratio)


def kv_tokens(rest_gib, cell_bytes, page_size):
    """DefaultPoolConfigurator.calculate_pool_sizes: tokens from the byte budget, page aligned."""
    tokens = int(rest_gib * GIB) // cell_bytes
    return tokens // page_size * page_size


def max_running_requests(release, tokens, context_length, requested, mamba_slots, ratio, attn_dp_size=1):
    """resolve_max_num_reqs (configurator) / _resolve_max_num_reqs (apr). Returns (value per DP worker, what bound it).

    The pinned release (mem_cache/kv_cache_configurator.py:3119-3172): an explicit value (or the speculative default 48) is split
    over the DP workers, max(1, requested // attn_dp_size) (:3128), then capped by tokens // 2; the unset estimate
    (2048..4096) is per worker already and not divided.
    """
    estimated = max(min(int(tokens / float(context_length) * 512), 4096), 2048)
    if requested is not None:
        if release['planner']['cap_requested_by_estimate']:
            value, bound = min(requested, estimated), ('requested' if requested <= estimated else 'estimate')
        else:
            requested = max(1, requested // max(1, int(attn_dp_size or 1)))
            value, bound = min(requested, tokens // 2), ('requested' if requested <= tokens // 2 else 'kv_tokens')
    else:
        value, bound = min(estimated, tokens // 2), ('estimate' if estimated <= tokens // 2 else 'kv_tokens')
    if mamba_slots is not None:
        cap = mamba_slots // ratio
        if cap < value:
            value, bound = cap, 'mamba_slots'
    if value <= 0:
        raise SglangRuleError(
            'Hybrid (mamba/linear-attention) state cache is too small to serve any requests. '
            'max_mamba_cache_size=%s, mamba_ratio=%d, resulting max_num_reqs=%d.' % (mamba_slots, ratio, value))
    return value, bound


def min_viable_mem_fraction(available_gib, pre_load_gib):
    """The suggestion in SGLang's 'Loaded weights leave no GPU memory for the KV cache' error."""
    minimum = 1 - available_gib / pre_load_gib
    return math.ceil(minimum * 1000) / 1000.0, minimum
