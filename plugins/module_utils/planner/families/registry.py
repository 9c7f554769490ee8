# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The KV-cache families the planner sizes, one module each: callers ask ``family(facts)`` and call its functions
instead of branching on the family's name.

PRIVATE to the collection. Pure. A family module has NAME (its key in the release table's ``architectures``),
TEXT (what its pool keeps, for plan.md), STATE_POOL (a recurrent-state pool beside the KV pool), SWA_POOL (a
sliding-window pool beside the full one) and the functions
check(facts) (a refusal or None), param_counts(f), kv_layer(f, tp, kv_bytes), kv_cell(f, tp, kv_bytes,
draft_layers_in_budget, swa_ratio), kv_buffers(f, rows, tp, kv_bytes), state_slot(f, tp, ssm_dtype),
mtp_draft_layers(f), swa_check(facts, release, rules), swa_tokens(tokens, swa_ratio, page_size) and
swa_buffers(f, swa_tokens, page_size, tp, kv_bytes); base.py holds the defaults they share.

Where the config facts live: model/config.py (floor 1, below planner) reads each family's layer layout from the
config, because sglang/ (flags, defaults, layout: floor 2, which may not import planner) reads the same facts; it
knows a family only as the release table's architecture lists (``family_of``), so its names are data there and
model.config.FAMILIES must list the same names as FAMILIES here (tests/unit/plugins/module_utils/
test_planner_registry.py checks both; sglang/release.py validates and loads one architecture list per name).
The modules are imported by name, not discovered: AnsiballZ ships only what a module imports statically.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.planner.families import (
    gqa,
    hybrid_gdn,
    hybrid_mamba,
    hybrid_swa,
    mla,
)

FAMILIES = dict((module.NAME, module) for module in (hybrid_gdn, mla, hybrid_swa, gqa, hybrid_mamba))


def family(facts):
    """The family module of model_config.model_facts() ``facts`` (KeyError for facts the planner does not size)."""
    return FAMILIES[facts['family']]
