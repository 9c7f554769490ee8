# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The plan and the command line describe the same server: for every release with planner and flag rules and a grid
of MTP, radix cache, mamba strategy, page size and overlap schedule, the planner's mamba_strategy /
disable_overlap_schedule are exactly what the renderer writes on the argv, or both refuse."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import itertools
import os

import pytest
import yaml

from ansible_collections.llmops.inference.plugins.module_utils.sglang import flags as f
from ansible_collections.llmops.inference.plugins.module_utils.sglang import release as sr
from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan as vp

from collection_paths import PIN, ROOT, release_table_data


def load(*parts):
    with open(os.path.join(ROOT, *parts)) as stream:
        return yaml.safe_load(stream)


TABLE = release_table_data()
MODEL = load('profiles', 'models', 'qwen3.5-122b-a10b.yml')
H200 = load('profiles', 'hardware', 'h200.yml')  # comfortable: memory never refuses in this grid
BOTH = [v for v in sr.known_versions(sr.load_table(TABLE)) if 'planner' in TABLE['releases'][v]]
GRID = list(itertools.product((True, False), (True, False), ('auto', 'no_buffer', 'extra_buffer', 'extra_buffer_lazy'),
                              (None, 1, 64), (False, True)))


def planned(rel, mtp, radix, strategy, page, no_overlap):
    try:
        result = vp.plan(model_config=MODEL['config'], gpu_profile=H200, tp_size=4, release=rel,
                         speculative_num_draft_tokens=4 if mtp else 0, speculative_num_steps=3 if mtp else None,
                         radix_cache=radix, mamba_strategy=strategy, page_size=page,
                         disable_overlap_schedule=no_overlap)
    except vp.PlanError as exc:
        assert exc.kind in ('sglang', 'input'), str(exc)
        return None, str(exc)
    return result, None


def rendered(rel, plan, mtp, radix, strategy, page, no_overlap):
    keys = ('mem_fraction_static', 'max_running_requests', 'context_length', 'chunked_prefill_size')
    values = dict((k, plan[k]) for k in keys) if plan else {}
    server = dict(model_path='/m', speculative_num_draft_tokens=4 if mtp else 0, radix_cache=radix,
                  mamba_strategy=strategy, page_size=page, disable_overlap_schedule=no_overlap)
    try:
        result = f.render(rel, MODEL, values, {}, server)
    except f.FlagError as exc:
        return None, str(exc)
    if result['preflight']:
        return None, '; '.join(c['message'] for c in result['preflight'])
    return result, None


def test_the_grid_covers_every_release_with_both_rule_sets():
    assert BOTH == ['0.5.10', '0.5.11', '0.5.18', '0.5.22', '0.5.23']  # not the pin: the table's releases
    assert len(GRID) == 96


@pytest.mark.parametrize('version', BOTH)
def test_plan_and_argv_agree(version):
    rel = sr.release(TABLE, version)
    flag_name = rel['flags']['mamba_flag']
    outcomes = set()
    for mtp, radix, strategy, page, no_overlap in GRID:
        case = dict(version=version, mtp=mtp, radix=radix, strategy=strategy, page=page, disable_overlap=no_overlap)
        plan, plan_refusal = planned(rel, mtp, radix, strategy, page, no_overlap)
        argv_result, argv_refusal = rendered(rel, plan, mtp, radix, strategy, page, no_overlap)
        assert (plan is None) == (argv_result is None), (case, plan_refusal, argv_refusal)
        if plan is None:
            outcomes.add('refused')
            continue
        argv = argv_result['argv']
        on_argv = argv[argv.index(flag_name) + 1] if flag_name in argv else None
        assert plan['mamba_strategy'] == on_argv == argv_result['mamba_strategy'], case
        assert plan['disable_overlap_schedule'] == ('--disable-overlap-schedule' in argv), case
        assert argv.count('--disable-overlap-schedule') <= 1, case
        if radix:
            # With the radix cache the resolved strategy is always explicit: the unit says what runs.
            assert on_argv is not None, case
        outcomes.add((on_argv, plan['disable_overlap_schedule']))
    # The grid exercises refusals and more than one resolution on every release.
    assert 'refused' in outcomes and len(outcomes) >= 4, outcomes


def sglang_expects(mtp, radix, strategy, page, no_overlap):
    """(strategy on the argv, disable_overlap_schedule) or the refusal, written by hand from the pinned release's own
    rules (paths under sglang/srt/), independent of both the planner and the renderer:
    - arg_groups/overrides.py:473-486: radix off -> no strategy; "auto" -> extra_buffer when the overlap schedule is on
      or page > 1 (Qwen3.5 supports the extra buffer), else no_buffer with the overlap schedule turned off;
    - arg_groups/mamba_hook.py:157-159: no_buffer refuses page > 1 and the overlap schedule;
    - mem_cache/kv_cache_configurator.py:3073-3076: extra_buffer_lazy refuses --disable-overlap-schedule.
    MTP does not enter these rules."""
    del mtp
    if not radix:
        return None, no_overlap
    if strategy == 'auto':
        if not no_overlap or (page or 1) > 1:
            return 'extra_buffer', no_overlap
        return 'no_buffer', True
    if strategy == 'no_buffer' and ((page or 1) > 1 or not no_overlap):
        return 'refused', None
    if strategy == 'extra_buffer_lazy' and no_overlap:
        return 'refused', None
    return strategy, no_overlap


def test_the_pinned_release_resolves_the_strategy_as_its_own_rules_say():
    rel = sr.release(TABLE, PIN)
    seen = set()
    for mtp, radix, strategy, page, no_overlap in GRID:
        case = dict(mtp=mtp, radix=radix, strategy=strategy, page=page, disable_overlap=no_overlap)
        expected = sglang_expects(mtp, radix, strategy, page, no_overlap)
        plan, refusal = planned(rel, mtp, radix, strategy, page, no_overlap)
        if expected[0] == 'refused':
            assert plan is None, (case, plan and plan['mamba_strategy'])
        else:
            assert plan is not None, (case, refusal)
            assert (plan['mamba_strategy'], plan['disable_overlap_schedule']) == expected, case
        seen.add(expected[0])
    assert seen == {None, 'extra_buffer', 'no_buffer', 'extra_buffer_lazy', 'refused'}
