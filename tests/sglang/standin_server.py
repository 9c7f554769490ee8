# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stand-in for `python -m sglang.launch_server` in the GPU-less lab (TEST SEAM, never for production).

Accepts SGLang's command line (honours --host, --port, --api-key, --served-model-name, --config, --tp-size,
--context-length; ignores the rest), replays the start-up log of a real SGLang 0.5.23 server for the scenario in
SGLANG_STANDIN_SCENARIO, and serves /health (503 while starting, 200 once ready), /v1/models and /model_info with
SGLang's Bearer auth (paths starting /health or /metrics are exempt, as in srt/utils/auth.py). Log lines are the
texts SGLang, PyTorch, uvicorn and NCCL print (see shared notes and sglang 0.5.23's source); stdout is flushed per
line so journald sees each one when it is printed.
For the gateway lab it also answers POST /v1/chat/completions after SGLANG_STANDIN_LATENCY seconds (default 0.2)
with a canned text that names the host, port and model path it serves, and the version of the sglang package its
interpreter has when it has one (no inference: the lab checks which replica, which revision and which release
answered; a stream request gets the same text as one SSE chunk per word), and GET /v1/loads with its own count of
requests in flight in the shape of 0.5.23's srt/entrypoints/v1_loads.py (loads[].num_running_reqs,
num_waiting_reqs), which the rolling swap's drain waits on.

With --enable-metrics it also serves /metrics as SGLang does (no API key needed): the metric families of the pinned
release's table (the `metrics:` section of profiles/sglang_releases.yml as JSON, in SGLANG_STANDIN_METRICS) in the
text format SGLang's prometheus_client multiprocess collector writes, with the values of the stand-in's simulated
state: the figures of the replayed start-up log, an idle scheduler after SGLang's one warm-up request, and the HTTP
requests it really answered (tests/sglang/test_parser.py compares it with SGLang's own collectors).

PD disaggregation (--disaggregation-mode prefill|decode, as SGLang 0.5.23's HTTP surface behaves in that mode, read in
srt/disaggregation/ and srt/managers/scheduler.py; no KV moves, see "What the lab shows" in docs/pd_disaggregation.md):
  both     a chat completion without bootstrap_room answers 400 with the scheduler's "Invalid request: Disaggregated
           request received without bootstrap room id." (scheduler.py, the disaggregation_mode check)
  prefill  serves the KV bootstrap server on --host:--disaggregation-bootstrap-port (disaggregation/common/conn.py
           CommonKVBootstrapServer: GET /health "OK"; GET /route with the four -1 ranks gives PrefillServerInfo, with
           real ranks the rank's PrefillRankInfo, 503 "Prefill server not fully registered yet" before the server is
           ready, 400 without the ranks; POST /register_dp_rank, /query_dp_ranks). A request with a room is
           "prefilled" (SGLANG_STANDIN_LATENCY), its KV offered under the room, and answered once the decode took it,
           as an empty completion with finish_reason length (prefill.py: FINISH_LENGTH(length=0) after the transfer).
  decode   fetches PrefillServerInfo from bootstrap_host:bootstrap_port (conn.py try_ensure_parallel_info: page size
           mismatch refused with SGLang's words; unreachable: 500 "Decode transfer failed ... Could not fetch prefill
           parallel info from bootstrap_addr"), then takes the room's KV from the prefill and answers as above.
  The KV hand-over itself is the stand-in's own route GET /standin/kv?room=R on the prefill's bootstrap server (real
  SGLang moves the KV over the transfer engine, Mooncake or NIXL, to the decode's ranks): no room offered within
  SGLANG_STANDIN_KV_TIMEOUT seconds (default 10) fails the request on both sides with 500.
  GET /standin/received (the stand-in's own, Bearer auth as /v1/models): the last 50 chat requests as received (model,
  messages, bootstrap_host, bootstrap_port, bootstrap_room; the decode adds kv_from, the bootstrap server it took
  the KV from, and the prefill_http_port that server reported), for the gateway lab's pd case.
Scenarios: healthy (default), mtp_radix, mamba_no_buffer, not_enough_memory, mamba_memory, nvml_mismatch, cuda_803,
cuda_35, stall,
port_in_use (the port is really bound first: any busy port fails the same way), crash_after_ready,
chat_error (starts healthy, every chat completion answers 500).
Env: SGLANG_STANDIN_SCENARIO, SGLANG_STANDIN_DELAY (seconds between lines, default 0.1), SGLANG_STANDIN_LATENCY,
     SGLANG_STANDIN_WORDING (0.5.23 default; "apr" prints "Init torch distributed begin."),
     SGLANG_STANDIN_STARTUP_LOG (the start-up lines replayed, default /opt/standin/share/sglang-startup.log, else
     tests/fixtures/sglang_startup/ of the checkout: NOT from plan.json; the pool lines are what the pinned SGLang's
     own pool code printed for the seed's command line, tests/sglang/make_startup_fixture.py says how).
     SGLANG_STANDIN_METRICS (JSON file: the release's metrics table; /metrics answers 500 without it).
     SGLANG_STANDIN_SHARDS (checkpoint shards of each weight load, default 4): the shard bar as SGLang's tqdm prints
     it, one shard per SGLANG_STANDIN_DELAY, then the graph captures one per delay (the start-up progress's pacing).
Stdlib only (python3 >= 3.6). No shebang in the repository (sanity rules); the molecule prepare step installs it
with "#!/usr/bin/python3" as /opt/standin/bin/sglang-standin.
"""
import argparse
import json
import os
import re
import signal
import socket
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

try:
    from http.server import BaseHTTPRequestHandler, HTTPServer
    from socketserver import ThreadingMixIn
except ImportError:  # pragma: no cover
    raise

STATE = {'ready': False, 'inflight': 0, 'served': 0}
# (endpoint, method, status) -> count: what the stand-in answered, for sglang:http_requests/responses_total.
HTTP_COUNTS = {}
HTTP_LOCK = threading.Lock()
LATENCY = float(os.environ.get('SGLANG_STANDIN_LATENCY', '0.2'))
SCENARIO = os.environ.get('SGLANG_STANDIN_SCENARIO', 'healthy')
LOCK = threading.Lock()
# PD mode: the chat requests received (newest last, at most 50) and, on a prefill, the KV offered per bootstrap room.
RECEIVED = []
KV = {}
KV_LOCK = threading.Lock()
KV_TIMEOUT = float(os.environ.get('SGLANG_STANDIN_KV_TIMEOUT', '10'))


class ThreadingServer(ThreadingMixIn, HTTPServer):
    daemon_threads = True


def log(text, rank=None):
    stamp = time.strftime('%Y-%m-%d %H:%M:%S')
    prefix = '[%s TP%d] ' % (stamp, rank) if rank is not None else '[%s] ' % stamp
    sys.stdout.write(prefix + text + '\n')
    sys.stdout.flush()


def raw(text):
    sys.stdout.write(text + '\n')
    sys.stdout.flush()


def pause(delay):
    time.sleep(delay)


# SGLang 0.5.23's shard bar: tqdm (tqdm.auto) on TP rank 0 with bar_format utils/common.py:1414 BAR_FORMAT and the desc
# of model_loader/weight_utils.py:1166; tqdm begins every update with a carriage return and ends the bar with one
# newline after showing it once more at close (tqdm.std: status_printer, close). Fields as tqdm formats them.
BAR_FORMAT = '{desc}: {percentage:3.0f}% Completed | {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]'
BAR_DESC = 'Loading safetensors checkpoint shards'


def _interval(seconds):
    """tqdm.format_interval: [H:]MM:SS."""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return '%d:%02d:%02d' % (hours, minutes, secs) if hours else '%02d:%02d' % (minutes, secs)


def shard_bar(total, delay):
    """Load ``total`` shards, one every ``delay`` seconds, printing the bar as tqdm does."""
    began = time.time()

    def show(done):
        elapsed = time.time() - began
        rate = done / elapsed if done and elapsed > 0 else None
        rate_fmt = '?it/s' if rate is None else ('%5.2fit/s' % rate if rate >= 1 else '%5.2fs/it' % (1 / rate))
        remaining = '?' if rate is None else _interval((total - done) / rate)
        sys.stdout.write('\r' + BAR_FORMAT.format(desc=BAR_DESC, percentage=100.0 * done / total, n_fmt=done,
                                                  total_fmt=total, elapsed=_interval(elapsed), remaining=remaining,
                                                  rate_fmt=rate_fmt))
        sys.stdout.flush()
    show(0)
    for done in range(1, total + 1):
        pause(delay)
        show(done)
    show(total)
    sys.stdout.write('\n')
    sys.stdout.flush()


def parse(argv):
    parser = argparse.ArgumentParser(prog='sglang serve', add_help=False)
    parser.add_argument('--model-path', required=True)
    parser.add_argument('--served-model-name')
    parser.add_argument('--host', default='127.0.0.1')
    parser.add_argument('--port', type=int, default=30000)
    parser.add_argument('--api-key')
    parser.add_argument('--config')
    parser.add_argument('--tp-size', type=int, default=1)
    parser.add_argument('--context-length', type=int, default=262144)
    parser.add_argument('--max-running-requests', type=int, default=48)
    parser.add_argument('--enable-metrics', action='store_true')
    parser.add_argument('--speculative-algorithm')
    # PD disaggregation (arg_groups/fields/disagg.py): mode, bootstrap port 8998, backend mooncake; page size and KV
    # dtype are what the decode compares with the prefill's bootstrap info.
    parser.add_argument('--disaggregation-mode', choices=['null', 'prefill', 'decode'], default='null')
    parser.add_argument('--disaggregation-bootstrap-port', type=int, default=8998)
    parser.add_argument('--disaggregation-transfer-backend', default='mooncake')
    parser.add_argument('--page-size', type=int, default=1)
    parser.add_argument('--kv-cache-dtype', default='auto')
    args, rest = parser.parse_known_args(argv)
    if args.config:
        # SGLang reads --config with yaml.safe_load; the role writes JSON, which is YAML. "key: value" lines too.
        with open(args.config) as stream:
            text = stream.read()
        try:
            data = json.loads(text)
        except ValueError:
            data = dict(line.split(':', 1) for line in text.splitlines() if ':' in line)
            data = dict((k.strip(), v.strip().strip('"\'')) for k, v in data.items())
        for key, value in data.items():
            key = key.replace('-', '_')
            if hasattr(args, key) and getattr(args, key) in (None, parser.get_default(key)):
                setattr(args, key, value)
    return args, rest


# The start-up lines of the pinned release, pool lines printed by SGLang's own code (tests/fixtures/sglang_startup/,
# made by tests/sglang/make_startup_fixture.py; the molecule prepare step installs the file next to the stand-in):
# '#' lines are comments.
STARTUP_LOG = 'qwen3.5-122b-a10b-tp4-rtx-pro-6000.log'
_STARTUP_PLACES = ('/opt/standin/share/sglang-startup.log',
                   os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'fixtures', 'sglang_startup',
                                STARTUP_LOG))


# The release the replayed file was recorded from (its header: "# SGLang X start-up lines ..."): what the stand-in
# answers as its version, as that release's server would (main() fills it).
RECORDED = {}


# The sglang package of the interpreter running the stand-in (the stand-in wheel of the venv the role installed, when
# the launcher is that venv's python): the gateway lab's answers then say which release served each request.
INSTALLED = {}


def installed_sglang():
    """The version of the sglang distribution this interpreter sees, or None (the image's python3 has none)."""
    try:
        from importlib import metadata
        return metadata.version('sglang')
    except Exception:  # pylint: disable=broad-except  # PackageNotFoundError, or no importlib.metadata
        return None


def recorded_release(text):
    match = re.search(r'^# SGLang (\S+) start-up lines', text, re.M)
    return match.group(1) if match else None


def startup_lines(args, begin):
    """The replayed start-up lines: the file's, for this TP size (ranks beyond it dropped), the parallel milestone in
    the wording asked for, and the scheduler line stating what SGLang would state for this command line: the
    running requests it was given when below the pools' cap (SGLang takes min(requested, cap)), the context length
    it was given."""
    path = os.environ.get('SGLANG_STANDIN_STARTUP_LOG') or next(p for p in _STARTUP_PLACES if os.path.exists(p))
    with open(path) as stream:
        text = stream.read()
    RECORDED['version'] = recorded_release(text)
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith('#')]
    tp = max(1, int(args.tp_size))
    out = []
    for line in lines:
        rank = re.match(r'^\[[^\]]* TP(\d+)\]', line)
        if rank and int(rank.group(1)) >= tp:
            continue
        line = line.replace('Init parallel begin.', begin).replace('Init parallel ends.', begin.replace('begin.', 'ends.'))
        match = re.search(r'max_running_requests=(\d+), context_len=(\d+)', line)
        if match and 'max_total_num_tokens=' in line:
            running = min(int(match.group(1)), int(args.max_running_requests or match.group(1)))
            line = line.replace(match.group(0), 'max_running_requests=%d, context_len=%d' % (
                running, int(args.context_length)))
        out.append(line)
    return out


def stamp(line):
    """A replayed line with this moment's time in its logger prefix."""
    return re.sub(r'^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d', '[' + time.strftime('%Y-%m-%d %H:%M:%S'), line)


def _number(value):
    """A sample value as prometheus_client writes it (repr of the float, +Inf)."""
    value = float(value)
    if value == float('inf'):
        return '+Inf'
    return repr(value)


def _labels(pairs):
    return '{%s}' % ','.join('%s="%s"' % (k, str(v).replace('\\', '\\\\').replace('"', '\\"'))
                             for k, v in sorted(pairs.items()))


# What the replayed start-up lines state (main() fills it): the /metrics gauges report the same figures.
STARTUP_FIGURES = {}


def startup_figures(lines):
    """tokens, weights (rank 0's target + draft GB), kv (the target pool's K + V GB), graph (first graph's GB)."""
    out = dict(weights=0.0)
    for line in lines:
        if not re.match(r'^\[[^\]]* TP0\]', line):
            continue
        load = re.search(r'Load weight end\..*mem usage=([0-9.]+) GB', line)
        kv = re.search(r'KV Cache is allocated\..*K size: ([0-9.]+) GB, V size: ([0-9.]+) GB', line)
        graph = re.search(r'CUDA graph end\..*mem usage=([0-9.]+) GB', line)
        tokens = re.search(r'max_total_num_tokens=(\d+)', line)
        if load:
            out['weights'] = round(out['weights'] + float(load.group(1)), 2)
        elif kv and 'kv' not in out:
            out['kv'] = round(float(kv.group(1)) + float(kv.group(2)), 2)
        elif graph and 'graph' not in out:
            out['graph'] = float(graph.group(1))
        elif tokens:
            out['tokens'] = int(tokens.group(1))
    return out


def simulated_state(args):
    """meaning -> value, or a list of (extra labels, value): SGLang after the replayed start-up and its warm-up
    request (http_server.py _execute_server_warmup: one request, max_new_tokens 8). Families SGLang has not
    created yet (no retraction, no abort so far) are absent, as they are from its /metrics."""
    spec = bool(args.speculative_algorithm)
    # The figures of the replayed start-up log (its KV tokens, weights, K + V and target-verify graph memory).
    fig = STARTUP_FIGURES
    state = dict(running_requests=0, queued_requests=0, generation_throughput=0.0, cache_hit_rate=0.0,
                 token_usage=0.0, kv_usage=0.0, mamba_usage=0.0, kv_used_tokens=0,
                 kv_capacity_tokens=fig.get('tokens', 0), weight_memory_gb=fig.get('weights', 0.0),
                 kv_cache_memory_gb=fig.get('kv', 0.0),
                 graph_memory_gb=[(dict(phase='target_verify'), fig.get('graph', 0.0))],
                 context_length=int(args.context_length))
    warm = dict(is_streaming='false')
    state.update(requests=[(warm, 1)], prompt_tokens=[(warm, 6)], generation_tokens=[(warm, 8)],
                 ttft_seconds=[(warm, [0.25])], e2e_seconds=[(warm, [0.61])], itl_seconds=[0.05] * 7)
    if spec:
        # 8 tokens in 3 verify forwards: accept length 2.67; 1.67 of 3 drafts accepted per forward.
        state.update(verify_calls=3, accept_length=8 / 3.0, accept_rate=(8 / 3.0 - 1) / 3)
    return state


def exposition(catalogue, args):
    """/metrics text: every family of the release's table the simulated state has a value for."""
    served = args.served_model_name or args.model_path
    base = dict(scheduler=dict(model_name=served, engine_type='unified', tp_rank=0, pp_rank=0, moe_ep_rank=0),
                tokenizer=dict(model_name=served, engine_type='unified'), http={})
    state = simulated_state(args)
    with HTTP_LOCK:
        counts = dict(HTTP_COUNTS)
    requests, responses = {}, {}
    for (endpoint, method, status), count in counts.items():
        requests[(endpoint, method)] = requests.get((endpoint, method), 0) + count
        responses[(endpoint, method, status)] = count
    state['http_requests'] = [(dict(endpoint=e, method=m), c) for (e, m), c in sorted(requests.items())]
    state['http_responses'] = [(dict(endpoint=e, method=m, status_code=str(s)), c)
                               for (e, m, s), c in sorted(responses.items())]
    lines = []
    for key, family in sorted(catalogue['families'].items()):
        if key not in state or (isinstance(state[key], list) and not state[key]):
            continue
        name, kind = family['name'], family['type']
        common = dict((k, v) for k, v in base.get(family['labels'], {}).items()
                      if k in catalogue['label_sets'][family['labels']])
        value = state[key]
        series = value if isinstance(value, list) and (not value or isinstance(value[0], tuple)) else [({}, value)]
        lines.append('# HELP %s %s (llmops stand-in)' % (name, key.replace('_', ' ')))
        lines.append('# TYPE %s %s' % (name, kind))
        for extra, sample in series:
            labels = dict(common, **extra)
            if kind != 'histogram':
                lines.append('%s%s %s' % (name, _labels(labels), _number(sample)))
                continue
            values = sample
            for bound in list(family['buckets']) + [float('inf')]:
                below = len([v for v in values if v <= bound])
                lines.append('%s_bucket%s %s' % (name, _labels(dict(labels, le=_number(bound))), _number(below)))
            lines.append('%s_count%s %s' % (name, _labels(labels), _number(len(values))))
            lines.append('%s_sum%s %s' % (name, _labels(labels), _number(sum(values))))
    return '\n'.join(lines) + '\n'


def load_catalogue():
    path = os.environ.get('SGLANG_STANDIN_METRICS')
    if not path:
        return None
    with open(path) as stream:
        return json.load(stream)


_RANKS = ('prefill_dp_rank', 'prefill_cp_rank', 'target_tp_rank', 'target_pp_rank')


def prefill_info(args):
    """PrefillServerInfo as the bootstrap server answers GET /route with the four -1 ranks (conn.py): one DP group,
    no CP or PP, attention TP = --tp-size."""
    return dict(attn_tp_size=max(1, int(args.tp_size)), attn_cp_size=1, dp_size=1, pp_size=1,
                page_size=int(args.page_size), kv_cache_dtype=args.kv_cache_dtype, follow_bootstrap_room=True,
                enable_dsa_cache_layer_split=False, enable_kv_cache_sharding=False, prefill_http_port=int(args.port),
                decode_allocation_policy='early')


def make_bootstrap_handler(args):
    """The prefill's KV bootstrap server: CommonKVBootstrapServer's routes (disaggregation/common/conn.py), plus the
    stand-in's own KV hand-over, GET /standin/kv?room=R (no KV exists; the decode takes the room's "KV" here)."""
    rooms = {}

    class Bootstrap(BaseHTTPRequestHandler):
        def log_message(self, fmt, *values):  # aiohttp's access log is off unless SGLang logs at DEBUG
            return

        def _reply(self, code, body):
            text = isinstance(body, str)
            data = body.encode() if text else json.dumps(body).encode()
            self.send_response(code)
            self.send_header('Content-Type', 'text/plain; charset=utf-8' if text else 'application/json; charset=utf-8')
            self.send_header('Content-Length', str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802 -- http.server API
            url = urllib.parse.urlsplit(self.path)
            query = dict(urllib.parse.parse_qsl(url.query))
            if url.path == '/health':
                return self._reply(200, 'OK')
            if url.path == '/route':
                ranks = [query.get(k) for k in _RANKS]
                if not all(ranks):
                    return self._reply(400, 'Missing inputs for bootstrap server.')
                if not STATE['ready']:
                    return self._reply(503, 'Prefill server not fully registered yet (0 workers registered).')
                dp, cp, tp, pp = [int(r) for r in ranks]
                if (dp, cp, tp, pp) == (-1, -1, -1, -1):
                    return self._reply(200, prefill_info(args))
                if (dp, cp, pp) == (0, 0, 0) and 0 <= tp < max(1, int(args.tp_size)):
                    # The stand-in's "transfer" goes over this server, so a rank's port is the bootstrap port.
                    return self._reply(200, dict(rank_ip=args.host, rank_port=int(args.disaggregation_bootstrap_port)))
                return self._reply(404, 'Bootstrap info not found for dp_rank=%s cp_rank=%s tp_rank=%s pp_rank=%s'
                                   % tuple(ranks))
            if url.path == '/standin/kv':
                room = query.get('room', '')
                with KV_LOCK:
                    entry = KV.get(room)
                    if entry is None or entry['taken'].is_set():
                        return self._reply(404, 'stand-in: no KV offered for room %s' % room)
                    entry['taken'].set()
                return self._reply(200, dict(room=int(room), prefill_http_port=int(args.port)))
            return self._reply(404, 'Not Found')

        def do_POST(self):  # noqa: N802 -- http.server API
            path = urllib.parse.urlsplit(self.path).path
            try:
                data = json.loads(self.rfile.read(int(self.headers.get('Content-Length') or 0)).decode() or '{}')
            except ValueError:
                return self._reply(400, 'invalid JSON body')
            if path == '/register_dp_rank':
                rooms[int(data['bootstrap_room'])] = int(data['dp_rank'])
                return self._reply(200, 'OK')
            if path == '/query_dp_ranks':
                return self._reply(200, dict((str(int(r)), rooms[int(r)]) for r in data.get('bootstrap_rooms', [])
                                             if int(r) in rooms))
            return self._reply(404, 'Not Found')

    return Bootstrap


def _first(value):
    """A bootstrap field of one request (smg sends lists for a batch: the first element)."""
    return value[0] if isinstance(value, list) and value else value


def record(entry):
    with LOCK:
        RECEIVED.append(entry)
        del RECEIVED[:-50]


def pd_prefill(entry):
    """Offer the room's "KV" after the prefill time; (status, error) once the decode took it or the wait ran out."""
    room = str(entry['bootstrap_room'])
    taken = threading.Event()
    time.sleep(LATENCY)
    with KV_LOCK:
        KV[room] = dict(taken=taken)
    ok = taken.wait(KV_TIMEOUT)
    with KV_LOCK:
        KV.pop(room, None)
    if ok:
        return 200, None
    return 500, ('stand-in prefill: no decode took the KV of bootstrap_room %s within %.0f s (SGLang waits for the '
                 'decode\'s metadata, then fails the transfer)' % (room, KV_TIMEOUT))


def pd_decode(args, entry, rid):
    """Fetch the prefill's info from its bootstrap server and take the room's KV: (status, error)."""
    addr = '%s:%s' % (entry['bootstrap_host'], entry['bootstrap_port'])
    failed = 'Decode transfer failed for request rank=0 decode_req.req.rid=%r decode_req.req.bootstrap_room=%s' % (
        rid, entry['bootstrap_room'])
    try:
        with urllib.request.urlopen('http://%s/route?%s' % (addr, '&'.join('%s=-1' % k for k in _RANKS)),
                                    timeout=5) as resp:
            info = json.loads(resp.read().decode())
    except (urllib.error.URLError, OSError, ValueError) as exc:
        log('Error fetching prefill server info from bootstrap: %s' % exc)
        return 500, failed + ' with exception Could not fetch prefill parallel info from bootstrap_addr: %s' % addr
    if info.get('page_size') is not None and int(info['page_size']) != int(args.page_size):
        return 500, ('Page size mismatch: prefill server has page_size=%s, but decode server has page_size=%s. Both '
                     'servers must use the same --page-size value.' % (info['page_size'], args.page_size))
    entry['kv_from'] = addr
    entry['prefill_http_port'] = info.get('prefill_http_port')
    deadline = time.time() + KV_TIMEOUT
    while time.time() < deadline:
        try:
            with urllib.request.urlopen('http://%s/standin/kv?room=%s' % (addr, entry['bootstrap_room']),
                                        timeout=5) as resp:
                resp.read()
                return 200, None
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                break
        except (urllib.error.URLError, OSError):
            break
        time.sleep(0.02)
    entry.pop('kv_from')
    return 500, failed + ' with exception stand-in: no KV for the room from %s' % addr


def make_handler(args):
    served = args.served_model_name or args.model_path
    mode = args.disaggregation_mode

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt, *values):  # uvicorn-style access log
            if not STATE['ready']:
                # Real SGLang has no HTTP server before the model is loaded: nothing to log (and a probe's access
                # lines would hide a stall).
                return
            status = values[1] if len(values) > 1 else ''
            raw('INFO:     %s:%d - "%s" %s' % (self.client_address[0], self.client_address[1], self.requestline, status))

        def _send(self, code, body, content_type='application/json'):
            data = body.encode() if content_type.startswith('text/') else json.dumps(body).encode()
            # Counted before the answer leaves: a client's next request (another thread) must see this one counted.
            if STATE['ready']:
                key = (self.path.split('?')[0], self.command, code)
                with HTTP_LOCK:
                    HTTP_COUNTS[key] = HTTP_COUNTS.get(key, 0) + 1
            self.send_response(code)
            self.send_header('Content-Type', content_type)
            self.send_header('Content-Length', str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802 -- http.server API
            path = self.path.split('?')[0]
            if args.api_key and not (path.startswith('/health') or path.startswith('/metrics')):
                if self.headers.get('Authorization') != 'Bearer %s' % args.api_key:
                    return self._send(401, {'error': 'Unauthorized'})
            if path in ('/health', '/health_generate'):
                return self._send(200, {}) if STATE['ready'] else self._send(503, {'error': 'starting'})
            if not STATE['ready']:
                return self._send(503, {'error': 'starting'})
            if path == '/v1/models':
                return self._send(200, {'object': 'list', 'data': [{'id': served, 'object': 'model', 'owned_by': 'sglang',
                                                                    'root': served,
                                                                    'max_model_len': args.context_length}]})
            if path == '/metrics':
                # SGLang mounts /metrics only with --enable-metrics (srt/utils/common.py add_prometheus_middleware).
                if not args.enable_metrics:
                    return self._send(404, {'detail': 'Not Found'})
                catalogue = load_catalogue()
                if catalogue is None:
                    return self._send(500, {'error': 'stand-in: SGLANG_STANDIN_METRICS (the release metrics table) is not set'})
                return self._send(200, exposition(catalogue, args), 'text/plain; version=0.0.4; charset=utf-8')
            if path == '/standin/received':
                with LOCK:
                    received = list(RECEIVED)
                return self._send(200, {'disaggregation_mode': mode, 'requests': received})
            if path in ('/model_info', '/get_model_info'):
                return self._send(200, {'model_path': args.model_path, 'is_generation': True,
                                        'architectures': ['Qwen3_5MoeForConditionalGeneration']})
            if path == '/v1/loads':
                with LOCK:
                    running = STATE['inflight']
                return self._send(200, {'timestamp': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
                                        'version': RECORDED.get('version'),
                                        'loads': [{'dp_rank': 0, 'num_running_reqs': running, 'num_waiting_reqs': 0}]})
            return self._send(404, {'detail': 'Not Found'})

        def do_POST(self):  # noqa: N802 -- http.server API
            path = self.path.split('?')[0]
            body = self.rfile.read(int(self.headers.get('Content-Length') or 0))
            if args.api_key and self.headers.get('Authorization') != 'Bearer %s' % args.api_key:
                return self._send(401, {'error': 'Unauthorized'})
            if not STATE['ready']:
                return self._send(503, {'error': 'starting'})
            if path != '/v1/chat/completions':
                return self._send(404, {'detail': 'Not Found'})
            if SCENARIO == 'chat_error':
                # Starts healthy, then every generation fails (what a smoke test is for).
                return self._send(500, {'object': 'error', 'type': 'InternalServerError', 'code': 500,
                                        'message': 'CUDA error: an illegal memory access was encountered'})
            try:
                request = json.loads(body.decode() or '{}')
            except ValueError:
                return self._send(400, {'object': 'error', 'message': 'invalid JSON body'})
            if request.get('model') not in (None, served):
                return self._send(404, {'object': 'error', 'message': 'The model `%s` does not exist.'
                                        % request.get('model'), 'type': 'NotFoundError', 'code': 404})
            entry = None
            if mode != 'null':
                entry = dict((k, _first(request.get(k))) for k in ('bootstrap_host', 'bootstrap_port', 'bootstrap_room'))
                entry.update(model=request.get('model'), messages=request.get('messages'))
                if entry['bootstrap_room'] is None:
                    # scheduler.py: a disaggregated server refuses a request without a room (backend not fake).
                    entry['status'] = 400
                    record(entry)
                    return self._send(400, {'object': 'error', 'type': 'BadRequestError', 'code': 400, 'message': (
                        "Invalid request: Disaggregated request received without bootstrap room id. req.rid='%s'"
                        % request.get('rid', 'standin'))})
            with LOCK:
                STATE['inflight'] += 1
            try:
                if mode == 'prefill':
                    status, error = pd_prefill(entry)
                elif mode == 'decode':
                    status, error = pd_decode(args, entry, request.get('rid', 'standin'))
                    if status == 200:
                        time.sleep(LATENCY)
                else:
                    status, error = 200, None
                    time.sleep(LATENCY)
            finally:
                with LOCK:
                    STATE['inflight'] -= 1
                    STATE['served'] += 1
                    number = STATE['served']
            if entry is not None:
                entry['status'] = status
                record(entry)
            if error:
                log(error)
                return self._send(status, {'object': 'error', 'type': 'InternalServerError', 'code': status,
                                           'message': error})
            text = 'stand-in %s:%d serves %s' % (socket.gethostname(), int(args.port), args.model_path)
            if INSTALLED.get('sglang'):
                text += ' with sglang %s' % INSTALLED['sglang']
            answer = {'id': 'standin-%d' % number, 'object': 'chat.completion', 'created': int(time.time()),
                      'model': served, 'choices': [{'index': 0, 'finish_reason': 'stop',
                                                    'message': {'role': 'assistant', 'content': text}}],
                      'usage': {'prompt_tokens': 8, 'completion_tokens': 6, 'total_tokens': 14}}
            if mode == 'prefill':
                # The prefill finishes at the transfer with FINISH_LENGTH(length=0): no text; smg discards it.
                text = ''
                answer['choices'] = [{'index': 0, 'finish_reason': 'length',
                                      'message': {'role': 'assistant', 'content': ''}}]
                answer['usage'] = {'prompt_tokens': 8, 'completion_tokens': 0, 'total_tokens': 8}
            if not request.get('stream'):
                return self._send(200, answer)
            words = text.split(' ')
            chunks = [dict(answer, object='chat.completion.chunk', usage=None,
                           choices=[{'index': 0, 'finish_reason': None,
                                     'delta': dict({'content': word + (' ' if i < len(words) - 1 else '')},
                                                   **({'role': 'assistant'} if i == 0 else {}))}])
                      for i, word in enumerate(words)]
            chunks.append(dict(answer, object='chat.completion.chunk',
                               choices=[{'index': 0, 'finish_reason': 'stop', 'delta': {}}]))
            data = (''.join('data: %s\n\n' % json.dumps(c) for c in chunks) + 'data: [DONE]\n\n').encode()
            self.send_response(200)
            self.send_header('Content-Type', 'text/event-stream')
            self.send_header('Content-Length', str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def fail(lines, code=1):
    # A traceback reaches the journal as Python prints it to stderr: no logger prefix.
    for line in lines:
        raw(line)
    sys.exit(code)


def main():
    args, _rest = parse(sys.argv[1:])
    INSTALLED['sglang'] = installed_sglang()
    scenario = os.environ.get('SGLANG_STANDIN_SCENARIO', 'healthy')
    delay = float(os.environ.get('SGLANG_STANDIN_DELAY', '0.1'))
    begin = 'Init torch distributed begin.' if os.environ.get('SGLANG_STANDIN_WORDING') == 'apr' else 'Init parallel begin.'
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

    # SGLang 0.5.23 logs its resolved arguments, API key included (entrypoints/engine.py _server_args_for_logging
    # only redacts watermark secrets): the role's launcher must keep it out of the journal.
    log('server_args={%r: %r, %r: %r, %r: %r, %r: %d, %r: %r, %r: %d}' % (
        'model_path', args.model_path, 'served_model_name', args.served_model_name, 'host', args.host,
        'port', args.port, 'api_key', args.api_key, 'tp_size', int(args.tp_size)))
    pause(delay)
    if scenario == 'mtp_radix':
        # The ValueError of server_args.py _handle_mamba_radix_cache in 0.5.9-0.5.12 (PR #19391; gone from 0.5.15,
        # where an explicit no_buffer fails the assertion of the mamba_no_buffer scenario instead).
        fail(['Traceback (most recent call last):',
              '  File "/opt/sglang/venv/lib/python3.12/site-packages/sglang/srt/server_args.py", line 2568, '
              'in _handle_mamba_radix_cache',
              'ValueError: Speculative decoding for Qwen3_5MoeForConditionalGeneration is not compatible with radix '
              'cache when using --mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, '
              'please use --mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1.'])
    if scenario == 'nvml_mismatch':
        # utils/common.py get_nvgpu_memory_capacity -> _cuda_mem_fallback; nvidia-smi's stderr has two lines.
        fail(['Traceback (most recent call last):',
              '  File "/opt/sglang/venv/lib/python3.12/site-packages/sglang/srt/utils/common.py", line 797, '
              'in _cuda_mem_fallback',
              'RuntimeError: nvidia-smi failed (exit code 18: Failed to initialize NVML: Driver/library version '
              'mismatch',
              'NVML library version: 565.57). torch.cuda.mem_get_info() fallback also failed: CUDA driver '
              'initialization failed, you might not have a CUDA gpu.'])
    if scenario == 'mamba_no_buffer':
        # 0.5.23 arg_groups/mamba_hook.py validate_mamba_no_buffer (--mamba-radix-cache-strategy no_buffer with overlap).
        fail(['Traceback (most recent call last):',
              '  File "/opt/sglang/venv/lib/python3.12/site-packages/sglang/srt/arg_groups/mamba_hook.py", line 158, '
              'in validate_mamba_no_buffer',
              '    assert view.disable_overlap_schedule, (',
              'AssertionError: no_buffer do not support overlap schedule. Try to set disable_overlap_schedule=True.'])
    if scenario in ('cuda_803', 'cuda_35'):
        text = ('Error 803: system has unsupported display driver / cuda driver combination' if scenario == 'cuda_803'
                else 'Error 35: CUDA driver version is insufficient for CUDA runtime version')
        fail(['Traceback (most recent call last):',
              '  File "/opt/sglang/venv/lib/python3.12/site-packages/torch/cuda/__init__.py", line 1027, '
              'in device_count',
              'RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before '
              'calling NumCudaDevices() that might have already set an error? ' + text])

    # The HTTP port is bound for real: a busy port fails like uvicorn does.
    try:
        server = ThreadingServer((args.host, int(args.port)), make_handler(args))
    except socket.error as exc:
        raw('ERROR:    [Errno %d] error while attempting to bind on address (%r, %d): %s'
            % (exc.errno or 98, args.host, int(args.port), 'address already in use'))
        sys.exit(1)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    if args.disaggregation_mode == 'prefill':
        # SGLang starts the bootstrap server with the tokenizer manager, before the model loads (/route answers 503
        # until the ranks registered); it binds --host too (managers/disagg_service.py).
        try:
            bootstrap = ThreadingServer((args.host, int(args.disaggregation_bootstrap_port)), make_bootstrap_handler(args))
        except socket.error as exc:
            raw('ERROR:    [Errno %d] bootstrap server: error while attempting to bind on address (%r, %d): %s'
                % (exc.errno or 98, args.host, int(args.disaggregation_bootstrap_port), 'address already in use'))
            sys.exit(1)
        threading.Thread(target=bootstrap.serve_forever, daemon=True).start()
        log('CommonKVBootstrapServer started successfully on %s:%d' % (args.host, int(args.disaggregation_bootstrap_port)))

    startup = startup_lines(args, begin)
    STARTUP_FIGURES.update(startup_figures(startup))
    # The parallel-init lines (every rank), then the rest up to the last weight-load line, then the pools and graphs.
    parallel = [i for i, line in enumerate(startup) if begin in line]
    loaded = max([i for i, line in enumerate(startup) if 'Load weight end.' in line] or [len(startup) - 1])
    for line in startup[:parallel[-1] + 1] if parallel else []:
        raw(stamp(line))
    if scenario == 'stall':
        # NCCL never returns from the first communicator init; nothing more is printed.
        while True:
            time.sleep(3600)
    pause(delay)
    shards = int(os.environ.get('SGLANG_STANDIN_SHARDS', '4'))
    previous = ''
    for line in startup[parallel[-1] + 1 if parallel else 0:loaded + 1]:
        if 'Load weight end.' in line and 'Load weight begin.' in previous and shards > 0:
            # Each weight load (the target's, the draft's) reads the checkpoint's shards.
            shard_bar(shards, delay)
        raw(stamp(line))
        previous = line
    pause(delay)
    if scenario == 'mamba_memory':
        fail(['Traceback (most recent call last):',
              '  File "/opt/sglang/venv/lib/python3.12/site-packages/sglang/srt/mem_cache/kv_cache_configurator.py", '
              'line 3394, in _handle_max_mamba_cache',
              'RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache. Computed '
              'max_mamba_cache_size=0 (total_rest_memory=0.02 GB, mamba_cache_per_req=36.63 MB). Try: (1) reduce '
              '--max-running-requests, (2) increase --mem-fraction-static, (3) reduce --speculative-num-draft-tokens, '
              'or (4) use GPUs with more memory.'])
    if scenario == 'not_enough_memory':
        fail(['Traceback (most recent call last):',
              '  File "/opt/sglang/venv/lib/python3.12/site-packages/sglang/srt/model_executor/pool_configurator.py", '
              'line 98, in __post_init__',
              'RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: '
              'mem_fraction_static=0.62'])
    for line in startup[loaded + 1:]:
        if 'CUDA graph end.' in line:
            pause(delay)
        raw(stamp(line))
    raw('INFO:     Started server process [%d]' % os.getpid())
    raw('INFO:     Waiting for application startup.')
    raw('INFO:     Application startup complete.')
    raw('INFO:     Uvicorn running on http://%s:%d (Press CTRL+C to quit)' % (args.host, int(args.port)))
    pause(delay)
    with HTTP_LOCK:
        # SGLang's own start-up requests went through its HTTP middleware: GET /model_info, then the warm-up (a
        # chat completion for a multimodal architecture; entrypoints/http_server.py _execute_server_warmup).
        HTTP_COUNTS[('/model_info', 'GET', 200)] = 1
        HTTP_COUNTS[('/v1/chat/completions', 'POST', 200)] = 1
    STATE['ready'] = True
    log('The server is fired up and ready to roll!')
    if scenario == 'crash_after_ready':
        time.sleep(5)
        fail(['RuntimeError: CUDA error: an illegal memory access was encountered'])
    while True:
        time.sleep(3600)


if __name__ == '__main__':
    main()
