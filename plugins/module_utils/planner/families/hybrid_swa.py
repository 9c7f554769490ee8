# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The hybrid_swa family: K/V of the full-attention layers plus a smaller pool for the sliding-window layers
(HybridSWAPoolConfigurator, model_executor/pool_configurator.py:656-803), each at its own per-layer geometry.

PRIVATE to the collection. Pure. Its architectures: release table architectures.hybrid_swa (the chunked-attention
ones, Llama-4, pool their local layers the same way); the release's planner rules give swa_full_tokens_ratio.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.planner.families import base

NAME = 'hybrid_swa'
TEXT = 'K/V of full layers + a smaller pool for the sliding-window layers'
STATE_POOL = False
SWA_POOL = True

param_counts = base.param_counts
kv_layer = base.kv_layer
state_slot = base.no_state
mtp_draft_layers = base.mtp_draft_layers


def check(facts):
    if not facts['n_swa'] or facts['n_swa'] + facts['n_full'] != facts['layers']:
        return ('%s is a hybrid sliding-window architecture but model_config.layer_types does not list '
                'sliding_attention / full_attention for each of its %d layers' % (facts['arch'], facts['layers']))
    return None


def swa_check(facts, release, rules):
    """The release must say how many tokens the sliding-window pool keeps per full-pool token."""
    if rules.get('swa_full_tokens_ratio') is None:
        return ('%s uses a sliding-window pool, which the planner rules of sglang %s (%s) do not model'
                % (facts['arch'], release['version'], rules['family']))
    return None


def swa_layer(f, tp, kv_bytes):
    """Bytes one token keeps in one sliding-window layer of one rank (HybridSWAPoolConfigurator._swa_per_token,
    model_executor/pool_configurator.py:711-716): get_swa_num_kv_heads(attn_tp) x (swa_head_dim + swa_v_head_dim);
    the full layers' geometry unless the config names its own (MiMo-V2-Flash: 8 KV heads against 4)."""
    return max(1, f['swa_kv_heads'] // tp) * (f['swa_head_dim'] + f['swa_v_head_dim']) * kv_bytes


def kv_cell(f, tp, kv_bytes, draft_layers_in_budget, swa_ratio=None):
    """Full layers + swa_ratio x sliding-window layers at their own per-layer size (SWA tokens = full tokens x
    swa_ratio); the budget divides by this cell and reports the full-layer token count. A draft's layers are priced
    at the full layers' per-layer size."""
    per_layer = kv_layer(f, tp, kv_bytes)[0]
    cell = per_layer * f['n_full'] + swa_ratio * swa_layer(f, tp, kv_bytes) * f['n_swa']
    return cell, per_layer * draft_layers_in_budget


def kv_buffers(f, rows, tp, kv_bytes):
    return base.split_buffers(f, rows, tp, kv_bytes)


def swa_tokens(tokens, swa_ratio, page_size):
    """The sliding-window layers keep swa_ratio x the full layers' tokens, whole pages."""
    return int(tokens * swa_ratio) // page_size * page_size


def swa_buffers(f, swa_tokens_, page_size, tp, kv_bytes):
    return (swa_tokens_ + page_size) * swa_layer(f, tp, kv_bytes) * f['n_swa']
