# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""make compare's queueing model (plugins/module_utils/compare/queueing.py) against its own equations."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.compare import queueing as q


def cycle(batch):
    """A decode cycle that grows with the batch (fixed part + bandwidth-ish part), seconds."""
    return 0.010 + 0.0004 * batch


@pytest.mark.parametrize('rate', [0.05, 0.4, 1.0, 2.5])
@pytest.mark.parametrize('accept', [1.0, 3.1])
def test_steady_batch_satisfies_its_own_equation(rate, accept):
    prefill, osl, cap = 0.05, 512, 256
    batch = q.steady_batch(rate, cycle, prefill, osl, accept, cap)
    assert batch is not None and 0 < batch <= cap
    rho = rate * prefill
    # arrival rate = B x accept x (1 - rho) / (OSL x cycle(B)): the equation the module docstring states.
    assert batch * accept * (1 - rho) / (osl * cycle(batch)) == pytest.approx(rate, rel=1e-4)


def test_a_rate_beyond_the_cap_is_not_sustainable():
    prefill, osl, cap = 0.05, 512, 8
    top = q.steady_rate(cap, cycle, prefill, osl, 1.0)
    assert q.steady_batch(top * 1.01, cycle, prefill, osl, 1.0, cap) is None
    run = q.open_loop(top * 1.01, cycle, prefill, osl, 1.0, cap)
    assert not run['sustainable'] and run['bound'] == 'capacity'
    assert q.open_loop(top * 0.99, cycle, prefill, osl, 1.0, cap)['sustainable']


def test_prefill_saturation_is_named():
    run = q.open_loop(25.0, cycle, 0.05, 512, 1.0, 10000)
    assert run == dict(batch=None, rho=1.25, sustainable=False, bound='prefill')


@pytest.mark.parametrize('mean', [0.3, 4.0, 37.5])
@pytest.mark.parametrize('prob', [0.5, 0.99])
def test_poisson_quantile_is_the_smallest_n_reaching_prob(mean, prob):
    n = q.poisson_quantile(mean, prob)

    def cdf(k):
        return sum(math.exp(-mean) * mean ** i / math.factorial(i) for i in range(k + 1))
    assert cdf(n) >= prob
    assert n == 0 or cdf(n - 1) < prob


def test_latencies_grow_with_the_rate_and_p99_is_above_p50():
    prefill, osl, cap = 0.05, 512, 256
    low = q.open_loop(0.2, cycle, prefill, osl, 1.0, cap)
    high = q.open_loop(2.0, cycle, prefill, osl, 1.0, cap)
    for run in (low, high):
        assert run['ttft_p99'] >= run['ttft_p50'] >= prefill
        assert run['tpot_p99'] >= run['tpot_p50'] >= cycle(run['batch'])  # accept 1: one token per cycle at least
    assert high['tpot_p50'] > low['tpot_p50'] and high['ttft_p99'] > low['ttft_p99']


def test_closed_loop_runs_at_most_the_cap_and_queues_the_rest():
    run = q.closed_loop(64, cycle, 0.05, 512, 1.0, 16)
    assert run['batch'] == 16
    alone = q.closed_loop(16, cycle, 0.05, 512, 1.0, 16)
    # The 48 queued requests wait; the 16 running decode exactly as in a run of 16.
    assert run['tpot'] == alone['tpot'] and run['ttft'] > alone['ttft']
    assert run['output_tok_s'] == pytest.approx(16 * 512 / (0.05 * 16 + 512 * cycle(16)))


def test_wait_quantile_is_zero_below_the_busy_probability():
    assert q.wait_quantile(0.3, 0.1, 0.5) == 0.0
    assert q.wait_quantile(0.3, 0.1, 0.99) > 0.0
