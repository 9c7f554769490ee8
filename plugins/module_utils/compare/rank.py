# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which layout serves a load: every layout's estimate at the target traffic, ranked (make compare, issue #30).

PRIVATE to the collection. Pure, stdlib only. ``evaluate`` runs queueing.open_loop for one replica at RATE / replicas
(the gateway splits the load evenly) with the decode cycle and prefill of compare/perf.py scaled by the group's
fitted factors; the batch cap of a replica is min(max_running_requests, KV tokens // (ISL + OSL)). Its capacity
figure is the SLO goodput: the largest rate whose p99 TTFT and TPOT meet the targets (bisection over the batch),
as output tok/s per GPU. Ranking: layouts that meet the targets first (those that meet them even at the pessimistic
end of their band before those that meet them only at the central estimate), then SLO goodput per GPU (higher
first), then fewer GPUs; layouts that do not fit are never ranked.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.bench.spec_verdict import verdict as spec_verdict
from ansible_collections.llmops.inference.plugins.module_utils.compare import calibrate
from ansible_collections.llmops.inference.plugins.module_utils.compare import queueing

MEETS_ORDER = {'yes': 0, 'likely': 1, 'no': 2, 'unsustainable': 3}
VERDICT_CONCURRENCY = (1, 4, 16, 64)


def functions(layout, hw, traffic, fit):
    """(cycle(b) seconds, prefill seconds, batch cap, what caps the batch) of one replica of a fitting layout; the
    fixed TTFT part (fit['ttft_s']) is added by the callers."""
    cap_info = layout['capacity']
    cycle, prefill, dummy = calibrate.step_functions(layout['cost'], hw, traffic['isl'], traffic['osl'], fit)
    by_kv = cap_info['kv_tokens'] // (traffic['isl'] + traffic['osl'])
    if by_kv < cap_info['max_running']:
        return cycle, prefill, max(by_kv, 0), 'kv_tokens'
    return cycle, prefill, cap_info['max_running'], cap_info['bound_by']


def open_loop(rate, cycle, prefill, traffic, accept, cap, fit):
    """queueing.open_loop with the fixed TTFT part of the fit added to its TTFT quantiles."""
    run = queueing.open_loop(rate, cycle, prefill, traffic['osl'], accept, cap)
    for key in ('ttft_p50', 'ttft_p99'):
        if key in run:
            run[key] += fit['ttft_s']
    return run


def slo_goodput(cycle, prefill, traffic, accept, cap, fit):
    """The largest per-replica rate (req/s) whose p99 TTFT and TPOT meet the targets, and its batch; (0, 0) if none."""
    def ok(batch):
        rate = queueing.steady_rate(batch, cycle, prefill, traffic['osl'], accept)
        run = open_loop(rate * (1 - 1e-9), cycle, prefill, traffic, accept, cap, fit)
        return run['sustainable'] and run['ttft_p99'] * 1e3 <= traffic['ttft_p99_ms'] and run['tpot_p99'] * 1e3 <= traffic['tpot_p99_ms']
    if cap < 1 or not ok(min(1e-3, cap)):
        return 0.0, 0.0
    low, high = min(1e-3, cap), float(cap)
    if ok(high):
        low = high
    for dummy in range(40):
        if high - low < 1e-3:
            break
        mid = (low + high) / 2.0
        if ok(mid):
            low = mid
        else:
            high = mid
    return queueing.steady_rate(low, cycle, prefill, traffic['osl'], accept), low


def meets(run, traffic, band):
    if not run['sustainable']:
        return 'unsustainable'
    ttft, tpot = run['ttft_p99'] * 1e3, run['tpot_p99'] * 1e3
    if ttft > traffic['ttft_p99_ms'] or tpot > traffic['tpot_p99_ms']:
        return 'no'
    worse_ttft, worse_tpot = 1 + (band.get('ttft') or 0), 1 + (band.get('decode') or 0)
    if ttft * worse_ttft <= traffic['ttft_p99_ms'] and tpot * worse_tpot <= traffic['tpot_p99_ms']:
        return 'yes'
    return 'likely'


def evaluate(layout, hw, traffic, fit, band):
    """One table row of a layout (dict); ``fit`` is calibrate.factors() of its group, ``band`` calibrate.bands()."""
    row = dict(name=layout['name'], tp=layout['tp'], replicas=layout['replicas'], gpus=layout['gpus'], spec=layout['spec'],
               kv_dtype=layout['kv_dtype'], context=layout['context'], fits=layout['fits'], why=layout['why'],
               capacity=layout['capacity'], basis=fit['basis'], basis_ttft=fit['basis_ttft'], band=band, layout=layout)
    if not layout['fits']:
        return row
    cycle, prefill, cap, bound = functions(layout, hw, traffic, fit)
    accept = layout['cost']['accept']
    run = open_loop(traffic['rate'] / layout['replicas'], cycle, prefill, traffic, accept, cap, fit)
    good_rate, good_batch = slo_goodput(cycle, prefill, traffic, accept, cap, fit)
    row.update(cap=cap, cap_bound=bound, accept=accept, run=run, meets=meets(run, traffic, band),
               slo_rate=good_rate * layout['replicas'], slo_batch=good_batch,
               tok_s_gpu=good_rate * traffic['osl'] / layout['tp'],
               tok_s_user=1.0 / run['tpot_p50'] if run['sustainable'] else None,
               prefill_ms=prefill * 1e3, cycle_ms_at_1=cycle(1) * 1e3)
    return row


def rank(rows):
    """The fitting rows in rank order (see the module docstring); rows that do not fit are left out."""
    fitting = [r for r in rows if r['fits']]
    return sorted(fitting, key=lambda r: (MEETS_ORDER[r['meets']], -r['tok_s_gpu'], r['gpus'], r['name']))


def curve(row, hw, traffic, fit, points=12):
    """(tok/s/user, tok/s/GPU) over batch sizes 1 .. cap of one replica (the Pareto chart's line)."""
    cycle, prefill, cap, dummy = functions(row['layout'], hw, traffic, fit)
    accept = row['accept']
    out = []
    if cap < 1:
        return out
    for k in range(points):
        batch = max(1.0, cap ** (k / float(points - 1)))
        rate = queueing.steady_rate(batch, cycle, prefill, traffic['osl'], accept)
        run = queueing.open_loop(rate * (1 - 1e-9), cycle, prefill, traffic['osl'], accept, cap)
        if run['sustainable']:
            out.append((1.0 / run['tpot_p50'], rate * traffic['osl'] / row['tp']))
    return out


def pareto(points):
    """Indices of the points no other point beats on both axes (higher is better on both)."""
    keep = []
    for i, (x, y) in enumerate(points):
        if not any((ox >= x and oy >= y) and (ox > x or oy > y) for ox, oy in points):
            keep.append(i)
    return keep


def spec_lines(rows, hw, traffic, fit):
    """The spec_verdict line of each spec-on layout against its spec-off twin (same TP, KV dtype, context; one
    replica), from closed-loop output tok/s at VERDICT_CONCURRENCY."""
    lines = []
    singles = dict(((r['tp'], r['kv_dtype'], r['context'], r['spec']), r) for r in rows if r['fits'] and r['replicas'] == 1)
    for key, row in sorted(singles.items(), key=lambda kv: kv[1]['name']):
        if key[3] == 'off' or (key[:3] + ('off',)) not in singles:
            continue
        base = singles[key[:3] + ('off',)]
        points = []
        for level in VERDICT_CONCURRENCY:
            points.append(dict(concurrency=level, base_tok_s=_closed(base, hw, traffic, fit, level),
                               spec_tok_s=_closed(row, hw, traffic, fit, level)))
        spec = {'mtp': 'MTP', 'eagle3': 'EAGLE-3'}[row['spec']]
        label = '%s vs no-spec (TP%d %s, estimated)' % (spec, row['tp'], row['name'].split(' ', 2)[2])
        lines.append(spec_verdict(points, label=label)['line'])
    return lines


def _closed(row, hw, traffic, fit, level):
    cycle, prefill, cap, dummy = functions(row['layout'], hw, traffic, fit)
    if cap < 1:
        return None
    return queueing.closed_loop(level, cycle, prefill, traffic['osl'], row['accept'], cap)['output_tok_s']
