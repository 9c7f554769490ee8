#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: openai_smoke
short_description: Smoke-test the features of an OpenAI-compatible LLM server (chat, thinking, tool calls, streaming)
version_added: 0.1.0
description:
  - Sends a handful of real requests to a deployed OpenAI-compatible server (SGLang, llama.cpp, vLLM) with its API
    key and checks each feature separately - C(/v1/models) lists the served name; a plain chat completion; thinking on
    (the answer carries C(reasoning_content) separate from C(content)) and off (C(chat_template_kwargs) C(enable_thinking=false));
    a tool call (C(tool_calls) parsed by the server, arguments valid JSON for the tool's schema, C(finish_reason)
    C(tool_calls)); streaming (server-sent events arrive chunk by chunk, the first-token time is recorded).
  - Each result says which feature broke and shows the server's answer. A feature the server or model does not
    provide at all (a model that cannot think) is reported as C(unsupported), which fails only when O(require_thinking) says so.
  - Read-only for the server (it only generates text); runs where the server is reachable, usually the serving host.
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.openai_server
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: partial
    details: The checks send requests; in check mode nothing is sent and every check is reported as C(skipped).
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
options:
  model:
    description: Served model name. Omit to use the first id C(/v1/models) lists.
    type: str
  checks:
    description: Which checks to run, in this order.
    type: list
    elements: str
    choices: [models, chat, thinking, no_thinking, tools, stream]
    default: [models, chat, thinking, no_thinking, tools, stream]
  require_thinking:
    description:
      - Whether an answer without C(reasoning_content) fails the thinking check (true for a reasoning model such as
        Qwen3.5 served with C(--reasoning-parser)). When false such an answer is reported as C(unsupported).
    type: bool
    default: true
  chat_prompt:
    description: User message of the plain chat and streaming checks.
    type: str
    default: Say hello in one short sentence.
  thinking_prompt:
    description: User message of the thinking on/off checks.
    type: str
    default: What is 17 + 25? Answer with the number only.
  tool:
    description:
      - The tool-call check - C(prompt) (user message), C(definition) (one OpenAI tool definition with a JSON-schema
        C(parameters)) and optionally C(arguments), values the model should extract (strings match case-insensitively as substrings).
      - Omit for a built-in C(get_weather) tool asked about Paris.
    type: dict
  max_tokens:
    description: C(max_tokens) of every request; leave room for the reasoning of a thinking model.
    type: int
    default: 2048
  temperature:
    description: Sampling temperature (0 for reproducible answers).
    type: float
    default: 0.0
  extra_body:
    description: Fields merged into every chat request (e.g. C(top_k)); the checks' own fields win.
    type: dict
    default: {}
  timeout:
    description: Seconds per request.
    type: int
    default: 300
  output_file:
    description: Also write the results as JSON to this path (on the host the module runs on).
    type: path
  fail_on_error:
    description: Fail the task when a check fails. With false the results come back with RV(failed_checks) set.
    type: bool
    default: true
notes:
  - Uses only the Python standard library and C(ansible.module_utils.urls); the API key never appears in the results.
seealso:
  - module: llmops.inference.sglang_bench_run
"""

EXAMPLES = r"""
- name: Smoke-test the deployed SGLang server
  llmops.inference.openai_smoke:
    base_url: http://127.0.0.1:30000
    api_key: "{{ llmops_api_key }}"
    model: qwen3.5-122b-a10b

- name: A CPU stand-in whose tiny model cannot think
  llmops.inference.openai_smoke:
    base_url: http://127.0.0.1:18080
    api_key: "{{ lab_key }}"
    require_thinking: false
    checks: [models, chat, tools, stream]
  register: smoke
"""

RETURN = r"""
results:
  description: One entry per check, in the order they ran.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Check name.
      type: str
      sample: tools
    status:
      description: C(ok), C(failed), C(unsupported) or C(skipped).
      type: str
      sample: ok
    message:
      description: What worked or what broke.
      type: str
      sample: '1 tool call(s): get_weather({"city":"Paris"})'
    answer:
      description: The server's answer (JSON, cut to 1500 characters).
      type: str
    elapsed_ms:
      description: Request time.
      type: float
    ttft_ms:
      description: Time to the first streamed token (stream check only).
      type: float
failed_checks:
  description: Names of the failed checks (and of unsupported ones that are required).
  returned: always
  type: list
  elements: str
  sample: []
unsupported_checks:
  description: Names of checks whose feature the server or model does not provide.
  returned: always
  type: list
  elements: str
  sample: [thinking]
model:
  description: The model name the requests used.
  returned: always
  type: str
  sample: qwen3.5-122b-a10b
summary:
  description: One line per check.
  returned: always
  type: list
  elements: str
  sample: ['chat: ok - assistant answered 31 characters (finish_reason stop)']
"""

import json
import os
import time
from urllib.error import HTTPError, URLError

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native, to_text
from ansible.module_utils.urls import open_url

from ansible_collections.llmops.inference.plugins.module_utils.bench.openai_checks import (
    FAILED, OK, SKIPPED, UNSUPPORTED, check_chat, check_models, check_no_thinking, check_stream, check_thinking,
    check_tool_call, excerpt, parse_sse, result, summarize_stream, summary_line)

ALL_CHECKS = ['models', 'chat', 'thinking', 'no_thinking', 'tools', 'stream']
DEFAULT_TOOL = dict(
    prompt='What is the weather in Paris right now?',
    definition=dict(type='function', function=dict(
        name='get_weather', description='Get the current weather for a city.',
        parameters=dict(type='object', required=['city'], properties=dict(
            city=dict(type='string', description='City name, e.g. Paris'),
            unit=dict(type='string', enum=['celsius', 'fahrenheit']))))),
    arguments=dict(city='Paris'),
)


class Client(object):
    def __init__(self, module):
        self.module = module
        self.base = module.params['base_url'].rstrip('/')
        if self.base.endswith('/v1'):
            self.base = self.base[:-3]
        self.headers = {'Content-Type': 'application/json', 'Accept': 'application/json'}
        if module.params['api_key']:
            self.headers['Authorization'] = 'Bearer %s' % module.params['api_key']
        self.timeout = module.params['timeout']

    def _open(self, method, path, body=None):
        data = json.dumps(body) if body is not None else None
        return open_url(self.base + path, data=data, method=method, headers=self.headers, timeout=self.timeout,
                        validate_certs=self.module.params['validate_certs'], follow_redirects='safe')

    def request(self, method, path, body=None):
        """(status, decoded JSON or text, elapsed ms); HTTP errors come back as their status and body."""
        started = time.time()
        try:
            resp = self._open(method, path, body)
            status, raw = resp.getcode(), resp.read()
        except HTTPError as exc:
            status, raw = exc.code, exc.read() if hasattr(exc, 'read') else b''
        except (URLError, OSError, ValueError) as exc:
            return None, 'cannot reach %s%s: %s' % (self.base, path, to_native(exc)), (time.time() - started) * 1000.0
        elapsed = (time.time() - started) * 1000.0
        text = to_text(raw, errors='surrogate_or_strict')
        try:
            return status, json.loads(text), elapsed
        except ValueError:
            return status, text, elapsed

    def stream(self, path, body):
        """(status, [(seconds, line)], error text) of a streaming request, each line timed when it arrived."""
        started = time.time()
        lines = []
        try:
            resp = self._open('POST', path, body)
            status = resp.getcode()
            while True:
                line = resp.readline()
                if not line:
                    break
                lines.append((time.time() - started, to_text(line, errors='surrogate_or_strict')))
        except HTTPError as exc:
            return exc.code, lines, to_text(exc.read() if hasattr(exc, 'read') else b'', errors='surrogate_or_strict')
        except (URLError, OSError, ValueError) as exc:
            return None, lines, 'cannot reach %s%s: %s' % (self.base, path, to_native(exc))
        return status, lines, None


def http_failure(name, status, answer, what):
    if status is None:
        return result(name, FAILED, answer)
    return result(name, FAILED, '%s: HTTP %s' % (what, status), answer)


def run_checks(module, client):
    params = module.params
    tool = params['tool'] or DEFAULT_TOOL
    model = params['model']
    results = []

    def chat_body(messages, **extra):
        body = dict(params['extra_body'])
        body.update(messages=messages, max_tokens=params['max_tokens'], temperature=params['temperature'])
        if model:
            body['model'] = model
        body.update(extra)
        return body

    def chat(name, body):
        status, answer, elapsed = client.request('POST', '/v1/chat/completions', body)
        if status != 200:
            return None, http_failure(name, status, answer, 'POST /v1/chat/completions'), elapsed
        return answer, None, elapsed

    for name in params['checks']:
        if name == 'models':
            status, answer, elapsed = client.request('GET', '/v1/models')
            res = check_models(answer, model) if status == 200 else http_failure(name, status, answer, 'GET /v1/models')
            if model is None and res['status'] == OK and res.get('models'):
                model = res['models'][0]
        elif name == 'chat':
            answer, res, elapsed = chat(name, chat_body([{'role': 'user', 'content': params['chat_prompt']}]))
            res = res or check_chat(answer)
        elif name == 'thinking':
            body = chat_body([{'role': 'user', 'content': params['thinking_prompt']}],
                             chat_template_kwargs={'enable_thinking': True})
            answer, res, elapsed = chat(name, body)
            res = res or check_thinking(answer, params['require_thinking'])
        elif name == 'no_thinking':
            body = chat_body([{'role': 'user', 'content': params['thinking_prompt']}],
                             chat_template_kwargs={'enable_thinking': False})
            answer, res, elapsed = chat(name, body)
            res = res or check_no_thinking(answer)
        elif name == 'tools':
            body = chat_body([{'role': 'user', 'content': tool['prompt']}], tools=[tool['definition']], tool_choice='auto')
            answer, res, elapsed = chat(name, body)
            res = res or check_tool_call(answer, [tool['definition']], tool.get('arguments'))
        else:
            body = chat_body([{'role': 'user', 'content': params['chat_prompt']}], stream=True)
            started = time.time()
            status, lines, error = client.stream('/v1/chat/completions', body)
            elapsed = (time.time() - started) * 1000.0
            if error is not None:
                res = http_failure(name, status, error, 'POST /v1/chat/completions (stream)')
            else:
                res = check_stream(summarize_stream(parse_sse(lines)), status)
        res['elapsed_ms'] = round(elapsed, 1)
        results.append(res)
    return results, model


def main():
    module = AnsibleModule(
        argument_spec=dict(
            base_url=dict(type='str', required=True),
            api_key=dict(type='str', no_log=True),
            model=dict(type='str'),
            checks=dict(type='list', elements='str', choices=ALL_CHECKS, default=ALL_CHECKS),
            require_thinking=dict(type='bool', default=True),
            chat_prompt=dict(type='str', default='Say hello in one short sentence.'),
            thinking_prompt=dict(type='str', default='What is 17 + 25? Answer with the number only.'),
            tool=dict(type='dict'),
            max_tokens=dict(type='int', default=2048, no_log=False),
            temperature=dict(type='float', default=0.0),
            extra_body=dict(type='dict', default={}),
            timeout=dict(type='int', default=300),
            validate_certs=dict(type='bool', default=True),
            output_file=dict(type='path'),
            fail_on_error=dict(type='bool', default=True),
        ),
        supports_check_mode=True,
    )
    tool = module.params['tool']
    if tool is not None:
        function = (tool.get('definition') or {}).get('function') if isinstance(tool.get('definition'), dict) else None
        if not tool.get('prompt') or not isinstance(function, dict) or not function.get('name'):
            module.fail_json(msg='tool needs a prompt and a definition {type: function, function: {name, parameters}}')
    if module.check_mode:
        results = [result(name, SKIPPED, 'check mode: no request sent') for name in module.params['checks']]
        module.exit_json(changed=False, results=results, failed_checks=[], unsupported_checks=[],
                         model=module.params['model'] or '', summary=summary_line(results))

    results, model = run_checks(module, Client(module))
    failed = [r['name'] for r in results if r['status'] == FAILED]
    unsupported = [r['name'] for r in results if r['status'] == UNSUPPORTED]
    summary = summary_line(results)
    out = dict(changed=False, results=results, failed_checks=failed, unsupported_checks=unsupported, model=model or '',
               summary=summary)
    if module.params['output_file']:
        path = module.params['output_file']
        record = dict(base_url=module.params['base_url'], model=model, results=results, failed_checks=failed,
                      unsupported_checks=unsupported, time=time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()))
        tmp = '%s.tmp.%d' % (path, os.getpid())
        try:
            with open(tmp, 'w') as handle:
                json.dump(record, handle, indent=2)
            module.atomic_move(tmp, path)
        except (IOError, OSError) as exc:
            module.fail_json(msg='cannot write %s: %s' % (path, to_native(exc)), **out)
    if failed and module.params['fail_on_error']:
        first = [r for r in results if r['status'] == FAILED][0]
        module.fail_json(msg='smoke test failed on %s - %s; server answer: %s'
                         % (module.params['base_url'], '; '.join('%s: %s' % (r['name'], r['message'])
                                                                 for r in results if r['status'] == FAILED),
                            excerpt(first['answer'], 600)), **out)
    module.exit_json(**out)


if __name__ == '__main__':
    main()
