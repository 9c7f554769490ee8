# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner's family registry (plugins/module_utils/planner/families/, issue #28 point 3): one module per KV-cache
family, the same names in the model floor and the release table, each family sized for at least one real config,
and no planner code branching on a family's name outside its module."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import glob
import json
import os

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.model import config as mc
from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan as vp
from ansible_collections.llmops.inference.plugins.module_utils.planner.families import registry

from collection_paths import ROOT, release

RELEASE = release()
# What every family module answers (registry.py documents each).
INTERFACE = ('NAME', 'TEXT', 'STATE_POOL', 'SWA_POOL', 'check', 'param_counts', 'kv_layer', 'kv_cell', 'kv_buffers',
             'state_slot', 'mtp_draft_layers', 'swa_check', 'swa_tokens', 'swa_buffers')
# Where a family name may still be compared with facts['family']: the family modules themselves, and sglang/layout.py
# (floor 2: it may not import the planner; its SM100 backend rule reads the fact).
MAY_NAME_A_FAMILY = ('module_utils/planner/families/', 'module_utils/sglang/layout.py')


def _sized_fixtures():
    out = {}
    for path in sorted(glob.glob(os.path.join(ROOT, 'tests', 'fixtures', 'hf_configs', '*', 'config.json'))):
        with open(path) as handle:
            cfg = json.load(handle)
        try:
            facts = vp.sized_facts(cfg, RELEASE)
        except vp.PlanError:
            continue
        out.setdefault(facts['family'], []).append((os.path.basename(os.path.dirname(path)), cfg, facts))
    return out


SIZED = _sized_fixtures()


def test_the_registry_the_model_floor_and_the_release_table_name_the_same_families():
    assert sorted(registry.FAMILIES) == sorted(mc.FAMILIES)
    for name in mc.FAMILIES:
        assert isinstance(RELEASE['architectures'][name], frozenset), name


@pytest.mark.parametrize('name', sorted(registry.FAMILIES))
def test_every_family_module_answers_the_whole_interface(name):
    module = registry.FAMILIES[name]
    assert module.NAME == name
    missing = [key for key in INTERFACE if not hasattr(module, key)]
    assert not missing, '%s lacks %s' % (module.__name__, ', '.join(missing))


@pytest.mark.parametrize('name', sorted(registry.FAMILIES))
def test_every_family_is_planned_for_a_real_config(name):
    """A family without a config fixture it sizes is untested: add one under tests/fixtures/hf_configs."""
    assert SIZED.get(name), 'no fixture config under tests/fixtures/hf_configs is sized as %s' % name
    fixture, cfg, facts = SIZED[name][0]
    tp = next(size for size in (8, 4, 2, 1)
              if facts['heads'] % size == 0 and (facts['kv_heads'] % size == 0 or size % facts['kv_heads'] == 0))
    # weights_bytes small enough that every fixture loads on one H200-sized GPU: the pools are what is checked here.
    try:
        result = vp.plan(model_config=cfg, gpu_memory_mib=143771, tp_size=tp, release=RELEASE,
                         weights_bytes=1 << 30, context_length=min(4096, facts['context'] or 4096))
    except vp.PlanError as exc:
        pytest.fail('%s (%s) at tp %d: %s' % (fixture, name, tp, exc))
    assert result['family'] == name
    assert result['kv_layout'].startswith(registry.family(facts).TEXT)
    if registry.family(facts).STATE_POOL:
        assert result['mamba_bytes_per_slot'] > 0 and result['mamba_cache_slots'] > 0
    else:
        assert result['mamba_bytes_per_slot'] == 0 and result['mamba_cache_slots'] is None
    assert (result['swa_kv_cache_tokens'] is not None) == registry.family(facts).SWA_POOL


def _family_comparisons(path):
    """Lines of ``<x>['family'] == '<name>'`` (or !=, in, not in) in one file."""
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left] + list(node.comparators)
        keyed = any(isinstance(side, ast.Subscript) and isinstance(getattr(side, 'slice', None), ast.Constant)
                    and side.slice.value == 'family' for side in sides)
        named = any(isinstance(sub, ast.Constant) and sub.value in registry.FAMILIES
                    for side in sides for sub in ast.walk(side))
        if keyed and named:
            lines.append(node.lineno)
    return lines


def test_no_planner_code_branches_on_a_family_name_outside_its_module():
    found = []
    plugins = os.path.join(ROOT, 'plugins')
    for path in sorted(glob.glob(os.path.join(plugins, '**', '*.py'), recursive=True)):
        rel = os.path.relpath(path, plugins)
        if rel.startswith(MAY_NAME_A_FAMILY):
            continue
        found.extend('%s:%d' % (rel, line) for line in _family_comparisons(path))
    assert not found, 'ask planner/families/registry.family(facts) instead of comparing the name: %s' % found


def test_the_branch_guard_sees_a_comparison(tmp_path):
    planted = tmp_path / 'planted.py'
    planted.write_text(u"def f(facts):\n    return facts['family'] == 'hybrid_swa'\n")
    assert _family_comparisons(str(planted)) == [2]
