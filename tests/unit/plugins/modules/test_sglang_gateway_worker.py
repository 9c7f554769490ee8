# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""sglang_gateway_worker's main() against a real HTTP server on 127.0.0.1 that answers as the gateway's /workers API
(smg 1.13.0 shapes) and as the worker's /v1/loads or /metrics, scripted per test: a drain that waits for the gateway
to forget the worker and for its requests to finish, the refusal that keeps a minimum serving, check mode, a
registration that waits for health, and the failures with what they say."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import socket
import threading

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.llmops.inference.plugins.modules import sglang_gateway_worker as mod
from module_harness import AnsibleExitJson, AnsibleFailJson, run

KEY = 'sk-test'


class Lab(object):
    """The gateway and its workers on one server. workers: the gateway's list; script: (method, path) -> answers in
    turn (the last one repeats; an answer is (status, JSON or text) or a function of the lab and the request body);
    requests: every (method, path, authorization, body) it received."""

    def __init__(self):
        self.workers = []
        self.script = {}
        self.requests = []
        self.server = ThreadingHTTPServer(('127.0.0.1', 0), self._handler())
        self.base = 'http://127.0.0.1:%d' % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={'poll_interval': 0.05})
        self.thread.start()

    def url(self, name):
        return '%s/%s' % (self.base, name)

    def worker(self, name, healthy=True, status='ready', load=0):
        entry = {'id': 'id-' + name, 'url': self.url(name), 'status': status, 'is_healthy': healthy, 'load': load}
        self.workers.append(entry)
        return entry

    def _answer(self, method, path, body):
        if (method, path) in self.script:
            answers = self.script[(method, path)]
            answer = answers.pop(0) if len(answers) > 1 else answers[0]
            return answer(self, body) if callable(answer) else answer
        if method == 'GET' and path == '/workers':
            return 200, {'workers': self.workers, 'total': len(self.workers)}
        return 404, {'error': 'not found: %s %s' % (method, path)}

    def _handler(self):
        lab = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self):
                length = int(self.headers.get('Content-Length') or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                lab.requests.append((self.command, self.path, self.headers.get('Authorization'), body))
                status, payload = lab._answer(self.command, self.path, body)  # pylint: disable=protected-access
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = _serve

            def log_message(self, *args):  # quiet
                pass

        return Handler

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)

    def sent(self, method):
        return [(path, auth, body) for m, path, auth, body in self.requests if m == method]


@pytest.fixture
def lab():
    server = Lab()
    yield server
    server.close()


def args(lab, worker, **kw):
    out = dict(gateway_url=lab.base + '/', worker_url=lab.url(worker), api_key=KEY, poll_interval=0.05, timeout=10)
    out.update(kw)
    return out


def loads(running, waiting):
    return 200, {'loads': [{'num_running_reqs': running, 'num_waiting_reqs': waiting}]}


def forget(entry):
    def answer(lab, body):  # pylint: disable=unused-argument
        lab.workers.remove(entry)
        return 202, ''
    return answer


def test_a_drain_waits_for_the_gateway_and_the_worker(lab):
    target = lab.worker('w1', load=3)
    lab.worker('w2')
    lab.script[('DELETE', '/workers/id-w1')] = [forget(target)]
    # the gateway still answers for it once (with more load), then forgets it
    lab.script[('GET', '/workers/id-w1')] = [(200, dict(target, load=5)), (404, {'error': 'gone'})]
    lab.script[('GET', '/w1/v1/loads?include=core')] = [loads(2, 1), loads(1, 0), loads(0, 0)]
    kind, result = run(mod.main, args(lab, 'w1', state='drained'))
    assert kind is AnsibleExitJson, result
    assert result['changed'] is True and result['worker'] is None
    assert result['serving_others'] == [lab.url('w2')]
    assert result['drain']['max_gateway_load'] == 5  # the most the gateway reported in flight while forgetting it
    assert result['drain']['worker_inflight'] == [3, 1, 0]  # running + waiting over the worker's polls
    assert result['drain']['gateway_seconds'] >= 0.05
    assert lab.sent('DELETE') == [('/workers/id-w1', 'Bearer ' + KEY, None)]


def test_the_drain_is_refused_when_too_few_others_serve(lab):
    lab.worker('w1')
    lab.worker('w2', healthy=False)
    lab.worker('w3', status='pending')
    kind, result = run(mod.main, args(lab, 'w1', state='drained', min_serving=1))
    assert kind is AnsibleFailJson
    assert result['msg'] == ('refusing to drain %s: only 0 other worker(s) are healthy (none), at least 1 must keep '
                             'serving' % lab.url('w1'))
    assert lab.sent('DELETE') == []


def test_check_mode_only_reads(lab):
    lab.worker('w1')
    lab.worker('w2')
    kind, result = run(mod.main, args(lab, 'w1', state='drained'), check_mode=True)
    assert kind is AnsibleExitJson and result['changed'] is True and 'drain' not in result
    assert [m for m, _p, _a, _b in lab.requests] == ['GET']


def test_a_worker_the_gateway_does_not_list_is_only_waited_for_over_metrics(lab):
    lab.worker('w2')
    text = '# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 2\nllamacpp:requests_deferred 1\n'
    idle = 'llamacpp:requests_processing 0\nllamacpp:requests_deferred 0\n'
    lab.script[('GET', '/w1/metrics')] = [(200, text), (200, idle)]
    kind, result = run(mod.main, args(lab, 'w1', state='drained', inflight_metrics=[
        'llamacpp:requests_processing', 'llamacpp:requests_deferred']))
    assert kind is AnsibleExitJson, result
    assert result['changed'] is False and result['drain']['worker_inflight'] == [3, 0]
    assert result['drain']['gateway_seconds'] == 0.0 and lab.sent('DELETE') == []


def test_a_worker_that_nobody_answers_for_has_nothing_in_flight(lab):
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        closed = 'http://127.0.0.1:%d' % sock.getsockname()[1]
    lab.worker('w2')
    kind, result = run(mod.main, dict(args(lab, 'w2', state='drained'), worker_url=closed))
    assert kind is AnsibleExitJson, result
    assert result['drain']['worker_inflight'] == [None]


def test_requests_that_never_finish_fail_at_the_timeout(lab):
    lab.worker('w2')
    lab.script[('GET', '/w1/v1/loads?include=core')] = [loads(2, 0)]
    kind, result = run(mod.main, args(lab, 'w1', state='drained', timeout=1, poll_interval=0.2))
    assert kind is AnsibleFailJson
    assert result['msg'] == '%s still has 2 request(s) in flight after 1 s' % lab.url('w1')
    assert 2 <= len(result['drain']['worker_inflight']) <= 8  # polled every 0.2 s for 1 s


def test_a_worker_without_loads_is_not_guessed_idle(lab):
    lab.worker('w2')
    lab.script[('GET', '/w1/v1/loads?include=core')] = [(200, {'loads': []})]
    kind, result = run(mod.main, args(lab, 'w1', state='drained'))
    assert kind is AnsibleFailJson
    assert result['msg'].startswith('cannot tell whether %s finished its requests: not a /v1/loads answer' % lab.url('w1'))
    assert result['msg'].endswith("(set inflight_metrics for a server without SGLang's /v1/loads)")


def test_present_registers_and_waits_through_the_statuses(lab):
    pending = {'id': 'id-w1', 'url': lab.url('w1'), 'status': 'pending', 'is_healthy': False, 'load': 0}
    ready = dict(pending, status='ready', is_healthy=True)
    lab.script[('GET', '/workers')] = [(200, {'workers': listed}) for listed in ([], [pending], [pending], [ready])]
    lab.script[('POST', '/workers')] = [(202, '')]
    kind, result = run(mod.main, args(lab, 'w1', state='present'))
    assert kind is AnsibleExitJson, result
    assert result['changed'] is True and result['worker'] == ready
    assert result['register']['statuses'] == ['pending', 'ready']
    # registered with its key, so the gateway's requests and health checks authenticate
    assert lab.sent('POST') == [('/workers', 'Bearer ' + KEY, {'url': lab.url('w1'), 'api_key': KEY})]
    assert len(lab.sent('GET')) == 4


def test_without_a_key_none_is_sent(lab):
    ready = {'id': 'id-w1', 'url': lab.url('w1'), 'status': 'ready', 'is_healthy': True, 'load': 0}
    lab.script[('GET', '/workers')] = [(200, {'workers': []}), (200, {'workers': [ready]})]
    lab.script[('POST', '/workers')] = [(200, {})]
    kind, result = run(mod.main, args(lab, 'w1', state='present', api_key=''))
    assert kind is AnsibleExitJson, result
    assert lab.sent('POST') == [('/workers', None, {'url': lab.url('w1')})]
    assert result['register']['statuses'] == ['ready']


def test_a_worker_that_never_gets_healthy_fails_at_the_timeout(lab):
    pending = {'id': 'id-w1', 'url': lab.url('w1'), 'status': 'pending', 'is_healthy': False, 'load': 0}
    lab.workers.append(pending)
    kind, result = run(mod.main, args(lab, 'w1', state='present', timeout=1, poll_interval=0.2))
    assert kind is AnsibleFailJson
    assert result['msg'] == ('the gateway does not report %s healthy 1 s after registering it (statuses seen: '
                             'pending)' % lab.url('w1'))
    assert lab.sent('POST') == []  # listed already: not registered twice


def test_present_and_serving_changes_nothing(lab):
    lab.worker('w1')
    kind, result = run(mod.main, args(lab, 'w1', state='present'))
    assert kind is AnsibleExitJson and result['changed'] is False and lab.sent('POST') == []


def test_a_gateway_error_is_reported_with_its_answer(lab):
    lab.script[('GET', '/workers')] = [(500, 'upstream exploded')]
    kind, result = run(mod.main, args(lab, 'w1', state='present'))
    assert kind is AnsibleFailJson
    assert result['msg'] == 'GET %s/workers answered 500: upstream exploded' % lab.base and result['status'] == 500


def test_an_answer_that_is_not_a_worker_list_is_refused(lab):
    lab.script[('GET', '/workers')] = [(200, {'items': []})]
    kind, result = run(mod.main, args(lab, 'w1', state='present'))
    assert kind is AnsibleFailJson and result['msg'] == "not a /workers answer of the gateway: {'items': []}"
