# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the bench_serving helpers: command line, accept-length sources, Prometheus text, logs."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.bench import client as sb
from collection_paths import PIN

OPTS = dict(backend='sglang-oai', base_url='http://127.0.0.1:30000/', model='qwen3.5-122b', tokenizer='/models/q',
            dataset_name='random-ids', dataset_path=None, input_len=1024, output_len=512, range_ratio=1.0,
            num_prompts=64, max_concurrency=16, request_rate=None, seed=3, warmup_requests=2, flush_cache=True,
            output_file='/tmp/x.jsonl', extra_request_body={}, extra_args=['--disable-tqdm'])

# /metrics of SGLang 0.5.23 (names from srt/observability/metrics_collector.py), two labelled series.
METRICS_BEFORE = """# HELP sglang:generation_tokens_total Number of generation tokens processed.
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="q",is_streaming="true"} 1000.0
sglang:generation_tokens_total{model_name="q",is_streaming="false"} 200.0
# TYPE sglang:spec_verify_calls_total counter
sglang:spec_verify_calls_total{model_name="q"} 400.0
sglang:spec_accept_length{model_name="q"} 2.9
"""
METRICS_AFTER = METRICS_BEFORE.replace('1000.0', '4100.0').replace('} 400.0', '} 1400.0')


def test_argv_fixed_lengths_and_names():
    argv = sb.build_argv('/venv/bin/python', 'sglang.benchmark.serving', OPTS)
    assert argv[:3] == ['/venv/bin/python', '-m', 'sglang.benchmark.serving']
    pairs = dict(zip(argv[3::2], argv[4::2]))
    assert pairs['--base-url'] == 'http://127.0.0.1:30000'
    assert pairs['--random-range-ratio'] == '1.0'
    assert pairs['--request-rate'] == 'inf'
    assert pairs['--model'] == '/models/q' and pairs['--tokenizer'] == '/models/q'
    assert pairs['--served-model-name'] == 'qwen3.5-122b'
    assert '--flush-cache' in argv and argv[-1] == '--disable-tqdm'
    assert '--max-concurrency' in argv and '--extra-request-body' not in argv


def test_argv_rate_and_body():
    body = {'chat_template_kwargs': {'enable_thinking': False}}
    opts = dict(OPTS, request_rate=2.5, max_concurrency=None, flush_cache=False, extra_request_body=body)
    argv = sb.build_argv('p', 'sglang.bench_serving', opts)
    assert argv[argv.index('--request-rate') + 1] == '2.5'
    assert '--max-concurrency' not in argv and '--flush-cache' not in argv
    assert argv[argv.index('--extra-request-body') + 1] == '{"chat_template_kwargs": {"enable_thinking": false}}'


def test_request_body_turns_thinking_off_for_chat_backends_only():
    assert sb.request_body('sglang-oai-chat', True, {}) == {'chat_template_kwargs': {'enable_thinking': False}}
    assert sb.request_body('sglang-oai', True, {}) == {}
    kept = sb.request_body('sglang-oai-chat', True, {'chat_template_kwargs': {'enable_thinking': True}, 'top_k': 1})
    assert kept == {'chat_template_kwargs': {'enable_thinking': True}, 'top_k': 1}


def test_prometheus_and_counter_delta():
    names = dict(generation_tokens='sglang:generation_tokens_total', verify_calls='sglang:spec_verify_calls_total')
    before = sb.spec_counters(sb.parse_prometheus(METRICS_BEFORE), names)
    after = sb.spec_counters(sb.parse_prometheus(METRICS_AFTER), names)
    assert before == (1200.0, 400.0)
    assert sb.accept_from_counters(before, after) == 3.1
    assert sb.spec_counters(sb.parse_prometheus('llamacpp:tokens_predicted_total 5'), names) is None
    # No names (metrics off, or a release without them in the table): no counters, whatever the text holds.
    assert sb.spec_counters(sb.parse_prometheus(METRICS_BEFORE), {}) is None
    assert sb.accept_from_counters(before, before) is None


SERVER_INFO = {'version': PIN, 'speculative_algorithm': 'EAGLE', 'speculative_num_draft_tokens': 4,
               'speculative_accept_threshold_single': 1.0, 'max_running_requests': 48, 'tp_size': 4,
               'internal_states': [{'avg_spec_accept_length': 3.214, 'max_total_num_tokens': 2200000}]}


def test_server_info_helpers():
    assert sb.speculative_enabled(SERVER_INFO)
    assert not sb.speculative_enabled(dict(SERVER_INFO, speculative_algorithm=None))
    assert sb.server_accept_length(SERVER_INFO) == 3.214
    assert sb.server_accept_length({'decode': [SERVER_INFO]}) == 3.214
    assert sb.accept_reset_body(SERVER_INFO) == {'server_args': {'speculative_accept_threshold_single': 1.0}}
    summary = sb.server_summary(SERVER_INFO)
    assert summary['speculative_algorithm'] == 'EAGLE' and summary['internal_max_total_num_tokens'] == 2200000


def test_accept_length_sources_in_order():
    assert sb.choose_accept_length(False, None, False, None, None)[1] == 'none'
    value, source, note = sb.choose_accept_length(True, 3.1, True, SERVER_INFO, 2.0)
    assert (value, source) == (3.1, 'metrics') and '/metrics counters' in note
    assert sb.choose_accept_length(True, None, True, SERVER_INFO, 2.0)[:2] == (3.214, 'server_info')
    assert sb.choose_accept_length(True, None, False, SERVER_INFO, 2.0)[:2] == (3.214, 'cumulative')
    assert sb.choose_accept_length(True, None, False, {}, 2.0)[:2] == (2.0, 'cumulative')
    assert sb.choose_accept_length(True, None, False, {}, None)[:2] == (None, 'unavailable')


def test_jsonl_and_metrics():
    text = '{"a": 1}\n{"output_throughput": 12.5, "server_info": {"x": 1}, "completed": 8}\n'
    raw = sb.last_jsonl(text)
    assert raw['completed'] == 8
    assert sb.metrics_of(raw) == {'output_throughput': 12.5, 'completed': 8}
    assert sb.last_jsonl('garbage') is None


def test_tqdm_progress_and_tail():
    log = 'Starting warmup\n  0%|          | 0/64 [00:00<?, ?it/s]\r 25%|##5       | 16/64 [00:03<00:09,  5.1it/s]\r 50%|#####     | 32/64 [00:06<00:06]'
    assert sb.tqdm_progress(log) == (32, 64)
    assert sb.tqdm_progress('no bar yet') is None
    assert sb.log_tail(log, 1).endswith('32/64 [00:06<00:06]')
