# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The gateway's /workers answers and the workers' load answers, as smg 1.13.0 and the pinned SGLang write them."""

from __future__ import annotations

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.sglang import gateway_workers as gw

# A GET /workers answer of smg 1.13.0 (captured on the development machine, trimmed to the fields read).
LISTING = {'workers': [
    {'id': '01a234f7-ba37-733c-af78-7ad3114a9136', 'url': 'http://127.0.0.1:18001', 'status': 'not_ready',
     'is_healthy': False, 'load': 0, 'model_id': 'm'},
    {'id': '01a234f6-cfdf-71e8-bd73-f76826fd1ef7', 'url': 'http://127.0.0.1:18002', 'status': 'ready',
     'is_healthy': True, 'load': 3, 'model_id': 'm'},
    {'id': '01a234f6-cfdf-71e8-bd73-f76826fd1ef8', 'url': 'http://127.0.0.1:18003', 'status': 'draining',
     'is_healthy': True, 'load': 1, 'model_id': 'm'}], 'total': 3}


def test_find_and_serving():
    assert gw.find_worker(LISTING, 'HTTP://127.0.0.1:18002/')['id'].endswith('ef7')
    assert gw.find_worker(LISTING, 'http://127.0.0.1:18009') is None
    # not_ready and draining workers do not serve; the worker itself is not counted.
    assert gw.serving_others(LISTING, 'http://127.0.0.1:18001') == ['http://127.0.0.1:18002']
    assert gw.serving_others(LISTING, 'http://127.0.0.1:18002') == []
    with pytest.raises(ValueError):
        gw.find_worker({'error': 'Missing API key'}, 'http://x')


def test_inflight_from_sglang_loads():
    answer = {'loads': [{'dp_rank': 0, 'num_running_reqs': 2, 'num_waiting_reqs': 1},
                        {'dp_rank': 1, 'num_running_reqs': 0, 'num_waiting_reqs': 4}]}
    assert gw.inflight_from_loads(answer, ['num_running_reqs', 'num_waiting_reqs']) == 7
    with pytest.raises(ValueError, match='num_waiting_reqs'):
        gw.inflight_from_loads({'loads': [{'num_running_reqs': 0}]}, ['num_running_reqs', 'num_waiting_reqs'])
    with pytest.raises(ValueError):
        gw.inflight_from_loads({'detail': 'Not Found'}, ['num_running_reqs'])


def test_inflight_from_metrics():
    text = ('# HELP llamacpp:requests_processing Number of requests processing.\n'
            '# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 2\n'
            'llamacpp:requests_deferred 1\nsglang:num_running_reqs{model_name="m",dp_rank="0"} 3.0\n'
            'sglang:num_running_reqs{model_name="m",dp_rank="1"} 1.0\n')
    assert gw.inflight_from_metrics(text, ['llamacpp:requests_processing', 'llamacpp:requests_deferred']) == 3
    assert gw.inflight_from_metrics(text, ['sglang:num_running_reqs']) == 4
    with pytest.raises(ValueError, match='has no sglang:num_queue_reqs'):
        gw.inflight_from_metrics(text, ['sglang:num_queue_reqs'])
