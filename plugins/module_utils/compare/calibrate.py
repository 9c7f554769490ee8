# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Efficiency factors fitted to measured points, and their leave-one-out error (make compare, issue #30).

PRIVATE to the collection. Pure, stdlib only. A measured point (profiles/measurements/*.yml, or a benchmark record)
is prepared by the caller into dict(id, group, gpus, concurrency, isl, osl, measured={metric: value}, cost, hw, cap,
calibrates (bool)). Its prediction runs queueing.closed_loop at the point's concurrency with every forward priced as
kd x its compare/perf.py roofline + t_fwd per layer pass (a fixed cost: launches, synchronisation), and adds
ttft_s (the fixed part of TTFT outside the GPU: HTTP, tokenizer, scheduling) to the time to first token.

Groups are (GPU kind = compute capability, planner family): H100 and H200 share one (the same chip, each priced
with its own bandwidth). ``factors(group, train)`` fits kd and t_fwd to the group's decode metrics (least squares of
the log error; t_fwd only where the points span two or more concurrency levels), then ttft_s as the mean TTFT
residual. A group without points borrows the fit of all points ('calibrated: other groups'); with no point at all
the factors are the roofline's (kd 1, no overheads). ``leave_one_out`` predicts every point from factors fitted
without it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

from ansible_collections.llmops.inference.plugins.module_utils.compare import perf
from ansible_collections.llmops.inference.plugins.module_utils.compare import queueing

DECODE_METRICS = ('tpot_ms', 'tok_s_user', 'output_tok_s', 'tok_s_gpu')
TTFT_METRICS = ('ttft_ms',)
METRICS = DECODE_METRICS + TTFT_METRICS
# TPOT-derived metrics (tok/s/user is 1000 / TPOT) for the accuracy goal; throughputs are reported beside them.
TPOT_CLASS = ('tpot_ms', 'tok_s_user')
# A forward cannot beat its roofline: kd >= 1.
K_RANGE = (1.0, 200.0)
# Per-layer-pass overheads tried (seconds): 0 and 2 us x 1.4^k up to about 0.3 ms.
T_FWD_GRID = (0.0,) + tuple(2e-6 * 1.4 ** k for k in range(16))


def context_of(point):
    """Mean KV length a decoding request reads: the prompt and half the output."""
    return point['isl'] + point['osl'] / 2.0


def step_functions(cost, hw, isl, osl, fit):
    """(cycle(b) seconds, prefill seconds on the GPU, fixed TTFT seconds) at the factors of ``fit``: a step takes
    kd x its roofline + t_fwd per layer pass (perf.layer_passes: a decode cycle's target and draft layers)."""
    ctx = isl + osl / 2.0
    passes = perf.layer_passes(cost)

    def cycle(batch):
        return fit['kd'] * perf.decode_cycle(cost, hw, batch, ctx) + passes * fit['t_fwd']
    prefill = fit['kd'] * perf.prefill_time(cost, hw, isl) + cost['facts']['layers'] * fit['t_fwd']
    return cycle, prefill, fit['ttft_s']


def predict(point, fit=None):
    """Every metric of a point at the factors ``fit`` (None: the roofline): dict(tpot_ms, tok_s_user, output_tok_s,
    tok_s_gpu, ttft_ms, batch)."""
    fit = fit or ROOFLINE
    cycle, prefill, fixed = step_functions(point['cost'], point['hw'], point['isl'], point['osl'], fit)
    run = queueing.closed_loop(point['concurrency'], cycle, prefill, point['osl'], point['cost']['accept'], point['cap'])
    return dict(tpot_ms=run['tpot'] * 1e3, tok_s_user=1.0 / run['tpot'], output_tok_s=run['output_tok_s'],
                tok_s_gpu=run['output_tok_s'] / point['gpus'], ttft_ms=(run['ttft'] + fixed) * 1e3, batch=run['batch'])


ROOFLINE = dict(kd=1.0, t_fwd=0.0, ttft_s=0.0)


def _log_error(points, kd, t_fwd):
    total = 0.0
    fit = dict(kd=kd, t_fwd=t_fwd, ttft_s=0.0)
    for point in points:
        pred = predict(point, fit)
        for metric in DECODE_METRICS:
            if point['measured'].get(metric):
                total += math.log(pred[metric] / point['measured'][metric]) ** 2
    return total


def fit_kd(points, t_fwd):
    """Golden-section search of log kd over K_RANGE at a fixed per-forward overhead: (kd, error)."""
    low, high = math.log(K_RANGE[0]), math.log(K_RANGE[1])
    ratio = (math.sqrt(5) - 1) / 2
    for dummy in range(40):
        a = high - ratio * (high - low)
        b = low + ratio * (high - low)
        if _log_error(points, math.exp(a), t_fwd) < _log_error(points, math.exp(b), t_fwd):
            high = b
        else:
            low = a
    kd = math.exp((low + high) / 2)
    return kd, _log_error(points, kd, t_fwd)


def fit_decode(points):
    """(kd, t_fwd): both where the points span two or more concurrency levels (t_fwd over T_FWD_GRID, kd by golden
    section for each), else kd alone with t_fwd 0 (one level cannot tell the two apart)."""
    levels = set(p['concurrency'] for p in points)
    grid = T_FWD_GRID if len(levels) > 1 else (0.0,)
    best = None
    for t_fwd in grid:
        kd, error = fit_kd(points, t_fwd)
        if best is None or error < best[2] - 1e-12:
            best = (kd, t_fwd, error)
    return best[0], best[1]


def fit_ttft(points, fit):
    """The fixed TTFT seconds (HTTP, tokenizer, scheduling: outside the GPU forward): the mean of measured - predicted
    over points whose requests all run at once, at least 0; (seconds, count) or (None, 0)."""
    residuals = []
    for point in points:
        ttft = point['measured'].get('ttft_ms')
        if ttft and point['concurrency'] <= point['cap']:
            residuals.append(ttft / 1e3 - predict(point, dict(fit, ttft_s=0.0))['ttft_ms'] / 1e3)
    return (max(0.0, sum(residuals) / len(residuals)), len(residuals)) if residuals else (None, 0)


def _has(points, metrics):
    return [p for p in points if any(p['measured'].get(m) for m in metrics)]


def factors(group, train):
    """dict(kd, t_fwd, ttft_s, basis, basis_ttft, n_decode, n_ttft) for a group from the training points: its own
    points, else every training point ('calibrated: other groups'), else the roofline."""
    train = [p for p in train if p.get('calibrates', True)]
    own = [p for p in train if p['group'] == group]
    decode = _has(own, DECODE_METRICS)
    basis = 'calibrated'
    if not decode:
        decode = _has(train, DECODE_METRICS)
        basis = 'calibrated: other groups' if decode else 'roofline'
    kd, t_fwd = fit_decode(decode) if decode else (1.0, 0.0)
    fit = dict(kd=kd, t_fwd=t_fwd, ttft_s=0.0)
    ttft_s, n_ttft = fit_ttft(own, fit)
    basis_ttft = 'calibrated'
    if ttft_s is None:
        ttft_s, n_ttft = fit_ttft(train, fit)
        basis_ttft = 'calibrated: other groups' if ttft_s is not None else 'roofline'
    return dict(kd=kd, t_fwd=t_fwd, ttft_s=ttft_s or 0.0, basis=basis, basis_ttft=basis_ttft, n_decode=len(decode),
                n_ttft=n_ttft)


def leave_one_out(points):
    """One row per (point, measured metric): dict(id, metric, measured, predicted, error_pct, basis, calibrates);
    a calibrating point's prediction uses factors fitted without it, a context point's all calibrating points."""
    rows = []
    for point in points:
        train = [p for p in points if p is not point]
        fit = factors(point['group'], train)
        pred = predict(point, fit)
        for metric in METRICS:
            value = point['measured'].get(metric)
            if not value:
                continue
            basis = fit['basis_ttft'] if metric in TTFT_METRICS else fit['basis']
            rows.append(dict(id=point['id'], metric=metric, measured=value, predicted=pred[metric],
                             error_pct=100.0 * (pred[metric] - value) / value, basis=basis,
                             calibrates=point.get('calibrates', True), fit=fit))
    return rows


def mape(rows, metrics, group=None, points=None):
    """Mean absolute percentage error of the calibrating rows of ``metrics`` (of ``group`` when given), or None."""
    ids = None
    if group is not None:
        ids = set(p['id'] for p in points or () if p['group'] == group)
    errors = [abs(r['error_pct']) for r in rows if r['metric'] in metrics and r['calibrates']
              and (ids is None or r['id'] in ids)]
    return (sum(errors) / len(errors), len(errors)) if errors else (None, 0)


def bands(rows, group, points):
    """The relative uncertainty (fraction) of decode and TTFT estimates for a group: its own leave-one-out MAPE,
    else that of every calibrating point, else None (roofline: no band, a ceiling)."""
    out = {}
    for key, metrics in (('decode', DECODE_METRICS), ('ttft', TTFT_METRICS)):
        value, count = mape(rows, metrics, group, points)
        if value is None:
            value, count = mape(rows, metrics)
        out[key] = None if value is None else value / 100.0
        out[key + '_n'] = count
    return out
