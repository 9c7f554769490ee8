# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The hybrid_mamba family: a Mamba-2 state per request (the mamba pool) + K/V of the attention layers (NemotronH:
one block per letter of hybrid_override_pattern, model_config._mamba2_hybrid).

PRIVATE to the collection. Pure. Its architectures: release table architectures.hybrid_mamba. Its pools are the
GDN family's (the Mamba-2 sizes travel under the GDN key names); its parameters are counted block by block.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.model import tensors as _mt
from ansible_collections.llmops.inference.plugins.module_utils.planner.families import base, hybrid_gdn

NAME = 'hybrid_mamba'
TEXT = 'Mamba-2 state per request + K/V of the attention layers'
STATE_POOL = True
SWA_POOL = False

check = hybrid_gdn.check
kv_layer = hybrid_gdn.kv_layer
kv_cell = hybrid_gdn.kv_cell
kv_buffers = hybrid_gdn.kv_buffers
state_slot = base.mamba2_state
mtp_draft_layers = hybrid_gdn.mtp_draft_layers
swa_check = base.no_swa_check
swa_tokens = base.no_swa_tokens
swa_buffers = hybrid_gdn.swa_buffers


def param_counts(f):
    """param_counts() of a NemotronH-style model (one block per hybrid_override_pattern letter), from the tensors
    model_tensors.checkpoint lists for it: routed experts apart, router gates and norms replicated on every rank."""
    total = routed = replicated = 0
    for t in _mt.checkpoint(f):
        size = _mt.params([(t['name'], t['shape'], t['role'], t['count'])])
        total += size
        routed += size if t['role'] == 'expert' else 0
        replicated += size if t['role'] in ('router', 'norm') else 0
    expert = _mt.params([t[:3] for t in _mt.block_pattern_layer(f, 'E') if t[2] == 'expert']) if f['experts'] else 0
    moe_layers = f['block_pattern'].count('E')
    embed = f['vocab'] * f['hidden']
    non_expert_active = total - routed - (0 if f['tied'] else embed)
    routed_active = moe_layers * f['top_k'] * expert
    return dict(language=total, vision=0, mtp=0, replicated=replicated, kv_proj_per_layer=2 * f['hidden'] * f['head_dim'],
                non_expert_active=non_expert_active, routed_active=routed_active, expert=expert, mtp_active=0,
                active=non_expert_active + routed_active)
