# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Continuous batching as a queue (make compare, issue #30; docs/compare.md states the model).

PRIVATE to the collection. Pure, stdlib only. ``cycle(b)`` is the seconds of one decode cycle at batch b (each
request gets ``accept`` tokens per cycle), ``prefill`` the seconds of one prompt's prefill, which stops decoding
while it runs.

Open loop (Poisson arrivals at ``rate`` per replica): prefill takes the share rho = rate x prefill of the time; in
steady state the decode batch B serves the arrivals, rate = B x accept x (1 - rho) / (OSL x cycle(B)), so
rate(B) = B x accept / (OSL x cycle(B) + B x accept x prefill) (steady_rate), and the batch of a target rate is the B
where steady_rate(B) = rate (steady_batch, bisection; B is a mean, not a whole number).

- TPOT of one request = (OSL / accept x cycle(B) + N x prefill) / OSL, N the prefills of other requests during its
  decode time D = OSL / accept x cycle(B) / (1 - rho): Poisson with mean rate x D; p50/p99 are its quantiles.
- TTFT = prefill + queue wait + the rest of the running decode cycle. The prefill queue is M/D/1 with service time
  prefill: P(wait > 0) = rho, mean wait rho x prefill / (2 (1 - rho)), the wait beyond 0 taken as exponential with
  mean wait / rho; the rest of the cycle is uniform on [0, cycle(B)].

Closed loop (a benchmark at fixed concurrency C, every finished request replaced at once): b = min(C, cap) run, the
rest queue; a request's life is its prefill, OSL / accept cycles at batch b and the b - 1 prefills of the others.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math


def steady_rate(batch, cycle, prefill, osl, accept):
    """Requests per second one replica serves in steady state at mean decode batch ``batch``."""
    return batch * accept / (osl * cycle(batch) + batch * accept * prefill)


def steady_batch(rate, cycle, prefill, osl, accept, cap, tol=1e-6):
    """The mean decode batch B in (0, cap] where steady_rate(B) == rate, or None when even B = cap serves less than
    ``rate`` (the rate is not sustainable within the cap)."""
    if rate <= 0:
        return 0.0
    if steady_rate(cap, cycle, prefill, osl, accept) < rate:
        return None
    low, high = 0.0, float(cap)
    while high - low > tol * max(1.0, high):
        mid = (low + high) / 2.0
        if steady_rate(mid, cycle, prefill, osl, accept) < rate:
            low = mid
        else:
            high = mid
    return high


def poisson_quantile(mean, prob):
    """Smallest n with P(N <= n) >= prob for N ~ Poisson(mean)."""
    if mean <= 0:
        return 0
    term = math.exp(-mean) if mean < 700 else 0.0
    if term == 0.0:
        # Normal approximation where exp(-mean) underflows.
        return int(math.ceil(mean + _normal_quantile(prob) * math.sqrt(mean)))
    total, n = term, 0
    while total < prob:
        n += 1
        term *= mean / n
        total += term
    return n


def _normal_quantile(prob):
    # Bisection on erf: enough for the 0.5 / 0.99 quantiles used here.
    low, high = -10.0, 10.0
    for dummy in range(80):
        mid = (low + high) / 2.0
        if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < prob:
            low = mid
        else:
            high = mid
    return high


def wait_quantile(rho, service, prob):
    """M/D/1 wait quantile (seconds) as the module docstring states it."""
    if rho <= 0 or prob <= 1 - rho:
        return 0.0
    mean = rho * service / (2.0 * (1 - rho))
    return mean / rho * math.log(rho / (1 - prob))


def open_loop(rate, cycle, prefill, osl, accept, cap):
    """Latencies of one replica at ``rate`` requests/s: dict(batch, rho, ttft_p50/p99, tpot_p50/p99 (seconds),
    sustainable, bound) - bound says why not sustainable ('prefill' or 'capacity')."""
    rho = rate * prefill
    if rho >= 1:
        return dict(batch=None, rho=rho, sustainable=False, bound='prefill')
    batch = steady_batch(rate, cycle, prefill, osl, accept, cap)
    if batch is None:
        return dict(batch=None, rho=rho, sustainable=False, bound='capacity')
    step = cycle(batch)
    decode = osl / accept * step
    lifetime = decode / (1 - rho)
    out = dict(batch=batch, rho=rho, sustainable=True, bound=None, cycle=step)
    for name, prob in (('p50', 0.5), ('p99', 0.99)):
        others = poisson_quantile(rate * lifetime, prob)
        out['tpot_' + name] = (decode + others * prefill) / osl
        out['ttft_' + name] = prefill + wait_quantile(rho, prefill, prob) + prob * step
    return out


def closed_loop(concurrency, cycle, prefill, osl, accept, cap):
    """A fixed-concurrency benchmark: dict(batch, ttft, tpot (seconds), rps, output_tok_s)."""
    batch = max(1, min(int(concurrency), int(cap)))
    decode = osl / accept * cycle(batch)
    life = prefill + decode + (batch - 1) * prefill
    rps = batch / life
    queued = max(0, int(concurrency) - batch)
    return dict(batch=batch, ttft=prefill + queued / rps, tpot=(decode + (batch - 1) * prefill) / osl, rps=rps,
                output_tok_s=rps * osl)
