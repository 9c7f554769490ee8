# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""SGLang's own memory-planning rules, per SGLang release, as pure functions.

PRIVATE to the collection. Every rule names the SGLang source it mirrors so a version bump is a diff against
that file. Two rule families exist because SGLang moved its memory planner in between:

* ``apr``  -- 0.5.10 / 0.5.11 (``server_args.py`` ``_handle_gpu_memory_settings``,
  ``model_executor/model_runner_kv_cache_mixin.py``). The April-2026 data point in the notes ran a dev build
  between these two releases.
* ``configurator`` -- 0.5.18 / 0.5.23 (``arg_groups/memory_hook.py``, ``mem_cache/kv_cache_configurator.py``,
  ``model_executor/pool_configurator.py``).

Only versions whose wheels were read are listed; anything else is refused rather than guessed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

GIB = 1 << 30

# version -> rule family. The collection's pin lives in profiles/sglang.yml, not here.
RULES_BY_VERSION = {
    '0.5.10': 'apr',
    '0.5.11': 'apr',
    '0.5.18': 'configurator',
    '0.5.23': 'configurator',
}
NEWEST_RULES = '0.5.23'

_FAMILY = {
    'apr': dict(
        # server_args.py _handle_gpu_memory_settings (0.5.11): (chunked_prefill, max_bs tp<4, max_bs tp>=4)
        buckets=((20, 2048, 8, 8), (35, 2048, 24, 80), (60, 4096, 32, 160), (90, 8192, 256, 512),
                 (160, 8192, 256, 512), (None, 16384, 512, 512)),
        # EAGLE/NEXTN draft model + its graphs were a flat reserve; draft weights load after pool sizing.
        spec_reserve_mib=4096,
        draft_weights_before_sizing=False,
        prefill_graph_term=False,           # piecewise graphs are disabled for multimodal archs in 0.5.11
        mm_reserve_mib=0,                   # mm_runtime_reservation_gb does not exist yet
        padded_mamba_pool=False,            # K = budget // per_slot; the +1 padding slot is not charged
        auto_strategy='no_buffer',          # --mamba-scheduler-strategy auto -> no_buffer (+ overlap off)
        spec_requires_extra_buffer=True,    # spec + radix + no_buffer raises (PR #19391)
        cap_requested_by_estimate=True,     # requested max_running_requests is min()-ed with the estimate
        strategy_flag='--mamba-scheduler-strategy',
    ),
    'configurator': dict(
        # arg_groups/memory_hook.py handle_gpu_memory_settings (0.5.18, 0.5.23)
        buckets=((20, 2048, 8, 8), (35, 4096, 48, 160), (60, 4096, 32, 160), (90, 8192, 256, 512),
                 (160, 8192, 256, 512), (None, 16384, 512, 512)),
        spec_reserve_mib=0,                 # draft weights are loaded before sizing and profiled instead
        draft_weights_before_sizing=True,   # scheduler.init_target_memory_pool runs after the draft worker exists
        prefill_graph_term=True,            # breakable prefill graph is on by default on CUDA (reserve_for_graph_mb)
        mm_reserve_mib=100,                 # kv_cache_configurator.mm_runtime_reservation_gb, SGLANG_VLM_CACHE_SIZE_MB
        padded_mamba_pool=True,             # _handle_max_mamba_cache solves for K including the +1 padding slot
        auto_strategy='extra_buffer',       # overrides._mamba_radix_cache_resolution (PR #28151)
        spec_requires_extra_buffer=False,
        cap_requested_by_estimate=False,    # resolve_max_num_reqs: min(requested, tokens // 2)
        strategy_flag='--mamba-radix-cache-strategy',
    ),
}

# Architectures whose extra_buffer strategy is supported (overrides._MAMBA_EXTRA_BUFFER_ARCHS, Qwen subset).
EXTRA_BUFFER_ARCHS = frozenset([
    'Qwen3NextForCausalLM', 'Qwen3_5ForConditionalGeneration', 'Qwen3_5MoeForConditionalGeneration',
    'Qwen3_5ForCausalLM', 'Qwen3_5MoeForCausalLM',
])
# Multimodal archs that keep the breakable prefill CUDA graph (model_config.py allowlist, Qwen subset).
BREAKABLE_GRAPH_MULTIMODAL_ARCHS = frozenset(['Qwen3_5ForConditionalGeneration', 'Qwen3_5MoeForConditionalGeneration'])

SPEC_DEFAULT_MAX_RUNNING = 48            # speculative_hook._handle_eagle_family
SPEC_AUTO_PARAMS = (3, 1, 4)             # _auto_choose_speculative_params fallback: steps, topk, draft tokens
MAMBA_BASE_RATIO = 3                     # MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO
MAMBA_FULL_MEMORY_RATIO = 0.9            # --mamba-full-memory-ratio default
MAMBA_TRACK_INTERVAL = 256               # --mamba-track-interval default
FLA_CHUNK_SIZE = 64
MAX_PREFILL_TOKENS = 16384               # --max-prefill-tokens default


class SglangRuleError(ValueError):
    """An input SGLang itself would reject; the message quotes SGLang where it has one."""


def rules_for(version):
    """Return (version, rule dict) for an SGLang version string, or raise SglangRuleError."""
    version = str(version or NEWEST_RULES).strip()
    if version.startswith('v'):
        version = version[1:]
    family = RULES_BY_VERSION.get(version)
    if family is None:
        raise SglangRuleError('no planner rules recorded for sglang %s; known: %s (read the memory planner of that '
                              'release and add it to sglang_defaults.RULES_BY_VERSION)'
                              % (version, ', '.join(sorted(RULES_BY_VERSION))))
    rules = dict(_FAMILY[family])
    rules['family'] = family
    rules['version'] = version
    return version, rules


def capacity_defaults(rules, gpu_mem_mib, tp_size):
    """chunked_prefill_size and decode CUDA-graph max_bs SGLang picks from memory.total (MiB) and TP size."""
    if gpu_mem_mib is None:
        return 4096, 160
    for limit_gib, chunk, bs_small, bs_large in rules['buckets']:
        if limit_gib is None or gpu_mem_mib < limit_gib * 1024:
            return chunk, (bs_small if tp_size < 4 else bs_large)
    raise AssertionError('unreachable')


def prefill_graph_sizes(max_bs):
    """cuda_graph_hook.generate_prefill_cuda_graph_batch_sizes (same list as 0.5.11's piecewise tokens)."""
    sizes = (list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32))
             + list(range(576, 1024 + 1, 64)) + list(range(1280, 4096 + 1, 256))
             + list(range(4608, max_bs + 1, 512)))
    return [size for size in sizes if size <= max_bs]


def vlm_factor(vision_config):
    """adjust_mem_fraction_for_vlm: a ViT-size factor. SGLang reads num_hidden_layers (default 24), not depth."""
    if vision_config is None:
        return 1.0
    layers = vision_config.get('num_hidden_layers', 24)
    hidden = vision_config.get('hidden_size', 1024)
    ratio = layers * hidden ** 2 / float(24 * 1024 ** 2)
    dynamic = max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))
    return 0.95 * dynamic


def default_mem_fraction(rules, gpu_mem_mib, tp_size, chunked_prefill_size, decode_max_bs, prefill_graph, spec,
                         multimodal, vision_config, pp_size=1):
    """The mem_fraction_static SGLang derives when the flag is unset, with the reserve that produced it (MiB)."""
    if chunked_prefill_size and chunked_prefill_size > 0:
        activation_tokens = max(chunked_prefill_size, 2048)
    else:
        activation_tokens = max(MAX_PREFILL_TOKENS, 2048)
    reserved = 512 + activation_tokens * 1.5 + tp_size * pp_size / 8.0 * 1024
    reserved += decode_max_bs * 2
    prefill_sizes = []
    if prefill_graph and chunked_prefill_size and chunked_prefill_size > 0:
        prefill_sizes = prefill_graph_sizes(chunked_prefill_size)
        reserved += len(prefill_sizes) * 8
    if gpu_mem_mib is not None and gpu_mem_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    if spec:
        reserved += rules['spec_reserve_mib']
    if gpu_mem_mib is None:
        fraction = 0.95 if rules['family'] == 'configurator' else 0.88
    else:
        fraction = round((gpu_mem_mib - reserved) / float(gpu_mem_mib), 3)
    factor = vlm_factor(vision_config) if multimodal else 1.0
    return dict(mem_fraction_static=fraction * factor, before_vlm_factor=fraction, vlm_factor=factor,
                reserved_mib=reserved, prefill_graph_sizes=len(prefill_sizes))


def runtime_reserve_mib(gpu_mem_mib, tp_size, chunked_prefill_size, pp_size=1):
    """runtime_context.pre_capture_activation_reserve_mb: what SGLang budgets for activations outside the pools."""
    tokens = max(chunked_prefill_size, 2048) if chunked_prefill_size and chunked_prefill_size > 0 \
        else max(MAX_PREFILL_TOKENS, 2048)
    reserved = 512 + tokens * 1.5 + tp_size * pp_size / 8.0 * 1024
    if gpu_mem_mib is not None and gpu_mem_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return reserved


def resolve_mamba_strategy(rules, requested, radix_cache, disable_overlap, page_size, arch, spec):
    """Resolve auto / validate an explicit mamba strategy the way the pinned release does.

    Returns (strategy or None when radix is off, disable_overlap_schedule, notes).
    """
    notes = []
    if not radix_cache:
        if requested == 'extra_buffer' and rules['family'] == 'apr':
            raise SglangRuleError('mamba extra_buffer is not compatible with --disable-radix-cache Overlap scheduling '
                                  'is already supported with no_buffer + disable_radix_cache. Please use '
                                  '--mamba-scheduler-strategy no_buffer instead.')
        if requested == 'extra_buffer':
            notes.append('extra_buffer has no effect with --disable-radix-cache (no mamba radix cache)')
        return None, disable_overlap, notes
    strategy = requested or 'auto'
    if strategy == 'auto':
        if rules['auto_strategy'] == 'extra_buffer':
            wants_paging = page_size is not None and page_size > 1
            if (not disable_overlap or wants_paging) and arch in EXTRA_BUFFER_ARCHS:
                strategy = 'extra_buffer'
            else:
                strategy = 'no_buffer'
                disable_overlap = True
        else:
            strategy = 'no_buffer'
            if not spec:
                disable_overlap = True
    if strategy == 'extra_buffer':
        if arch not in EXTRA_BUFFER_ARCHS:
            raise SglangRuleError('extra_buffer is not supported for %s; use no_buffer.' % arch)
        if page_size not in (None, 1):
            if MAMBA_TRACK_INTERVAL % page_size != 0:
                raise SglangRuleError('mamba_track_interval %d must be divisible by page_size %d'
                                      % (MAMBA_TRACK_INTERVAL, page_size))
            if max(FLA_CHUNK_SIZE, page_size) % min(FLA_CHUNK_SIZE, page_size) != 0:
                raise SglangRuleError('For SSM models with extra buffer, either FLA_CHUNK_SIZE or page_size must be '
                                      'divisible by the other, got FLA_CHUNK_SIZE=%d, page_size=%d'
                                      % (FLA_CHUNK_SIZE, page_size))
    else:
        if rules['family'] == 'configurator':
            if page_size not in (None, 1):
                raise SglangRuleError('no_buffer only supports page_size=1.')
            if not disable_overlap:
                raise SglangRuleError('no_buffer do not support overlap schedule. Try to set '
                                      'disable_overlap_schedule=True. (add --disable-overlap-schedule)')
        else:
            if page_size not in (None, 1):
                notes.append('no_buffer with radix cache forces page_size=1')
            if spec and rules['spec_requires_extra_buffer']:
                raise SglangRuleError(
                    'Speculative decoding for %s is not compatible with radix cache when using '
                    '--mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, please use '
                    '--mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1.' % arch)
    return strategy, disable_overlap, notes


def mamba_ratio(strategy, radix_cache, disable_overlap):
    """_calculate_mamba_ratio: mamba slots one running request may hold."""
    if not radix_cache:
        return 1
    extra = 0
    if strategy == 'extra_buffer':
        extra = 1 if disable_overlap else 2
    return MAMBA_BASE_RATIO + extra


def mamba_pool(rules, rest_gib, per_slot, ratio, spec_draft_tokens, max_running, radix_cache,
               full_memory_ratio=MAMBA_FULL_MEMORY_RATIO):
    """Size the mamba/GDN state pool from the budget left after weights (GiB).

    Mirrors kv_cache_configurator._handle_max_mamba_cache (configurator) or
    model_runner_kv_cache_mixin.handle_max_mamba_cache (apr). Returns dict with slots (max_mamba_cache_size),
    spec_state_bytes, pool_bytes (charged) and rest_gib (left for the KV cache).
    """
    spec = bool(spec_draft_tokens)
    spec_bytes = 0.0
    if rules['family'] == 'apr':
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
        if not radix_cache and max_running is not None:
            slots = max(1, max_running)
            if spec:
                spec_bytes = float(per_slot * (slots + 1) * spec_draft_tokens)
                rest_gib -= spec_bytes / GIB
        else:
            budget_bytes = rest_gib * full_memory_ratio / (1 + full_memory_ratio) * GIB
            if spec:
                slots = int((budget_bytes - per_slot * (1 + spec_draft_tokens))
                            // (per_slot * (1 + spec_draft_tokens / float(ratio))))
                capped = min(max(1, max_running), slots // ratio)
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
                allocated_slots=slots + 1)


def kv_tokens(rest_gib, cell_bytes, page_size):
    """DefaultPoolConfigurator.calculate_pool_sizes: tokens from the byte budget, page aligned."""
    tokens = int(rest_gib * GIB) // cell_bytes
    return tokens // page_size * page_size


def max_running_requests(rules, tokens, context_length, requested, mamba_slots, ratio):
    """resolve_max_num_reqs (configurator) / _resolve_max_num_reqs (apr). Returns (value, what bound it)."""
    estimated = max(min(int(tokens / float(context_length) * 512), 4096), 2048)
    if requested is not None:
        if rules['cap_requested_by_estimate']:
            value, bound = min(requested, estimated), ('requested' if requested <= estimated else 'estimate')
        else:
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
