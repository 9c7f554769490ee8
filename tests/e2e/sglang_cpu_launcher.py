#!/usr/bin/env python
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test seam of the deploy lab: the deployment's launcher override (llmops_sglang_launcher) that stands in for
`python -m sglang.launch_server` on a GPU-less systemd host.

  sglang_cpu_launcher.py --flags FLAGS.json --server openai_server.py [--replay STARTUP.log] -- <SGLang arguments>

1. Parses the SGLang arguments with exactly the flag set of the pinned SGLang release (FLAGS.json, dumped from
   ServerArgs.add_cli_args by tests/e2e/sglang_flags.py): an unknown flag or a bad choice ends the start the way
   SGLang's argparse does ("launch_server.py: error: unrecognized arguments: ...", exit 2).
2. Reads the API key from the --config file the role's sglang-launch wrapper appends (JSON {"api-key": ...}) into a
   0600 file of the runtime directory.
3. With --replay, prints SGLang's start-up lines of that file first (tests/fixtures/sglang_startup/: pool lines
   printed by the pinned release's own code for the seed, tests/sglang/make_startup_fixture.py; '#' lines skipped,
   ranks beyond --tp-size dropped, the scheduler line stating the --max-running-requests it was given when below the
   file's and the --context-length), so the role's start-up record compares SGLang's values with its plan.
4. Runs the real CPU OpenAI-compatible server of the benchmark lab (tests/bench/openai_server.py: llama.cpp's server
   through xllamacpp) on the *.gguf of --model-path, with --host/--port, --served-model-name as the model id, and at
   most 4 slots (--max-running-requests caps them), printing SGLang's ready line once it answers.
Stdlib only (the server it starts needs xllamacpp).
"""
from __future__ import absolute_import, division, print_function

import argparse
import glob
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

STOP_GRACE_SECONDS = 5


def build_parser(flags_file):
    with open(flags_file) as handle:
        spec = json.load(handle)
    # SGLang's usage line lists all ~500 flags; the error line below it is what the journal needs.
    parser = argparse.ArgumentParser(prog='launch_server.py', usage='launch_server.py [-h] [SGLang server arguments]')
    for action in spec['actions']:
        kwargs = {'dest': action['dest']}
        if not action['takes_value']:
            kwargs['action'] = 'store_true'
        else:
            if action.get('nargs'):
                kwargs['nargs'] = action['nargs']
            if action.get('choices'):
                kwargs['choices'] = action['choices']
        parser.add_argument(*action['flags'], **kwargs)
    return parser, spec.get('version')


def replay(path, args):
    """Print the start-up lines of the file for this command line (see the module docstring, step 3)."""
    tp = int(getattr(args, 'tp_size', None) or 1)
    with open(path) as handle:
        for line in handle.read().splitlines():
            rank = re.match(r'^\[[^\]]* TP(\d+)\]', line)
            if not line.strip() or line.startswith('#') or (rank and int(rank.group(1)) >= tp):
                continue
            match = re.search(r'max_running_requests=(\d+), context_len=(\d+)', line)
            if match and 'max_total_num_tokens=' in line:
                running = min(int(match.group(1)), int(getattr(args, 'max_running_requests', None) or match.group(1)))
                context = int(getattr(args, 'context_length', None) or match.group(2))
                line = line.replace(match.group(0), 'max_running_requests=%d, context_len=%d' % (running, context))
            sys.stdout.write(re.sub(r'^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d', time.strftime('[%Y-%m-%d %H:%M:%S'), line) + '\n')
    sys.stdout.flush()


def main(argv):
    if '--' not in argv:
        sys.stderr.write('usage: sglang_cpu_launcher.py --flags FLAGS.json --server SERVER.py -- SGLANG_ARGS...\n')
        return 64
    own = argparse.ArgumentParser(prog='sglang_cpu_launcher.py')
    own.add_argument('--flags', required=True)
    own.add_argument('--server', required=True)
    own.add_argument('--threads', type=int, default=2)
    own.add_argument('--replay')
    mine = own.parse_args(argv[:argv.index('--')])
    parser, version = build_parser(mine.flags)
    args = parser.parse_args(argv[argv.index('--') + 1:])  # exits 2 with SGLang's argparse wording

    api_key = None
    if getattr(args, 'config', None):
        with open(args.config) as handle:
            api_key = json.load(handle).get('api-key')
    models = sorted(glob.glob(os.path.join(args.model_path, '*.gguf')))
    if not models:
        sys.stderr.write('ValueError: no *.gguf in --model-path %s (the lab model repo ships model.gguf)\n' % args.model_path)
        return 1
    slots = max(1, min(4, int(getattr(args, 'max_running_requests', None) or 4)))
    command = [sys.executable, mine.server, '--model', models[0], '--host', args.host or '127.0.0.1',
               '--port', str(args.port or 30000), '--alias', args.served_model_name or args.model_path,
               '--parallel', str(slots), '--threads', str(mine.threads)]
    if api_key:
        directory = os.environ.get('RUNTIME_DIRECTORY', '').split(':')[0] or os.path.dirname(args.config)
        key_file = os.path.join(directory, 'api.key')
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, 'w') as handle:
            handle.write(api_key + '\n')
        command += ['--api-key-file', key_file]
    print('sglang-cpu-launcher: SGLang %s arguments parsed (tp_size=%s, speculative=%s, max_running_requests=%s); '
          'serving %s on the CPU as %s' % (version, getattr(args, 'tp_size', None), getattr(args, 'speculative_algorithm', None),
                                           getattr(args, 'max_running_requests', None), models[0], args.served_model_name))
    sys.stdout.flush()
    if mine.replay:
        replay(mine.replay, args)
    child = subprocess.Popen(command, stdout=subprocess.PIPE, universal_newlines=True)

    def stop(signum, frame):
        # llama.cpp's server thread does not always end on SIGTERM (seen once in three stops in the lab: systemd
        # then waited TimeoutStopSec=90 s for its SIGKILL). Ask once, then kill after a grace period, as SGLang exits.
        child.send_signal(signum)
        timer = threading.Timer(STOP_GRACE_SECONDS, child.kill)
        timer.daemon = True
        timer.start()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stop)
    for line in child.stdout:
        sys.stdout.write(line)
        if line.startswith('READY '):
            sys.stdout.write('The server is fired up and ready to roll!\n')
        sys.stdout.flush()
    return child.wait()


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
