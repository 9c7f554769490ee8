# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""make compare's calibration: a point never calibrates its own prediction; the fit finds factors it is given."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from ansible_collections.llmops.inference.plugins.module_utils.compare import calibrate as cal
from ansible_collections.llmops.inference.plugins.module_utils.compare import perf
from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan

from collection_paths import ROOT, release


def profile(kind, name):
    with open(os.path.join(ROOT, 'profiles', kind, name + '.yml')) as handle:
        return yaml.safe_load(handle)


M122 = profile('models', 'qwen3.5-122b-a10b')


def point(pid, concurrency, gpu='rtx-pro-6000-blackwell-server', group=('12.0', 'hybrid_gdn'), measured=None):
    rel = release()
    hw_profile = profile('hardware', gpu)
    facts = vram_plan.model_facts_once(M122['config'], rel)
    result = vram_plan.plan(model_config=M122['config'], gpu_profile=hw_profile, tp_size=4, release=rel,
                            speculative_num_draft_tokens=0)
    return dict(id=pid, group=group, gpus=4, concurrency=concurrency, isl=1024, osl=1024, measured=measured or {},
                cost=perf.costs(facts, result), hw=perf.hardware(hw_profile), cap=result['max_running_requests'],
                calibrates=True)


def synthetic(fit, levels=(1, 8, 32)):
    """Points whose 'measured' figures are the model's own prediction at known factors."""
    out = []
    for level in levels:
        p = point('syn@c%d' % level, level)
        pred = cal.predict(p, fit)
        p['measured'] = dict(output_tok_s=pred['output_tok_s'], tpot_ms=pred['tpot_ms'], ttft_ms=pred['ttft_ms'])
        out.append(p)
    return out


def test_the_fit_recovers_factors_it_was_given():
    truth = dict(kd=1.7, t_fwd=cal.T_FWD_GRID[8], ttft_s=0.08)
    fit = cal.factors(('12.0', 'hybrid_gdn'), synthetic(truth))
    assert fit['basis'] == 'calibrated' and fit['basis_ttft'] == 'calibrated'
    assert fit['kd'] == pytest.approx(1.7, rel=1e-3)
    assert fit['t_fwd'] == cal.T_FWD_GRID[8]
    assert fit['ttft_s'] == pytest.approx(0.08, abs=1e-3)


def test_leave_one_out_never_trains_on_the_point_it_predicts(monkeypatch):
    points = synthetic(dict(kd=1.3, t_fwd=cal.T_FWD_GRID[5], ttft_s=0.05))
    # One point measured 3x slower than the model: it would pull a fit that saw it.
    points[1]['measured'] = dict((k, v * (3.0 if k != 'output_tok_s' else 1 / 3.0)) for k, v in points[1]['measured'].items())
    seen = []
    real = cal.factors

    def spy(group, train):
        seen.append([p['id'] for p in train])
        return real(group, train)
    monkeypatch.setattr(cal, 'factors', spy)
    rows = cal.leave_one_out(points)
    assert seen == [[p['id'] for p in points if p is not q] for q in points]
    # The clean points are predicted from a fit that includes the outlier, the outlier from the clean ones only:
    # its error is the full factor 3, not the shrunk error of a fit that saw it.
    outlier = [r for r in rows if r['id'] == points[1]['id'] and r['metric'] == 'tpot_ms'][0]
    assert outlier['error_pct'] == pytest.approx(-100.0 * 2 / 3, abs=1.0)


def test_groups_without_points_borrow_all_points_then_fall_back_to_the_roofline():
    points = synthetic(dict(kd=2.0, t_fwd=0.0, ttft_s=0.0), levels=(1, 8))
    other = cal.factors(('9.0', 'hybrid_gdn'), points)
    assert other['basis'] == 'calibrated: other groups'
    none = cal.factors(('9.0', 'hybrid_gdn'), [])
    assert (none['kd'], none['t_fwd'], none['ttft_s'], none['basis']) == (1.0, 0.0, 0.0, 'roofline')
    context = [dict(p, calibrates=False) for p in points]
    assert cal.factors(('12.0', 'hybrid_gdn'), context)['basis'] == 'roofline'


def test_mape_counts_only_calibrating_rows_of_the_metrics_asked():
    rows = [dict(id='a', metric='tpot_ms', error_pct=10.0, calibrates=True),
            dict(id='b', metric='tpot_ms', error_pct=-30.0, calibrates=True),
            dict(id='c', metric='tpot_ms', error_pct=90.0, calibrates=False),
            dict(id='a', metric='ttft_ms', error_pct=50.0, calibrates=True)]
    assert cal.mape(rows, ('tpot_ms',)) == (20.0, 2)
    assert cal.mape(rows, ('ttft_ms',)) == (50.0, 1)
    assert cal.mape(rows, ('tok_s_gpu',)) == (None, 0)
