# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The mla family: one latent vector (kv_lora_rank + qk_rope_head_dim) per token and layer, the same on every TP rank
(MLATokenToKVPool); DeepSeek-V3.2-style DSA adds its indexer (base.dsa_cell, sized for every family that has it).

PRIVATE to the collection. Pure. Its architectures: release table architectures.mla (profiles/sglang_releases.yml).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.planner.families import base

NAME = 'mla'
TEXT = 'one latent vector (kv_lora_rank + qk_rope_head_dim) per layer, on every TP rank'
STATE_POOL = False
SWA_POOL = False

param_counts = base.param_counts
state_slot = base.no_state
mtp_draft_layers = base.mtp_draft_layers
swa_check = base.no_swa_check
swa_tokens = base.no_swa_tokens


def check(facts):
    if not (facts['kv_lora_rank'] and facts['qk_rope_head_dim']):
        return '%s is an MLA architecture but model_config lacks kv_lora_rank / qk_rope_head_dim' % facts['arch']
    return None


def kv_layer(f, tp, kv_bytes):
    """MLATokenToKVPool: kv_lora_rank + qk_rope_head_dim per layer, the same on every TP rank; not split in K/V."""
    return (f['kv_lora_rank'] + f['qk_rope_head_dim']) * kv_bytes, False


def kv_cell(f, tp, kv_bytes, draft_layers_in_budget, swa_ratio=None):
    return base.full_cell(f, kv_layer(f, tp, kv_bytes)[0], draft_layers_in_budget)


def kv_buffers(f, rows, tp, kv_bytes):
    """One latent buffer per layer ("KV size" in the log); reported as K, V stays 0."""
    return rows * kv_layer(f, tp, kv_bytes)[0] * f['n_full'], 0


def swa_buffers(f, swa_tokens_, page_size, tp, kv_bytes):
    return 0
