# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""openai_smoke against an in-process HTTP server on 127.0.0.1 that answers like SGLang (Bearer auth, reasoning
parser, tool parser, SSE) or like a misconfigured server: real sockets, real open_url, real SSE framing."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from module_harness import AnsibleFailJson, run

from ansible_collections.llmops.inference.plugins.modules import openai_smoke

KEY = 'sk-test-123'


class Behaviour(object):
    reasoning = True          # split thinking into reasoning_content
    tool_parser = True        # parse <tool_call> into tool_calls
    stream_chunks = True      # stream token by token (False: one chunk)
    served = 'qwen3.5-122b'


def chat_answer(body, behaviour):
    thinking = (body.get('chat_template_kwargs') or {}).get('enable_thinking', True)
    message = {'role': 'assistant', 'content': 'Hello!'}
    finish = 'stop'
    if body.get('tools'):
        call = '{"city": "Paris"}'
        if behaviour.tool_parser:
            message = {'role': 'assistant', 'content': None, 'tool_calls': [
                {'id': 'call_0', 'type': 'function', 'function': {'name': 'get_weather', 'arguments': call}}]}
            finish = 'tool_calls'
        else:
            message['content'] = '<tool_call>\n{"name": "get_weather", "arguments": %s}\n</tool_call>' % call
    elif '17 + 25' in body['messages'][-1]['content']:
        message['content'] = '42'
    if thinking and not body.get('tools'):
        if behaviour.reasoning:
            message['reasoning_content'] = 'Let me think.'
        else:
            message['content'] = '<think>Let me think.</think>' + message['content']
    return {'id': 'c1', 'object': 'chat.completion', 'model': behaviour.served,
            'choices': [{'index': 0, 'message': message, 'finish_reason': finish}],
            'usage': {'prompt_tokens': 9, 'completion_tokens': 4, 'total_tokens': 13}}


def make_handler(behaviour):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, status, obj):
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header('Content-Type', 'application/json')
            self.send_header('Content-Length', str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _authorized(self):
            if self.headers.get('Authorization') != 'Bearer %s' % KEY:
                self._send(401, {'error': {'message': 'Invalid API Key', 'code': 401}})
                return False
            return True

        def do_GET(self):
            if not self._authorized():
                return
            if self.path == '/v1/models':
                self._send(200, {'object': 'list', 'data': [{'id': behaviour.served, 'owned_by': 'sglang'}]})
            else:
                self._send(404, {'detail': 'Not Found'})

        def do_POST(self):
            if not self._authorized():
                return
            body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
            if not body.get('stream'):
                self._send(200, chat_answer(body, behaviour))
                return
            self.send_response(200)
            self.send_header('Content-Type', 'text/event-stream')
            self.end_headers()
            pieces = ['Hel', 'lo', '!'] if behaviour.stream_chunks else ['Hello!']
            chunks = [{'choices': [{'index': 0, 'delta': {'role': 'assistant', 'content': ''}, 'finish_reason': None}]}]
            chunks += [{'choices': [{'index': 0, 'delta': {'content': p}, 'finish_reason': None}]} for p in pieces]
            chunks[-1]['choices'][0]['finish_reason'] = 'stop'
            for chunk in chunks:
                self.wfile.write(('data: %s\n\n' % json.dumps(chunk)).encode())
                self.wfile.flush()
            self.wfile.write(b'data: [DONE]\n\n')
    return Handler


@pytest.fixture
def server():
    behaviour = Behaviour()
    httpd = ThreadingHTTPServer(('127.0.0.1', 0), make_handler(behaviour))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield 'http://127.0.0.1:%d' % httpd.server_address[1], behaviour
    httpd.shutdown()
    httpd.server_close()


def run_smoke(args):
    """The module's result with ``failed`` set either way (exit_json or fail_json)."""
    kind, result = run(openai_smoke.main, args)
    result.setdefault('failed', kind is AnsibleFailJson)
    return result


def test_everything_works(server, tmp_path):
    url, _b = server
    out = tmp_path / 'smoke.json'
    res = run_smoke(dict(base_url=url + '/v1', api_key=KEY, output_file=str(out)))
    assert not res['failed'], res.get('msg')
    assert [r['status'] for r in res['results']] == ['ok'] * 6
    assert res['model'] == 'qwen3.5-122b'
    stream = res['results'][-1]
    assert stream['ttft_ms'] is not None and stream['ttft_ms'] >= 0
    saved = json.loads(out.read_text())
    assert saved['failed_checks'] == [] and len(saved['results']) == 6
    assert KEY not in out.read_text() and KEY not in json.dumps(res)


def test_each_broken_feature_is_named_with_the_answer(server):
    url, behaviour = server
    behaviour.reasoning = False
    behaviour.tool_parser = False
    behaviour.stream_chunks = False
    res = run_smoke(dict(base_url=url, api_key=KEY, model='qwen3.5-122b'))
    assert res['failed']
    assert res['failed_checks'] == ['thinking', 'tools', 'stream']
    assert 'thinking: the reasoning is inside content' in res['msg']
    assert 'tools: the model wrote a tool call into content' in res['msg']
    assert 'stream: ' in res['msg'] and 'one chunk' in res['msg']
    assert '<think>Let me think.</think>' in res['msg']  # the server's answer is shown


def test_a_model_that_cannot_think_is_unsupported_unless_required(server):
    url, behaviour = server
    behaviour.reasoning = False
    res = run_smoke(dict(base_url=url, api_key=KEY, require_thinking=False, checks=['thinking', 'no_thinking'],
                         fail_on_error=False))
    assert res['unsupported_checks'] == ['thinking'] and res['failed_checks'] == []
    assert not res['failed']


def test_wrong_key_and_wrong_name(server):
    url, _b = server
    res = run_smoke(dict(base_url=url, api_key='nope', checks=['models', 'chat']))
    assert res['failed'] and 'HTTP 401' in res['msg'] and 'Invalid API Key' in res['msg']
    res = run_smoke(dict(base_url=url, api_key=KEY, model='other', checks=['models']))
    assert res['failed'] and 'served name "other" is not in /v1/models (qwen3.5-122b)' in res['msg']


def test_unreachable_server():
    res = run_smoke(dict(base_url='http://127.0.0.1:9', checks=['models'], timeout=2))
    assert res['failed'] and 'cannot reach' in res['msg']


def test_bad_tool_definition():
    res = run_smoke(dict(base_url='http://127.0.0.1:9', tool={'prompt': 'x', 'definition': {}}))
    assert res['failed'] and 'tool needs a prompt and a definition' in res['msg']
