# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The hybrid_gdn family: a Gated DeltaNet state per request (the mamba pool) + K/V of the full-attention layers
(Qwen3-Next, Qwen3.5).

PRIVATE to the collection. Pure. Its architectures: release table architectures.hybrid_gdn, and any config with
linear-attention layers (model_config.family_of).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.planner.families import base

NAME = 'hybrid_gdn'
TEXT = 'Gated DeltaNet state per request + K/V of the full-attention layers'
STATE_POOL = True
SWA_POOL = False

param_counts = base.param_counts
kv_layer = base.kv_layer
state_slot = base.mamba2_state
swa_check = base.no_swa_check
swa_tokens = base.no_swa_tokens


def check(facts):
    if not facts['n_linear']:
        return ('%s is a hybrid GDN architecture but model_config has no linear-attention layers '
                '(linear_num_value_heads with full_attention_interval or layer_types)' % facts['arch'])
    return None


def kv_cell(f, tp, kv_bytes, draft_layers_in_budget, swa_ratio=None):
    return base.full_cell(f, kv_layer(f, tp, kv_bytes)[0], draft_layers_in_budget)


def kv_buffers(f, rows, tp, kv_bytes):
    return base.split_buffers(f, rows, tp, kv_bytes)


def swa_buffers(f, swa_tokens_, page_size, tp, kv_bytes):
    return 0


def mtp_draft_layers(f):
    """A path-less MTP head of a hybrid model keeps one KV layer (kv_cache_configurator.py:2614-2622)."""
    return 1
