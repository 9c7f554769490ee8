# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vram_plan.plan() against SGLang's own numbers: tests/fixtures/oracle/reference.json holds what the pinned SGLang
computed for the make-test subset of benchmarks/oracle_grid.py (its server-argument resolution and pool sizing, run
by tests/oracle/sglang_oracle.py; generated with ``oracle_grid.py --write-reference``, checked against the installed
SGLang by tests/sglang/run-parser-tests.sh). The expected values here are SGLang's, never the planner's."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import json
import os

import pytest

from collection_paths import PIN, ROOT

REFERENCE = os.path.join(ROOT, 'tests', 'fixtures', 'oracle', 'reference.json')


def _grid():
    spec = importlib.util.spec_from_file_location('oracle_grid', os.path.join(ROOT, 'benchmarks', 'oracle_grid.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GRID = _grid()
with open(REFERENCE) as _handle:
    REF = json.load(_handle)


@pytest.fixture(scope='module')
def grid_cases(tmp_path_factory):
    rel = GRID.release()
    return rel, dict((c['id'], c) for c in GRID.cases(rel, str(tmp_path_factory.mktemp('oracle'))))


def test_reference_is_the_pinned_release_and_the_whole_subset():
    pin = PIN
    assert REF['sglang_version'] == pin, 'reference.json was generated with sglang %s, the pin is %s: regenerate it ' \
        '(benchmarks/oracle_grid.py --write-reference in the lab venv)' % (REF['sglang_version'], pin)
    assert [c['id'] for c in REF['cases']] == list(GRID.SUBSET)
    # The subset exercises both outcomes and every pool SGLang sizes differently.
    configurators = set((c['oracle'].get('cells') or {}).get('configurator') for c in REF['cases'])
    assert {'DefaultPoolConfigurator', 'HybridSWAPoolConfigurator'} <= configurators
    assert any(c['oracle'].get('refused') for c in REF['cases'])
    assert any((c['oracle'].get('state') or {}).get('mamba_bytes_per_slot') for c in REF['cases'])


@pytest.mark.parametrize('entry', REF['cases'], ids=[c['id'] for c in REF['cases']])
def test_planner_equals_sglang(entry, grid_cases):
    """Every field SGLang produced for the case, with the same free memory before and after loading (the weights are
    measured on a GPU, not computed by SGLang); KV tokens within one page; a refusal must be a refusal."""
    rel, by_id = grid_cases
    case = by_id[entry['id']]
    shared = (entry['oracle']['case'].get('free_before_load_gib'), entry['oracle']['case'].get('free_after_load_gib'))
    plan, refusal, _pre, _after = GRID.run_planner(rel, case, shared)
    result = GRID.compare(plan, refusal, entry['oracle'])
    assert result['kind'] in ('exact', 'both refuse'), '\n'.join(
        '%s: planner %r, SGLang %r' % diff for diff in result['diffs'])
