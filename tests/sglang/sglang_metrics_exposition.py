# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Print the /metrics text of the installed SGLang's own collectors, as its HTTP server would serve it.

Runs with the python of the lab SGLang venv (tests/sglang/test_parser.py calls it; no GPU): SGLang's
SchedulerMetricsCollector, TokenizerMetricsCollector and HTTP request metrics are instantiated with the release's own
default settings (the Observability and Schedule structs of srt/arg_groups/fields), in prometheus_client's
multiprocess mode like the server (srt/utils/common.py set_prometheus_multiproc_dir), fed one of each event the
collection's rules and dashboard read (a scheduler stats log, the start-up constants, a finished speculative request
with its TTFT and inter-token latency, a retraction, an abort, an HTTP response), and collected the way
add_prometheus_middleware serves /metrics (a MultiProcessCollector on a fresh registry). The HTTP counters are
srt/observability/http_request_metrics.py from 0.5.23; before it, the middleware of srt/utils/common.py
(add_prometheus_track_response_middleware), which defines them on the app it wraps: it gets one real request.
"""
import os
import sys
import tempfile


def one_http_request():
    """One POST /generate answered 200, counted by the release's own HTTP metrics."""
    try:
        from sglang.srt.observability import http_request_metrics  # pylint: disable=import-error
    except ImportError:
        from fastapi import FastAPI  # pylint: disable=import-error
        from fastapi.testclient import TestClient  # pylint: disable=import-error
        from sglang.srt.utils.common import add_prometheus_track_response_middleware  # pylint: disable=import-error
        app = FastAPI()
        add_prometheus_track_response_middleware(app)
        app.post('/generate')(lambda: {})
        assert TestClient(app).post('/generate').status_code == 200
        return
    http_request_metrics.init_http_request_metrics()
    http = http_request_metrics._http_request_metrics  # pylint: disable=protected-access
    http.requests_total.labels(endpoint='/generate', method='POST').inc()
    http.responses_total.labels(endpoint='/generate', method='POST', status_code='200').inc()


def release_defaults(mc):
    """What the collectors read, at the release's defaults: 0.5.22 on, the published config bags (the Observability
    and Schedule structs of srt/arg_groups/fields, served by get_observability/get_schedule; server_args None);
    before, the ServerArgs object itself (every field at its dataclass default, without __post_init__, which needs a
    model and a GPU)."""
    try:
        from sglang.srt.arg_groups.fields.observability import Observability  # pylint: disable=import-error
        from sglang.srt.arg_groups.fields.schedule import Schedule  # pylint: disable=import-error
    except ImportError:
        import dataclasses
        from sglang.srt.server_args import ServerArgs  # pylint: disable=import-error
        args = object.__new__(ServerArgs)
        for field in dataclasses.fields(ServerArgs):
            factory = field.default_factory
            setattr(args, field.name, factory() if factory is not dataclasses.MISSING else
                    None if field.default is dataclasses.MISSING else field.default)
        args.should_export_expert_balancedness_to_prometheus = lambda: False
        return args
    observability, schedule = Observability(), Schedule()
    mc.get_observability = lambda: observability
    mc.get_schedule = lambda: schedule
    mc.exports_expert_balancedness_to_prometheus = lambda: False
    return None


def main():
    # Before prometheus_client is imported anywhere: it picks its value backend on import.
    os.environ['PROMETHEUS_MULTIPROC_DIR'] = tempfile.mkdtemp(prefix='sglang-metrics-')
    import sglang.srt.observability.metrics_collector as mc  # pylint: disable=import-error
    from prometheus_client import CollectorRegistry, generate_latest, multiprocess  # pylint: disable=import-error

    server_args = release_defaults(mc)
    # SchedulerMetricsCollector.init_new's labels for attention-TP rank 0 of a unified (not disaggregated) server.
    scheduler = mc.SchedulerMetricsCollector(
        labels=dict(model_name='m', engine_type='unified', tp_rank=0, pp_rank=0, moe_ep_rank=0),
        server_args=server_args)
    tokenizer_labels = dict(model_name='m', engine_type='unified')
    tokenizer = mc.TokenizerMetricsCollector(server_args=server_args, labels=tokenizer_labels)

    scheduler.log_stats(mc.SchedulerStats(spec_accept_length=2.5, spec_accept_rate=0.5, token_usage=0.1))
    scheduler.emit_constants(max_total_num_tokens=1000, max_total_num_tokens_swa=None, weight_memory_usage_gb=1.0,
                             kv_cache_memory_usage_gb=1.0, graph_memory_usage_gb={'target_verify': 0.5},
                             max_running_requests_under_SLO=None, page_size=1, num_pages=1000, context_len=4096,
                             startup_available_gpu_memory_gb=2.0)
    scheduler.increment_retracted_reqs(1, 10, 5)
    tokenizer.observe_one_finished_request(tokenizer_labels, prompt_tokens=6, generation_tokens=8, cached_tokens=0,
                                           e2e_latency=0.5, has_grammar=False, spec_verify_ct=3, is_streaming=False)
    tokenizer.observe_time_to_first_token(tokenizer_labels, 0.2, stream=False)
    tokenizer.observe_inter_token_latency(tokenizer_labels, 0.03, 2)
    tokenizer.observe_one_aborted_request(tokenizer_labels)
    one_http_request()

    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    sys.stdout.write(generate_latest(registry).decode())
    return 0


if __name__ == '__main__':
    sys.exit(main())
