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
with a canned text that names the host, port and model path it serves (no inference: the lab checks which replica and
which revision answered; a stream request gets the same text as one SSE chunk per word), and GET /v1/loads with its own count
of requests in flight in the shape of 0.5.23's srt/entrypoints/v1_loads.py (loads[].num_running_reqs,
num_waiting_reqs), which the rolling swap's drain waits on.

Scenarios: healthy (default), mtp_radix, mamba_no_buffer, not_enough_memory, mamba_memory, nvml_mismatch, cuda_803,
cuda_35, stall,
port_in_use (the port is really bound first: any busy port fails the same way), crash_after_ready,
chat_error (starts healthy, every chat completion answers 500).
Env: SGLANG_STANDIN_SCENARIO, SGLANG_STANDIN_DELAY (seconds between lines, default 0.1), SGLANG_STANDIN_LATENCY,
     SGLANG_STANDIN_WORDING (0.5.23 default; "apr" prints "Init torch distributed begin.").
Stdlib only (python3 >= 3.6). No shebang in the repository (sanity rules); the molecule prepare step installs it
with "#!/usr/bin/python3" as /opt/standin/bin/sglang-standin.
"""
import argparse
import json
import os
import signal
import socket
import sys
import threading
import time

try:
    from http.server import BaseHTTPRequestHandler, HTTPServer
    from socketserver import ThreadingMixIn
except ImportError:  # pragma: no cover
    raise

STATE = {'ready': False, 'inflight': 0, 'served': 0}
LATENCY = float(os.environ.get('SGLANG_STANDIN_LATENCY', '0.2'))
SCENARIO = os.environ.get('SGLANG_STANDIN_SCENARIO', 'healthy')
LOCK = threading.Lock()


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


def make_handler(args):
    served = args.served_model_name or args.model_path

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt, *values):  # uvicorn-style access log
            if not STATE['ready']:
                # Real SGLang has no HTTP server before the model is loaded: nothing to log (and a probe's access
                # lines would hide a stall).
                return
            status = values[1] if len(values) > 1 else ''
            raw('INFO:     %s:%d - "%s" %s' % (self.client_address[0], self.client_address[1], self.requestline, status))

        def _send(self, code, body):
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header('Content-Type', 'application/json')
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
            if path in ('/model_info', '/get_model_info'):
                return self._send(200, {'model_path': args.model_path, 'is_generation': True,
                                        'architectures': ['Qwen3_5MoeForConditionalGeneration']})
            if path == '/v1/loads':
                with LOCK:
                    running = STATE['inflight']
                return self._send(200, {'timestamp': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
                                        'version': '0.5.23', 'loads': [{'dp_rank': 0, 'num_running_reqs': running,
                                                                        'num_waiting_reqs': 0}]})
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
            with LOCK:
                STATE['inflight'] += 1
            try:
                time.sleep(LATENCY)
            finally:
                with LOCK:
                    STATE['inflight'] -= 1
                    STATE['served'] += 1
                    number = STATE['served']
            text = 'stand-in %s:%d serves %s' % (socket.gethostname(), int(args.port), args.model_path)
            answer = {'id': 'standin-%d' % number, 'object': 'chat.completion', 'created': int(time.time()),
                      'model': served, 'choices': [{'index': 0, 'finish_reason': 'stop',
                                                    'message': {'role': 'assistant', 'content': text}}],
                      'usage': {'prompt_tokens': 8, 'completion_tokens': 6, 'total_tokens': 14}}
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
    scenario = os.environ.get('SGLANG_STANDIN_SCENARIO', 'healthy')
    delay = float(os.environ.get('SGLANG_STANDIN_DELAY', '0.1'))
    begin = 'Init torch distributed begin.' if os.environ.get('SGLANG_STANDIN_WORDING') == 'apr' else 'Init parallel begin.'
    end = begin.replace('begin.', 'ends.')
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

    tp = max(1, int(args.tp_size))
    for rank in range(tp):
        log(begin, rank)
    if scenario == 'stall':
        # NCCL never returns from the first communicator init; nothing more is printed.
        while True:
            time.sleep(3600)
    pause(delay)
    for rank in range(tp):
        log('%s elapsed=1.52 s' % end, rank)
    log('Load weight begin. avail mem=93.72 GB', 0)
    pause(delay)
    log('Load weight end. elapsed=95.31 s, type=Qwen3_5MoeForConditionalGeneration, avail mem=36.52 GB, '
        'mem usage=57.20 GB.', 0)
    log('Load weight end. elapsed=2.10 s, type=Qwen3_5ForCausalLMMTP, avail mem=35.30 GB, mem usage=1.22 GB.', 0)
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
    log('Mamba Cache is allocated. max_mamba_cache_size: 111, conv_state size: 0.07GB, ssm_state size: 3.97GB '
        'intermediate_ssm_state_cache size: 3.29GB intermediate_conv_window_cache size: 0.12GB ', 0)
    log('KV Cache is allocated. dtype: torch.bfloat16, #tokens: 715559, K size: 4.10 GB, V size: 4.10 GB', 0)
    log('Memory pool end. avail mem=15.61 GB', 0)
    pause(delay)
    log('Capture target verify CUDA graph end. elapsed=21.33 s, mem usage=1.85 GB, avail mem=13.70 GB.', 0)
    log('max_total_num_tokens=715559, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=%d, '
        'context_len=%d, available_gpu_mem=13.70 GB' % (int(args.max_running_requests), int(args.context_length)), 0)
    raw('INFO:     Started server process [%d]' % os.getpid())
    raw('INFO:     Waiting for application startup.')
    raw('INFO:     Application startup complete.')
    raw('INFO:     Uvicorn running on http://%s:%d (Press CTRL+C to quit)' % (args.host, int(args.port)))
    pause(delay)
    STATE['ready'] = True
    log('The server is fired up and ready to roll!')
    if scenario == 'crash_after_ready':
        time.sleep(5)
        fail(['RuntimeError: CUDA error: an illegal memory access was encountered'])
    while True:
        time.sleep(3600)


if __name__ == '__main__':
    main()
