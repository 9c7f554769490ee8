# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The gqa family: one plain MHA/GQA pool over every layer (dense or MoE), KV heads split over TP.

PRIVATE to the collection. Pure. Its architectures: release table architectures.gqa (profiles/sglang_releases.yml);
every function of the family interface (registry.py) is the default of base.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.planner.families import base

NAME = 'gqa'
TEXT = 'K/V of every layer, KV heads split over TP'
STATE_POOL = False
SWA_POOL = False

param_counts = base.param_counts
kv_layer = base.kv_layer
state_slot = base.no_state
mtp_draft_layers = base.mtp_draft_layers
swa_check = base.no_swa_check
swa_tokens = base.no_swa_tokens


def check(facts):
    """Nothing beyond the sizes every family needs."""
    return None


def kv_cell(f, tp, kv_bytes, draft_layers_in_budget, swa_ratio=None):
    return base.full_cell(f, kv_layer(f, tp, kv_bytes)[0], draft_layers_in_budget)


def kv_buffers(f, rows, tp, kv_bytes):
    return base.split_buffers(f, rows, tp, kv_bytes)


def swa_buffers(f, swa_tokens_, page_size, tp, kv_bytes):
    return 0
