# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Where SGLang lays a server out before it sizes memory: DP attention, page size, DSA, speculative parameters.

PRIVATE to the collection. Pure functions of one resolved release (sglang_release.release(); the facts are data in
profiles/sglang_releases.yml) and the model facts (model_config.model_facts). Each rule names the pinned SGLang
source it mirrors (paths under sglang/srt/; docs/dev/sglang-memory.md explains them):

* ``attention_parallel``: the attention-TP width under DP attention and SGLang's refusals of the layout;
* ``default_page_size``: the page size the default attention backend (or a model override) forces;
* ``dsa_layout``: the DeepSeek DSA KV dtype, backends, latent width and indexer bytes;
* ``speculative_params``: steps / topk / draft tokens as SGLang resolves them (auto params per architecture);
* ``req_to_token_bytes``: the request-to-token table allocated beside the pools.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class LayoutError(ValueError):
    """A layout SGLang refuses (or one the planner does not model); ``variable`` names the setting to change."""

    def __init__(self, msg, variable=None):
        super(LayoutError, self).__init__(msg)
        self.variable = variable


def attention_parallel(release, tp_size, dp_size=1, enable_dp_attention=False, arch=None):
    """(attn_dp_size, attn_tp_size) of ``--tp-size tp --dp-size dp [--enable-dp-attention]``.

    arg_groups/parallel_hook.py:39-61 handle_deprecated_dp_attention rewrites --dp-size N --enable-dp-attention to
    attn_dp_size=N, dp_size=1; runtime_context.py:73-76 derive_attn_tp_size = tp // attn_dp_size // attn_cp_size;
    parallel_hook.py:285-286 refuses attn_dp_size < 1 and :326 asserts tp % attn_dp_size == 0. --dp-size without
    the flag is N data-parallel replicas of the whole server (N x tp GPUs), which the collection does not deploy.
    ``arch``: DP attention is planned only for the architectures of release architectures.dp_attention (their attention
    layers split over attn_tp_size; models/llama.py:181-194 splits over the whole tp_size instead).
    """
    dp = 1 if dp_size is None else int(dp_size)
    if dp < 1:
        raise LayoutError('dp_size %d: SGLang refuses it ("--attn-dp-size must be positive") (fix: dp_size: 1 (no DP '
                          'attention) or a divisor of tp_size %d)' % (dp, tp_size), 'llmops_dp_size')
    if dp == 1:
        if enable_dp_attention:
            raise LayoutError('enable_dp_attention with dp_size 1: SGLang runs one attention-DP group, i.e. no DP '
                              'attention (parallel_hook.py:39-61) (fix: dp_size: N with N > 1 dividing tp_size %d, '
                              'or enable_dp_attention: false)' % tp_size, 'llmops_enable_dp_attention')
        return 1, tp_size
    if not enable_dp_attention:
        raise LayoutError('dp_size %d without enable_dp_attention: SGLang starts %d data-parallel replicas of the whole '
                          'server (%d x %d GPUs), which this collection does not deploy (fix: enable_dp_attention: '
                          'true for DP attention inside the %d GPUs, or dp_size: 1)'
                          % (dp, dp, dp, tp_size, tp_size), 'llmops_enable_dp_attention')
    if release['planner'].get('dp_attention_graph_reserve') is None:
        raise LayoutError('DP attention is not modelled for sglang %s (its memory hook was not read; '
                          'profiles/sglang_releases.yml dp_attention_graph_reserve is null) (fix: dp_size: 1)'
                          % release['version'], 'llmops_dp_size')
    allowed = release['architectures'].get('dp_attention') or ()
    if arch is not None and arch not in allowed:
        raise LayoutError('DP attention for %s: its SGLang model splits attention over the whole tp_size while the KV '
                          'pool is sized per attention-TP rank (pool_configurator.py:356), so the planner does not plan '
                          'it; DP attention is planned for %s (fix: dp_size: 1)' % (arch, ', '.join(sorted(allowed))),
                          'llmops_dp_size')
    if tp_size % dp:
        raise LayoutError('dp_size %d does not divide tp_size %d: SGLang asserts tp_size %% attn_dp_size == 0 '
                          '(arg_groups/parallel_hook.py:326) (fix: dp_size: one of %s)'
                          % (dp, tp_size, ', '.join(str(d) for d in range(2, tp_size + 1) if tp_size % d == 0) or
                             '1 (tp_size has no divisor above 1)'), 'llmops_dp_size')
    return dp, tp_size // dp


def _sm(compute_capability):
    return int(str(compute_capability or '0').split('.', maxsplit=1)[0] or 0)


def dsa_layout(release, facts, kv_cache_dtype, compute_capability, backends=None):
    """The DSA pool of a DeepSeek-V3.2-style model: dict(kv_cache_dtype, backends, latent_bytes_per_layer (per
    KV-dtype byte), indexer_bytes_per_layer, page_size), or None for a model without the DSA indexer.

    ``backends``: the [prefill, decode] DSA backends when --dsa-prefill-backend / --dsa-decode-backend set them (a
    start-up log that names them); None for the release's defaults below.

    * KV dtype auto: arg_groups/overrides.py:532-538 (fp8_e4m3 on SM >= 10 without attention sinks, else bfloat16),
      for the architectures of _DEEPSEEK_FAMILY_ARCHS (:745-760) only; only bf16/bfloat16/fp8_e4m3 (:541-544).
    * Backends: overrides.py:714-726; the raw latent (kv_lora_rank + qk_rope_head_dim) stays with trtllm on either
      side (mem_cache/kv_cache_configurator.py:3434-3440) or tilelang on both (:3449-3456), fp8 otherwise stores
      kv_lora_rank + kv_lora_rank // 128 x 4 scale bytes + a bf16 rope (:3458-3473): 656 bytes for DeepSeek-V3.2
      against 576. (The HIP raw layout of :3442-3447 is not modelled: the planner plans CUDA.)
    * Indexer: ceil((index_head_dim + index_head_dim // 128 x 4) / index_kpool) uint8 bytes per indexer layer per
      token (model_executor/pool_configurator.py:560-633, mem_cache/memory_pool.py:5279-5281): 132 for V3.2, fp8
      whatever the KV dtype.
    * Page size: 64 x index_kpool on CUDA (arg_groups/model_overrides/deepseek_v2.py:167-172).
    """
    if not facts.get('dsa'):
        return None
    rules = release['planner'].get('dsa')
    if rules is None:
        raise LayoutError('%s carries the DeepSeek DSA indexer cache, which the planner rules of sglang %s do not model '
                          '(profiles/sglang_releases.yml dsa is null)' % (facts['arch'], release['version']),
                          'llmops_model_profile')
    gen = 'sm100' if _sm(compute_capability) >= 10 else 'hopper'
    dtype = kv_cache_dtype or 'auto'
    family = facts['arch'] in release['architectures']['deepseek_family']
    if dtype == 'auto' and family:
        dtype = 'bfloat16' if facts.get('learnable_sink') else rules['kv_cache_dtype_auto'][gen]
    if dtype == 'bf16':
        dtype = 'bfloat16'
    if family and dtype not in ('bfloat16', 'fp8_e4m3'):
        raise LayoutError('kv_cache_dtype %s: SGLang asserts "DeepSeek DSA only supports bf16/bfloat16 or fp8_e4m3 '
                          'kv_cache_dtype" (arg_groups/overrides.py:541-544) (fix: kv_cache_dtype: auto, bfloat16 or '
                          'fp8_e4m3)' % dtype, 'llmops_kv_cache_dtype')
    if backends is None:
        backends = list(rules['backends'].get(dtype, {}).get(gen) or ())
    else:
        backends = list(backends)
    # kv_cache_configurator.py:3434-3456: trtllm on either side, or tilelang on both, keeps the raw latent.
    raw = (rules['raw_layout_backend'] in backends or dtype != 'fp8_e4m3' or
           (len(backends) == 2 and backends[0] == backends[1] == 'tilelang'))
    rank, rope = facts['kv_lora_rank'], facts['qk_rope_head_dim']
    if raw:
        latent = rank + rope
        scaled = False
    else:
        block = rules['indexer_quant_block']
        latent = rank + rank // block * 4 + rope * 2
        scaled = True
    block = rules['indexer_quant_block']
    head = facts['index_head_dim'] or 128
    kpool = facts.get('index_kpool') or 1
    indexer = -(-(head + head // block * 4) // kpool)
    return dict(kv_cache_dtype=dtype, backends=backends, latent_dim=latent, latent_scaled=scaled,
                indexer_bytes_per_layer=indexer, indexer_layers=facts['dsa_indexer_layers'],
                page_size=rules['page_size'] * kpool)


def _asymmetric_kv(facts):
    """configs/model_config.py:1263-1272 has_asymmetric_kv: head_dim != v_head_dim, or the sliding-window pair."""
    full = facts.get('v_head_dim') not in (None, facts.get('head_dim'))
    swa = facts.get('n_swa') and facts.get('swa_v_head_dim') not in (None, facts.get('swa_head_dim'))
    return bool(full or swa)


def default_page_size(release, facts, page_size, compute_capability, attention_backend=None, spec_topk=0,
                      mamba_strategy=None, radix_cache=True, spec=False):
    """(page size, note or None) SGLang runs with; LayoutError where it overrides a given page size silently.

    * DSA on CUDA: 64 x index_kpool whatever is given (arg_groups/model_overrides/deepseek_v2.py:167-172).
    * SM100 (major 10, utils/common.py:309-312), attention backend unset:
      - Qwen3-Next / Qwen3.5 multimodal archs (model_overrides/qwen3_5.py:17-49): trtllm_mha (spec topk <= 1) and page
        64 unless (no extra buffer, radix on, no spec), else triton and page 1 - given page sizes are overridden;
      - other MHA archs (text-only Qwen3.5 included): get_default_attn_backend picks trtllm_mha for topk <= 1
        (model_override_base.py:312-325; gpt-oss's own override always, model_overrides/gpt_oss.py:29-31), whose
        page must be 16/32/64/128, else 64 (overrides.py:1176-1188);
      - the DeepSeek family without DSA: trtllm_mla (deepseek_v2.py:176-186), page 32/64, else 64 (:1155-1163).
    * an explicit trtllm_mha / trtllm_mla backend: the same page constraints.
    * architectures in the release's sm100_flashinfer set (0.5.18 NemotronH): flashinfer, no page constraint.
    """
    rules = release['planner']
    arch = facts['arch']
    sm = _sm(compute_capability)
    dsa = dsa_layout(release, facts, 'auto', compute_capability) if facts.get('dsa') else None
    if dsa is not None:
        if page_size not in (None, dsa['page_size']):
            raise LayoutError('page_size %d: SGLang sets page_size %d for the DeepSeek DSA indexer whatever is given '
                              '(arg_groups/model_overrides/deepseek_v2.py:167-172) (fix: page_size: null or %d)'
                              % (page_size, dsa['page_size'], dsa['page_size']), 'llmops_page_size')
        return dsa['page_size'], 'DeepSeek DSA: page_size %d (deepseek_v2.py override)' % dsa['page_size']
    pages = rules.get('sm100_default_pages')
    backend = attention_backend
    if sm == 10 and backend is None and arch in release['architectures']['sm100_hybrid_page']:
        hybrid_page = rules.get('sm100_hybrid_page_size')
        if hybrid_page:
            trtllm = (spec_topk or 1) <= 1
            buffered = mamba_strategy in ('extra_buffer', 'extra_buffer_lazy')
            forced = hybrid_page if trtllm and not (not buffered and radix_cache and not spec) else 1
            if page_size not in (None, forced):
                raise LayoutError(
                    'page_size %d: on SM100 SGLang overrides the page size of %s to %d (attention backend %s, '
                    'arg_groups/model_overrides/qwen3_5.py:24-49) (fix: page_size: null, or set attention_backend '
                    'to keep your page size)' % (page_size, arch, forced, 'trtllm_mha' if forced > 1 else 'triton'),
                    'llmops_page_size')
            if forced > 1:
                return forced, 'SM100: attention backend trtllm_mha, page_size %d (SGLang default for %s)' % (forced, arch)
            return 1, None
    if pages is None:
        return page_size or 1, None
    if sm == 10 and backend is None and arch in release['architectures']['sm100_flashinfer']:
        # The architecture's own override picks flashinfer, which has no page constraint (0.5.18 NemotronH:
        # arg_groups/overrides.py:1307-1308).
        return page_size or 1, None
    if sm == 10 and backend is None:
        if facts['attention'] == 'mla':
            if arch in release['architectures']['deepseek_family']:
                backend = 'trtllm_mla'
        elif facts['family'] == 'hybrid_swa' or (spec_topk or 1) <= 1:
            # gpt-oss: its own override picks trtllm_mha on SM100 (model_overrides/gpt_oss.py:29-31).
            backend = 'trtllm_mha'
            # K and V rows of different widths: fa4, page 128 (model_override_base.py:319-324, overrides.py:1273-1296).
            if pages.get('fa4') and _asymmetric_kv(facts):
                backend = 'fa4'
    rule = dict(trtllm_mha=pages['mha'], trtllm_mla=pages['mla'], fa4=pages.get('fa4')).get(backend)
    if rule is None:
        return page_size or 1, None
    default, allowed = rule
    if page_size in allowed:
        return page_size, None
    return default, ('attention backend %s%s: page_size %d (%s)' % (
        backend, ' (SGLang default on SM100)' if attention_backend is None else '', default,
        'SGLang changes page_size %d to %d' % (page_size, default) if page_size else 'its page-size constraint'))


def speculative_params(release, arch, algorithm, num_steps=None, topk=None, num_draft_tokens=None):
    """(steps, topk, draft tokens) SGLang runs with, or (0, 0, 0) without speculative decoding.

    Nothing given: _auto_choose_speculative_params (arg_groups/speculative_hook.py:1430-1461) by the TARGET
    architecture (speculative_auto_params_by_arch, else the fallback speculative_auto_params). Steps without draft
    tokens: draft tokens = steps + 1. topk 1: draft tokens forced to steps + 1 (:1255-1266); topk > 1 keeps them.
    """
    if not algorithm and not num_draft_tokens:
        return 0, 0, 0
    defaults = release['defaults']
    if num_steps is None and topk is None and not num_draft_tokens:
        auto = (defaults.get('speculative_auto_params_by_arch') or {}).get(arch) or defaults['speculative_auto_params']
        num_steps, topk, num_draft_tokens = auto
    if num_steps is None:
        num_steps = num_draft_tokens - 1 if num_draft_tokens else defaults['speculative_auto_params'][0]
    topk = 1 if topk is None else int(topk)
    if num_steps < 1 or topk < 1:
        raise LayoutError('speculative_num_steps %s / eagle_topk %s: both must be >= 1 with speculative decoding'
                          % (num_steps, topk), 'llmops_speculative_num_steps')
    if topk == 1 or not num_draft_tokens:
        num_draft_tokens = num_steps + 1
    return int(num_steps), topk, int(num_draft_tokens)


def req_to_token_bytes(max_running_requests, context_length, page_size=1, steps=0, topk=0, draft_tokens=0):
    """Bytes of ReqToTokenPool.req_to_token: int32 (max_running_requests + 1, context + extra)
    (mem_cache/memory_pool.py:402-408; kv_cache_configurator.py:1648, :1722, :1773).

    extra = 4 + draft tokens; with speculative decoding and page_size > 1 at least 2 x alloc_len_per_decode +
    page_size - 1, alloc_len_per_decode = max(steps x topk, draft tokens), or with topk > 1 the page-aligned tree
    footprint (mem_cache/allocation_sizing.py:28-59, :96-116).
    """
    extra = 4 + (draft_tokens or 0)
    if draft_tokens and page_size > 1:
        if topk <= 1:
            per_decode = max(steps * max(topk, 1), draft_tokens)
        else:
            pages = ((page_size - 1) + steps + page_size - 1) // page_size
            per_decode = max(pages * page_size * topk, draft_tokens)
        extra = max(extra, 2 * per_decode + page_size - 1)
    return (max_running_requests + 1) * (context_length + extra) * 4
