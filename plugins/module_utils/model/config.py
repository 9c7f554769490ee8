# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The architecture facts of a model, from its config.json or the ``config:`` block of a model profile.

PRIVATE to the collection. Pure, stdlib only. ONE normalisation for the VRAM planner (vram_plan) and the flag
renderer (sglang_flags), so both read the same architecture, layer layout, MTP head and quantization. Multimodal
Qwen3.5 configs nest the language model under ``text_config`` (and the vision tower under ``vision_config``); a key
is looked up there first, then at the top level, as SGLang's config classes do.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.model.tensors import layout as _layout

# The sizes without which the planner cannot compute anything (the renderer needs none of them).
SIZE_KEYS = ('hidden_size', 'num_hidden_layers', 'num_attention_heads')
# The KV-cache families the planner sizes, each a set of architecture names in the release table
# (profiles/sglang_releases.yml architectures): hybrid_gdn (Gated DeltaNet + full attention), mla (latent KV),
# hybrid_swa (sliding-window + full attention layers), gqa (one plain MHA/GQA pool over every layer), hybrid_mamba
# (Mamba-2 + attention). Each is one module of planner/families/ (registry.FAMILIES has the same names); this floor
# knows them only as these names, to read each one's layer layout from the config (_layer_ids, _more_families), because
# sglang/ reads the same facts and may not import the planner.
FAMILIES = ('hybrid_gdn', 'mla', 'hybrid_swa', 'gqa', 'hybrid_mamba')


class ModelConfigError(ValueError):
    """The config is not a mapping, or a value in it is not a number where one is needed."""


def _get(text, root, key, default=None):
    if key in text and text[key] is not None:
        return text[key]
    if key in root and root[key] is not None:
        return root[key]
    return default


def served_dtype(text, root):
    """The dtype SGLang serves a checkpoint in under --dtype auto (configs/model_config.py:2284-2345
    _get_and_verify_dtype): the config's dtype (or torch_dtype); a float32 config, or one that names none, runs in
    float16 (bfloat16 for model_type gemma*)."""
    name = str(_get(text, root, 'dtype', _get(text, root, 'torch_dtype', 'float32'))).replace('torch.', '')
    if name in ('float32', 'float'):
        model_type = str(text.get('model_type') or root.get('model_type') or '')
        return 'bfloat16' if model_type.startswith('gemma') else 'float16'
    return name


def _int(text, root, key, default=0):
    value = _get(text, root, key, default)
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        raise ModelConfigError('model config: %s must be a number, got %r' % (key, value))


# utils/hf_transformers/common.py:668-674 CONTEXT_LENGTH_KEYS: the first key present wins.
CONTEXT_LENGTH_KEYS = ('max_sequence_length', 'seq_length', 'max_seq_len', 'model_max_length', 'max_position_embeddings')


def context_length(text, model_type=None):
    """SGLang's derived context length of a (text) config (utils/hf_transformers/common.py:677-694 get_context_length).

    The first of CONTEXT_LENGTH_KEYS present, times rope_scaling.factor unless rope_scaling has
    original_max_position_embeddings or rope_type llama3 (factor 1); 0 when no key is present (SGLang then uses
    2048; the planner asks for context_length instead). Qwen3.5 text configs copy rope_parameters into rope_scaling
    when rope_scaling is absent (configs/qwen3_5.py:19-33). transformers may add ``rope_type`` from a legacy ``type``
    key when it builds the config object; both are read here.
    """
    rope = text.get('rope_scaling')
    if rope is None and str(model_type or '').startswith('qwen3_5'):
        rope = text.get('rope_parameters')
    factor = 1
    if isinstance(rope, dict) and rope:
        factor = rope.get('factor', 1)
        if 'original_max_position_embeddings' in rope or (rope.get('rope_type') or rope.get('type')) == 'llama3':
            factor = 1
    for key in CONTEXT_LENGTH_KEYS:
        value = text.get(key)
        if value is not None:
            try:
                return int(float(factor) * int(value))
            except (TypeError, ValueError):
                raise ModelConfigError('model config: %s must be a number, got %r' % (key, value))
    return 0


def dsa_indexer_layers(text, root, layers):
    """Layers that keep a DSA index-K entry: those computing fresh top-k (configs/model_config.py:488-527
    dsa_layer_skips_topk: indexer_types, cli_factor, index_topk_pattern, index_topk_freq / index_skip_topk_offset)."""
    def skips(layer):
        kinds = _get(text, root, 'indexer_types')
        if kinds is not None:
            return 0 <= layer < len(kinds) and kinds[layer] == 'shared'
        cli = _get(text, root, 'cli_factor') or 1
        if cli > 1:
            return layer % cli != 0
        pattern = _get(text, root, 'index_topk_pattern')
        if pattern is not None:
            return layer < len(pattern) and pattern[layer] == 'S'
        freq = _get(text, root, 'index_topk_freq') or 1
        offset = _get(text, root, 'index_skip_topk_offset')
        if offset is not None:
            return max(layer - offset + 1, 0) % freq != 0
        return max(layer - 1, 0) % freq != 0
    return sum(1 for layer in range(layers) if not skips(layer))


def quantization_config(text, root):
    """The checkpoint's quantization config as SGLang reads it (configs/model_config.py:1727-1746): quantization_config
    (the text config's first, as for every key here), else compression_config (compressed-tensors); None without one."""
    for key in ('quantization_config', 'compression_config'):
        value = _get(text, root, key)
        if isinstance(value, dict) and value:
            return value
    return None


def sglang_quant_method(quant):
    """The quant_method SGLang resolves for a checkpoint's quantization config; None without one.

    configs/model_config.py:1727-1741: a config without quant_method, or with "modelopt", is parsed by
    _parse_modelopt_quant_config (:1838-1897, unwrapping a nested hf_quant_config.json with
    unwrap_modelopt_quantization_config, :116-121), whose quant_algo decides: MIXED_PRECISION -> modelopt_mixed
    (a layer in NVFP4 / W4A16_NVFP4) or w4afp8; a quant_algo containing FP4 -> modelopt_fp4; FP8 -> modelopt_fp8;
    MXFP8 -> mxfp8. Any other config keeps its quant_method (else its quant_algo, else "unnamed"), so a quantized
    checkpoint is never taken for an unquantized one.
    """
    if not isinstance(quant, dict) or not quant:
        return None
    method = quant.get('quant_method')
    inner = quant.get('quantization', quant)
    if isinstance(inner, dict) and isinstance(inner.get('quantization'), dict):
        inner = inner['quantization']
    inner = inner if isinstance(inner, dict) else {}
    algo = inner.get('quant_algo')
    if method is None or method == 'modelopt':
        if algo == 'MIXED_PRECISION':
            layers = inner.get('quantized_layers') or {}
            nvfp4 = any(str(layer.get('quant_algo', '')).upper() in ('NVFP4', 'W4A16_NVFP4')
                        for layer in layers.values() if isinstance(layer, dict))
            return 'modelopt_mixed' if nvfp4 else 'w4afp8'
        if isinstance(algo, (type(u''), str)) and 'FP4' in algo:
            return 'modelopt_fp4'
        if algo == 'FP8':
            return 'modelopt_fp8'
        if algo == 'MXFP8':
            return 'mxfp8'
    return method or (str(algo) if algo else 'unnamed')


def family_of(arch, hybrid, architectures):
    """The planner family of an architecture, or None when the release table names it in no family."""
    if hybrid:
        return 'hybrid_gdn'
    for family in ('mla', 'hybrid_swa', 'gqa'):
        if arch in (architectures.get(family) or ()):
            return family
    return None


def supported_architectures(architectures):
    """Every architecture name the planner sizes, sorted (for refusals)."""
    names = set()
    for family in FAMILIES:
        names.update(architectures.get(family) or ())
    return sorted(names)


def _moe(text, root):
    """(experts, top_k, expert intermediate size, shared-expert intermediate size, dense layers) of an MoE config.

    Qwen3/Qwen3.5 name them num_experts / shared_expert_intermediate_size; DeepSeek, GLM-4.5 and Kimi
    n_routed_experts / n_shared_experts / first_k_dense_replace; Mixtral and gpt-oss num_local_experts with the
    expert size in intermediate_size; MiMo-V2 marks its dense layers in a moe_layer_freq list.
    """
    experts = _int(text, root, 'num_experts') or _int(text, root, 'n_routed_experts') or _int(
        text, root, 'num_local_experts')
    top_k = _int(text, root, 'num_experts_per_tok') or _int(text, root, 'experts_per_token')
    moe_inter = _int(text, root, 'moe_intermediate_size')
    if experts and not moe_inter:
        moe_inter = _int(text, root, 'intermediate_size')
    shared = _int(text, root, 'shared_expert_intermediate_size') or _int(text, root, 'n_shared_experts') * moe_inter
    dense_layers = _int(text, root, 'first_k_dense_replace') if experts else 0
    freq = _get(text, root, 'moe_layer_freq')
    if experts and not dense_layers and isinstance(freq, list):
        # MiMo-V2 (models/mimo_v2.py:1007-1013): layer i is MoE when moe_layer_freq[i] is set; its dense layers lead.
        while dense_layers < len(freq) and not freq[dense_layers]:
            dense_layers += 1
    return experts, top_k, moe_inter, shared, dense_layers


# The keys of model_facts(), in the order it returns them (its sections below fill them).
FACT_KEYS = (
    'arch', 'model_type', 'sized', 'missing', 'hidden', 'layers', 'heads', 'kv_heads', 'head_dim', 'v_head_dim',
    'swa_kv_heads', 'swa_head_dim', 'swa_v_head_dim', 'attn_output_gate', 'full_layer_ids', 'n_full', 'n_linear',
    'hybrid', 'family', 'attention', 'kv_lora_rank', 'qk_rope_head_dim', 'qk_nope_head_dim', 'q_lora_rank',
    'swa_layer_ids', 'n_swa', 'sliding_window', 'dense_layers', 'extra_buffer_supported', 'lin_k_heads',
    'lin_v_heads', 'lin_k_dim', 'lin_v_dim', 'conv_kernel', 'experts', 'top_k', 'moe_inter', 'shared_inter',
    'dense_inter', 'vocab', 'tied', 'context', 'ssm_dtype', 'dtype', 'quant_method', 'kv_cache_quant_algo',
    'mtp_layers', 'mtp_layers_known', 'nextn_in_config', 'nextn_layers', 'dsa', 'index_head_dim', 'index_kpool',
    'dsa_indexer_layers', 'learnable_sink', 'draft_vocab_size', 'target_hidden_size', 'eagle_aux_layers',
    'num_aux_hidden_states', 'vision', 'multimodal', 'layout')


def model_facts(config, architectures):
    """Normalise a (possibly multimodal, nested ``text_config``) HF config into the facts planner and renderer need.

    config:        a config.json as a dict, the ``config:`` block of a model profile, or None / {} (a profile without
                   one: ``sized`` is then False and only the defaults below are known)
    architectures: the ``architectures`` of a resolved release (sglang_release.release()): the ``hybrid_gdn`` and
                   ``multimodal`` name sets

    Keys: arch ('unknown' when the config names none), model_type, sized (all of SIZE_KEYS present), missing (the
    absent SIZE_KEYS), hidden, layers, heads, kv_heads, head_dim, v_head_dim, swa_kv_heads, swa_head_dim,
    swa_v_head_dim (the sliding-window layers' KV geometry, the full layers' unless the config names its own),
    attn_output_gate, full_layer_ids,
    n_full, n_linear, hybrid, extra_buffer_supported, lin_k_heads, lin_v_heads, lin_k_dim, lin_v_dim, conv_kernel,
    experts, top_k, moe_inter, shared_inter, dense_inter, vocab, tied, context (SGLang's derived context length,
    context_length(); 0 when unknown), ssm_dtype, dtype, quant_method, kv_cache_quant_algo, mtp_layers (0 when unknown), mtp_layers_known,
    nextn_in_config, vision, multimodal; family (a FAMILIES name, None when the table names the architecture in
    none), attention ('mla' or 'mha'), kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, q_lora_rank (MLA),
    swa_layer_ids, n_swa, sliding_window (hybrid SWA: the sliding-window layers; full_layer_ids are then the others),
    dense_layers (leading layers with a dense MLP in an MoE model), nextn_layers (num_nextn_predict_layers of the text
    config, None when absent), dsa, index_head_dim, index_kpool, dsa_indexer_layers, learnable_sink (DeepSeek DSA),
    draft_vocab_size, target_hidden_size, eagle_aux_layers, num_aux_hidden_states (EAGLE-3 draft configs); layout
    (model_tensors.layout: the checkpoint's per-architecture tensor details).
    """
    if config is None:
        config = {}
    text, arch, missing = _text_config(config)
    parts = _layer_facts(text, config, arch, architectures)
    parts.update(arch=arch, model_type=config.get('model_type') or text.get('model_type'), sized=not missing,
                 missing=missing)
    parts.update(_attention_facts(text, config, parts))
    parts.update(_serving_facts(text, config, arch, parts['layers'], architectures))
    parts.update(_checkpoint_facts(text, config, arch, architectures))
    return _more_families(text, config, architectures, dict((key, parts[key]) for key in FACT_KEYS))


def _text_config(config):
    """(text config, architecture, missing SIZE_KEYS) of a config; ModelConfigError when it is no mapping."""
    if not isinstance(config, dict):
        raise ModelConfigError('model config must be a mapping (a config.json or the config section of a profile), '
                               'got %s' % type(config).__name__)
    text = config.get('text_config') or config
    if not isinstance(text, dict):
        raise ModelConfigError('model config: text_config must be a mapping')
    archs = config.get('architectures') or text.get('architectures') or ['unknown']
    return text, archs[0], [key for key in SIZE_KEYS if _get(text, config, key) is None]


def _layer_ids(text, config, arch, architectures, layers):
    """(full-attention layer ids, sliding-window layer ids) as SGLang splits the decoder layers."""
    interval = _get(text, config, 'full_attention_interval')
    layer_types = _get(text, config, 'layer_types')
    linear_v_heads = _int(text, config, 'linear_num_value_heads')
    swa_ids = []
    if linear_v_heads and interval:
        # Qwen3NextConfig.layers_block_type: SGLang derives the layout from full_attention_interval.
        full_ids = [i for i in range(layers) if (i + 1) % int(interval) == 0]
    elif linear_v_heads and layer_types:
        full_ids = [i for i, kind in enumerate(layer_types) if kind in ('full_attention', 'attention')]
    elif arch in (architectures.get('hybrid_swa') or ()) and layer_types:
        # model_config.get_hybrid_layer_ids: gpt-oss and the other SWA_SINK_ARCHS split by layer_types.
        full_ids = [i for i, kind in enumerate(layer_types) if kind == 'full_attention']
        swa_ids = [i for i, kind in enumerate(layer_types) if kind == 'sliding_attention']
    elif arch in (architectures.get('hybrid_swa') or ()) and _get(text, config, 'hybrid_layer_pattern'):
        # configs/model_config.py:2721-2730 (MIMO_V2_MODEL_ARCHS): hybrid_layer_pattern, 1 = sliding window, 0 = full.
        pattern = _get(text, config, 'hybrid_layer_pattern')
        full_ids = [i for i in range(layers) if i < len(pattern) and pattern[i] == 0]
        swa_ids = [i for i in range(layers) if i < len(pattern) and pattern[i] == 1]
    else:
        full_ids = list(range(layers))
    return full_ids, swa_ids


def _layer_facts(text, config, arch, architectures):
    """Sizes, the layer layout (full / sliding-window / linear-attention layers), the family, the MoE sizes."""
    hidden = _int(text, config, 'hidden_size')
    layers = _int(text, config, 'num_hidden_layers')
    heads = _int(text, config, 'num_attention_heads')
    linear_v_heads = _int(text, config, 'linear_num_value_heads')
    full_ids, swa_ids = _layer_ids(text, config, arch, architectures, layers)
    linear = bool(linear_v_heads) and (len(full_ids) < layers or not layers)
    hybrid = linear or arch in architectures['hybrid_gdn']
    family = family_of(arch, hybrid, architectures)
    experts, top_k, moe_inter, shared_inter, dense_layers = _moe(text, config)
    return dict(
        hidden=hidden, layers=layers, heads=heads,
        full_layer_ids=full_ids, n_full=len(full_ids), n_linear=layers - len(full_ids) if linear else 0,
        hybrid=hybrid, family=family, attention='mla' if family == 'mla' else 'mha',
        swa_layer_ids=swa_ids, n_swa=len(swa_ids), sliding_window=_int(text, config, 'sliding_window'),
        dense_layers=dense_layers,
        extra_buffer_supported=arch in architectures['hybrid_gdn'],
        lin_k_heads=_int(text, config, 'linear_num_key_heads'),
        lin_v_heads=linear_v_heads,
        lin_k_dim=_int(text, config, 'linear_key_head_dim'),
        lin_v_dim=_int(text, config, 'linear_value_head_dim'),
        conv_kernel=_int(text, config, 'linear_conv_kernel_dim', 4) or 4,
        experts=experts, top_k=top_k, moe_inter=moe_inter, shared_inter=shared_inter,
        dense_inter=_int(text, config, 'intermediate_size'),
        vocab=_int(text, config, 'vocab_size'),
        tied=bool(_get(text, config, 'tie_word_embeddings', False)))


def _attention_facts(text, config, facts):
    """The KV geometry: heads, head dims (the sliding-window layers' own, MLA's latent sizes)."""
    heads = facts['heads']
    kv_heads = _int(text, config, 'num_key_value_heads', heads)
    head_dim = _int(text, config, 'head_dim', facts['hidden'] // heads if heads else 0)
    # Sliding-window layers with their own KV geometry (MiMo-V2-Flash): configs/model_config.py:1357-1365
    # (swa_head_dim defaults to head_dim, swa_v_head_dim to swa_head_dim) and :1713-1717 get_swa_num_kv_heads
    # (swa_num_key_value_heads, else the full layers' KV heads).
    v_head_dim = _int(text, config, 'v_head_dim', head_dim) or head_dim
    swa_head_dim = _int(text, config, 'swa_head_dim', head_dim) or head_dim
    return dict(
        kv_heads=kv_heads, head_dim=head_dim,
        v_head_dim=v_head_dim,
        swa_kv_heads=_int(text, config, 'swa_num_key_value_heads', kv_heads) or kv_heads,
        swa_head_dim=swa_head_dim, swa_v_head_dim=_int(text, config, 'swa_v_head_dim', swa_head_dim) or swa_head_dim,
        attn_output_gate=bool(_get(text, config, 'attn_output_gate', False)),
        kv_lora_rank=_int(text, config, 'kv_lora_rank'), qk_rope_head_dim=_int(text, config, 'qk_rope_head_dim'),
        qk_nope_head_dim=_int(text, config, 'qk_nope_head_dim'), q_lora_rank=_int(text, config, 'q_lora_rank'))


def _serving_facts(text, config, arch, layers, architectures):
    """Context length, dtypes, quantization, the MTP head and the DeepSeek DSA indexer as SGLang serves them."""
    quant = quantization_config(text, config) or {}
    mtp_layers = _get(text, config, 'mtp_num_hidden_layers')
    # configs/model_config.py:1602-1604: ModelConfig.num_nextn_predict_layers reads the TEXT config only.
    nextn = text.get('num_nextn_predict_layers')
    model_type = config.get('model_type') or text.get('model_type')
    dsa = arch in (architectures.get('dsa') or ()) and _get(text, config, 'index_topk') is not None
    return dict(
        context=context_length(text, text.get('model_type') or model_type),
        ssm_dtype=_get(text, config, 'mamba_ssm_dtype', 'float32'),
        dtype=served_dtype(text, config),
        quant_method=sglang_quant_method(quant),
        kv_cache_quant_algo=quant.get('kv_cache_quant_algo') if isinstance(quant, dict) else None,
        mtp_layers=int(mtp_layers if mtp_layers is not None else (nextn or 0)),
        mtp_layers_known=mtp_layers is not None or nextn is not None,
        # spec_aux_hidden_state.py:172-174 folds num_nextn_predict_layers draft layers into the KV cell when it is
        # set (pool_configurator.py:267-271: only when > 0); None when the config has no such key.
        nextn_in_config=bool(nextn),
        nextn_layers=int(nextn) if nextn is not None else None,
        # DeepSeek DSA (configs/model_config.py:191-212 is_deepseek_dsa): the indexer cache and its defaults.
        dsa=dsa, index_head_dim=_int(text, config, 'index_head_dim') if dsa else 0,
        index_kpool=(_int(text, config, 'index_kpool', 1) or 1) if dsa else 1,
        dsa_indexer_layers=dsa_indexer_layers(text, config, layers) if dsa else 0,
        learnable_sink=bool(_get(text, config, 'learnable_sink', False)))


def _checkpoint_facts(text, config, arch, architectures):
    """EAGLE-3 draft sizes, the vision tower and the checkpoint's per-architecture tensor layout."""
    eagle = _get(text, config, 'eagle_config') or {}
    vision = config.get('vision_config')
    return dict(
        # EAGLE-3 draft checkpoints (models/llama_eagle3.py).
        draft_vocab_size=_int(text, config, 'draft_vocab_size') or None,
        target_hidden_size=_int(text, config, 'target_hidden_size') or None,
        eagle_aux_layers=len(eagle.get('eagle_aux_hidden_state_layer_ids') or []) if isinstance(eagle, dict) else 0,
        num_aux_hidden_states=_int(text, config, 'num_aux_hidden_states') or None,
        vision=vision if isinstance(vision, dict) else None,
        multimodal=arch in architectures['multimodal'] or isinstance(vision, dict),
        layout=_layout(text, config, arch, config.get('model_type')),
    )


# --------------------------------------------------------------------------------------------------------------
# Families added after the first four (issue #26 point 4): chunked-attention hybrids (Llama-4), VLMs whose
# multimodal path SGLang leaves off by default, and the served-but-unsized / not-served refusals.
# --------------------------------------------------------------------------------------------------------------

def _more_families(text, root, architectures, facts):
    """The facts of the architectures the first model_facts() pass does not know, in place; returns ``facts``.

    chunked_attention (release table: architecture -> N): every N-th layer keeps full attention and the others a
    chunked local window of attention_chunk_size tokens, which SGLang pools as sliding-window layers
    (configs/model_config.py:2705-2711 get_hybrid_layer_ids: (i + 1) % 4 == 0 is full for
    Llama4ForConditionalGeneration). Llama-4's MoE layers add one shared expert of intermediate_size beside the
    routed ones, and its dense layers use intermediate_size_mlp (models/llama4.py Llama4MoE / Llama4MLP); a layer is
    MoE when (i + 1) % interleave_moe_layer_step == 0.
    multimodal_off_by_default: SGLang serves these text-only unless --enable-multimodal
    (configs/model_config.py:690-703; models/mllama4.py:460-490 builds no vision model then): no vision weights.
    """
    arch = facts['arch']
    interval = (architectures.get('chunked_attention') or {}).get(arch)
    if interval and facts['layers']:
        layers = facts['layers']
        full = [i for i in range(layers) if (i + 1) % int(interval) == 0]
        facts.update(full_layer_ids=full, n_full=len(full), swa_layer_ids=[i for i in range(layers) if i not in full],
                     n_swa=layers - len(full), sliding_window=_int(text, root, 'attention_chunk_size'))
        if facts['experts']:
            step = _int(text, root, 'interleave_moe_layer_step', 1) or 1
            moe_layers = sum(1 for i in range(layers) if (i + 1) % step == 0)
            # Dense-layer COUNT (param_counts); their positions interleave, which only quantized pricing would see.
            facts.update(shared_inter=_int(text, root, 'intermediate_size'), dense_layers=layers - moe_layers,
                         dense_inter=_int(text, root, 'intermediate_size_mlp') or facts['dense_inter'])
    if arch in (architectures.get('hybrid_mamba') or ()):
        _mamba2_hybrid(text, root, facts)
    if arch in (architectures.get('multimodal_off_by_default') or ()):
        facts.update(vision=None, multimodal=False)
    return facts


def served_architectures(architectures):
    """The model classes the release serves (its model registry), sorted; None when the table has not read it."""
    served = architectures.get('served')
    return sorted(served) if served else None


def unsized_reason(arch, architectures, version):
    """Why the planner refuses an architecture it has in no family: not served at all, or served but not sized."""
    served = served_architectures(architectures)
    sized = ', '.join(supported_architectures(architectures))
    if served is not None and arch not in served:
        return ('architecture %s is not served by sglang %s: it is not in that release\'s model registry '
                '(sglang/srt/models/), so SGLang refuses to load it. Use a checkpoint of an architecture it serves '
                '(%d names): %s' % (arch, version, len(served), ', '.join(served)))
    return ('architecture %s is not one the planner sizes for sglang %s%s (its KV-cache layout was not read from '
            'that release); supported: %s. Add it to a family in profiles/sglang_releases.yml architectures only '
            'after reading its pool in the SGLang source'
            % (arch, version, ', though that release serves it (its model registry has it)' if served is not None
               else '', sized))


# NemotronH block letters (configs/nemotron_h.py: MAMBA "M", ATTENTION "*", MLP "-", MOE "E").
BLOCK_KINDS = 'M*-E'


def _mamba2_hybrid(text, root, facts):
    """Attention + Mamba-2 hybrids (NemotronH, configs/nemotron_h.py): one block per letter of
    hybrid_override_pattern; the attention layers keep K/V (DefaultPoolConfigurator over mambaish
    full_attention_layer_ids), the Mamba-2 layers a state per request shaped by Mamba2StateShape.create
    (configs/mamba_utils.py:194-243: conv over mamba_num_heads x mamba_head_dim + 2 x n_groups x ssm_state_size,
    SSM mamba_num_heads x mamba_head_dim x ssm_state_size), which the GDN slot arithmetic shares: the GDN key names
    carry the Mamba-2 sizes (lin_v_heads = mamba_num_heads, lin_v_dim = mamba_head_dim, lin_k_heads = n_groups,
    lin_k_dim = ssm_state_size). A pattern letter outside M * - E, or a pattern whose length is not
    num_hidden_layers, raises ModelConfigError."""
    pattern = _get(text, root, 'hybrid_override_pattern')
    if not isinstance(pattern, str) or not pattern or any(c not in BLOCK_KINDS for c in pattern):
        raise ModelConfigError('model config: %s needs hybrid_override_pattern, a string of %s (Mamba-2, attention, '
                               'MLP, MoE), got %r' % (facts['arch'], ' '.join(BLOCK_KINDS), pattern))
    if facts['layers'] and len(pattern) != facts['layers']:
        raise ModelConfigError('model config: hybrid_override_pattern has %d blocks but num_hidden_layers is %d'
                               % (len(pattern), facts['layers']))
    head_dim = _int(text, root, 'head_dim') or _int(text, root, 'attention_head_dim') or facts['head_dim']
    full = [i for i, c in enumerate(pattern) if c == '*']
    experts = _int(text, root, 'n_routed_experts')
    facts.update(
        family='hybrid_mamba', hybrid=True, layers=len(pattern), block_pattern=pattern, full_layer_ids=full,
        n_full=len(full), n_linear=pattern.count('M'), head_dim=head_dim, v_head_dim=head_dim,
        lin_v_heads=_int(text, root, 'mamba_num_heads'), lin_v_dim=_int(text, root, 'mamba_head_dim'),
        lin_k_heads=_int(text, root, 'n_groups', 1) or 1, lin_k_dim=_int(text, root, 'ssm_state_size'),
        conv_kernel=_int(text, root, 'conv_kernel', 4) or 4,
        experts=experts if 'E' in pattern else 0, moe_inter=_int(text, root, 'moe_intermediate_size'),
        shared_inter=_int(text, root, 'moe_shared_expert_intermediate_size') * (_int(text, root, 'n_shared_experts', 1) or 1)
        if 'E' in pattern else 0,
        dense_layers=0, extra_buffer_supported=True)
