# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Prefill/decode (PD) disaggregated layouts of one host for make compare (issue #30 point 4). On paper only.

PRIVATE to the collection. Pure, stdlib only. A PD layout is P prefill workers of TP_p GPUs and D decode workers of
TP_d GPUs (P x TP_p + D x TP_d <= GPUs), one speculative setting (compare/layouts.py spec_options; the same on both
sides, as pd_check requires), one KV dtype and the traffic's context on both sides. Each side is planned on its own
by vram_plan.plan() (layouts.plan_one) and must fit; the layout is then checked by sglang/pd_check.check() with
the transfer backend the host allows (no /dev/infiniband known: mooncake_tcp).

Estimate, with compare/calibrate.py's factors: TTFT = M/D/1 wait on one prefill worker at RATE / P + its prefill +
the KV transfer of ISL tokens (the plan's KV bytes per token of all TP_p ranks x ISL, plus the linear-attention
state) over the backend's link + the first decode step + the fixed TTFT part; TPOT is queueing.open_loop of one decode
worker at RATE / D with no prefill interruptions (prefill time 0); tok/s/GPU counts all P x TP_p + D x TP_d GPUs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan
from ansible_collections.llmops.inference.plugins.module_utils.compare import calibrate
from ansible_collections.llmops.inference.plugins.module_utils.compare import layouts as layouts_lib
from ansible_collections.llmops.inference.plugins.module_utils.compare import queueing
from ansible_collections.llmops.inference.plugins.module_utils.compare import rank as rank_lib
from ansible_collections.llmops.inference.plugins.module_utils.sglang import pd_check

# ASSUMPTION, not measured and not in any hardware profile: what Mooncake's TCP transport moves between two workers
# of one host, GB/s (the order of a 25 GbE NIC or a loopback TCP stream through host memory).
TCP_LINK_GBS = 3.0
HTTP_PORT_PREFILL, HTTP_PORT_DECODE, BOOTSTRAP_PORT = 30000, 31000, 8998
ON_PAPER = 'on paper: not deployable by the collection yet'


def transfer_backend(devices):
    """(backend, why) for the host's devices dict(infiniband, memlock_unlimited); None: nothing known."""
    devices = devices or {}
    if devices.get('infiniband') and devices.get('memlock_unlimited'):
        return 'mooncake', '/dev/infiniband and LimitMEMLOCK=infinity known: Mooncake over RDMA'
    return 'mooncake_tcp', 'no /dev/infiniband known for the host: mooncake_tcp (Mooncake over TCP, no RDMA)'


def link_bytes_s(backend, gpu):
    """Bytes/s of the KV transfer: the PCIe bandwidth of the GPU (RDMA, same host), else TCP_LINK_GBS (capped by
    PCIe)."""
    pcie = float(gpu.get('pcie_bandwidth_gbs') or TCP_LINK_GBS)
    if backend in pd_check.FACTS['tcp_backends']:
        return min(TCP_LINK_GBS, pcie) * 1e9
    return pcie * 1e9


SPEC_ALGORITHM = {'off': None, 'mtp': 'NEXTN', 'eagle3': 'EAGLE3'}


def check_layout(facts, backend, devices, kv_dtype, prefill, decode, spec='off'):
    """The pd_check layout dict of P x TP_p prefill and D x TP_d decode workers on one host (localhost)."""
    return dict(arch=facts.get('arch') if facts else None, mla=bool(facts and facts.get('attention') == 'mla'),
                sliding_window=bool(facts and facts.get('n_swa')), transfer_backend=backend, devices=devices or {},
                prefill=[dict(host='localhost', http_port=HTTP_PORT_PREFILL + i, bootstrap_port=BOOTSTRAP_PORT + i,
                              tp=prefill[1], kv_cache_dtype=kv_dtype, speculative=SPEC_ALGORITHM[spec]) for i in range(prefill[0])],
                decode=[dict(host='localhost', http_port=HTTP_PORT_DECODE + j, tp=decode[1], kv_cache_dtype=kv_dtype,
                             speculative=SPEC_ALGORITHM[spec])
                        for j in range(decode[0])])


def shapes(gpus):
    """Every ((P, TP_p), (D, TP_d)) with P x TP_p + D x TP_d <= gpus."""
    out = []
    sizes = vram_plan.tp_sizes(gpus)
    for tp_p in sizes:
        for tp_d in sizes:
            for count_p in range(1, gpus // tp_p + 1):
                for count_d in range(1, (gpus - count_p * tp_p) // tp_d + 1):
                    out.append(((count_p, tp_p), (count_d, tp_d)))
    return out


def name(row):
    return 'PD %dxP-TP%d + %dxD-TP%d %s kv=%s' % (
        row['prefill'][0], row['prefill'][1], row['decode'][0], row['decode'][1],
        {'off': 'no-spec', 'mtp': 'MTP', 'eagle3': 'EAGLE-3'}[row['spec']], 'fp8' if row['kv_dtype'] == 'fp8_e4m3' else 'auto')


def enumerate_pd(model, gpu, release, gpus, isl, osl, devices=None):
    """Every PD layout: dict(name, prefill (P, TP_p), decode (D, TP_d), gpus, spec, kv_dtype, context, backend, fits,
    why, refusals, side (dict(prefill=..., decode=...) each dict(result, capacity, cost, why)), check_layout,
    smallest_tp (the smallest TP one worker of its spec and KV dtype fits at; None: none up to the GPUs))."""
    facts = vram_plan.model_facts_once(model.get('config'), release)
    backend, backend_why = transfer_backend(devices)
    context = layouts_lib.contexts(facts, isl, osl)[-1]
    plans = {}

    def side(tp, spec, kv_dtype):
        key = (tp, spec[0], kv_dtype)
        if key not in plans:
            result, why = layouts_lib.plan_one(model, gpu, release, facts, tp, spec[1], kv_dtype, context, gpus)
            info = dict(result=result, why=why, capacity=None, cost=None)
            if result is not None:
                info['capacity'] = layouts_lib.capacity(result)
                if not result['fits']:
                    info['why'] = '%s (headroom %.1f GiB)' % (result['verdict'], result['headroom_gib'])
                else:
                    info['cost'] = layouts_lib.cost(facts, result, spec[2])
                    if info['cost'] is None:
                        info['why'] = 'the step model cannot price this plan'
            plans[key] = info
        return plans[key]
    out = []
    combos = [(spec, kv_dtype) for spec in layouts_lib.spec_options(model, facts) for kv_dtype in layouts_lib.KV_DTYPES]
    # The smallest TP one worker fits at, of any shape (also those the GPUs cannot hold twice): the report's reason.
    smallest = {}
    for spec, kv_dtype in combos:
        fitting = [tp for tp in vram_plan.tp_sizes(gpus) if side(tp, spec, kv_dtype)['cost'] is not None]
        smallest[spec[0] + '/' + kv_dtype] = min(fitting) if fitting else None
    for (spec, kv_dtype), (prefill, decode) in [(c, s) for c in combos for s in shapes(gpus)]:
        sides = dict(prefill=side(prefill[1], spec, kv_dtype), decode=side(decode[1], spec, kv_dtype))
        layout = check_layout(facts, backend, devices, kv_dtype, prefill, decode, spec[0])
        row = dict(prefill=prefill, decode=decode, gpus=prefill[0] * prefill[1] + decode[0] * decode[1],
                   spec=spec[0], kv_dtype=kv_dtype, context=(sides['decode']['result'] or {}).get('context_length', context),
                   backend=backend, backend_why=backend_why, side=sides, check_layout=layout, refusals=[], why=None,
                   smallest_tp=smallest[spec[0] + '/' + kv_dtype])
        row['name'] = name(row)
        bad = ['%s TP%d: %s' % (key, shape[1], sides[key]['why']) for key, shape in (('prefill', prefill), ('decode', decode))
               if sides[key]['cost'] is None]
        # Checked whether or not the sides fit: a refusal is SGLang's (or the collection's) and holds on any GPU.
        row['refusals'] = pd_check.check(layout, release)
        bad += ['[%s] %s' % (r['rule'], r['message']) for r in row['refusals']]
        row['why'] = '; '.join(bad) or None
        row['fits'] = not bad
        out.append(row)
    return out


def transfer_bytes(cost, isl):
    """Bytes one request's KV moves from the prefill to the decode workers: ISL x the KV bytes per token of all ranks,
    plus the linear-attention state of all ranks (cost['state'] counts it read + written, so half)."""
    return float(isl) * cost['cell'] * cost['tp'] + cost['state'] / 2.0 * cost['tp']


def transfer_time(cost, isl, backend, gpu):
    return transfer_bytes(cost, isl) / link_bytes_s(backend, gpu)


def _cap(info, traffic):
    cap = info['capacity']
    return max(min(cap['max_running'], cap['kv_tokens'] // (traffic['isl'] + traffic['osl'])), 0)


def functions(row, hw, traffic, fit, gpu):
    """(prefill seconds, transfer seconds, decode cycle(b), decode batch cap, accept length) of one PD layout."""
    cost_p, cost_d = row['side']['prefill']['cost'], row['side']['decode']['cost']
    dummy, prefill, dummy2 = calibrate.step_functions(cost_p, hw, traffic['isl'], traffic['osl'], fit)
    cycle, dummy, dummy2 = calibrate.step_functions(cost_d, hw, traffic['isl'], traffic['osl'], fit)
    return prefill, transfer_time(cost_p, traffic['isl'], row['backend'], gpu), cycle, _cap(row['side']['decode'], traffic), \
        cost_d['accept']


def run_at(rate, row, funcs, traffic, fit):
    """Latencies of the PD layout at ``rate`` req/s (queueing.open_loop's keys)."""
    prefill, transfer, cycle, cap, accept = funcs
    rho = rate / row['prefill'][0] * prefill
    if rho >= 1:
        return dict(batch=None, rho=rho, sustainable=False, bound='prefill')
    run = queueing.open_loop(rate / row['decode'][0], cycle, 0.0, traffic['osl'], accept, cap) if cap >= 1 else \
        dict(batch=None, sustainable=False, bound='capacity')
    if not run['sustainable']:
        return dict(run, rho=rho)
    run['rho'] = rho
    for key, prob in (('p50', 0.5), ('p99', 0.99)):
        run['ttft_' + key] += prefill + queueing.wait_quantile(rho, prefill, prob) + transfer + fit['ttft_s']
    return run


def _ok(run, traffic):
    return run['sustainable'] and run['ttft_p99'] * 1e3 <= traffic['ttft_p99_ms'] and run['tpot_p99'] * 1e3 <= traffic['tpot_p99_ms']


def slo_rate(row, funcs, traffic, fit):
    """The largest total rate (req/s) whose p99 TTFT and TPOT meet the targets (bisection); 0 if none."""
    prefill, dummy, cycle, cap, accept = funcs
    if cap < 1:
        return 0.0
    high = min(row['prefill'][0] / prefill, row['decode'][0] * queueing.steady_rate(cap, cycle, 0.0, traffic['osl'], accept))
    low = 0.0
    if not _ok(run_at(high * 1e-6, row, funcs, traffic, fit), traffic):
        return 0.0
    for dummy in range(50):
        mid = (low + high) / 2.0
        if _ok(run_at(mid, row, funcs, traffic, fit), traffic):
            low = mid
        else:
            high = mid
        if high - low < 1e-4 * high:
            break
    return low


def evaluate(row, hw, traffic, fit, band, gpu):
    """One table row of a PD layout (the keys report.table reads, plus pd=True)."""
    out = dict(row, pd=True, basis=fit['basis'], basis_ttft=fit['basis_ttft'], band=band,
               capacity=(row['side']['decode']['capacity'] or {}), tp=row['decode'][1], replicas=row['decode'][0])
    if not row['fits']:
        return out
    funcs = functions(row, hw, traffic, fit, gpu)
    run = run_at(traffic['rate'], row, funcs, traffic, fit)
    good = slo_rate(row, funcs, traffic, fit)
    out.update(run=run, meets=rank_lib.meets(run, traffic, band), cap=funcs[3], cap_bound='decode', accept=funcs[4],
               slo_rate=good, tok_s_gpu=good * traffic['osl'] / row['gpus'],
               tok_s_user=1.0 / run['tpot_p50'] if run['sustainable'] else None, prefill_ms=funcs[0] * 1e3,
               transfer_ms=funcs[1] * 1e3, cycle_ms_at_1=funcs[2](1) * 1e3)
    return out


def curve(row, traffic, fit, gpu, hw, points=12):
    """(tok/s/user, tok/s/GPU) over decode batches 1 .. cap (the Pareto chart's PD line)."""
    funcs = functions(row, hw, traffic, fit, gpu)
    prefill, dummy, cycle, cap, accept = funcs
    out = []
    for k in range(points if cap >= 1 else 0):
        batch = max(1.0, cap ** (k / float(points - 1)))
        rate = row['decode'][0] * queueing.steady_rate(batch, cycle, 0.0, traffic['osl'], accept) * (1 - 1e-9)
        if rate / row['prefill'][0] * prefill >= 1:
            break
        run = run_at(rate, row, funcs, traffic, fit)
        if run['sustainable']:
            out.append((1.0 / run['tpot_p50'], rate * traffic['osl'] / row['gpus']))
    return out


def rank(rows):
    """The PD rows pd_check accepts and that fit, in rank.rank's order; refused or unfit rows are left out."""
    fitting = [r for r in rows if r['fits'] and not r['refusals']]
    return sorted(fitting, key=lambda r: (rank_lib.MEETS_ORDER[r['meets']], -r['tok_s_gpu'], r['gpus'], r['name']))


def flags(row, release=None):
    """dict(prefill, decode, gateway) argv lists of the first worker of each side and the gateway."""
    layout = row['check_layout']
    return dict(prefill=pd_check.extra_args(layout, 'prefill', 0, release),
                decode=pd_check.extra_args(layout, 'decode', 0, release),
                gateway=pd_check.gateway_args(layout, release))
