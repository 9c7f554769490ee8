# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""VRAM fit planner: predict SGLang's own memory plan for a model before any download.

Families (one module each in planner/families/, found through families/registry.py; named per architecture in
profiles/sglang_releases.yml): hybrid GDN (Gated DeltaNet state per request + full-attention KV), MLA (latent KV
replicated over TP), hybrid SWA (full + sliding-window pools), hybrid Mamba-2 and plain GQA (dense or MoE); the plan
asks the model's family for its checks, parameter counts, KV cell, buffers and state pool instead of branching on
its name. docs/dev/sglang-memory.md cites the pinned source for each rule.

PRIVATE to the collection. Pure functions, stdlib only. The SGLang rules live in sglang_defaults and the release facts
in profiles/sglang_releases.yml (``plan(release=sglang_release.release(table, version), ...)``); the model facts come
from model_config. This file turns a config.json (or the architecture facts of a model profile) plus a GPU into the
numbers SGLang logs at start-up ("Mamba Cache is allocated. max_mamba_cache_size", "KV Cache is allocated. #tokens",
"max_running_requests").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math
import os

from ansible_collections.llmops.inference.plugins.module_utils.model.config import ModelConfigError
from ansible_collections.llmops.inference.plugins.module_utils.model.config import model_facts as _model_facts
from ansible_collections.llmops.inference.plugins.module_utils.model.config import unsized_reason
from ansible_collections.llmops.inference.plugins.module_utils.planner.families import base as _family_base
from ansible_collections.llmops.inference.plugins.module_utils.planner.families import hybrid_swa as _swa_family
from ansible_collections.llmops.inference.plugins.module_utils.planner.families.base import DTYPE_BYTES
from ansible_collections.llmops.inference.plugins.module_utils.planner.families.registry import FAMILIES, family
from ansible_collections.llmops.inference.plugins.module_utils.sglang.defaults import (
    GIB,
    SglangRuleError,
    capacity_defaults,
    default_mem_fraction,
    kv_tokens,
    mamba_pool,
    mamba_ratio,
    max_running_requests,
    min_viable_mem_fraction,
    resolve_mamba_strategy,
    runtime_reserve_mib,
)
from ansible_collections.llmops.inference.plugins.module_utils.sglang.layout import (
    LayoutError,
    attention_parallel,
    default_page_size,
    dsa_layout,
    req_to_token_bytes,
    speculative_params,
)
from ansible_collections.llmops.inference.plugins.module_utils.sglang.quant import kv_cache_auto
from ansible_collections.llmops.inference.plugins.module_utils.sglang.release import ReleaseError, check_choice
from ansible_collections.llmops.inference.plugins.module_utils.planner.spec_draft import (
    DraftError,
    check_algorithm,
    check_draft_context,
    check_swa_draft,
    draft_facts,
    draft_kv_layer_bytes,
    draft_layers,
    draft_weights,
    env_bool,
    EMBED_REPLICATION_ENV,
    mtp_draft_rule,
    mtp_draft_weights,
)
from ansible_collections.llmops.inference.plugins.module_utils.model.weight_bytes import WeightBytesError, checkpoint_bytes

MIB = 1 << 20
DEFAULT_STARTUP_OVERHEAD_GIB = 1.2   # driver reservation + CUDA context + NCCL before weights load
DEFAULT_RUNTIME_OVERHEAD_GIB = 0.05  # allocated between "Load weight end" and pool sizing; not in the logs
DEFAULT_MIN_HEADROOM_GIB = 4.0
DEFAULT_TARGET_HEADROOM_GIB = 8.0
DEFAULT_ACCEPT_LENGTH = 3.1          # published accept length for NEXTN 3/1/4 on Qwen3.5 (download-and-bench.md)


class PlanError(Exception):
    """The plan cannot be made, or SGLang would refuse to start. ``kind`` says which; ``details['variable']``, when
    given, is the llmops_* setting the operator has to change."""

    def __init__(self, msg, kind='input', **details):
        super(PlanError, self).__init__(msg)
        self.kind = kind
        self.details = details


# --------------------------------------------------------------------------------------------------------------
# Model facts
# --------------------------------------------------------------------------------------------------------------

def load_json(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except (IOError, OSError, ValueError) as exc:
        raise PlanError('cannot read %s: %s' % (path, exc))


def read_model_path(model_path):
    """config.json plus the safetensors index of a local checkpoint: (config, total_size or None, weight names)."""
    config = load_json(os.path.join(model_path, 'config.json'))
    index_path = os.path.join(model_path, 'model.safetensors.index.json')
    if not os.path.exists(index_path):
        return config, None, None
    index = load_json(index_path)
    total = (index.get('metadata') or {}).get('total_size')
    return config, (int(total) if total is not None else None), sorted((index.get('weight_map') or {}).keys())


def sized_facts(config, release, facts=None):
    """model_config.model_facts() of a config the planner can size; PlanError otherwise. ``facts``: model_facts() of
    ``config``, when the caller computed them already (once per resolution); they are checked, not recomputed."""
    if not isinstance(config, dict) or not config:
        raise PlanError('model_config must be a non-empty dict (a config.json or the config section of a profile)')
    if facts is None:
        try:
            facts = _model_facts(config, release['architectures'])
        except ModelConfigError as exc:
            raise PlanError(str(exc))
    if facts['missing']:
        raise PlanError('model_config lacks %s (arch %s)' % (' / '.join(facts['missing']), facts['arch']))
    if facts['family'] is None:
        raise PlanError(unsized_reason(facts['arch'], release['architectures'], release.get('version', '?')),
                        kind='architecture')
    problem = family(facts).check(facts)
    if problem:
        raise PlanError(problem)
    return facts


def tp_sizes(max_gpus):
    """The tensor-parallel sizes tried for a host of max_gpus GPUs: the powers of two up to it (fits.py's "what else
    fits", make compare's layouts)."""
    size, out = 1, []
    while size <= max_gpus:
        out.append(size)
        size *= 2
    return out


def check_tp(facts, tp, attn_tp=None):
    """The head divisibility SGLang asserts when it builds the layers (qwen3_next.py / qwen3_5.py / mamba_utils).

    Attention and GDN heads are split over the attention-TP group (models/qwen3.py:164-177, qwen3_next.py:622-635:
    attn_tp_size = tp // attn_dp_size under DP attention); MoE experts over the whole TP group.
    """
    attn_tp = attn_tp or tp
    width = 'tp %d' % tp if attn_tp == tp else 'attention tp %d (tp %d / dp %d)' % (attn_tp, tp, tp // attn_tp)
    problems = []
    mha = facts['attention'] == 'mha'
    if tp < 1:
        problems.append('tp_size must be >= 1')
    elif facts['heads'] % attn_tp:
        problems.append('num_attention_heads %d is not divisible by %s (assert total_num_heads %% attn_tp_size == 0)'
                        % (facts['heads'], width))
    if mha and tp >= 1 and facts['kv_heads'] >= attn_tp and facts['kv_heads'] % attn_tp:
        problems.append('num_key_value_heads %d is not divisible by %s' % (facts['kv_heads'], width))
    if mha and tp >= 1 and facts['kv_heads'] < attn_tp and attn_tp % facts['kv_heads']:
        problems.append('%s is not a multiple of num_key_value_heads %d (KV heads are replicated when tp > kv heads)'
                        % (width, facts['kv_heads']))
    if tp >= 1 and facts['hybrid']:
        for key, name in (('lin_v_heads', 'linear_num_value_heads'), ('lin_k_heads', 'linear_num_key_heads')):
            if facts[key] % attn_tp:
                problems.append('%s %d is not divisible by %s (GDN heads are sharded: num_heads // attn_tp_size)'
                                % (name, facts[key], width))
    if tp >= 1 and facts['experts'] and facts['moe_inter'] % tp:
        problems.append('moe_intermediate_size %d is not divisible by tp %d' % (facts['moe_inter'], tp))
    if problems:
        raise PlanError('tp_size %d does not fit %s: %s' % (tp, facts['arch'], '; '.join(problems)), kind='tp',
                        variable='llmops_dp_size' if attn_tp != tp else 'llmops_tp_size')


# --------------------------------------------------------------------------------------------------------------
# Parameter counts (the tensor layout of model_tensors; checked against the model cards' totals)
# --------------------------------------------------------------------------------------------------------------

def param_counts(f):
    """Total, per-rank-replicated and decode-active parameter counts of the target, vision tower and MTP head (the
    family's own count: planner/families/)."""
    return (FAMILIES[f['family']].param_counts if f.get('family') in FAMILIES else _family_base.param_counts)(f)


def computed_weights(config, facts):
    """weight_bytes.checkpoint_bytes() of a quantized config, or (None, why not) for weights_per_rank's refusal."""
    try:
        return checkpoint_bytes(config, facts), None
    except WeightBytesError as exc:
        return None, str(exc)


def weights_per_rank(f, counts, tp, weights_bytes, spec, language_only=False, computed=None, why_not=None):
    """Bytes of target and draft weights one TP rank holds, and the bytes/param used.

    weights_bytes (the safetensors index's total_size) wins; else a quantized config is sized by ``computed``
    (weight_bytes.checkpoint_bytes: each part in its stored format); else parameters x the config dtype.
    """
    checkpoint_params = counts['language'] + counts['vision'] + counts['mtp']
    kv_extra = 0
    if f['attention'] == 'mha' and f['kv_heads'] < tp:
        # Each rank holds one whole KV head instead of kv_heads/tp of them.
        kv_extra = f['n_full'] * counts['kv_proj_per_layer'] * (1 - float(f['kv_heads']) / tp)
    vision = 0 if language_only else counts['vision']
    if not weights_bytes and f['quant_method'] and computed:
        parts = computed['parts']
        # The KV heads replicated beyond their share are priced like the rest of the language model.
        language_bpp = float(parts['language']) / counts['language']
        replicated = computed['replicated'] * (1 - 1.0 / tp) + kv_extra * language_bpp
        target = (parts['language'] + (0 if language_only else parts['vision'])) / float(tp) + replicated
        draft = parts['mtp'] / float(tp) if spec else 0.0
        source = 'computed from quantization_config: %s, %s' % (
            computed['format'], 'validated against %s' % computed['validated'] if computed['validated']
            else 'unverified (no real checkpoint of this format was compared)')
        return dict(target=target, draft=draft, bytes_per_param=float(computed['total']) / checkpoint_params,
                    source=source)
    if weights_bytes:
        bpp = float(weights_bytes) / checkpoint_params
        source = 'weights_bytes'
    elif f['quant_method']:
        raise PlanError('%s is quantized (quant_method=%s) and its size cannot be computed (%s): give weights_bytes '
                        '(or model_path with a safetensors index)' % (f['arch'], f['quant_method'],
                                                                      why_not or 'no quantization_config was read'))
    else:
        bpp = float(DTYPE_BYTES.get(f['dtype'], 2))
        source = 'config (%s, %d B/param)' % (f['dtype'], bpp)
    replicated = counts['replicated'] * (1 - 1.0 / tp) + kv_extra
    target = ((counts['language'] + vision) / float(tp) + replicated) * bpp
    draft = counts['mtp'] / float(tp) * bpp if spec else 0.0
    return dict(target=target, draft=draft, bytes_per_param=bpp, source=source)


def weights_fix(f, config, counts, tp, spec, language_only, weights_bytes, computed, free_gib, startup_gib, max_tp):
    """What can make weights fit that do not (no --mem-fraction-static can), with the numbers: the smallest larger
    tensor-parallel size whose weights leave a fifth of the free memory, an FP8 checkpoint of the same model when this
    one is unquantized (priced as a block-FP8 128x128 checkpoint, the layout of the FP8 releases), and the GPU memory
    the weights need at this size. Returns the text of a "(fix: ...)"."""
    def per_rank(size, facts=f, priced=computed, total=weights_bytes):
        return weights_per_rank(facts, counts, size, total, spec, language_only, priced)['target'] / GIB
    here = per_rank(tp)
    fixes = []
    size = tp * 2
    while size <= max(8, max_tp or 0) * 2:
        try:
            check_tp(f, size)
        except PlanError:
            size *= 2
            continue
        if per_rank(size) <= 0.8 * free_gib:
            fixes.append('llmops_tp_size: %d (%.1f GiB of weights per GPU%s)' % (
                size, per_rank(size), '' if max_tp is None or size <= max_tp else
                '; this host gives the server %d GPUs' % max_tp))
            break
        size *= 2
    if not f['quant_method'] and not weights_bytes:
        fp8 = dict(f, quant_method='fp8')
        try:
            priced = checkpoint_bytes(dict(config, quantization_config=dict(quant_method='fp8',
                                                                            weight_block_size=[128, 128])), fp8)
            fixes.append('an FP8 checkpoint of this model (about %.1f GiB per GPU at tp %d)'
                         % (per_rank(tp, fp8, priced, None), tp))
        except (WeightBytesError, PlanError):
            fixes.append('a quantized (FP8 or 4-bit) checkpoint')
    fixes.append('a GPU with more than %.0f GiB (%.1f GiB of weights + %.1f GiB at start-up, and room for the KV '
                 'cache) in llmops_gpu_profile' % (math.ceil((here + startup_gib) / 0.8), here, startup_gib))
    return '; or '.join(fixes)


# --------------------------------------------------------------------------------------------------------------
# Per-rank state sizes
# --------------------------------------------------------------------------------------------------------------

def mamba_slot_bytes(f, tp, ssm_dtype):
    """Bytes of one request's recurrent state on one rank (the family's state_slot: Mamba2StateShape.create +
    BaseLinearStateParams.mamba_cache_per_req for the GDN and Mamba-2 hybrids, nothing for the others)."""
    return family(f).state_slot(f, tp, ssm_dtype)


def kv_heads_per_rank(f, tp):
    return _family_base.kv_heads_per_rank(f, tp)


def kv_layer_bytes(f, tp, kv_bytes):
    """Bytes one token keeps in one attention layer of one rank, and whether the pool splits them into K and V
    (the family's kv_layer: MHA/GQA heads per rank x (head_dim + v_head_dim), MLA's latent on every rank)."""
    return family(f).kv_layer(f, tp, kv_bytes)


def swa_layer_bytes(f, tp, kv_bytes):
    """Bytes one token keeps in one sliding-window layer of one rank (families/hybrid_swa.swa_layer)."""
    return _swa_family.swa_layer(f, tp, kv_bytes)


def kv_cell_bytes(f, tp, kv_bytes, draft_layers_in_budget, swa_ratio=None, dsa=None):
    """The per-token cell of the token budget, and the part of it that is the draft's layers (when in the budget):
    the family's kv_cell, or the DSA pool's (``dsa``: sglang_layout.dsa_layout; families/base.dsa_cell)."""
    if dsa is not None:
        return _family_base.dsa_cell(f, kv_bytes, draft_layers_in_budget, dsa)
    return family(f).kv_cell(f, tp, kv_bytes, draft_layers_in_budget, swa_ratio)


def dp_attention_weights(f, tp, attn_tp, bytes_per_param):
    """Bytes per GPU that DP attention adds: the attention (and GDN) layers are split over the attention-TP group
    (attn_tp = tp / dp; models/qwen3.py:164-177, qwen3_next.py:622-635, :132-218) instead of all tp ranks. MLA's
    down projections are replicated either way (param_counts counts them as replicated)."""
    if attn_tp >= tp or not bytes_per_param:
        return 0.0
    mixers = _family_base.mixer_params(f)
    if f['attention'] == 'mla':
        mixers -= (f['layers'] - f['n_linear']) * f['hidden'] * (f['q_lora_rank'] + f['kv_lora_rank'] + f['qk_rope_head_dim'])
    return mixers * (1.0 / attn_tp - 1.0 / tp) * bytes_per_param


def model_dtype(release, f):
    """The dtype the server runs the model in: the config's (model facts), unless the release's planner family names
    an architecture and quantization whose dtype SGLang forces (model_dtype_overrides, e.g. 0.5.18's GPT-OSS MXFP4 in
    bfloat16)."""
    for override in (release.get('planner') or {}).get('model_dtype_overrides') or ():
        if f['arch'] in override['architectures'] and f['quant_method'] == override['quant_method']:
            return override['dtype']
    return f['dtype']


def resolve_kv_bytes(release, f, kv_cache_dtype, config=None):
    """(dtype, bytes per element) of the KV cache: the release's choices, then the sizes this planner knows.

    ``auto`` follows the checkpoint (sglang_quant.kv_cache_auto: the quantization config's kv_cache_quant_algo as the
    method's config class derives it, e.g. from an 8-bit float kv_cache_scheme; mem_cache/kv_cache_dtype.py:49-57).
    """
    kv_cache_dtype = kv_cache_dtype or 'auto'
    message = check_choice(release, 'kv_cache_dtype', kv_cache_dtype)
    if message:
        raise PlanError(message)
    if kv_cache_dtype == 'auto':
        if config is not None:
            fp8 = kv_cache_auto(release.get('quantization'), config)['fp8']
        else:
            fp8 = str(f['kv_cache_quant_algo'] or '').upper() == 'FP8'
        if fp8:
            return 'fp8_e4m3', 1
        dtype = model_dtype(release, f)
        return dtype if dtype in DTYPE_BYTES else 'bfloat16', DTYPE_BYTES.get(dtype, 2)
    if kv_cache_dtype not in DTYPE_BYTES:
        raise PlanError('kv_cache_dtype %s: sglang %s accepts it, but the planner knows no byte size for it (known: %s)'
                        % (kv_cache_dtype, release['version'], ', '.join(sorted(DTYPE_BYTES))))
    return kv_cache_dtype, DTYPE_BYTES[kv_cache_dtype]


# --------------------------------------------------------------------------------------------------------------
# The plan
# --------------------------------------------------------------------------------------------------------------

PLAN_DEFAULTS = dict(
    model_config=None, gpu_memory_mib=None, gpu_profile=None, tp_size=None, release=None,
    mem_fraction_static=None, context_length=None, max_running_requests=None, speculative_num_draft_tokens=None,
    speculative_num_steps=None, mamba_ssm_dtype=None, kv_cache_dtype='auto', page_size=None, radix_cache=True,
    mamba_strategy='auto', disable_overlap_schedule=False, chunked_prefill_size=None, weights_bytes=None,
    free_memory_before_load_gib=None, free_memory_after_load_gib=None, runtime_overhead_gib=None,
    startup_overhead_gib=None, language_only=False, concurrency=(1, 8, 32), min_headroom_gib=DEFAULT_MIN_HEADROOM_GIB,
    target_headroom_gib=DEFAULT_TARGET_HEADROOM_GIB, mtp_accept_length=None, max_tp=None, weight_names=None,
    # DP attention (--dp-size N --enable-dp-attention), the mamba pool flags, EAGLE-3 and the attention backend.
    dp_size=1, enable_dp_attention=False, max_mamba_cache_size=None, mamba_full_memory_ratio=None,
    speculative_algorithm=None, speculative_eagle_topk=None, draft_model_config=None, attention_backend=None,
    # The server's environment (llmops_environment): SGLANG_ENABLE_EMBED_REPLICATION changes the MTP draft's embedding.
    environment=None,
    # The --model-path the server gets: SGLang's memory heuristic reads its name (a Llama-2 cap on the prefill graphs).
    model_path_name=None,
    # model_config.model_facts(model_config, release architectures), when the caller computed them once already (the
    # resolver hands the same facts to the renderer); None: computed here.
    model_facts=None,
)


def plan(**kwargs):
    """Compute SGLang's memory plan for one server. Raises PlanError when it cannot (or SGLang would not) start."""
    unknown = set(kwargs) - set(PLAN_DEFAULTS)
    if unknown:
        raise PlanError('unknown planner inputs: %s' % ', '.join(sorted(unknown)))
    p = dict(PLAN_DEFAULTS)
    p.update(dict((k, v) for k, v in kwargs.items() if v is not None))
    if not isinstance(p['release'], dict) or not p['release'].get('planner') or not p['release'].get('flags'):
        raise PlanError('release is required: sglang_release.release(table, version) of profiles/sglang_releases.yml')
    try:
        return _plan(p)
    except PlanError as exc:
        exc.details = dict(p.get('_sizing_inputs', {}), **exc.details)
        raise
    except SglangRuleError as exc:
        # The free memory the refusal was computed from (benchmarks/oracle_grid.py gives SGLang the same).
        raise PlanError(str(exc), kind='sglang', **p.get('_sizing_inputs', {}))
    except ReleaseError as exc:
        raise PlanError(str(exc))
    except LayoutError as exc:
        raise PlanError(str(exc), kind='input', variable=exc.variable)
    except DraftError as exc:
        raise PlanError(str(exc), kind='mtp', variable=exc.variable)


def _speculative(p, release, facts):
    """dict(enabled, algorithm, steps, topk, draft_tokens, draft (spec_draft facts or None))."""
    asked = p['speculative_num_draft_tokens']
    enabled = bool(asked) or (p['speculative_algorithm'] is not None and asked is None)
    if not enabled:
        return dict(enabled=False, algorithm=None, steps=0, topk=0, draft_tokens=0, draft=None)
    draft_config = p['draft_model_config']
    algorithm = check_algorithm(p['speculative_algorithm'], draft_config is not None, facts)
    steps, topk, draft_tokens = speculative_params(release, facts['arch'], algorithm, p['speculative_num_steps'],
                                                   p['speculative_eagle_topk'], asked)
    draft = draft_facts(draft_config, release) if draft_config is not None else None
    check_swa_draft(facts, draft)
    if draft is None and facts['mtp_layers'] < 1:
        raise PlanError('MTP requested (speculative_num_draft_tokens=%d) but %s has no MTP layers '
                        '(mtp_num_hidden_layers/num_nextn_predict_layers is 0 or missing): set '
                        'speculative_num_draft_tokens: 0 or use a checkpoint that ships the MTP head'
                        % (draft_tokens, facts['arch']), kind='mtp')
    if draft is None:
        mtp_draft_rule(release, facts)
    if draft is None and p['weight_names'] is not None and not any(n.startswith('mtp.') for n in p['weight_names']):
        raise PlanError('MTP requested but the safetensors index of the checkpoint has no mtp.* tensors '
                        '(the MTP head was stripped, e.g. by quantization)', kind='mtp')
    return dict(enabled=True, algorithm=algorithm, steps=steps, topk=topk, draft_tokens=draft_tokens, draft=draft)


def _check_mamba_inputs(p, facts, attn_dp):
    """Planner-side refusals of --max-mamba-cache-size / --mamba-full-memory-ratio (SGLang itself validates neither:
    arg_groups/fields/schedule.py:216-227 declares them without a check)."""
    for key in ('max_mamba_cache_size', 'mamba_full_memory_ratio'):
        if p[key] is not None and not facts['hybrid']:
            raise PlanError('%s %s: %s has no mamba/GDN state pool, so SGLang ignores the flag (fix: %s: null)'
                            % (key, p[key], facts['arch'], key), kind='input', variable='llmops_' + key)
    size = p['max_mamba_cache_size']
    if size is not None and size // attn_dp < 1:
        raise PlanError('max_mamba_cache_size %d: SGLang gives each of the %d DP workers max_mamba_cache_size // '
                        'attn_dp_size = %d state slots (kv_cache_configurator.py:3303-3309) and then refuses to start '
                        '("Not enough GPU memory for hybrid (mamba/linear-attention) state cache") (fix: '
                        'max_mamba_cache_size: at least %d, or null to size the pool from memory)'
                        % (size, attn_dp, size // attn_dp, attn_dp), kind='input', variable='llmops_max_mamba_cache_size')
    ratio = p['mamba_full_memory_ratio']
    if ratio is not None and not ratio > 0:
        raise PlanError('mamba_full_memory_ratio %s: the mamba pool gets rest x r / (1 + r) of the budget '
                        '(kv_cache_configurator.py:3350-3356), which is nothing for r <= 0 (fix: a ratio above 0, '
                        'e.g. the default 0.9)' % ratio, kind='input', variable='llmops_mamba_full_memory_ratio')


def multimodal_reserve_gib(rules, facts, gpu_mem, cc, max_running_requests):
    """The KV budget SGLang keeps back for a multimodal model's post-sizing allocations
    (kv_cache_configurator.mm_runtime_reservation_gb): SGLANG_VLM_CACHE_SIZE_MB, or on a large Hopper GPU for
    Qwen3-VL the feature-transport cache instead (rules mm_reserve_hopper; model_overrides/qwen3_vl.py)."""
    hopper = rules.get('mm_reserve_hopper')
    major = str(cc or '').partition('.')[0]
    if hopper and major == '9' and gpu_mem >= hopper['min_gpu_mib'] and facts['model_type'] in hopper['model_types']:
        if max_running_requests is not None and max_running_requests >= hopper['high_concurrency_requests']:
            return hopper['high_concurrency_reserve_mib'] / 1024.0
        return hopper['reserve_mib'] / 1024.0
    return rules['mm_reserve_mib'] / 1024.0


def _plan(p):
    """SGLang's memory plan, section by section (each a function below, in SGLang's order): inputs, server
    arguments, weights, free memory, pools, what is allocated, the result; ``v`` carries the values one section
    hands the next (each section names what it reads from it)."""
    v = {}
    _plan_inputs(p, v)
    _server_args(p, v)
    _weights(p, v)
    _free_memory(p, v)
    _pools(p, v)
    _allocated(p, v)
    _speculative_result(p, v)
    _result(p, v)
    return _judged(p, v)


def _plan_inputs(p, v):
    """The model facts, tensor parallelism, speculative decoding, dtypes, DSA layout and context length."""
    release = p['release']
    rules = release['planner']
    facts = sized_facts(p['model_config'], release, p['model_facts'])
    profile = p['gpu_profile'] or {}
    tp = p['tp_size']
    if not tp:
        raise PlanError('tp_size is required')
    gpu_mem = p['gpu_memory_mib'] or profile.get('memory_total_mib')
    if not gpu_mem:
        raise PlanError('give gpu_memory_mib (nvidia-smi memory.total, MiB) or a gpu_profile with memory_total_mib')
    gpu_mem = float(gpu_mem)
    attn_dp, attn_tp = attention_parallel(release, tp, p['dp_size'], p['enable_dp_attention'], facts['arch'])
    check_tp(facts, tp, attn_tp)
    _check_mamba_inputs(p, facts, attn_dp)

    sp = _speculative(p, release, facts)
    spec, steps, topk, draft_tokens, draft = sp['enabled'], sp['steps'], sp['topk'], sp['draft_tokens'], sp['draft']

    if p['mamba_ssm_dtype'] is not None:
        message = check_choice(release, 'mamba_ssm_dtype', p['mamba_ssm_dtype'])
        if message:
            raise PlanError(message)
    ssm_dtype = p['mamba_ssm_dtype'] or facts['ssm_dtype'] or 'float32'
    if ssm_dtype not in ('float32', 'bfloat16', 'float16'):
        raise PlanError('mamba_ssm_dtype must be float32, bfloat16 or float16, got %s' % ssm_dtype)
    kv_dtype, kv_bytes = resolve_kv_bytes(release, facts, p['kv_cache_dtype'], p['model_config'])
    cc = profile.get('compute_capability')
    dsa = dsa_layout(release, facts, p['kv_cache_dtype'], cc) if facts['dsa'] else None
    if dsa is not None:
        kv_dtype, kv_bytes = dsa['kv_cache_dtype'], DTYPE_BYTES[dsa['kv_cache_dtype']]
    context = int(p['context_length'] or facts['context'] or 0)
    if context <= 0:
        raise PlanError('context_length unknown: give context_length or max_position_embeddings in the config')
    if facts['context'] and context > facts['context']:
        raise PlanError('context_length %d exceeds the model maximum %d; SGLang refuses unless '
                        'SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1' % (context, facts['context']), kind='sglang')
    if draft is not None:
        check_draft_context(draft, context, p['environment'])
    v.update(release=release, rules=rules, facts=facts, profile=profile, tp=tp, gpu_mem=gpu_mem, sp=sp,
             ssm_dtype=ssm_dtype, cc=cc, dsa=dsa, context=context, attn_dp=attn_dp, attn_tp=attn_tp, spec=spec,
             steps=steps, topk=topk, draft_tokens=draft_tokens, draft=draft, kv_dtype=kv_dtype, kv_bytes=kv_bytes)


def _server_args(p, v):
    """Server-argument resolution (memory_hook / speculative_hook / overrides / parallel_hook)."""
    release, gpu_mem, tp, facts, draft_tokens = v['release'], v['gpu_mem'], v['tp'], v['facts'], v['draft_tokens']
    cc, topk, spec, dsa, kv_dtype, rules = v['cc'], v['topk'], v['spec'], v['dsa'], v['kv_dtype'], v['rules']
    attn_dp = v['attn_dp']
    chunk, decode_bs = capacity_defaults(release, gpu_mem, tp)
    if p['chunked_prefill_size'] is not None:
        chunk = p['chunked_prefill_size']
    if p['max_running_requests'] is not None and decode_bs > p['max_running_requests']:
        decode_bs = p['max_running_requests']
    radix = bool(p['radix_cache'])
    # The one resolution the renderer uses too (sglang_flags.render writes its result on the command line).
    mamba = resolve_mamba_strategy(release, facts, p['mamba_strategy'], radix, p['disable_overlap_schedule'],
                                   p['page_size'], draft_tokens)
    if mamba['refusals']:
        first = mamba['refusals'][0]
        raise SglangRuleError('%s (fix: %s)' % (first['message'], first['fix']))
    strategy, disable_overlap, notes = mamba['strategy'], mamba['disable_overlap_schedule'], list(mamba['notes'])
    page_size, page_note = default_page_size(release, facts, p['page_size'], cc, p['attention_backend'], topk,
                                             strategy, radix, spec)
    if page_note:
        notes.append(page_note)
    if (p['kv_cache_dtype'] or 'auto') == 'auto' and dsa is None and kv_dtype == 'fp8_e4m3':
        notes.append('kv_cache_dtype auto: fp8_e4m3 from the checkpoint (%s)'
                     % kv_cache_auto(release.get('quantization'), p['model_config'])['how'])
    multimodal = facts['multimodal'] and not p['language_only']
    prefill_graph = (rules['prefill_graph_term'] and (
        not facts['multimodal'] or facts['arch'] in release['architectures']['breakable_graph_multimodal']))
    heuristic = default_mem_fraction(release, gpu_mem, tp, chunk, decode_bs, prefill_graph, spec, multimodal,
                                     facts['vision'], mla=facts['attention'] == 'mla', attn_dp_size=attn_dp,
                                     vision_defaults=release['architectures']['vision_config_defaults'].get(facts['arch']),
                                     model_path=p['model_path_name'])
    frac = p['mem_fraction_static'] if p['mem_fraction_static'] is not None else heuristic['mem_fraction_static']
    if not 0 < frac < 1:
        raise PlanError('mem_fraction_static must be between 0 and 1, got %s' % frac)
    requested_running = p['max_running_requests']
    if requested_running is None and spec:
        # speculative_hook.py:1086-1094: set before resolve_max_num_reqs divides it per DP worker.
        requested_running = release['defaults']['speculative_max_running_requests']
    # parallel_hook.py:327-332: DP attention divides chunked_prefill_size after the memory hook ran.
    chunk_run = chunk // attn_dp if chunk and chunk > 0 else chunk
    v.update(radix=radix, multimodal=multimodal, heuristic=heuristic, frac=frac,
             requested_running=requested_running, chunk_run=chunk_run, chunk=chunk, decode_bs=decode_bs,
             strategy=strategy, disable_overlap=disable_overlap, notes=notes, page_size=page_size)


def _weights(p, v):
    """Memory before / after loading: the weights one rank holds (target, draft, DP attention)."""
    facts, spec, tp, attn_tp, draft, release = v['facts'], v['spec'], v['tp'], v['attn_tp'], v['draft'], v['release']
    notes = v['notes']
    counts = param_counts(facts)
    calibrated_both = p['free_memory_before_load_gib'] is not None and p['free_memory_after_load_gib'] is not None
    computed, why_not = (None, None)
    if not p['weights_bytes'] and facts['quant_method']:
        computed, why_not = computed_weights(p['model_config'], facts)
    mtp_draft = spec and draft is None
    try:
        w = weights_per_rank(facts, counts, tp, p['weights_bytes'], mtp_draft, p['language_only'], computed, why_not)
    except PlanError:
        if not calibrated_both:
            raise
        # The calibration already says what loading took; the split between target and draft is unknown.
        w = dict(target=0.0, draft=0.0, bytes_per_param=None, source='calibration only')
    w = dict(w)
    dp_weights = dp_attention_weights(facts, tp, attn_tp, w['bytes_per_param'])
    w['target'] += dp_weights
    draft_w = None
    if draft is not None:
        draft_w = draft_weights(draft, facts, attn_tp)
        w['draft'] = draft_w['at_sizing']
        # Per draft step every rank reads its draft weights except the embedding (one row per token).
        w['draft_step_bytes'] = (draft_w['at_sizing'] - draft_w['embed_bytes']) * tp
    elif mtp_draft:
        # The MTP class builds its own embedding and lm_head beside the MTP layer(s) weights_per_rank priced: resident
        # when the target pools are sized, freed by init_lm_head afterwards (spec_draft.resident_draft).
        draft_w = mtp_draft_weights(release, facts, w['draft'], tp, attn_tp, p['environment'])
        w['draft'] = draft_w['at_sizing']
    if env_bool(p['environment'], EMBED_REPLICATION_ENV) and facts['attention'] == 'mla':
        # The DeepSeek-V2 language model (every MLA architecture of the table) builds its embedding with
        # get_embedding_tp_kwargs too; the target's embedding layout is not modelled (docs/dev/sglang-memory.md 9).
        notes.append('%s is set: SGLang replicates the target\'s embedding on every GPU as well (models/deepseek_v2.py:'
                     '2942-2947), which this plan prices sharded over TP; only the MTP draft\'s is planned replicated'
                     % EMBED_REPLICATION_ENV)
    v.update(counts=counts, mtp_draft=mtp_draft, w=w, dp_weights=dp_weights, draft_w=draft_w, computed=computed)


def _free_memory(p, v):
    """Free memory before and after loading, and the rest left for the pools (or the refusal when none is)."""
    rules, multimodal, frac, facts, counts = v['rules'], v['multimodal'], v['frac'], v['facts'], v['counts']
    tp, mtp_draft, computed, gpu_mem, cc = v['tp'], v['mtp_draft'], v['computed'], v['gpu_mem'], v['cc']
    profile, w, release, chunk_run, spec = v['profile'], v['w'], v['release'], v['chunk_run'], v['spec']
    draft = v['draft']
    startup = p['startup_overhead_gib']
    if startup is None:
        startup = profile.get('startup_overhead_gib', DEFAULT_STARTUP_OVERHEAD_GIB)
    pre = p['free_memory_before_load_gib']
    calibrated = pre is not None
    if pre is None:
        pre = gpu_mem / 1024.0 - startup
    draft_in_after = rules['draft_weights_before_sizing']
    after = p['free_memory_after_load_gib']
    if after is None:
        after = pre - (w['target'] + (w['draft'] if draft_in_after else 0)) / GIB
    loaded_gib = pre - after

    def _no_fit_fix():
        return weights_fix(facts, p['model_config'], counts, tp, mtp_draft, p['language_only'], p['weights_bytes'],
                           computed, pre, gpu_mem / 1024.0 - pre, p['max_tp'])
    if w['target'] / GIB > pre:
        raise PlanError('cannot load %s at tp %d: %.1f GiB of weights per GPU exceed the %.1f GiB free before loading '
                        '(%d MiB GPU), so no --mem-fraction-static can help (fix: %s)'
                        % (facts['arch'], tp, w['target'] / GIB, pre, gpu_mem, _no_fit_fix()), kind='weights',
                        variable='llmops_tp_size', free_before_load_gib=pre,
                        free_after_load_gib=after - (p['runtime_overhead_gib'] or DEFAULT_RUNTIME_OVERHEAD_GIB))
    overhead = p['runtime_overhead_gib']
    if overhead is None:
        overhead = DEFAULT_RUNTIME_OVERHEAD_GIB
    available = after - overhead
    p['_sizing_inputs'] = dict(free_before_load_gib=pre, free_after_load_gib=available)
    mm_reserve = multimodal_reserve_gib(rules, facts, gpu_mem, cc, p['max_running_requests']) if multimodal else 0.0
    rest = available - pre * (1 - frac) - mm_reserve
    budget = pre * frac
    if rest <= 0:
        suggested, minimum = min_viable_mem_fraction(available, pre)
        # The fraction cannot pass 1 - SGLang's own activation reserve / free memory (it budgets that outside the
        # pools): weights that leave less than the reserve fit no --mem-fraction-static.
        ceiling = 1 - runtime_reserve_mib(release, gpu_mem, tp, chunk_run) / 1024.0 / pre
        if suggested >= ceiling:
            raise PlanError(
                'Loaded weights leave no GPU memory for the KV cache: %.1f GiB of weights (target%s) per GPU of the '
                '%.1f GiB free before loading need --mem-fraction-static above %.3f, and SGLang keeps %.1f GiB of that '
                'memory for activations (at most %.3f), so no --mem-fraction-static can help (fix: %s)'
                % (loaded_gib, ' + %s draft' % ('EAGLE-3' if draft else 'MTP') if spec and draft_in_after else '',
                   pre, suggested, (1 - ceiling) * pre, ceiling, _no_fit_fix()),
                kind='weights', variable='llmops_tp_size')
        raise PlanError(
            'Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=%.3f: %.1f GiB of weights '
            '(target%s) per GPU vs a static budget of %.1f GiB. Raise --mem-fraction-static above %.3f (minimum viable '
            '= 1 - available/pre = %.4f) or use a larger tp_size.'
            % (frac, loaded_gib, ' + %s draft' % ('EAGLE-3' if draft else 'MTP') if spec and draft_in_after else '',
               budget, suggested, minimum),
            kind='weights', min_mem_fraction_static=suggested, free_before_load_gib=pre,
            free_after_load_gib=available)
    v.update(pre=pre, calibrated=calibrated, draft_in_after=draft_in_after, after=after, loaded_gib=loaded_gib,
             overhead=overhead, available=available, mm_reserve=mm_reserve, rest=rest, budget=budget)


def _pools(p, v):
    """The mamba pool, then the KV pool: cell bytes, tokens and max_running_requests."""
    facts, attn_tp, ssm_dtype, rest, kv_bytes = v['facts'], v['attn_tp'], v['ssm_dtype'], v['rest'], v['kv_bytes']
    dsa, release, context, requested_running = v['dsa'], v['release'], v['context'], v['requested_running']
    attn_dp, spec, strategy, radix = v['attn_dp'], v['spec'], v['strategy'], v['radix']
    disable_overlap, draft_tokens, draft, rules = v['disable_overlap'], v['draft_tokens'], v['draft'], v['rules']
    page_size = v['page_size']
    # The GDN state shards over linear_attn_tp_size() = attn_tp_size (qwen3_next.py:287-313, runtime_context.py:484-486).
    fam = family(facts)
    slot = fam.state_slot(facts, attn_tp, ssm_dtype)
    ratio = mamba_ratio(release, strategy, radix, disable_overlap) if fam.STATE_POOL else None
    pool = None
    if fam.STATE_POOL:
        pool = mamba_pool(release, rest, slot['per_slot'], ratio, draft_tokens, requested_running, radix,
                          p['max_mamba_cache_size'], p['mamba_full_memory_ratio'], attn_dp)
        rest_kv = pool['rest_gib']
    else:
        rest_kv = rest
    # The draft's KV layers in the cell (spec_aux_hidden_state.py:154-176): a path-less MTP head counts the TARGET
    # config's num_nextn_predict_layers (Qwen3.5 configs carry mtp_num_hidden_layers, which SGLang does not read, so
    # their draft pool lands in headroom); a draft checkpoint its own num_nextn_predict_layers, else its layer count.
    if not spec or not rules['draft_kv_in_budget']:
        draft_in_budget = 0
    elif draft is not None:
        draft_in_budget = draft_layers(draft)
    else:
        draft_in_budget = max(0, facts['nextn_layers'] or 0)
    swa_ratio = rules.get('swa_full_tokens_ratio')
    problem = fam.swa_check(facts, release, rules)
    if problem:
        raise PlanError(problem, kind='architecture')
    cell, draft_cell = kv_cell_bytes(facts, attn_tp, kv_bytes, draft_in_budget, swa_ratio, dsa)
    tokens = int(kv_tokens(rest_kv, cell + draft_cell, page_size))
    if tokens <= 0:
        explicit = pool is not None and pool['mode'] == 'explicit'
        raise PlanError('no KV cache tokens left after the mamba pool (rest %.2f GiB)%s' % (
            rest_kv, ': max_mamba_cache_size %d takes %.2f GiB (fix: max_mamba_cache_size: fewer slots, or null to size '
            'the pool from memory)' % (p['max_mamba_cache_size'], pool['pool_bytes'] / float(GIB)) if explicit else ''),
            kind='input' if explicit else 'weights', variable='llmops_max_mamba_cache_size' if explicit else None)
    # HybridSWAPoolConfigurator: the sliding-window layers keep swa_ratio x the full layers' tokens.
    swa_tokens = fam.swa_tokens(tokens, swa_ratio, page_size)
    running, running_bound = max_running_requests(release, tokens, context, requested_running,
                                                  pool['slots'] if pool else None, ratio, attn_dp)
    if p['max_running_requests'] is None and spec and running_bound == 'requested':
        running_bound = 'speculative_default'
    v.update(slot=slot, ratio=ratio, pool=pool, tokens=tokens, swa_tokens=swa_tokens,
             draft_in_budget=draft_in_budget, cell=cell, draft_cell=draft_cell, running=running,
             running_bound=running_bound)


def _allocated(p, v):
    """What is allocated, and what is left for activations / CUDA graphs."""
    facts, attn_tp, tokens, page_size, kv_bytes = v['facts'], v['attn_tp'], v['tokens'], v['page_size'], v['kv_bytes']
    dsa, spec, draft_in_budget, running = v['dsa'], v['spec'], v['draft_in_budget'], v['running']
    context, steps, topk, draft_tokens, draft_w = v['context'], v['steps'], v['topk'], v['draft_tokens'], v['draft_w']
    swa_tokens, draft, mm_reserve, pool = v['swa_tokens'], v['draft'], v['mm_reserve'], v['pool']
    release, gpu_mem, tp, chunk_run, draft_cell = v['release'], v['gpu_mem'], v['tp'], v['chunk_run'], v['draft_cell']
    available, draft_in_after, w = v['available'], v['draft_in_after'], v['w']
    fam = family(facts)
    rows = tokens + page_size
    if dsa is not None:
        k_bytes, v_bytes, per_layer = _family_base.dsa_buffers(facts, rows, kv_bytes, dsa)
    else:
        per_layer = fam.kv_layer(facts, attn_tp, kv_bytes)[0]
        k_bytes, v_bytes = fam.kv_buffers(facts, rows, attn_tp, kv_bytes)
    swa_bytes = fam.swa_buffers(facts, swa_tokens, page_size, attn_tp, kv_bytes) if swa_tokens is not None else 0
    # The draft's own pool has the target's token count (kv_cache_configurator.py:470-474) and the draft's geometry:
    # a draft checkpoint its own KV heads and layers; a path-less MTP head the target's per-layer size for its
    # num_nextn_predict_layers layers (1 for the hybrid GDN drafts, kv_cache_configurator.py:2614-2622), plus the
    # indexer of every draft layer for DSA.
    if not spec:
        draft_pool_layers, draft_layer = 0, 0
    elif draft is not None:
        draft_pool_layers, draft_layer = draft_layers(draft), draft_kv_layer_bytes(draft, attn_tp, kv_bytes)
    else:
        draft_pool_layers = fam.mtp_draft_layers(facts)
        draft_layer = per_layer + (dsa['indexer_bytes_per_layer'] if dsa is not None else 0)
    draft_kv_bytes = rows * draft_layer * draft_pool_layers
    draft_excess = draft_kv_bytes - rows * draft_cell if draft_in_budget else draft_kv_bytes
    extra_ctx = req_to_token_bytes(running, context, page_size, steps, topk, draft_tokens)
    static_gib = ((k_bytes + v_bytes + swa_bytes + draft_kv_bytes + extra_ctx) / float(GIB) + mm_reserve
                  + ((pool['pool_bytes'] + pool['spec_state_bytes']) / float(GIB) if pool else 0.0))
    freed = draft_w['freed_after'] if draft_w else 0.0
    headroom = available - static_gib - (0.0 if draft_in_after else w['draft'] / GIB) + freed / GIB
    reserve = runtime_reserve_mib(release, gpu_mem, tp, chunk_run) / 1024.0
    v.update(swa_bytes=swa_bytes, draft_kv_bytes=draft_kv_bytes, draft_excess=draft_excess, extra_ctx=extra_ctx,
             freed=freed, headroom=headroom, reserve=reserve, k_bytes=k_bytes, v_bytes=v_bytes,
             draft_pool_layers=draft_pool_layers, draft_layer=draft_layer)


def _speculative_result(p, v):
    """The speculative-decoding part of the plan (the draft's pool and weights when it has a checkpoint)."""
    draft, spec, steps, topk, draft_tokens = v['draft'], v['spec'], v['steps'], v['topk'], v['draft_tokens']
    sp, draft_pool_layers, draft_layer, draft_w = v['sp'], v['draft_pool_layers'], v['draft_layer'], v['draft_w']
    spec_out = dict(enabled=spec, algorithm=sp['algorithm'], num_steps=steps, eagle_topk=topk,
                    num_draft_tokens=draft_tokens, draft=None)
    if draft is not None:
        spec_out['draft'] = dict(
            arch=draft['arch'], layers=draft_pool_layers, kv_bytes_per_token=draft_layer * draft_pool_layers,
            weights_at_sizing_gib=round(draft_w['at_sizing'] / GIB, 3),
            freed_after_sizing_gib=round(draft_w['freed_after'] / GIB, 3), params_b=round(draft_w['params'] / 1e9, 3),
            context=draft['context'])
    v.update(spec_out=spec_out)


def _result(p, v):
    """The numbers of the plan, as vram_plan_info returns them."""
    tp, attn_dp, attn_tp, chunk, chunk_run = v['tp'], v['attn_dp'], v['attn_tp'], v['chunk'], v['chunk_run']
    decode_bs, page_size, context, kv_dtype = v['decode_bs'], v['page_size'], v['context'], v['kv_dtype']
    strategy, disable_overlap, radix, spec_out = v['strategy'], v['disable_overlap'], v['radix'], v['spec_out']
    overhead, cell, draft_cell, tokens = v['overhead'], v['cell'], v['draft_cell'], v['tokens']
    swa_tokens, draft_in_budget, ratio, running = v['swa_tokens'], v['draft_in_budget'], v['ratio'], v['running']
    running_bound, notes, release, rules, facts = v['running_bound'], v['notes'], v['release'], v['rules'], v['facts']
    gpu_mem, frac, ssm_dtype, pre, after = v['gpu_mem'], v['frac'], v['ssm_dtype'], v['pre'], v['after']
    calibrated, mm_reserve, budget, rest, dsa = v['calibrated'], v['mm_reserve'], v['budget'], v['rest'], v['dsa']
    slot, pool, headroom, reserve, loaded_gib = v['slot'], v['pool'], v['headroom'], v['reserve'], v['loaded_gib']
    available, k_bytes, v_bytes, swa_bytes = v['available'], v['k_bytes'], v['v_bytes'], v['swa_bytes']
    draft_kv_bytes, draft_excess, extra_ctx = v['draft_kv_bytes'], v['draft_excess'], v['extra_ctx']
    draft_w, w, freed, dp_weights, heuristic = v['draft_w'], v['w'], v['freed'], v['dp_weights'], v['heuristic']
    counts = v['counts']
    result = dict(
        sglang_version=release['version'], sglang_rules=rules['family'], arch=facts['arch'], tp_size=tp,
        attn_dp_size=attn_dp, attn_tp_size=attn_tp,
        family=facts['family'], kv_layout=family(facts).TEXT + (' + DSA indexer' if dsa else ''),
        gpu_memory_mib=int(gpu_mem),
        mem_fraction_static=round(frac, 4),
        mem_fraction_static_source='input' if p['mem_fraction_static'] is not None else 'sglang default',
        mem_fraction_heuristic=dict((k, round(v, 4) if isinstance(v, float) else v) for k, v in heuristic.items()),
        chunked_prefill_size=chunk, chunked_prefill_size_per_worker=chunk_run, cuda_graph_max_bs=decode_bs,
        page_size=page_size, context_length=context,
        kv_cache_dtype=kv_dtype, mamba_ssm_dtype=ssm_dtype if facts['hybrid'] else None,
        mamba_strategy=strategy, disable_overlap_schedule=disable_overlap, radix_cache=radix,
        speculative=spec_out,
        weights_gib_per_gpu=round(loaded_gib if calibrated or p['free_memory_after_load_gib'] is not None
                                  else (w['target'] + w['draft']) / GIB, 3),
        weights_detail=dict(target_gib=round(w['target'] / GIB, 3), draft_gib=round(w['draft'] / GIB, 3),
                            draft_class=draft_w['arch'] if draft_w else None,
                            draft_at_sizing_gib=round(draft_w['at_sizing'] / GIB, 3) if draft_w else 0.0,
                            draft_vocab_tables_gib=round((draft_w['embed_bytes'] + draft_w['head_bytes']) / GIB, 3)
                            if draft_w else 0.0,
                            draft_freed_after_gib=round(draft_w['freed_after'] / GIB, 3) if draft_w else 0.0,
                            bytes_per_param=round(w['bytes_per_param'], 4) if w['bytes_per_param'] else None,
                            source=w['source'], dp_attention_gib=round(dp_weights / GIB, 3),
                            params_b=round((counts['language'] + counts['vision'] + counts['mtp']) / 1e9, 3)),
        free_before_load_gib=round(pre, 3), free_after_load_gib=round(after, 3),
        # Unrounded: the free memory SGLang measures before loading and when it sizes the pools (after the runtime
        # overhead), as this plan models them (benchmarks/oracle_grid.py feeds them to SGLang's own pool sizing).
        sizing_inputs_gib=dict(free_before_load=pre, free_at_pool_sizing=available),
        free_memory_source='calibration' if calibrated else 'profile estimate',
        runtime_overhead_gib=overhead, mm_reserve_gib=round(mm_reserve, 4),
        static_budget_gib=round(budget, 3), rest_for_pools_gib=round(rest, 3),
        kv_bytes_per_token=cell + draft_cell, kv_bytes_per_token_target=cell, kv_bytes_per_token_draft_in_budget=draft_cell,
        dsa_indexer_bytes_per_token=dsa['indexer_bytes_per_layer'] * dsa['indexer_layers'] if dsa else 0,
        kv_cache_tokens=tokens, kv_cache_tokens_total=tokens * attn_dp, swa_kv_cache_tokens=swa_tokens,
        k_size_gib=round(k_bytes / float(GIB), 3), v_size_gib=round(v_bytes / float(GIB), 3),
        swa_kv_gib=round(swa_bytes / float(GIB), 3),
        draft_kv_gib=round(draft_kv_bytes / float(GIB), 3), draft_kv_in_budget=bool(draft_in_budget),
        draft_kv_layers_in_budget=draft_in_budget, draft_kv_outside_budget_gib=round(draft_excess / float(GIB), 3),
        mamba_bytes_per_slot=slot['per_slot'], mamba_slots_per_request=ratio,
        mamba_cache_slots=pool['slots'] if pool else None,
        mamba_cache_mode=pool['mode'] if pool else None,
        mamba_full_memory_ratio=pool['full_memory_ratio'] if pool else None,
        mamba_pool_gib=round(pool['pool_bytes'] / float(GIB), 3) if pool else 0.0,
        conv_state_gib=round(pool['allocated_slots'] * slot['conv'] / float(GIB), 3) if pool else 0.0,
        ssm_state_gib=round(pool['allocated_slots'] * slot['ssm'] / float(GIB), 3) if pool else 0.0,
        spec_state_gib=round(pool['spec_state_bytes'] / float(GIB), 3) if pool else 0.0,
        max_running_requests=running, max_running_requests_bound_by=running_bound,
        max_running_requests_total=running * attn_dp,
        req_to_token_gib=round(extra_ctx / float(GIB), 3),
        headroom_gib=round(headroom, 2), sglang_runtime_reserve_gib=round(reserve, 2),
        # What SGLang's last "Memory pool end" line reports: the draft's own vocab tables are freed only after it.
        free_after_pools_gib=round(headroom - freed / GIB, 2),
        min_headroom_gib=p['min_headroom_gib'],
        notes=notes,
    )
    v.update(result=result)


def _judged(p, v):
    """The plan's context table, fit, roofline, limits and verdict, added to result."""
    result, tokens, context, running, headroom = v['result'], v['tokens'], v['context'], v['running'], v['headroom']
    facts, counts, tp, w, profile, slot = v['facts'], v['counts'], v['tp'], v['w'], v['profile'], v['slot']
    ssm_dtype, steps, draft_tokens = v['ssm_dtype'], v['steps'], v['draft_tokens']
    result['max_context_at_concurrency'] = context_table(tokens, context, running, p['concurrency'])
    result['fits'] = headroom >= p['min_headroom_gib']
    result['decode_roofline_tok_s'] = roofline(facts, counts, tp, w, profile, slot, ssm_dtype, steps, draft_tokens,
                                               p['mtp_accept_length'])
    result['limits'] = limits(result)
    result['verdict'] = verdict(result)
    return result


def context_table(tokens, context, running, levels):
    """Longest context each of N concurrent requests can hold at once (all KV tokens shared evenly)."""
    table = []
    for level in levels or ():
        level = int(level)
        if level > running:
            table.append(dict(concurrency=level, max_context_tokens=None, bound_by='max_running_requests'))
            continue
        per_request = tokens // level
        if per_request >= context:
            table.append(dict(concurrency=level, max_context_tokens=context, bound_by='context_length'))
        else:
            table.append(dict(concurrency=level, max_context_tokens=per_request, bound_by='kv_cache'))
    return table


def distinct_experts(facts, tokens):
    """Expected distinct routed experts one MoE layer reads for ``tokens`` tokens routed independently (an upper
    bound: real routing is correlated). ``tokens`` 1 gives top_k."""
    return facts['experts'] * (1 - (1 - float(facts['top_k']) / facts['experts']) ** tokens)


def forward_weight_bytes(facts, counts, bpp, tokens):
    """Weight bytes one forward over ``tokens`` tokens reads, all ranks together: the non-expert active weights and,
    for MoE, the distinct experts of every layer (roofline's MTP verify; compare/perf.py's batched steps)."""
    if not facts['experts']:
        return counts['active'] * bpp
    return (counts['non_expert_active'] + facts['layers'] * distinct_experts(facts, tokens) * counts['expert']) * bpp


def roofline(facts, counts, tp, weights, profile, slot, ssm_dtype, steps, draft_tokens, accept_length):
    """Bandwidth-bound single-stream decode ceiling (batch 1, context ~0, perfect TP split)."""
    bandwidth = profile.get('memory_bandwidth_gbs')
    bpp = weights['bytes_per_param']
    if not bandwidth or not bpp:
        return dict(no_mtp=None, mtp=None, note='needs memory_bandwidth_gbs in the gpu profile and sized weights')
    state = 2.0 * slot['ssm'] * tp  # read + write of every rank's recurrent state
    step = counts['active'] * bpp + state
    agg = bandwidth * 1e9 * tp
    out = dict(no_mtp=round(agg / step, 0), bytes_per_token_gb=round(step / 1e9, 2), aggregate_bandwidth_tbs=agg / 1e12,
               mtp=None, accept_length=None)
    if draft_tokens:
        length = min(float(accept_length or DEFAULT_ACCEPT_LENGTH), float(draft_tokens))
        verify = forward_weight_bytes(facts, counts, bpp, draft_tokens) + state if facts['experts'] else step
        # A draft checkpoint (EAGLE-3) reads its own layers, fc and lm_head each step, not the target's MTP layer.
        draft_step = weights.get('draft_step_bytes') or counts['mtp_active'] * bpp
        cycle = verify + steps * draft_step
        out.update(mtp=round(agg / cycle * length, 0), accept_length=length, bytes_per_cycle_gb=round(cycle / 1e9, 2))
    return out


def limits(result):
    """Human lines, most binding first."""
    lines = []
    bound = result['max_running_requests_bound_by']
    running = result['max_running_requests']
    if bound == 'mamba_slots':
        lines.append('max_running_requests %d is capped by the mamba state pool: %d slots / %d slots per request (%s)'
                     % (running, result['mamba_cache_slots'], result['mamba_slots_per_request'],
                        result['mamba_strategy'] or 'radix off'))
    elif bound == 'speculative_default':
        lines.append('max_running_requests %d is SGLang\'s speculative-decoding default (reset to %d when '
                     '--max-running-requests is unset)' % (running, running))
    elif bound == 'kv_tokens':
        lines.append('max_running_requests %d is capped by KV tokens // 2' % running)
    elif bound == 'estimate':
        lines.append('max_running_requests %d is SGLang\'s estimate from KV tokens and context length' % running)
    else:
        lines.append('max_running_requests %d as requested' % running)
    dp = result.get('attn_dp_size', 1)
    if dp > 1:
        lines.append('DP attention: %d workers of %d GPU(s) (attention TP %d), each with its own KV pool: %d requests and '
                     '%d KV tokens per worker, %d and %d in total; --max-running-requests states the total'
                     % (dp, result['attn_tp_size'], result['attn_tp_size'], running, result['kv_cache_tokens'],
                        result['max_running_requests_total'], result['kv_cache_tokens_total']))
    draft = (result.get('speculative') or {}).get('draft')
    if draft and result.get('draft_kv_outside_budget_gib', 0) > 0:
        lines.append('the EAGLE-3 draft\'s KV takes %.2f GiB more than the cell priced for it (its own per-layer size '
                     'is larger than the target\'s): paid from the headroom' % result['draft_kv_outside_budget_gib'])
    for row in result['max_context_at_concurrency']:
        if row['bound_by'] == 'kv_cache':
            lines.append('at %d concurrent requests the KV cache (%d tokens) limits each request to %d tokens'
                         % (row['concurrency'], result['kv_cache_tokens'], row['max_context_tokens']))
        elif row['bound_by'] == 'max_running_requests':
            lines.append('%d concurrent requests exceed max_running_requests %d: the rest queue'
                         % (row['concurrency'], running))
    if result['headroom_gib'] < result['min_headroom_gib']:
        lines.insert(0, 'headroom %.1f GiB per GPU is below the %.1f GiB minimum for activations and CUDA graphs'
                     % (result['headroom_gib'], result['min_headroom_gib']))
    elif result['headroom_gib'] < result['sglang_runtime_reserve_gib']:
        lines.append('headroom %.1f GiB is below SGLang\'s own activation reserve estimate (%.1f GiB): long prefills '
                     'may OOM' % (result['headroom_gib'], result['sglang_runtime_reserve_gib']))
    return lines


def verdict(result):
    if not result['fits']:
        return 'DOES NOT FIT'
    if result['headroom_gib'] < result['sglang_runtime_reserve_gib'] or result['max_running_requests'] < 32:
        return 'FITS (tight)'
    return 'FITS'


# --------------------------------------------------------------------------------------------------------------
# Recommendations: concrete flag changes, each re-planned
# --------------------------------------------------------------------------------------------------------------

def _effect(base, new):
    keys = ('max_running_requests', 'kv_cache_tokens', 'mamba_cache_slots', 'headroom_gib', 'mem_fraction_static')
    return dict((k, [base.get(k), new.get(k)]) for k in keys)


def recommend(inputs, base):
    """Flag changes that raise concurrency or context, each with the re-planned effect. ``inputs`` = plan() kwargs."""
    out = []

    def attempt(flags, why, **changes):
        trial = dict(inputs)
        trial.update(changes)
        try:
            new = plan(**trial)
        except PlanError as exc:
            return dict(flags=flags, why=why, error=str(exc))
        better = (new['max_running_requests'] > base['max_running_requests']
                  or new['kv_cache_tokens'] > base['kv_cache_tokens'] * 1.05
                  or (new['fits'] and not base['fits']))
        if not better:
            return None
        rec = dict(flags=flags, why=why, effect=_effect(base, new), fits=new['fits'])
        out.append(rec)
        return rec

    pre = base['free_before_load_gib']
    outside = base['draft_kv_gib'] * (0 if base['draft_kv_in_budget'] else 1) + base['req_to_token_gib']
    target = inputs.get('target_headroom_gib') or DEFAULT_TARGET_HEADROOM_GIB
    frac = int((1 - (target + outside) / pre) * 200) / 200.0
    if frac > base['mem_fraction_static'] + 0.01:
        attempt(['--mem-fraction-static', '%.3f' % frac],
                'leaves about %.0f GiB per GPU for activations, CUDA graphs and the MTP draft KV instead of %.1f'
                % (target, base['headroom_gib']), mem_fraction_static=frac)
    if base['mamba_ssm_dtype'] == 'float32':
        per_slot_mib = base['mamba_bytes_per_slot'] / float(MIB)
        attempt(['--mamba-ssm-dtype', 'bfloat16'], 'halves the GDN state per slot (%.1f MiB -> about %.1f MiB); '
                'upstream CI runs Qwen3.5 MTP this way' % (per_slot_mib, per_slot_mib / 2),
                mamba_ssm_dtype='bfloat16')
    if inputs.get('max_running_requests') is None and base['speculative']['enabled']:
        # Under DP attention the flag is the total over the workers (each gets value // dp).
        cap = (base['mamba_cache_slots'] // base['mamba_slots_per_request'] * base.get('attn_dp_size', 1)
               if base['mamba_cache_slots'] else None)
        spec_default = inputs['release']['defaults']['speculative_max_running_requests']
        if cap and cap > spec_default:
            attempt(['--max-running-requests', str(cap)], 'MTP silently resets max_running_requests to %d; the mamba '
                    'pool has slots for %d' % (spec_default, cap), max_running_requests=cap)
        elif cap:
            rec = attempt(['--max-running-requests', str(cap)], 'state the real cap: an explicit value also shrinks '
                          'the CUDA-graph reserve SGLang subtracts from its default --mem-fraction-static',
                          max_running_requests=cap)
            if rec is None:
                out.append(dict(flags=['--max-running-requests', str(cap)], why='make the mamba-imposed cap explicit '
                                '(no memory gained)', effect=None, fits=base['fits']))
    if inputs.get('max_running_requests') is None and base['speculative']['enabled'] and not base['mamba_cache_slots']:
        # No mamba pool to cap it: what SGLang would take unset without the speculative reset (its estimate from the
        # KV pool, capped by tokens // 2; kv_cache_configurator.py:3119-3172), the total over the DP workers.
        dp = base.get('attn_dp_size', 1)
        cap = max_running_requests(inputs['release'], base['kv_cache_tokens'], base['context_length'], None, None,
                                   None)[0] * dp
        spec_default = inputs['release']['defaults']['speculative_max_running_requests']
        if cap > spec_default * dp:
            attempt(['--max-running-requests', str(cap)], 'speculative decoding resets max_running_requests to %d; '
                    'the KV cache holds %d (SGLang\'s own estimate without that reset)' % (spec_default, cap),
                    max_running_requests=cap)
    if base['kv_cache_dtype'] not in ('fp8_e4m3', 'fp8_e5m2'):
        attempt(['--kv-cache-dtype', 'fp8_e4m3'], 'halves KV bytes per token; without calibrated scales this risks '
                'reasoning accuracy (cookbook warning)', kv_cache_dtype='fp8_e4m3')
    tp = inputs.get('tp_size')
    max_tp = inputs.get('max_tp')
    if tp and (max_tp is None or tp * 2 <= max_tp):
        attempt(['--tp-size', str(tp * 2)], 'halves weights and state per GPU (needs %d GPUs)' % (tp * 2),
                tp_size=tp * 2)
    return out


def model_facts_once(model_config, release):
    """model_config.model_facts() of a plan's model_config, computed once for plan() and its re-plans; None where
    plan() itself refuses the inputs (it then raises its own error, as without this)."""
    if not isinstance(model_config, dict) or not model_config or not isinstance(release, dict):
        return None
    try:
        return _model_facts(model_config, release['architectures'])
    except (ModelConfigError, KeyError, TypeError):
        return None


def plan_with_recommendations(**inputs):
    """plan() and the recommendations re-planned from it, over one computation of the model facts."""
    if inputs.get('model_facts') is None:
        inputs['model_facts'] = model_facts_once(inputs.get('model_config'), inputs.get('release'))
    base = plan(**inputs)
    base['recommendations'] = recommend(inputs, base)
    return base
