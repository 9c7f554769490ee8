# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure helpers for running SGLang's own benchmark client (``sglang.benchmark.serving``) and reading the server's
speculative-decoding accept length around each run. No I/O here.

Accept length per run (SGLang's ``avg_spec_accept_length`` is cumulative since start, and bench_serving copies
that cumulative value into its JSONL):
  1. ``/metrics`` (``--enable-metrics``, on by default): delta of the generation-token counter over delta of the
     verify-call counter (the pinned release's names: ``sglang:generation_tokens_total``,
     ``sglang:spec_verify_calls_total``, from profiles/sglang_releases.yml) - tokens per verify forward, counted from
     the requests this run finished.
  2. ``/server_info`` after ``POST /set_internal_state`` reset the counters (the pinned release: setting
     ``speculative_accept_threshold_single`` to its current value zeroes them without changing behaviour).
  3. Otherwise the cumulative value, marked as such.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

CLIENT_MODULES = ('sglang.benchmark.serving', 'sglang.bench_serving')
CHAT_BACKENDS = ('sglang-oai-chat', 'vllm-chat', 'lmdeploy-chat')
# JSONL fields kept in the per-run record (bench_serving 0.5.x names).
METRIC_FIELDS = (
    'backend', 'dataset_name', 'request_rate', 'max_concurrency', 'random_input_len', 'random_output_len',
    'random_range_ratio', 'duration', 'completed', 'total_input_tokens', 'total_output_tokens',
    'total_output_tokens_retokenized', 'request_throughput', 'input_throughput', 'output_throughput',
    'total_throughput', 'mean_e2e_latency_ms', 'median_e2e_latency_ms', 'p90_e2e_latency_ms', 'p99_e2e_latency_ms',
    'mean_ttft_ms', 'median_ttft_ms', 'p90_ttft_ms', 'p95_ttft_ms', 'p99_ttft_ms', 'mean_tpot_ms', 'median_tpot_ms',
    'p90_tpot_ms', 'p99_tpot_ms', 'mean_itl_ms', 'median_itl_ms', 'p90_itl_ms', 'p95_itl_ms', 'p99_itl_ms',
    'max_itl_ms', 'concurrency', 'accept_length', 'max_output_tokens_per_s', 'max_concurrent_requests',
)
SERVER_FIELDS = ('version', 'model_path', 'served_model_name', 'tp_size', 'speculative_algorithm',
                 'speculative_num_steps', 'speculative_eagle_topk', 'speculative_num_draft_tokens',
                 'max_running_requests', 'mem_fraction_static', 'context_length', 'enable_metrics',
                 'mamba_radix_cache_strategy', 'mamba_scheduler_strategy', 'disable_radix_cache', 'page_size')
_TQDM = re.compile(r'(\d+)/(\d+) \[')


def build_argv(python, client_module, opts):
    """The bench_serving command line. ``opts`` keys: backend, base_url, model, tokenizer, dataset_name,
    dataset_path, input_len, output_len, range_ratio, num_prompts, max_concurrency, request_rate, seed,
    warmup_requests, flush_cache, output_file, extra_request_body (dict), extra_args (list). The API key is not an
    argument: the client reads OPENAI_API_KEY."""
    argv = [python, '-m', client_module,
            '--backend', opts['backend'],
            '--base-url', opts['base_url'].rstrip('/'),
            '--dataset-name', opts['dataset_name'],
            '--num-prompts', str(int(opts['num_prompts'])),
            '--random-input-len', str(int(opts['input_len'])),
            '--random-output-len', str(int(opts['output_len'])),
            '--random-range-ratio', repr(float(opts['range_ratio'])),
            '--request-rate', 'inf' if opts.get('request_rate') in (None, 'inf', float('inf')) else repr(float(opts['request_rate'])),
            '--seed', str(int(opts['seed'])),
            '--warmup-requests', str(int(opts['warmup_requests'])),
            '--output-file', opts['output_file']]
    if opts.get('tokenizer'):
        # --model names the tokenizer directory (the client loads it for the chat-template check, no Hub access);
        # --served-model-name is what the requests carry.
        argv += ['--model', opts['tokenizer'], '--tokenizer', opts['tokenizer']]
        if opts.get('model'):
            argv += ['--served-model-name', opts['model']]
    elif opts.get('model'):
        argv += ['--model', opts['model']]
    if opts.get('dataset_path'):
        argv += ['--dataset-path', opts['dataset_path']]
    if opts.get('max_concurrency'):
        argv += ['--max-concurrency', str(int(opts['max_concurrency']))]
    if opts.get('flush_cache'):
        argv += ['--flush-cache']
    body = dict(opts.get('extra_request_body') or {})
    if body:
        argv += ['--extra-request-body', json.dumps(body, sort_keys=True)]
    argv += [str(a) for a in opts.get('extra_args') or []]
    return argv


def request_body(backend, disable_thinking, extra):
    """--extra-request-body: chat backends get enable_thinking false (reasoning tokens would count into TTFT since
    sglang PR #23954); completion backends send raw prompts without a chat template, so no thinking happens."""
    body = dict(extra or {})
    if disable_thinking and backend in CHAT_BACKENDS:
        kwargs = dict(body.get('chat_template_kwargs') or {})
        kwargs.setdefault('enable_thinking', False)
        body['chat_template_kwargs'] = kwargs
    return body


def parse_prometheus(text):
    """Sum of every sample per metric name (labels folded) from Prometheus text exposition."""
    totals = {}
    for line in (text or '').splitlines():
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        match = re.match(r'^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)', line)
        if not match:
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        totals[match.group(1)] = totals.get(match.group(1), 0.0) + value
    return totals


def spec_counters(metrics, names):
    """(generated tokens, verify forwards) from SGLang's /metrics, or None when the counters are absent. ``names``:
    the release's metric names by meaning (``llmops_deployment.metrics.names``: generation_tokens, verify_calls)."""
    tokens = metrics.get((names or {}).get('generation_tokens'))
    verify = metrics.get((names or {}).get('verify_calls'))
    if tokens is None or verify is None:
        return None
    return tokens, verify


def accept_from_counters(before, after):
    if not before or not after:
        return None
    verify = after[1] - before[1]
    if verify <= 0:
        return None
    return round((after[0] - before[0]) / verify, 3)


def server_internal(info):
    """internal_states[0] of /server_info (the decode side under PD disaggregation)."""
    if not isinstance(info, dict):
        return {}
    if isinstance(info.get('decode'), list) and info['decode']:
        info = info['decode'][0]
    states = info.get('internal_states')
    if isinstance(states, list) and states and isinstance(states[0], dict):
        return states[0]
    return {}


def server_accept_length(info):
    value = server_internal(info).get('avg_spec_accept_length')
    return round(float(value), 3) if isinstance(value, (int, float)) else None


def speculative_enabled(info):
    return isinstance(info, dict) and bool(info.get('speculative_algorithm'))


def accept_reset_body(info):
    """The POST /set_internal_state body that zeroes the accept counters without changing behaviour (the pinned release)."""
    value = info.get('speculative_accept_threshold_single', 1.0) if isinstance(info, dict) else 1.0
    if not isinstance(value, (int, float)):
        value = 1.0
    return {'server_args': {'speculative_accept_threshold_single': float(value)}}


def server_summary(info):
    if not isinstance(info, dict):
        return {}
    out = dict((k, info[k]) for k in SERVER_FIELDS if k in info)
    internal = server_internal(info)
    for key in ('max_running_requests', 'effective_max_running_requests_per_dp', 'max_total_num_tokens'):
        if key in internal:
            out['internal_' + key] = internal[key]
    return out


def choose_accept_length(spec, counters, reset_ok, after_info, cumulative):
    """(value, source, note) for the run. ``counters`` is the /metrics-derived value, ``reset_ok`` whether the
    /server_info counters were reset before the run, ``cumulative`` bench_serving's own (cumulative) figure."""
    if not spec:
        return None, 'none', 'speculative decoding is off on this server'
    if counters is not None:
        return counters, 'metrics', 'generation tokens / verify forwards of this run (/metrics counters)'
    value = server_accept_length(after_info)
    if value is not None and reset_ok:
        return value, 'server_info', 'avg_spec_accept_length after a reset before this run'
    if value is not None:
        return value, 'cumulative', 'avg_spec_accept_length is cumulative since server start (could not reset)'
    if cumulative is not None:
        return cumulative, 'cumulative', 'bench_serving figure, cumulative since server start'
    return None, 'unavailable', 'the server reports no accept length'


def last_jsonl(text):
    """The last JSON object line of a JSONL text (bench_serving appends one line per run)."""
    for line in reversed((text or '').splitlines()):
        line = line.strip()
        if line.startswith('{'):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


def metrics_of(raw):
    return dict((k, raw.get(k)) for k in METRIC_FIELDS if k in raw)


def tqdm_progress(text):
    """(done, total) of the last tqdm progress update in a log, or None."""
    found = None
    for match in _TQDM.finditer(text or ''):
        found = match
    if not found:
        return None
    return int(found.group(1)), int(found.group(2))


def log_tail(text, lines=40):
    """Last lines of a client log, with tqdm's carriage-return updates collapsed."""
    out = []
    for line in (text or '').splitlines():
        out.append(line.split('\r')[-1])
    return '\n'.join(out[-lines:])
