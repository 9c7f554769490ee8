# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vram_plan.plan() against SGLang's own numbers: tests/fixtures/oracle/reference-<release>.json holds what that SGLang
release computed for the make-test subset of benchmarks/oracle_grid.py (its server-argument resolution and pool
sizing, run by tests/oracle/sglang_oracle.py; generated with ``oracle_grid.py --write-reference`` in that release's
lab venv, checked against it by ``make parser SGLANG_PIN=<release>``). Every release with a reference is planned with
its own release-table entry; the pin must have one. The expected values here are SGLang's, never the planner's."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import importlib.util
import json
import os
import re

import pytest

from collection_paths import PIN, ROOT


def _grid():
    spec = importlib.util.spec_from_file_location('oracle_grid', os.path.join(ROOT, 'benchmarks', 'oracle_grid.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GRID = _grid()


def _references():
    out = {}
    for path in sorted(glob.glob(os.path.join(ROOT, 'tests', 'fixtures', 'oracle', 'reference-*.json'))):
        with open(path) as handle:
            out[re.search(r'reference-(.+)\.json$', path).group(1)] = json.load(handle)
    return out


REFS = _references()
ENTRIES = [(version, entry) for version, ref in sorted(REFS.items()) for entry in ref['cases']]


@pytest.fixture(scope='module')
def grid_cases(tmp_path_factory):
    out = {}
    for version in REFS:
        rel = GRID.release(version)
        out[version] = rel, dict((c['id'], c) for c in GRID.cases(rel, str(tmp_path_factory.mktemp('oracle'))))
    return out


def test_the_pin_has_a_reference():
    assert PIN in REFS, 'no tests/fixtures/oracle/reference-%s.json for the pin: generate it with ' \
        'benchmarks/oracle_grid.py --write-reference in the pin\'s lab venv' % PIN


@pytest.mark.parametrize('version', sorted(REFS))
def test_reference_is_its_release_and_the_whole_subset(version):
    ref = REFS[version]
    assert ref['sglang_version'] == version, 'reference-%s.json was generated with sglang %s: regenerate it ' \
        '(benchmarks/oracle_grid.py --write-reference in that release\'s lab venv)' % (version, ref['sglang_version'])
    assert [c['id'] for c in ref['cases']] == list(GRID.SUBSET)
    # The subset exercises both outcomes and every pool SGLang sizes differently.
    configurators = set((c['oracle'].get('cells') or {}).get('configurator') for c in ref['cases'])
    assert {'DefaultPoolConfigurator', 'HybridSWAPoolConfigurator'} <= configurators
    assert any(c['oracle'].get('refused') for c in ref['cases'])
    assert any((c['oracle'].get('state') or {}).get('mamba_bytes_per_slot') for c in ref['cases'])


@pytest.mark.parametrize('version,entry', ENTRIES, ids=['%s-%s' % (v, c['id']) for v, c in ENTRIES])
def test_planner_equals_sglang(version, entry, grid_cases):
    """Every field SGLang produced for the case, with the same free memory before and after loading (the weights are
    measured on a GPU, not computed by SGLang); KV tokens within one page; a refusal must be a refusal."""
    rel, by_id = grid_cases[version]
    case = by_id[entry['id']]
    shared = (entry['oracle']['case'].get('free_before_load_gib'), entry['oracle']['case'].get('free_after_load_gib'))
    plan, refusal, _pre, _after = GRID.run_planner(rel, case, shared)
    result = GRID.compare(plan, refusal, entry['oracle'])
    if result['kind'] == 'config needs remote code':
        # That release's own ModelConfig cannot read the config without the checkpoint's code (0.5.18 has no config
        # class for mimo_v2_flash): SGLang gave no verdict to compare with.
        pytest.skip('sglang %s needs --trust-remote-code for %s' % (version, entry['id']))
    assert result['kind'] in ('exact', 'both refuse'), '\n'.join(
        '%s: planner %r, SGLang %r' % diff for diff in result['diffs'])
