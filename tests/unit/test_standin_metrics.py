# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab stand-in's /metrics (tests/sglang/standin_server.py) over HTTP: mounted only with --enable-metrics, no API
key needed (srt/utils/auth.py), the release table's families with the simulated state. Its format against SGLang's own
collectors is checked by make parser (tests/sglang/test_parser.py)."""

from __future__ import absolute_import, division, print_function

import json
import os
import re
import socket
import subprocess
import sys
import time
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import pytest

from collection_paths import PIN, ROOT, release_table_data

STANDIN = os.path.join(ROOT, 'tests', 'sglang', 'standin_server.py')


def catalogue(tmp_path):
    table, pin = release_table_data(), PIN
    path = str(tmp_path / 'metrics.json')
    with open(path, 'w') as stream:
        json.dump(table['releases'][pin]['metrics'], stream)
    return path, table['releases'][pin]['metrics']


def start(tmp_path, *flags, **env):
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    proc = subprocess.Popen([sys.executable, STANDIN, '--model-path', '/m', '--served-model-name', 'q', '--port',
                             str(port), '--api-key', 'k'] + list(flags),
                            env=dict(os.environ, SGLANG_STANDIN_DELAY='0', **env), stdout=subprocess.DEVNULL)
    for dummy in range(100):
        try:
            urlopen('http://127.0.0.1:%d/health' % port, timeout=1)
            break
        except (IOError, OSError):
            time.sleep(0.05)
    return proc, 'http://127.0.0.1:%d' % port


def get(url):
    try:
        resp = urlopen(Request(url), timeout=5)
        return resp.getcode(), resp.read().decode(), resp.headers.get('Content-Type')
    except HTTPError as exc:
        return exc.code, exc.read().decode(), None


@pytest.fixture(name='stopper')
def fixture_stopper():
    procs = []
    yield procs
    for proc in procs:
        proc.terminate()
        proc.wait()


def test_metrics_need_enable_metrics_and_no_key(tmp_path, stopper):
    path, table = catalogue(tmp_path)
    proc, url = start(tmp_path, SGLANG_STANDIN_METRICS=path)
    stopper.append(proc)
    assert get(url + '/metrics')[0] == 404
    proc, url = start(tmp_path, '--enable-metrics', '--speculative-algorithm', 'NEXTN', SGLANG_STANDIN_METRICS=path)
    stopper.append(proc)
    assert get(url + '/v1/models')[0] == 401  # the API key still guards the rest
    code, text, ctype = get(url + '/metrics')
    assert code == 200 and ctype.startswith('text/plain; version=0.0.4')
    families = table['families']
    assert '# TYPE %s gauge' % families['running_requests']['name'] in text
    # The capacity gauge states what the replayed start-up log states (its scheduler line).
    with open(os.path.join(ROOT, 'tests', 'fixtures', 'sglang_startup', 'qwen3.5-122b-a10b-tp4-rtx-pro-6000.log')) as log:
        logged = int(re.search(r'max_total_num_tokens=(\d+)', log.read()).group(1))
    assert '%s{engine_type="unified",model_name="q",moe_ep_rank="0",pp_rank="0",tp_rank="0"} %.1f' % (
        families['kv_capacity_tokens']['name'], logged) in text
    assert '%s{engine_type="unified",model_name="q"} 3.0' % families['verify_calls']['name'] in text
    assert '%s_bucket{engine_type="unified",is_streaming="false",le="+Inf",model_name="q"} 1.0' % (
        families['ttft_seconds']['name']) in text
    # A fresh server has retracted nothing: SGLang has no such series yet.
    assert families['retracted_requests']['name'] not in text
    # The HTTP counters count what the stand-in answered (the 401 and the first scrape included).
    code, text, dummy = get(url + '/metrics')
    assert '%s{endpoint="/v1/models",method="GET",status_code="401"} 1.0' % families['http_responses']['name'] in text
    assert '%s{endpoint="/metrics",method="GET"} 1.0' % families['http_requests']['name'] in text


def test_without_the_table_metrics_say_so(tmp_path, stopper):
    proc, url = start(tmp_path, '--enable-metrics')
    stopper.append(proc)
    code, text, dummy = get(url + '/metrics')
    assert code == 500 and 'SGLANG_STANDIN_METRICS' in text
