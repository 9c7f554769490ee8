# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""sglang_bench_run with a stand-in client (an executable that takes bench_serving's arguments, sends requests and
writes its JSONL) against an in-process server that answers /server_info, /metrics and /set_internal_state like
SGLang 0.5.23 with MTP on (or lacks them, like llama.cpp). Checks the accept-length bookkeeping, the key handling and
the records; the real client runs in the integration test."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import stat
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from module_harness import AnsibleFailJson, run

from ansible_collections.llmops.inference.plugins.modules import sglang_bench_run
from collection_paths import PIN

KEY = 'sk-bench-456'

FAKE_CLIENT = r'''#!%(python)s
# Stand-in for `python -m sglang.benchmark.serving`: checks its arguments, sends --num-prompts requests, prints a
# tqdm-like bar and appends one JSONL line, as bench_serving does.
import json, os, sys, urllib.request
args = sys.argv[1:]
assert args[0] == '-m', args
opts = dict(zip(args[2::2], args[3::2]))
assert os.environ.get('OPENAI_API_KEY') == %(key)r, 'no key in the environment'
assert %(key)r not in ' '.join(args), 'key on the command line'
n = int(opts['--num-prompts'])
for i in range(n):
    req = urllib.request.Request(opts['--base-url'] + '/v1/completions', data=b'{}',
                                 headers={'Authorization': 'Bearer ' + os.environ['OPENAI_API_KEY']})
    urllib.request.urlopen(req).read()
    sys.stderr.write('\r%%3d%%%%| | %%d/%%d [00:01<00:00]' %% (100 * (i + 1) // n, i + 1, n))
if os.environ.get('FAKE_CLIENT_FAIL'):
    print('Traceback: boom')
    sys.exit(3)
with open(opts['--output-file'], 'a') as f:
    f.write(json.dumps({'backend': opts['--backend'], 'max_concurrency': int(opts.get('--max-concurrency', 0)) or None,
                        'request_rate': 'inf', 'completed': n, 'output_throughput': 123.4, 'median_ttft_ms': 50.0,
                        'p99_ttft_ms': 80.0, 'median_tpot_ms': 8.0, 'accept_length': 2.5,
                        'server_info': {'huge': 'x' * 100}}) + '\n')
'''


class State(object):
    sglang = True
    spec = True
    metrics = True
    tokens = 1000
    verify = 400
    accept = 2.5
    resets = 0


def make_handler(state):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, status, obj, ctype='application/json'):
            data = obj.encode() if isinstance(obj, str) else json.dumps(obj).encode()
            self.send_response(status)
            self.send_header('Content-Type', ctype)
            self.send_header('Content-Length', str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == '/metrics' and state.metrics:
                self._send(200, 'sglang:generation_tokens_total{model_name="m"} %s\nsglang:spec_verify_calls_total{model_name="m"} %s\n'
                           % (state.tokens, state.verify), 'text/plain')
            elif self.path == '/server_info' and state.sglang:
                if self.headers.get('Authorization') != 'Bearer %s' % KEY:
                    self._send(401, {'error': 'auth'})
                    return
                internal = {'avg_spec_accept_length': state.accept} if state.spec else {}
                self._send(200, {'version': PIN, 'speculative_algorithm': 'EAGLE' if state.spec else None,
                                 'speculative_accept_threshold_single': 1.0, 'internal_states': [internal]})
            else:
                self._send(404, {'detail': 'Not Found'})

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get('Content-Length') or 0))
            if self.path == '/set_internal_state' and state.sglang:
                assert json.loads(body) == {'server_args': {'speculative_accept_threshold_single': 1.0}}
                state.resets += 1
                state.accept = 3.0
                self._send(200, {'updated': True})
            elif self.path == '/v1/completions':
                state.tokens += 31
                state.verify += 10
                self._send(200, {'choices': [{'text': 'x'}]})
            else:
                self._send(404, {'detail': 'Not Found'})
    return Handler


@pytest.fixture
def server():
    state = State()
    httpd = ThreadingHTTPServer(('127.0.0.1', 0), make_handler(state))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield 'http://127.0.0.1:%d' % httpd.server_address[1], state
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def client(tmp_path):
    path = tmp_path / 'python'
    path.write_text(FAKE_CLIENT % {'python': sys.executable, 'key': KEY})
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def run_bench(args):
    """The module's result with ``failed`` set either way (exit_json or fail_json)."""
    kind, result = run(sglang_bench_run.main, args)
    result.setdefault('failed', kind is AnsibleFailJson)
    return result


def base_args(url, client, tmp_path, **extra):
    args = dict(python=client, client_module='sglang.benchmark.serving', base_url=url, api_key=KEY, model='m',
                tokenizer=str(tmp_path), input_len=32, output_len=16, num_prompts=5, max_concurrency=2,
                output_dir=str(tmp_path / 'raw'), run_id='mtp-c2', labels={'variant': 'mtp'},
                records_file=str(tmp_path / 'runs.jsonl'),
                counter_names=dict(generation_tokens='sglang:generation_tokens_total',
                                   verify_calls='sglang:spec_verify_calls_total'))
    args.update(extra)
    return args


def test_metrics_counters_give_the_runs_own_accept_length(server, client, tmp_path):
    url, state = server
    res = run_bench(base_args(url, client, tmp_path))
    assert not res['failed'], res.get('msg')
    ll = res['record']['llmops']
    assert (ll['accept_length'], ll['accept_length_source']) == (3.1, 'metrics')
    assert ll['server_kind'] == 'sglang' and ll['labels'] == {'variant': 'mtp'} and state.resets == 1
    assert res['record']['metrics']['output_throughput'] == 123.4
    assert 'server_info' not in res['record']['metrics']
    saved = [json.loads(line) for line in open(str(tmp_path / 'runs.jsonl'))]
    assert len(saved) == 1 and saved[0]['llmops']['run_id'] == 'mtp-c2'
    assert os.path.exists(str(tmp_path / 'raw' / 'mtp-c2.jsonl'))
    assert '5/5' in open(str(tmp_path / 'raw' / 'mtp-c2.log')).read()
    assert KEY not in json.dumps(res) and KEY not in open(str(tmp_path / 'runs.jsonl')).read()


def test_without_metrics_the_reset_server_info_value_is_used(server, client, tmp_path):
    url, state = server
    state.metrics = False
    ll = run_bench(base_args(url, client, tmp_path))['record']['llmops']
    assert (ll['accept_length'], ll['accept_length_source']) == (3.0, 'server_info')


def test_metrics_off_in_the_deployment_skips_the_counters(server, client, tmp_path):
    # The server still answers /metrics, but the deployment says metrics are off (no counter names): /server_info.
    url, dummy = server
    ll = run_bench(base_args(url, client, tmp_path, counter_names={}))['record']['llmops']
    assert (ll['accept_length'], ll['accept_length_source']) == (3.0, 'server_info')


def test_a_server_without_sglang_endpoints(server, client, tmp_path):
    url, state = server
    state.sglang = False
    state.metrics = False
    res = run_bench(base_args(url, client, tmp_path))
    ll = res['record']['llmops']
    assert ll['server_kind'] == 'openai-compatible' and ll['accept_length'] is None
    assert ll['accept_length_source'] == 'none'
    assert 'no /server_info (HTTP 404)' in ll['notes'][0]


def test_spec_off(server, client, tmp_path):
    url, state = server
    state.spec = False
    ll = run_bench(base_args(url, client, tmp_path))['record']['llmops']
    assert ll['accept_length_source'] == 'none' and state.resets == 0


def test_a_failing_client_shows_its_log(server, client, tmp_path):
    url, _state = server
    res = run_bench(base_args(url, client, tmp_path, environment={'FAKE_CLIENT_FAIL': '1'}))
    assert res['failed'] and 'failed (rc 3) for run mtp-c2' in res['msg'] and 'Traceback: boom' in res['msg']


def test_random_dataset_needs_a_file(server, client, tmp_path):
    url, _state = server
    res = run_bench(base_args(url, client, tmp_path, dataset_name='random'))
    assert res['failed'] and 'dataset_path' in res['msg']


def test_auto_client_module_without_sglang(server, tmp_path):
    url, _state = server
    res = run_bench(base_args(url, sys.executable, tmp_path, client_module='auto'))
    assert res['failed'] and 'has neither sglang.benchmark.serving nor sglang.bench_serving' in res['msg']
