#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: sglang_bench_run
short_description: Run one benchmark with SGLang's own client and record the run's own speculative accept length
version_added: 0.1.0
description:
  - Runs C(python -m sglang.benchmark.serving) (C(sglang.bench_serving) on releases where that is its home) with
    the given interpreter - normally the server's own virtualenv, so client and server are the same release - against
    an OpenAI-compatible server. No home-made load generator.
  - Datasets that need no download (C(random-ids), or C(random) with a local file), fixed lengths, the API key through
    C(OPENAI_API_KEY) (never on the command line).
  - Around the run it reads the server's speculative-decoding accept length so the run gets its own figure - from
    C(/metrics) counter deltas when the server exports them, else from C(/server_info) after a reset through
    C(/set_internal_state), else the cumulative value, marked as such. A server without these SGLang endpoints (a
    CPU stand-in) is handled - the record says what was not available.
  - Writes the client's raw JSONL and its log under O(output_dir) and appends one summary record per run to
    O(records_file). Made to run as an async task; the C(llmops.inference.sglang_bench_wait) action shows its progress.
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.openai_server
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: none
    details: A benchmark cannot be simulated; in check mode nothing runs.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
options:
  python:
    description: Interpreter that has C(sglang) installed (the server's virtualenv).
    type: path
    required: true
  client_module:
    description: Module that holds the client. V(auto) picks C(sglang.benchmark.serving) when the release has it, else C(sglang.bench_serving).
    type: str
    default: auto
  model:
    description: Served model name the requests carry.
    type: str
  tokenizer:
    description: Local model or tokenizer directory on this host (the client counts tokens with it; no Hub access).
    type: path
  backend:
    description:
      - C(--backend). V(sglang-oai) sends raw prompts to C(/v1/completions) without a chat template, so a reasoning
        model does not think and TTFT is the first answer token. Chat backends get C(enable_thinking=false) (O(disable_thinking)).
    type: str
    default: sglang-oai
  dataset_name:
    description: C(--dataset-name). V(random-ids) needs only the tokenizer; V(random) needs O(dataset_path).
    type: str
    default: random-ids
  dataset_path:
    description: C(--dataset-path) (a local file).
    type: path
  input_len:
    description: C(--random-input-len).
    type: int
    required: true
  output_len:
    description: C(--random-output-len).
    type: int
    required: true
  range_ratio:
    description: C(--random-range-ratio); V(1.0) makes every request exactly O(input_len)/O(output_len) tokens.
    type: float
    default: 1.0
  num_prompts:
    description: C(--num-prompts).
    type: int
    required: true
  max_concurrency:
    description: C(--max-concurrency) (requests in flight at most). Omit for none.
    type: int
  request_rate:
    description: C(--request-rate) in requests/s (Poisson arrivals). Omit for all at once (V(inf)).
    type: float
  seed:
    description: C(--seed). Give each run its own, so runs do not reuse each other's prompts from the prefix cache.
    type: int
    default: 1
  warmup_requests:
    description: C(--warmup-requests) sent before the measured requests (at the run's concurrency).
    type: int
    default: 1
  flush_cache:
    description: C(--flush-cache) after the warm-up (SGLang C(/flush_cache); only for servers that have it).
    type: bool
    default: false
  disable_thinking:
    description: Add C(chat_template_kwargs.enable_thinking=false) to the requests of chat backends.
    type: bool
    default: true
  extra_request_body:
    description: More fields for every request (C(--extra-request-body)).
    type: dict
    default: {}
  extra_args:
    description: More client arguments, verbatim.
    type: list
    elements: str
    default: []
  environment:
    description: More environment for the client (C(HF_HUB_OFFLINE=1) is always set).
    type: dict
    default: {}
  accept_length:
    description: V(auto) reads and resets the server's accept-length counters around the run; V(off) does not.
    type: str
    choices: [auto, 'off']
    default: auto
  counter_names:
    description:
      - The server's counter names for the accept length from C(/metrics) - C(generation_tokens) and C(verify_calls)
        (C(llmops_deployment.metrics.names), the pinned release's). Empty (metrics off) skips C(/metrics).
    type: dict
    default: {}
  output_dir:
    description: Directory for C(<run_id>.jsonl) (the client's raw output) and C(<run_id>.log).
    type: path
    required: true
  run_id:
    description: Name of this run (file names, report rows), e.g. C(mtp-c16).
    type: str
    required: true
  labels:
    description: Anything to keep with the run's record (variant, scenario, index).
    type: dict
    default: {}
  records_file:
    description: JSONL file that gets one summary record per run (appended).
    type: path
  timeout:
    description: Seconds for each server probe request (not the run itself; bound that with async).
    type: int
    default: 30
notes:
  - The client prints a tqdm progress bar into O(output_dir)/C(<run_id>.log) while it runs.
  - O(api_key) goes to the benchmark client as C(OPENAI_API_KEY) in its environment; the module's own requests
    (C(/server_info), C(/metrics), C(/set_internal_state)) send it as a Bearer token.
seealso:
  - module: llmops.inference.openai_smoke
  - module: llmops.inference.sglang_bench_report
"""

EXAMPLES = r"""
- name: One run at concurrency 16, 1024 in / 1024 out
  llmops.inference.sglang_bench_run:
    python: "{{ llmops_deployment.sglang.python }}"
    base_url: http://127.0.0.1:30000
    api_key: "{{ llmops_api_key }}"
    model: qwen3.5-122b-a10b
    tokenizer: /shared/models/Qwen3.5-122B-A10B
    input_len: 1024
    output_len: 1024
    num_prompts: 128
    max_concurrency: 16
    seed: 3
    output_dir: /var/tmp/llmops-bench/20261130T120000Z/raw
    run_id: mtp-c16
    records_file: /var/tmp/llmops-bench/20261130T120000Z/runs.jsonl
  async: 7200
  poll: 0
  register: job
"""

RETURN = r"""
record:
  description:
    - The run's summary record (also appended to O(records_file)) - C(metrics) (the client's JSONL fields), C(llmops)
      (run id, labels, accept length and its source, server kind, wall time), C(server) (a few resolved server arguments).
  returned: success
  type: dict
command:
  description: The client command line (no secrets in it).
  returned: always
  type: list
  elements: str
client_module:
  description: The client module that ran.
  returned: always
  type: str
  sample: sglang.benchmark.serving
log_tail:
  description: Last lines of the client's output.
  returned: always
  type: str
"""

import json
import os
import time
from urllib.error import HTTPError, URLError

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native, to_text
from ansible.module_utils.urls import open_url

from ansible_collections.llmops.inference.plugins.module_utils.bench.client import (
    CLIENT_MODULES, accept_from_counters, accept_reset_body, build_argv, choose_accept_length, last_jsonl, log_tail,
    metrics_of, parse_prometheus, request_body, server_accept_length, server_summary, spec_counters,
    speculative_enabled)

# Where the client lives, found without importing sglang (an import takes seconds and pulls torch).
FIND_CLIENT = ('import importlib.util, json, os, sys\n'
               'spec = importlib.util.find_spec("sglang")\n'
               'locs = list(spec.submodule_search_locations or []) if spec else []\n'
               'found = None\n'
               'for name in sys.argv[1:]:\n'
               '    rel = os.path.join(*name.split(".")[1:]) + ".py"\n'
               '    if any(os.path.exists(os.path.join(loc, rel)) for loc in locs):\n'
               '        found = name\n'
               '        break\n'
               'print(json.dumps(found))\n')


class Server(object):
    def __init__(self, module):
        self.module = module
        self.base = module.params['base_url'].rstrip('/')
        self.headers = {'Accept': 'application/json', 'Content-Type': 'application/json'}
        if module.params['api_key']:
            self.headers['Authorization'] = 'Bearer %s' % module.params['api_key']

    def call(self, method, path, body=None):
        """(status, text); status None when the server cannot be reached."""
        try:
            resp = open_url(self.base + path, method=method, headers=self.headers,
                            data=json.dumps(body) if body is not None else None, timeout=self.module.params['timeout'],
                            validate_certs=self.module.params['validate_certs'])
            return resp.getcode(), to_text(resp.read(), errors='surrogate_or_strict')
        except HTTPError as exc:
            return exc.code, to_text(exc.read() if hasattr(exc, 'read') else b'', errors='surrogate_or_strict')
        except (URLError, OSError, ValueError) as exc:
            return None, to_native(exc)

    def json(self, path):
        status, text = self.call('GET', path)
        if status != 200:
            return status, None
        try:
            return status, json.loads(text)
        except ValueError:
            return status, None

    def counters(self, names):
        if not names:
            return None
        status, text = self.call('GET', '/metrics')
        if status != 200:
            return None
        return spec_counters(parse_prometheus(text), names)


def pick_client(module):
    wanted = module.params['client_module']
    if wanted != 'auto':
        return wanted
    rc, out, err = module.run_command([module.params['python'], '-c', FIND_CLIENT] + list(CLIENT_MODULES))
    try:
        name = json.loads(out.strip().splitlines()[-1]) if rc == 0 else None
    except (ValueError, IndexError):
        name = None
    if name not in CLIENT_MODULES:
        module.fail_json(msg='%s has neither %s: is SGLang installed in that environment? %s'
                         % (module.params['python'], ' nor '.join(CLIENT_MODULES), (err or out).strip()[-500:]))
    return name


def read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return ''


def _new_module():
    return AnsibleModule(
        argument_spec=dict(
            python=dict(type='path', required=True),
            client_module=dict(type='str', default='auto'),
            base_url=dict(type='str', required=True),
            api_key=dict(type='str', no_log=True),
            model=dict(type='str'),
            tokenizer=dict(type='path'),
            backend=dict(type='str', default='sglang-oai'),
            dataset_name=dict(type='str', default='random-ids'),
            dataset_path=dict(type='path'),
            input_len=dict(type='int', required=True),
            output_len=dict(type='int', required=True),
            range_ratio=dict(type='float', default=1.0),
            num_prompts=dict(type='int', required=True),
            max_concurrency=dict(type='int'),
            request_rate=dict(type='float'),
            seed=dict(type='int', default=1),
            warmup_requests=dict(type='int', default=1),
            flush_cache=dict(type='bool', default=False),
            disable_thinking=dict(type='bool', default=True),
            extra_request_body=dict(type='dict', default={}),
            extra_args=dict(type='list', elements='str', default=[]),
            environment=dict(type='dict', default={}),
            accept_length=dict(type='str', choices=['auto', 'off'], default='auto'),
            counter_names=dict(type='dict', default={}),
            output_dir=dict(type='path', required=True),
            run_id=dict(type='str', required=True),
            labels=dict(type='dict', default={}),
            records_file=dict(type='path'),
            timeout=dict(type='int', default=30),
            validate_certs=dict(type='bool', default=True),
        ),
        supports_check_mode=False,
    )


def _output_files(p):
    """(raw JSONL file, log file) of this run in output_dir, which is created; a raw file left by an earlier run of the
    same id is removed."""
    if not os.path.isdir(p['output_dir']):
        os.makedirs(p['output_dir'])
    raw_file = os.path.join(p['output_dir'], '%s.jsonl' % p['run_id'])
    log_file = os.path.join(p['output_dir'], '%s.log' % p['run_id'])
    if os.path.exists(raw_file):
        os.unlink(raw_file)  # the client appends; one file per run keeps the record unambiguous
    return raw_file, log_file


def _server_before(server, p):
    """What the server says before the run: (info status, /server_info, speculative?, accept counters reset?,
    counters before, notes); resets the accept counters of a speculative server when the accept length is wanted."""
    info_status, before_info = server.json('/server_info')
    spec = speculative_enabled(before_info)
    reset_ok = False
    counters_before = None
    notes = []
    if info_status != 200:
        notes.append('no /server_info (HTTP %s): not an SGLang server, no accept length or server arguments' % info_status)
    if p['accept_length'] == 'auto' and spec:
        counters_before = server.counters(p['counter_names'])
        status, text = server.call('POST', '/set_internal_state', accept_reset_body(before_info))
        reset_ok = status == 200 and '"updated":true' in text.replace(' ', '')
        if not reset_ok:
            notes.append('POST /set_internal_state did not reset the accept counters (HTTP %s)' % status)
    return info_status, before_info, spec, reset_ok, counters_before, notes


def _client_environment(p, log_file):
    env = dict((k, str(v)) for k, v in p['environment'].items())
    env.setdefault('HF_HUB_OFFLINE', '1')
    env.setdefault('TRANSFORMERS_OFFLINE', '1')
    env['PYTHONUNBUFFERED'] = '1'
    env['LLMOPS_BENCH_LOG'] = log_file
    if p['api_key']:
        env['OPENAI_API_KEY'] = p['api_key']
    return env


def main():
    module = _new_module()
    p = module.params
    if p['dataset_name'] == 'random' and not p['dataset_path']:
        module.fail_json(msg='dataset_name random samples text from a local ShareGPT file: set dataset_path (or use random-ids)')
    if not os.access(p['python'], os.X_OK):
        module.fail_json(msg='%s is not an executable interpreter' % p['python'])
    client = pick_client(module)
    raw_file, log_file = _output_files(p)

    server = Server(module)
    info_status, before_info, spec, reset_ok, counters_before, notes = _server_before(server, p)

    opts = dict(p, output_file=raw_file)
    opts['extra_request_body'] = request_body(p['backend'], p['disable_thinking'], p['extra_request_body'])
    argv = build_argv(p['python'], client, opts)
    env = _client_environment(p, log_file)
    # The shell only redirects: the arguments stay positional parameters, never parsed as shell code.
    started = time.time()
    rc, _out, _err = module.run_command(['/bin/sh', '-c', 'exec "$0" "$@" >"$LLMOPS_BENCH_LOG" 2>&1'] + argv,
                                        environ_update=env, cwd=p['output_dir'])
    wall = time.time() - started
    log = read(log_file)
    tail = log_tail(log)
    raw = last_jsonl(read(raw_file))
    base = dict(changed=True, command=argv, client_module=client, log_tail=tail, rc=rc)
    if rc != 0 or raw is None:
        module.fail_json(msg='%s -m %s failed (rc %s) for run %s; last lines of %s:\n%s'
                         % (p['python'], client, rc, p['run_id'], log_file, tail), **base)

    _after_status, after_info = server.json('/server_info')
    counters_after = server.counters(p['counter_names']) if spec and p['accept_length'] == 'auto' else None
    value, source, note = choose_accept_length(spec, accept_from_counters(counters_before, counters_after), reset_ok,
                                               after_info, raw.get('accept_length'))
    record = dict(
        metrics=metrics_of(raw),
        server=server_summary(after_info or before_info),
        llmops=dict(
            run_id=p['run_id'], labels=p['labels'], client_module=client, wall_s=round(wall, 2),
            started=time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(started)),
            server_kind='sglang' if info_status == 200 else 'openai-compatible',
            server_version=(after_info or before_info or {}).get('version'),
            accept_length=value, accept_length_source=source, accept_length_note=note,
            cumulative_accept_length=server_accept_length(after_info), notes=notes,
            raw_file=os.path.basename(raw_file), log_file=os.path.basename(log_file),
            command=argv,
        ),
    )
    if p['records_file']:
        with open(p['records_file'], 'a') as handle:
            handle.write(json.dumps(record, sort_keys=True) + '\n')
    module.exit_json(record=record, **base)


if __name__ == '__main__':
    main()
