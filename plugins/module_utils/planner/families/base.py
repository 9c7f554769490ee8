# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What every KV-cache family builds on: per-layer KV bytes, the full-attention cell, the parameter counts of a
decoder stack, the Mamba-2 state arithmetic and the DeepSeek DSA pool.

PRIVATE to the collection. Pure, stdlib only. A family module (planner/families/<family>.py, found through
registry.py) takes these defaults or replaces them; docs/dev/sglang-memory.md cites the SGLang source of each rule.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.model import tensors as _mt

# Bytes per element the planner knows; a dtype the release accepts but this table lacks is refused, not guessed.
DTYPE_BYTES = {'float32': 4, 'float': 4, 'bfloat16': 2, 'bf16': 2, 'float16': 2, 'half': 2, 'fp8_e4m3': 1,
               'fp8_e5m2': 1}


# --------------------------------------------------------------------------------------------------------------
# Parameter counts (the tensor layout of model_tensors; checked against the model cards' totals)
# --------------------------------------------------------------------------------------------------------------

def attn_params(f, swa=False):
    return _mt.params(_mt.attention(f, swa))


def mixer_params(f):
    """Attention (full and sliding-window, each its own geometry) and GDN parameters of every decoder layer."""
    full = f['layers'] - f['n_linear'] - f['n_swa']
    return f['n_linear'] * _mt.params(_mt.gdn(f)) + full * attn_params(f) + f['n_swa'] * attn_params(f, swa=True)


def _mlp_parts(f):
    """(shared-by-all-tokens params, one routed expert) of one decoder layer's MLP."""
    if f['experts']:
        return _mt.params(_mt.moe_shared(f)), _mt.params(_mt.expert(f))
    return _mt.params(_mt.dense_mlp(f)), 0


def param_counts(f):
    """Total, per-rank-replicated and decode-active parameter counts of the target, vision tower and MTP head."""
    shared_mlp, expert = _mlp_parts(f)
    routed_all = f['experts'] * expert
    per_layer_mlp = shared_mlp + routed_all
    norms = 2 * f['hidden']
    linear = f['n_linear']
    full = f['layers'] - linear
    mixers = mixer_params(f)
    embed = f['vocab'] * f['hidden']
    head = 0 if f['tied'] else embed
    # MoE models whose first layers have a dense MLP (first_k_dense_replace: DeepSeek, Kimi, GLM-4.5).
    dense = f['dense_layers'] if f['experts'] else 0
    moe_layers = f['layers'] - dense
    dense_mlp = 3 * f['hidden'] * f['dense_inter'] if dense else 0
    language = (embed + head + mixers + moe_layers * per_layer_mlp + dense * dense_mlp + f['layers'] * norms
                + f['hidden'])
    # Router gates (ReplicatedLinear) and kv projections beyond one head per rank are replicated on every rank; so are
    # MLA's down projections to the latent spaces (fused_qkv_a_proj_with_mqa).
    replicated = moe_layers * f['experts'] * f['hidden'] + f['layers'] * norms
    if f['attention'] == 'mla':
        replicated += full * f['hidden'] * (f['q_lora_rank'] + f['kv_lora_rank'] + f['qk_rope_head_dim'])
    mtp_layer = 2 * f['hidden'] * f['hidden'] + 2 * f['hidden'] + attn_params(f) + per_layer_mlp + norms + f['hidden']
    mtp = f['mtp_layers'] * mtp_layer
    active_mlp = shared_mlp + f['top_k'] * expert
    # Decode reads the whole output head (tied or not); the embedding lookup itself is one row.
    non_expert_active = embed + mixers + moe_layers * shared_mlp + dense * dense_mlp + f['layers'] * norms
    routed_active = moe_layers * f['top_k'] * expert
    return dict(
        language=language, vision=_mt.params(_mt.vision(f['vision'])), mtp=mtp, replicated=replicated,
        kv_proj_per_layer=2 * f['hidden'] * f['head_dim'],
        non_expert_active=non_expert_active, routed_active=routed_active, expert=expert,
        mtp_active=f['mtp_layers'] * (2 * f['hidden'] * f['hidden'] + attn_params(f) + active_mlp) + embed,
        active=non_expert_active + routed_active,
    )


# --------------------------------------------------------------------------------------------------------------
# KV bytes
# --------------------------------------------------------------------------------------------------------------

def kv_heads_per_rank(f, tp):
    return max(1, f['kv_heads'] // tp)  # ModelConfig.get_num_kv_heads


def kv_layer(f, tp, kv_bytes):
    """MHA/GQA (pool_configurator._compute_cell_size, MHATokenToKVPool): bytes one token keeps in one attention layer
    of one rank, KV heads per rank x (head_dim + v_head_dim), and True: the pool splits them into K and V."""
    return kv_heads_per_rank(f, tp) * (f['head_dim'] + f['v_head_dim']) * kv_bytes, True


def full_cell(f, per_layer, draft_layers_in_budget):
    """DefaultPoolConfigurator (model_executor/pool_configurator.py:218-314): the full-attention layers (every layer
    but the GDN ones), plus EAGLE/NEXTN draft layers priced as int(target cell x draft layers / target layers)
    (:310-314, "assumes the draft shares the target's per-layer KV size"). Returns (cell, draft part)."""
    cell = per_layer * f['n_full']
    draft = int(cell * draft_layers_in_budget / f['n_full']) if draft_layers_in_budget > 0 and f['n_full'] else 0
    return cell, draft


def split_buffers(f, rows, tp, kv_bytes):
    """(K bytes, V bytes) of the MHA pool: KV heads per rank x head_dim (K) and v_head_dim (V) per full layer."""
    heads = kv_heads_per_rank(f, tp)
    return (rows * heads * f['head_dim'] * f['n_full'] * kv_bytes,
            rows * heads * f['v_head_dim'] * f['n_full'] * kv_bytes)


def dsa_cell(f, kv_bytes, draft_layers_in_budget, dsa):
    """DSA (``dsa``: sglang_layout.dsa_layout): the latent of every layer plus the indexer bytes of the layers that
    compute top-k (pool_configurator.py:399-409); a draft adds its share of the latent and the indexer of all its
    layers (:282-309). Returns (cell, draft part)."""
    per_layer = dsa['latent_dim'] * kv_bytes
    kv = per_layer * f['n_full']
    indexer = dsa['indexer_bytes_per_layer']
    draft = 0
    if draft_layers_in_budget > 0:
        draft = int(kv * draft_layers_in_budget / f['n_full']) + indexer * draft_layers_in_budget
    return kv + indexer * dsa['indexer_layers'], draft


def dsa_buffers(f, rows, kv_bytes, dsa):
    """DSATokenToKVPool: one buffer per layer (latent) plus the index-K buffer ("KV size", memory_pool.py:5385),
    reported as K; V stays 0. Returns (K bytes, V bytes, per-layer latent bytes)."""
    per_layer = dsa['latent_dim'] * kv_bytes
    return rows * (per_layer * f['n_full'] + dsa['indexer_bytes_per_layer'] * dsa['indexer_layers']), 0, per_layer


# --------------------------------------------------------------------------------------------------------------
# Recurrent state (the families without one take these)
# --------------------------------------------------------------------------------------------------------------

def no_state(f, tp, ssm_dtype):
    """A family without a recurrent-state pool: nothing per request."""
    return dict(per_slot=0, conv=0, ssm=0)


def mamba2_state(f, tp, ssm_dtype):
    """Mamba2StateShape.create + BaseLinearStateParams.mamba_cache_per_req (conv state bf16, SSM in ssm_dtype), per
    linear layer, sharded over ``tp``; the GDN and Mamba-2 families share it (their facts carry the same key names)."""
    n_groups = f['lin_k_heads']
    if n_groups % tp:
        n_groups += tp - n_groups  # extra_groups_for_head_shards
    conv_dim = f['lin_v_heads'] * f['lin_v_dim'] + 2 * n_groups * f['lin_k_dim']
    conv = conv_dim // tp * (f['conv_kernel'] - 1) * 2
    ssm = f['lin_v_heads'] // tp * f['lin_v_dim'] * f['lin_k_dim'] * DTYPE_BYTES[ssm_dtype]
    layers = f['n_linear']
    return dict(per_slot=(conv + ssm) * layers, conv=conv * layers, ssm=ssm * layers)


def mtp_draft_layers(f):
    """Layers of a path-less MTP head's own KV pool: num_nextn_predict_layers (at least 1)."""
    return max(1, f['nextn_layers'] or 1)


def no_swa_tokens(tokens, swa_ratio, page_size):
    """A family without a sliding-window pool: no SWA tokens."""
    return None


def no_swa_check(facts, release, rules):
    """A family without a sliding-window pool needs no SWA rule of the release."""
    return None
