#!/usr/bin/env python
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A real OpenAI-compatible server on the CPU for the lab: llama.cpp's server (the `xllamacpp` wheel) serving the
tiny GGUF model of make_tiny_model.py. It is NOT SGLang: it has /health, /v1/models, /v1/chat/completions (tools,
reasoning_content, streaming), /v1/completions, /metrics and /props, but no /server_info, /flush_cache or
/set_internal_state - the sglang_benchmark role must handle that gracefully.

Usage: openai_server.py --model DIR/model.gguf --port N [--api-key-file F] [--alias NAME] [--parallel N]
                        [--pid-file F] [--log-file F]
Runs in the foreground until SIGTERM/SIGINT; prints "READY <url>" once /health answers (into --log-file if given,
which also gets llama.cpp's own log).
"""
from __future__ import absolute_import, division, print_function

import argparse
import os
import signal
import sys
import threading
import time

try:
    from urllib.request import urlopen
except ImportError:  # pragma: no cover
    raise

import xllamacpp


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--model', required=True)
    parser.add_argument('--host', default='127.0.0.1')
    parser.add_argument('--port', type=int, required=True)
    parser.add_argument('--api-key-file', help='file holding the API key (keeps it off the command line)')
    parser.add_argument('--alias', default='tiny-qwen3')
    parser.add_argument('--parallel', type=int, default=4, help='slots (concurrent sequences, continuous batching)')
    parser.add_argument('--ctx', type=int, default=1024, help='context tokens per slot')
    # One thread: the model is tiny, and on a busy 2-core CI machine ggml's spinning thread barrier turns every
    # preempted helper thread into a stall (the lab measured 0.15-96 ms per token with two threads).
    parser.add_argument('--threads', type=int, default=1)
    parser.add_argument('--pid-file')
    parser.add_argument('--log-file')
    args = parser.parse_args()
    if args.log_file:
        # llama.cpp logs from C: redirect the file descriptors, not just sys.stdout/sys.stderr.
        fd = os.open(args.log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    if args.pid_file:
        with open(args.pid_file, 'w') as handle:
            handle.write('%d\n' % os.getpid())

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.hostnames = [args.host]
    params.port = args.port
    params.n_parallel = args.parallel
    params.n_ctx = args.ctx * args.parallel
    params.model_alias = {args.alias}
    params.endpoint_metrics = True
    params.use_jinja = True
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    if args.api_key_file:
        with open(args.api_key_file) as handle:
            params.api_keys = [handle.read().strip()]

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    server = xllamacpp.Server(params)
    url = 'http://%s:%d' % (args.host, args.port)
    deadline = time.time() + 60
    while True:
        try:
            if urlopen(url + '/health', timeout=2).getcode() == 200:
                break
        except (IOError, OSError):
            pass
        if time.time() > deadline:
            sys.stderr.write('openai_server: %s/health not ready after 60 s\n' % url)
            return 1
        time.sleep(0.2)
    sys.stdout.write('READY %s slots=%d alias=%s\n' % (url, args.parallel, args.alias))
    sys.stdout.flush()
    stop.wait()
    del server  # stops the server's threads
    if args.pid_file and os.path.exists(args.pid_file):
        os.unlink(args.pid_file)
    return 0


if __name__ == '__main__':
    sys.exit(main())
