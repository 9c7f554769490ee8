# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gateway lab's own parts: the SGLang stand-in's chat answer and /v1/loads count (what the rolling swap's drain
reads through gateway_workers), and benchmarks/gateway_bench.py's load summary (what the molecule scenario asserts)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.sglang import gateway_workers as gw
from ansible_collections.llmops.inference.plugins.module_utils.bench import openai_checks

from collection_paths import ROOT

STANDIN = os.path.join(ROOT, 'tests', 'sglang', 'standin_server.py')
_spec = importlib.util.spec_from_file_location('gateway_bench', os.path.join(ROOT, 'benchmarks', 'gateway_bench.py'))
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def _answer(server, model, release=None):
    return 'stand-in %s serves %s' % (server, model) + (' with sglang %s' % release if release else '')


def test_summary_segments_per_replica_in_time_order():
    results = [
        dict(t=1.0, status=200, seconds=0.2, error=None, answer=_answer('a:1', '/m/r1')),
        dict(t=1.5, status=200, seconds=0.2, error=None, answer=_answer('b:2', '/m/r1')),
        dict(t=3.0, status=200, seconds=0.2, error=None, answer=_answer('a:1', '/m/r2')),
        dict(t=2.0, status=200, seconds=0.2, error=None, answer=_answer('b:2', '/m/r1')),
        dict(t=4.0, status=502, seconds=1.0, error='bad gateway', answer=None),
        dict(t=6.0, status=200, seconds=0.2, error=None, answer=_answer('b:2', '/m/r2')),
    ]
    summary = bench.summarize(results)
    assert summary['requests'] == 6 and summary['failed'] == 1
    assert summary['failures'] == [dict(t=4.0, status=502, error='bad gateway')]
    assert [(s['model'], s['count']) for s in summary['servers']['a:1']] == [('/m/r1', 1), ('/m/r2', 1)]
    assert [(s['model'], s['first'], s['last']) for s in summary['servers']['b:2']] == [('/m/r1', 1.5, 2.0),
                                                                                        ('/m/r2', 6.0, 6.0)]
    # answers completed at 1.2, 1.7, 2.2, 3.2, 6.2: the longest time without one is 3.0 s
    assert summary['max_gap_seconds'] == pytest.approx(3.0)


def test_summary_of_a_switch_back_has_three_segments():
    results = [dict(t=float(i), status=200, seconds=0.1, error=None, answer=_answer('a:1', model))
               for i, model in enumerate(['/m/r1', '/m/r2', '/m/r1'])]
    assert [s['model'] for s in bench.summarize(results)['servers']['a:1']] == ['/m/r1', '/m/r2', '/m/r1']


def test_summary_splits_a_replica_on_a_release_move_of_the_same_model():
    results = [dict(t=float(i), status=200, seconds=0.1, error=None, answer=_answer('a:1', '/m/r1', release))
               for i, release in enumerate(['9.1.0', '9.1.0', '9.0.0', '9.1.0'])]
    segments = bench.summarize(results)['servers']['a:1']
    assert [(s['model'], s['release'], s['count']) for s in segments] == [
        ('/m/r1', '9.1.0', 2), ('/m/r1', '9.0.0', 1), ('/m/r1', '9.1.0', 1)]
    # An answer that names no release (the stand-in run by an interpreter without sglang) keeps release None.
    assert bench.summarize(results[:1] + [dict(results[1], answer=_answer('a:1', '/m/r1'))])['servers']['a:1'][1]['release'] is None


def _free_port():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def _get(url, key, body=None):
    req = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None,
                                 headers={'Authorization': 'Bearer ' + key, 'Content-Type': 'application/json'})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read().decode())


@pytest.fixture(params=[None, '9.9.1'], ids=['no-sglang', 'venv-with-sglang'])
def standin(request, tmp_path):
    port = _free_port()
    env = dict(os.environ, SGLANG_STANDIN_DELAY='0', SGLANG_STANDIN_LATENCY='0.5')
    if request.param:
        # An interpreter that sees an sglang distribution (the lab's venv with the stand-in wheel): its metadata only.
        info = tmp_path / ('sglang-%s.dist-info' % request.param)
        info.mkdir()
        (info / 'METADATA').write_text('Metadata-Version: 2.1\nName: sglang\nVersion: %s\n' % request.param)
        env['PYTHONPATH'] = str(tmp_path)
    proc = subprocess.Popen([sys.executable, STANDIN, '--model-path', '/srv/models/qwen-rev1', '--served-model-name',
                             'qwen3.5-122b', '--port', str(port), '--api-key', 'k'], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = 'http://127.0.0.1:%d' % port
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url + '/health', timeout=1)
            break
        except Exception:  # pylint: disable=broad-except
            time.sleep(0.1)
    yield url, port, request.param
    proc.terminate()
    proc.wait(10)


def test_standin_counts_requests_in_flight_and_names_replica_and_model(standin):
    url, port, release = standin
    answers = []
    thread = threading.Thread(target=lambda: answers.append(_get(url + '/v1/chat/completions', 'k',
                                                                 {'model': 'qwen3.5-122b', 'messages': []})))
    thread.start()
    time.sleep(0.25)
    during = gw.inflight_from_loads(_get(url + '/v1/loads?include=core', 'k'), ['num_running_reqs', 'num_waiting_reqs'])
    thread.join()
    after = gw.inflight_from_loads(_get(url + '/v1/loads?include=core', 'k'), ['num_running_reqs', 'num_waiting_reqs'])
    assert (during, after) == (1, 0)
    text = answers[0]['choices'][0]['message']['content']
    match = bench.STANDIN_ANSWER.match(text)
    assert match and match.group('server') == '%s:%d' % (socket.gethostname(), port)
    assert match.group('model') == '/srv/models/qwen-rev1'
    assert match.group('release') == release
    assert answers[0]['choices'][0]['finish_reason'] == 'stop'


def test_standin_streams_word_by_word_as_the_smoke_stream_check_wants(standin):
    url, _port, release = standin
    req = urllib.request.Request(url + '/v1/chat/completions', data=json.dumps(
        {'model': 'qwen3.5-122b', 'messages': [], 'stream': True}).encode(), headers={'Authorization': 'Bearer k'})
    with urllib.request.urlopen(req, timeout=10) as resp:
        lines = [(0.0, line.decode()) for line in resp.read().splitlines(True)]
    summary = openai_checks.summarize_stream(openai_checks.parse_sse(lines))
    tail = ' serves /srv/models/qwen-rev1' + (' with sglang %s' % release if release else '')
    assert summary['content'].endswith(tail) and summary['token_chunks'] == (7 if release else 4)
    assert openai_checks.check_stream(summary)['status'] == 'ok'


LAUNCHER = os.path.join(ROOT, 'roles', 'sglang_gateway', 'files', 'usr', 'local', 'libexec', 'llmops', 'smg-launch')
FAKE_SMG = '''
import json, os
def parse_router_args(argv):
    return argv
def launch_router(args):
    with open(os.environ['FAKE_SMG_OUT'], 'w') as out:
        json.dump(dict(argv=args, env_key=os.environ.get('SMG_LAUNCH_API_KEY')), out)
'''


def _launch(tmp_path, args, env):
    (tmp_path / 'smg').mkdir(exist_ok=True)
    (tmp_path / 'smg' / '__init__.py').write_text('')
    (tmp_path / 'smg' / 'launch_router.py').write_text(FAKE_SMG)
    out = tmp_path / 'out.json'
    if out.exists():
        out.unlink()
    full = dict((k, v) for k, v in os.environ.items() if k not in ('CREDENTIALS_DIRECTORY', 'SMG_LAUNCH_API_KEY'))
    full.update(env, PYTHONPATH=str(tmp_path), FAKE_SMG_OUT=str(out))
    proc = subprocess.run([sys.executable, LAUNCHER] + args, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False)
    return proc, (json.loads(out.read_text()) if out.exists() else None)


def test_launcher_refuses_to_start_without_the_key_it_was_told_to_expect(tmp_path):
    creds = tmp_path / 'creds'
    creds.mkdir()
    proc, launched = _launch(tmp_path, ['--key-required', '--', '--port', '1'], {'CREDENTIALS_DIRECTORY': str(creds)})
    assert proc.returncode == 78 and launched is None
    assert 'no API key (%s/api_key: No such file or directory; no SMG_LAUNCH_API_KEY)' % creds in proc.stderr


def test_launcher_takes_the_credential_first_then_the_environment_and_drops_it(tmp_path):
    creds = tmp_path / 'creds'
    creds.mkdir()
    (creds / 'api_key').write_text('cred-key\n')
    proc, launched = _launch(tmp_path, ['--key-required', '--', '--port', '1'],
                             {'CREDENTIALS_DIRECTORY': str(creds), 'SMG_LAUNCH_API_KEY': 'env-key'})
    assert proc.returncode == 0 and launched['argv'] == ['--port', '1', '--api-key', 'cred-key']
    proc, launched = _launch(tmp_path, ['--key-required', '--', '--port', '1'], {'SMG_LAUNCH_API_KEY': 'env-key'})
    assert proc.returncode == 0 and launched == dict(argv=['--port', '1', '--api-key', 'env-key'], env_key=None)
    assert 'env-key' not in proc.stderr + proc.stdout


def test_launcher_without_key_required_starts_open_and_refuses_a_key_on_argv(tmp_path):
    proc, launched = _launch(tmp_path, ['--', '--port', '1'], {})
    assert proc.returncode == 0 and launched['argv'] == ['--port', '1']
    proc, launched = _launch(tmp_path, ['--', '--api-key', 'x'], {})
    assert proc.returncode == 64 and launched is None


def _start_standin(port, extra, env=None):
    full = dict(os.environ, SGLANG_STANDIN_DELAY='0', SGLANG_STANDIN_SHARDS='0', SGLANG_STANDIN_LATENCY='0.1',
                **(env or {}))
    proc = subprocess.Popen([sys.executable, STANDIN, '--model-path', '/srv/models/pd', '--served-model-name', 'tiny',
                             '--port', str(port)] + extra, env=full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            urllib.request.urlopen('http://127.0.0.1:%d/health' % port, timeout=1)
            return proc
        except Exception:  # pylint: disable=broad-except
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError('stand-in on %d did not start' % port)


def _post(url, body):
    """(status, JSON answer), errors included."""
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={'Content-Type': 'application/json'})
    try:
        with urllib.request.urlopen(req, timeout=20) as resp:
            return resp.status, json.loads(resp.read().decode())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read().decode())


def _text(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture()
def pd_pair():
    ports = dict(zip(('prefill', 'bootstrap', 'decode'), bench.free_ports(3)))
    env = dict(SGLANG_STANDIN_KV_TIMEOUT='1')
    procs = [_start_standin(ports['prefill'], ['--disaggregation-mode', 'prefill', '--disaggregation-bootstrap-port',
                                               str(ports['bootstrap']), '--page-size', '64'], env),
             _start_standin(ports['decode'], ['--disaggregation-mode', 'decode', '--page-size', '64'], env)]
    yield ports
    for proc in procs:
        proc.terminate()
        proc.wait(10)


def _pd_request(ports, room, content):
    return {'model': 'tiny', 'messages': [{'role': 'user', 'content': content}], 'bootstrap_host': '127.0.0.1',
            'bootstrap_port': ports['bootstrap'], 'bootstrap_room': room}


def test_standin_pd_pair_answers_from_the_decode_after_the_prefill_handed_over_the_room(pd_pair):
    ports = pd_pair
    body = _pd_request(ports, 12345678901234567, 'hello')
    answers = {}
    # What smg does: the same request, bootstrap fields injected, to both sides at once.
    threads = [threading.Thread(target=lambda s=side: answers.__setitem__(s, _post(
        'http://127.0.0.1:%d/v1/chat/completions' % ports[s], body))) for side in ('prefill', 'decode')]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    status, decode = answers['decode']
    assert status == 200
    match = bench.STANDIN_ANSWER.match(decode['choices'][0]['message']['content'])
    assert match and match.group('server') == '%s:%d' % (socket.gethostname(), ports['decode'])
    status, prefill = answers['prefill']
    assert status == 200 and prefill['choices'][0]['finish_reason'] == 'length'
    assert prefill['choices'][0]['message']['content'] == ''
    seen = dict((s, json.loads(_text('http://127.0.0.1:%d/standin/received' % ports[s])[1])) for s in ('prefill', 'decode'))
    assert seen['prefill']['disaggregation_mode'] == 'prefill'
    (pre,), (dec,) = seen['prefill']['requests'], seen['decode']['requests']
    assert pre['bootstrap_room'] == dec['bootstrap_room'] == 12345678901234567
    assert pre['messages'] == dec['messages'] == body['messages']
    assert dec['kv_from'] == '127.0.0.1:%d' % ports['bootstrap'] and dec['prefill_http_port'] == ports['prefill']
    assert 'kv_from' not in pre


def test_standin_prefill_serves_the_bootstrap_routes_of_sglang(pd_pair):
    base = 'http://127.0.0.1:%d' % pd_pair['bootstrap']
    assert _text(base + '/health') == (200, 'OK')
    status, text = _text(base + '/route?prefill_dp_rank=-1&prefill_cp_rank=-1&target_tp_rank=-1&target_pp_rank=-1')
    info = json.loads(text)
    assert status == 200 and (info['page_size'], info['attn_tp_size'], info['prefill_http_port']) == (
        64, 1, pd_pair['prefill'])
    assert _text(base + '/route?prefill_dp_rank=0&prefill_cp_rank=0&target_tp_rank=0&target_pp_rank=0')[0] == 200
    assert _text(base + '/route?prefill_dp_rank=0&prefill_cp_rank=0&target_tp_rank=3&target_pp_rank=0')[0] == 404
    assert _text(base + '/route?prefill_dp_rank=0') == (400, 'Missing inputs for bootstrap server.')


def test_standin_pd_refuses_a_request_without_a_room_and_fails_without_the_prefill(pd_pair):
    ports = pd_pair
    decode = 'http://127.0.0.1:%d/v1/chat/completions' % ports['decode']
    status, answer = _post(decode, {'model': 'tiny', 'messages': []})
    assert status == 400 and 'Disaggregated request received without bootstrap room id' in answer['message']
    # The prefill never got this room: no KV to take, the decode fails after SGLANG_STANDIN_KV_TIMEOUT.
    status, answer = _post(decode, _pd_request(ports, 7, 'lonely'))
    assert status == 500 and 'no KV for the room from 127.0.0.1:%d' % ports['bootstrap'] in answer['message']
    # A bootstrap address nobody serves.
    dead = dict(ports, bootstrap=_free_port())
    status, answer = _post(decode, _pd_request(dead, 8, 'nobody'))
    assert status == 500 and answer['message'].endswith(
        'Could not fetch prefill parallel info from bootstrap_addr: 127.0.0.1:%d' % dead['bootstrap'])
    statuses = [r['status'] for r in json.loads(_text(decode.replace('/v1/chat/completions', '/standin/received'))[1])[
        'requests']]
    assert statuses == [400, 500, 500]


def test_standin_decode_refuses_a_prefill_of_another_page_size(pd_pair):
    port = _free_port()
    proc = _start_standin(port, ['--disaggregation-mode', 'decode', '--page-size', '16'])
    try:
        status, answer = _post('http://127.0.0.1:%d/v1/chat/completions' % port, _pd_request(pd_pair, 9, 'page'))
    finally:
        proc.terminate()
        proc.wait(10)
    assert status == 500 and answer['message'] == (
        'Page size mismatch: prefill server has page_size=64, but decode server has page_size=16. Both servers must '
        'use the same --page-size value.')


def test_standin_without_pd_flags_keeps_its_plain_behaviour():
    port = _free_port()
    proc = _start_standin(port, [])
    try:
        status, answer = _post('http://127.0.0.1:%d/v1/chat/completions' % port, {'model': 'tiny', 'messages': []})
        received = json.loads(_text('http://127.0.0.1:%d/standin/received' % port)[1])
    finally:
        proc.terminate()
        proc.wait(10)
    assert status == 200 and answer['choices'][0]['finish_reason'] == 'stop'
    assert received == {'disaggregation_mode': 'null', 'requests': []}


def test_pd_layout_of_the_bench_is_accepted_and_renders_the_argv_it_starts():
    ports = dict(prefill=30000, bootstrap=8998, decode=30001, gateway=30080)
    pd_check = bench.load_pd_check(ROOT)
    layout = bench.pd_layout(ports)
    assert pd_check.check(layout) == []
    assert pd_check.gateway_args(layout) == ['--pd-disaggregation', '--prefill', 'http://127.0.0.1:30000', '8998',
                                             '--decode', 'http://127.0.0.1:30001']
    assert pd_check.extra_args(layout, 'prefill') == ['--disaggregation-mode', 'prefill',
                                                      '--disaggregation-transfer-backend', 'mooncake_tcp',
                                                      '--disaggregation-bootstrap-port', '8998']
