#!/usr/bin/env python
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The SGLang Model Gateway in the lab: what it adds to a request, and a rolling swap under load, measured.

  gateway_bench.py --smg-python VENV/bin/python --launcher SMG_LAUNCH --lab-python LAB_PYTHON --model TINY_MODEL_DIR
                   [--repo ROOT] [--requests 40] [--rate 2] [--skip CASE ...] [--then CMD] [--check] [--json OUT]
  (SMG_LAUNCH: the sglang_gateway role's launcher, files/usr/local/libexec/llmops/smg-launch of the role)
  gateway_bench.py load --url GATEWAY --key-file F --model NAME [--rate 2] --stop-file S --out OUT.json
  (the background load alone, until S exists: what the molecule lab runs through a rolling swap of systemd replicas)
  gateway_bench.py pd --smg-python VENV/bin/python --launcher SMG_LAUNCH [--repo ROOT] [--check] [--keep]
  (the pd case alone: no llama.cpp, no model)

Everything is real: the pinned smg (its venv's python, run through the role's own launcher smg-launch, the key as a
systemd-style credential file), two llama.cpp OpenAI servers on the CPU (tests/bench/openai_server.py, the tiny
model), and the collection's module llmops.inference.sglang_gateway_worker run by ansible for every drain and
register. No systemd here (the sglang_server role's unit is what a real swap restarts; here the replica process is
restarted by this script between the drain and the register, which is the gateway's side of the swap).

Cases (each prints a line; --check exits 1 when one fails):
  readiness   /readiness 503 with no worker up, 200 once one is healthy
  auth        401 without the key on /v1/chat/completions, 200 with it
  spread      distinct prompts reach both replicas (each server's own request counter)
  kill        SIGKILL of one replica under load: zero failed client requests, the gateway marks it unhealthy
  swap        rolling swap of both replicas to a "new revision" (another model directory) under --rate req/s:
              zero failed requests, at every moment at least one replica serves, the old model answers until its
              replica is switched, both serve the new one at the end
  latency     p50/p99 of --requests sequential chat requests direct to a replica and through the gateway
  pd          prefill/decode disaggregation: a second smg started with the argv pd_check.gateway_args() renders in
              front of one prefill and one decode SGLang stand-in (tests/sglang/standin_server.py, started with
              pd_check.extra_args()): a chat request through it succeeds, the decode's answer, the prefill received the
              same request with the bootstrap_host/port/room smg injected (the room equal on both sides, the port the
              rendered one), the decode took the room's "KV" from that bootstrap server; a decode asked directly,
              without a room, refuses (400)
  pd-down     the prefill SIGKILLed: a request at once fails (smg's 502 transport error after its retries; the decode
              answered none), then 503 no prefill available once smg marked it unhealthy, /readiness 503
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import string
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request


def free_ports(count):
    """count distinct free ports of 127.0.0.1: every socket stays bound until all are picked, so the kernel cannot
    hand the same port out twice."""
    socks = [socket.socket() for _index in range(count)]
    try:
        for sock in socks:
            sock.bind(('127.0.0.1', 0))
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def call(url, key=None, body=None, method=None, timeout=60):
    headers = {'Content-Type': 'application/json'}
    if key:
        headers['Authorization'] = 'Bearer ' + key
    req = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None, headers=headers,
                                 method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except (urllib.error.URLError, OSError) as exc:
        return 0, str(exc)


def chat(base, key, model, max_tokens=4):
    prompt = ''.join(random.choice(string.ascii_lowercase) for _unused in range(12))
    return call(base + '/v1/chat/completions', key, {'model': model, 'max_tokens': max_tokens, 'temperature': 0,
                                                     'messages': [{'role': 'user', 'content': prompt}]})


def percentile(values, pct):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(pct / 100.0 * (len(values) - 1))))]


class Lab(object):
    def __init__(self, args):
        self.args = args
        self.dir = tempfile.mkdtemp(prefix='gateway_bench.')
        self.key = 'lab-' + ''.join(random.choice(string.ascii_letters) for _unused in range(24))
        self.keyfile = os.path.join(self.dir, 'api.key')
        fd = os.open(self.keyfile, os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, (self.key + '\n').encode())
        os.close(fd)
        os.makedirs(os.path.join(self.dir, 'creds'))
        shutil.copy(self.keyfile, os.path.join(self.dir, 'creds', 'api_key'))
        # Two "revisions": the same GGUF in two directories (the swap changes --model-path, as a new commit does).
        self.revisions = []
        for rev in ('r1', 'r2'):
            path = os.path.join(self.dir, 'models', rev)
            os.makedirs(path)
            os.link(os.path.join(args.model, 'model.gguf'), os.path.join(path, 'model.gguf')) \
                if os.stat(args.model).st_dev == os.stat(self.dir).st_dev else \
                shutil.copy(os.path.join(args.model, 'model.gguf'), path)
            self.revisions.append(path)
        self.workers = {}
        self.gateway = None
        self.gateway_port, self.metrics_port = free_ports(2)
        self.url = 'http://127.0.0.1:%d' % self.gateway_port

    def start_worker(self, name, port, revision):
        log = open(os.path.join(self.dir, '%s.log' % name), 'a')
        proc = subprocess.Popen([self.args.lab_python, os.path.join(self.args.repo, 'tests/bench/openai_server.py'),
                                 '--model', os.path.join(revision, 'model.gguf'), '--port', str(port),
                                 '--api-key-file', self.keyfile, '--alias', 'tiny', '--parallel', '2'],
                                stdout=log, stderr=subprocess.STDOUT)
        self.workers[name] = dict(proc=proc, port=port, url='http://127.0.0.1:%d' % port, revision=revision)
        return self.workers[name]

    def wait_worker(self, name, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if call(self.workers[name]['url'] + '/health')[0] == 200:
                return True
            time.sleep(0.2)
        raise RuntimeError('%s did not answer /health' % name)

    def stop_worker(self, name, sig=signal.SIGTERM):
        proc = self.workers[name]['proc']
        proc.send_signal(sig)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def start_gateway(self, urls):
        launcher = self.args.launcher
        argv = ['--host', '127.0.0.1', '--port', str(self.gateway_port), '--worker-urls'] + urls + [
            '--policy', 'cache_aware', '--health-check-interval-secs', '1', '--health-failure-threshold', '2',
            '--health-success-threshold', '1', '--retry-max-retries', '5', '--prometheus-host', '127.0.0.1',
            '--prometheus-port', str(self.metrics_port), '--shutdown-grace-period-secs', '5']
        env = dict(os.environ, CREDENTIALS_DIRECTORY=os.path.join(self.dir, 'creds'), NO_COLOR='1')
        self.gateway = subprocess.Popen([self.args.smg_python, launcher, '--'] + argv, env=env,
                                        stdout=open(os.path.join(self.dir, 'gateway.log'), 'w'),
                                        stderr=subprocess.STDOUT)

    def module(self, worker, state):
        """The collection's module, run by ansible on localhost, as the rolling swap runs it on the gateway host."""
        args = dict(gateway_url=self.url, worker_url=self.workers[worker]['url'], api_key=self.key, state=state,
                    min_serving=1, timeout=120, poll_interval=0.5,
                    inflight_metrics=['llamacpp:requests_processing', 'llamacpp:requests_deferred'])
        ansible = os.path.join(os.path.dirname(sys.executable), 'ansible')
        out = subprocess.run([ansible if os.path.exists(ansible) else shutil.which('ansible'), 'localhost', '-o',
                              '-m', 'llmops.inference.sglang_gateway_worker', '-a', json.dumps(args)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                             cwd=self.args.repo, check=False)
        line = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ''
        if out.returncode != 0 or '=> ' not in line:
            raise RuntimeError('sglang_gateway_worker %s %s failed: %s' % (state, worker, out.stdout[-1500:]))
        return json.loads(line.split('=> ', 1)[1])

    def served_revision(self, name):
        """The model file a replica serves, from llama.cpp's /props (model_path), or None when it is down."""
        status, text = call(self.workers[name]['url'] + '/props', self.key, timeout=5)
        if status != 200:
            return None
        path = json.loads(text).get('model_path') or ''
        return os.path.basename(os.path.dirname(path))

    def close(self):
        for worker in self.workers.values():
            if worker['proc'].poll() is None:
                worker['proc'].kill()
                worker['proc'].wait()
        if self.gateway and self.gateway.poll() is None:
            self.gateway.kill()
            self.gateway.wait()
        if not self.args.keep:
            shutil.rmtree(self.dir, ignore_errors=True)


class Load(object):
    """--rate requests/s through the gateway in the background; every answer recorded."""

    def __init__(self, url, key, model, rate):
        self.url, self.key, self.model, self.rate = url, key, model, rate
        self.results, self.stop, self.threads = [], threading.Event(), []

    def run(self):
        while not self.stop.is_set():
            thread = threading.Thread(target=self.one)
            thread.start()
            self.threads.append(thread)
            self.stop.wait(1.0 / self.rate)

    def one(self):
        started = time.time()
        status, text = chat(self.url, self.key, self.model)
        self.results.append(dict(t=round(started, 3), status=status, seconds=round(time.time() - started, 3),
                                 error=None if status == 200 else text[:200],
                                 answer=answer_text(text) if status == 200 else None))

    def __enter__(self):
        self.runner = threading.Thread(target=self.run)
        self.runner.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.runner.join()
        for thread in self.threads:
            thread.join()

    def failed(self):
        return [r for r in self.results if r['status'] != 200]


def answer_text(text):
    """The assistant's text of a chat completion answer ('' when it has none)."""
    try:
        return (json.loads(text)['choices'][0]['message'].get('content') or '')[:200]
    except (ValueError, KeyError, IndexError, TypeError):
        return ''


# What the SGLang stand-in (tests/sglang/standin_server.py) answers: which replica, which model directory, and which
# SGLang release when its interpreter has one (the venv the role installed).
STANDIN_ANSWER = re.compile(r'^stand-in (?P<server>\S+) serves (?P<model>\S+)(?: with sglang (?P<release>\S+))?$')


def summarize(results, pattern=STANDIN_ANSWER):
    """Failures, latency, the longest time without an answer, and per replica (from the answer text) the models it
    served in order: [{model, release, first, last, count}] - one segment per switch of model directory or release
    (release None where the answer names none)."""
    results = sorted(results, key=lambda r: r['t'])
    ok = [r for r in results if r['status'] == 200]
    done = sorted(r['t'] + r['seconds'] for r in ok)
    gaps = [b - a for a, b in zip(done, done[1:])]
    servers = {}
    for r in ok:
        match = pattern.match(r.get('answer') or '')
        if not match:
            continue
        segments = servers.setdefault(match.group('server'), [])
        served = dict(model=match.group('model'), release=match.groupdict().get('release'))
        if not segments or (segments[-1]['model'], segments[-1]['release']) != (served['model'], served['release']):
            segments.append(dict(served, first=r['t'], last=r['t'], count=0))
        segments[-1]['last'] = r['t']
        segments[-1]['count'] += 1
    seconds = sorted(r['seconds'] for r in ok)
    return dict(requests=len(results), failed=len(results) - len(ok),
                failures=[dict(t=r['t'], status=r['status'], error=r['error']) for r in results if r['status'] != 200][:5],
                started=results[0]['t'] if results else None, ended=done[-1] if done else None,
                p50_seconds=percentile(seconds, 50) if seconds else None, max_seconds=seconds[-1] if seconds else None,
                max_gap_seconds=round(max(gaps), 3) if gaps else None, servers=servers)


def load_main(argv):
    """Background load through a gateway until --stop-file exists; writes the summary and every result to --out."""
    parser = argparse.ArgumentParser(prog='gateway_bench.py load', description=load_main.__doc__)
    parser.add_argument('--url', required=True)
    parser.add_argument('--key-file', required=True)
    parser.add_argument('--model', required=True)
    parser.add_argument('--rate', type=float, default=2.0)
    parser.add_argument('--stop-file', required=True)
    parser.add_argument('--max-seconds', type=float, default=300,
                        help='stop anyway after this long (a lab run that failed before touching the stop file)')
    parser.add_argument('--out', required=True)
    args = parser.parse_args(argv)
    with open(args.key_file) as handle:
        key = handle.read().strip()
    deadline = time.time() + args.max_seconds
    with Load(args.url.rstrip('/'), key, args.model, args.rate) as load:
        # Also stops when the stop file's directory is gone (the lab was destroyed).
        while not os.path.exists(args.stop_file) and os.path.isdir(os.path.dirname(os.path.abspath(args.stop_file))) \
                and time.time() < deadline:
            time.sleep(0.2)
    summary = summarize(load.results)
    # Why it stopped: a load cut by --max-seconds is not a measurement of the whole change.
    summary['stopped_by'] = 'stop file' if os.path.exists(args.stop_file) else (
        'max-seconds' if time.time() >= deadline else 'lab gone')
    with open(args.out, 'w') as handle:
        json.dump(dict(summary=summary, rate=args.rate, results=load.results), handle, indent=1)
    print(json.dumps(summary))
    return 0


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--smg-python', required=True)
    parser.add_argument('--launcher', required=True, help="the sglang_gateway role's smg-launch")
    parser.add_argument('--lab-python', required=True)
    parser.add_argument('--model', required=True)
    parser.add_argument('--repo', default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument('--requests', type=int, default=40)
    parser.add_argument('--rate', type=float, default=2.0)
    parser.add_argument('--skip', nargs='*', default=[], choices=['swap', 'pd'],
                        help='cases to leave out (the molecule lab swaps systemd replicas through the playbook)')
    parser.add_argument('--then', help='a shell command to run while the gateway serves (case "then")')
    parser.add_argument('--check', action='store_true', help='exit 1 when a case fails')
    parser.add_argument('--keep', action='store_true')
    parser.add_argument('--json')
    args = parser.parse_args(argv)
    lab = Lab(args)
    cases, report = [], {}

    def case(name, ok, detail):
        cases.append((name, ok, detail))
        print('[gateway-lab] %-9s %s  %s' % (name, 'ok  ' if ok else 'FAIL', detail))
        sys.stdout.flush()

    try:
        ports = dict(zip(('a', 'b'), free_ports(2)))
        lab.start_gateway(['http://127.0.0.1:%d' % ports[n] for n in 'ab'])
        deadline = time.time() + 30
        early = None
        while time.time() < deadline and early is None:
            early = call(lab.url + '/readiness')
            early = early if early[0] else None
            time.sleep(0.2)
        for name in 'ab':
            lab.start_worker(name, ports[name], lab.revisions[0])
        for name in 'ab':
            lab.wait_worker(name)
        ready, deadline = None, time.time() + 60
        while time.time() < deadline:
            ready = call(lab.url + '/readiness')
            if ready[0] == 200:
                break
            time.sleep(0.5)
        case('readiness', early[0] == 503 and ready[0] == 200,
             'before the workers: %s %s; after: %s %s' % (early[0], early[1][:70], ready[0], ready[1][:70]))

        no_key = chat(lab.url, None, 'tiny')
        with_key = chat(lab.url, lab.key, 'tiny')
        case('auth', no_key[0] == 401 and with_key[0] == 200, 'no key: %d, key: %d' % (no_key[0], with_key[0]))

        before = dict((n, lab_requests(lab, n)) for n in 'ab')
        spread_codes = [chat(lab.url, lab.key, 'tiny')[0] for _unused in range(12)]
        after = dict((n, lab_requests(lab, n)) for n in 'ab')
        got = dict((n, after[n] - before[n]) for n in 'ab')
        case('spread', all(c == 200 for c in spread_codes) and all(v > 0 for v in got.values()),
             '12 requests with distinct prompts: replica a %d, b %d' % (got['a'], got['b']))

        # latency: direct to replica a vs through the gateway, sequential
        direct, through = [], []
        for _unused in range(args.requests):
            t0 = time.time()
            direct.append((chat(lab.workers['a']['url'], lab.key, 'tiny')[0], time.time() - t0))
            t0 = time.time()
            through.append((chat(lab.url, lab.key, 'tiny')[0], time.time() - t0))
        d = [s * 1000 for c, s in direct if c == 200]
        g = [s * 1000 for c, s in through if c == 200]
        report['latency'] = dict(direct_p50=percentile(d, 50), direct_p99=percentile(d, 99),
                                 gateway_p50=percentile(g, 50), gateway_p99=percentile(g, 99), n=args.requests)
        case('latency', len(d) == len(g) == args.requests, '%d requests each way' % args.requests)

        # kill: SIGKILL replica b under load
        with Load(lab.url, lab.key, 'tiny', args.rate * 2) as load:
            time.sleep(2)
            killed = time.time()
            lab.stop_worker('b', signal.SIGKILL)
            marked = None
            while time.time() - killed < 30 and marked is None:
                status, text = call(lab.url + '/workers', lab.key)
                entry = [w for w in json.loads(text)['workers'] if w['url'] == lab.workers['b']['url']]
                if entry and not entry[0]['is_healthy']:
                    marked = time.time() - killed
                time.sleep(0.5)
            time.sleep(2)
        case('kill', not load.failed() and marked is not None,
             '%d requests at %.0f/s, %d failed; replica b marked unhealthy %.1f s after SIGKILL'
             % (len(load.results), args.rate * 2, len(load.failed()), marked or -1))
        lab.start_worker('b', ports['b'], lab.revisions[0])
        lab.wait_worker('b')
        deadline = time.time() + 30
        while time.time() < deadline:
            status, text = call(lab.url + '/workers', lab.key)
            if all(w['is_healthy'] for w in json.loads(text)['workers']) and len(json.loads(text)['workers']) == 2:
                break
            time.sleep(0.5)

        if 'swap' not in args.skip:
            swap_case(lab, args, ports, report, case)

        if args.then:
            then_case(lab, args, case)

        if 'pd' not in args.skip:
            pd_case(args, lab.dir, os.path.join(lab.dir, 'creds'), lab.key, case)

        leaked = [f for f in os.listdir(lab.dir) if f.endswith('.log') and lab.key in open(os.path.join(lab.dir, f)).read()]
        case('no-leak', not leaked, 'API key in no log (%s)' % (', '.join(leaked) or 'none'))
    finally:
        lab.close()

    lat = report.get('latency')
    print('\nSGLang Model Gateway (smg) in the lab: 2 llama.cpp CPU replicas, tiny model, 4 output tokens')
    print('| measure | direct to a replica | through the gateway | added |')
    print('|---|---|---|---|')
    if lat:
        for pct in ('p50', 'p99'):
            print('| %s latency, ms (%d sequential requests) | %.1f | %.1f | %.1f |' % (
                pct, lat['n'], lat['direct_' + pct], lat['gateway_' + pct], lat['gateway_' + pct] - lat['direct_' + pct]))
    swap = report.get('swap')
    if swap:
        print('\n| rolling swap (2 replicas, one at a time) | value |')
        print('|---|---|')
        print('| background load | %.0f requests/s |' % swap['rate'])
        print('| requests / failed | %d / %d |' % (swap['requests'], swap['failed']))
        print('| success rate | %.1f %% |' % (100 * swap['success_rate']))
        print('| duration | %.1f s |' % swap['seconds'])
        print('| drain per replica (gateway forgot it / nothing in flight), s | %s |' % ', '.join(
            '%s / %s' % (d['gateway_seconds'], d['seconds']) for d in swap['drains'] if d))
        print('| register per replica (until healthy), s | %s |' % ', '.join(
            str(r['seconds']) for r in swap['registers'] if r))
    if args.json:
        with open(args.json, 'w') as handle:
            json.dump(dict(report, cases=cases), handle, indent=2)
    failed = [c for c in cases if not c[1]]
    print('\n%d passed, %d failed' % (len(cases) - len(failed), len(failed)))
    return 1 if (failed and args.check) else 0


def swap_case(lab, args, ports, report, case):
    """Drain -> restart on the new revision -> register, one replica at a time, under --rate requests/s."""
    timeline, samples = [], []
    sampling = threading.Event()

    def sample():
        while not sampling.is_set():
            samples.append((time.time(), dict((n, lab.served_revision(n)) for n in 'ab')))
            sampling.wait(0.5)

    sampler = threading.Thread(target=sample)
    swap_started = time.time()
    with Load(lab.url, lab.key, 'tiny', args.rate) as load:
        sampler.start()
        time.sleep(2)
        for name in 'ab':
            drained = lab.module(name, 'drained')
            timeline.append((time.time(), name, 'drained', drained.get('drain')))
            lab.stop_worker(name)
            lab.start_worker(name, ports[name], lab.revisions[1])
            lab.wait_worker(name)
            registered = lab.module(name, 'present')
            timeline.append((time.time(), name, 'registered', registered.get('register')))
        time.sleep(2)
        sampling.set()
        sampler.join()
    swap_seconds = time.time() - swap_started
    mixed = any(set(s.values()) == {'r1', 'r2'} for _t, s in samples)
    serving_always = all(any(v is not None for v in s.values()) for _t, s in samples)
    final = samples[-1][1] if samples else {}
    order_ok = all(s['a'] in ('r1', None) for t, s in samples if t < timeline[0][0]) and \
        all(s['b'] == 'r1' for t, s in samples if t < timeline[2][0] - 0.5 and s['b'] is not None)
    ok = not load.failed() and mixed and serving_always and final == {'a': 'r2', 'b': 'r2'} and order_ok
    report['swap'] = dict(requests=len(load.results), failed=len(load.failed()), seconds=round(swap_seconds, 1),
                          rate=args.rate, success_rate=(len(load.results) - len(load.failed())) / max(1, len(load.results)),
                          drains=[t[3] for t in timeline if t[2] == 'drained'],
                          registers=[t[3] for t in timeline if t[2] == 'registered'])
    detail = ('%d requests at %.0f/s over %.1f s, %d failed; old and new served side by side: %s; a replica served '
              'throughout: %s; at the end %s' % (len(load.results), args.rate, swap_seconds, len(load.failed()), mixed,
                                                 serving_always, final))
    case('swap', ok, detail)
    if load.failed():
        print('  failed:', load.failed()[:3])


def then_case(lab, args, case):
    """--then: a command run while the gateway serves both replicas (the integration target runs the smoke and
    benchmark roles through it); its environment names the gateway, the key file and the served model."""
    env = dict(os.environ, GATEWAY_URL=lab.url, GATEWAY_KEY_FILE=lab.keyfile, GATEWAY_MODEL='tiny',
               GATEWAY_WORKERS=' '.join(w['url'] for w in lab.workers.values()))
    started = time.time()
    rc = subprocess.call(args.then, shell=True, env=env)
    case('then', rc == 0, '%s: exit %d after %.1f s' % (args.then.split()[0], rc, time.time() - started))


def lab_requests(lab, name):
    """Requests a llama.cpp replica has processed (its own counter, llamacpp:requests_processing is a gauge; the
    prompt-token counter grows with every request)."""
    status, text = call(lab.workers[name]['url'] + '/metrics', lab.key)
    for line in text.splitlines():
        if line.startswith('llamacpp:prompt_tokens_total'):
            return float(line.split()[-1])
    raise RuntimeError('%s: no llamacpp:prompt_tokens_total in /metrics (%s)' % (name, status))


def load_pd_check(repo):
    """plugins/module_utils/sglang/pd_check.py of the checkout (pure, stdlib only), loaded from its file."""
    import importlib.util
    spec = importlib.util.spec_from_file_location('pd_check', os.path.join(
        repo, 'plugins', 'module_utils', 'sglang', 'pd_check.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pd_layout(ports):
    """The lab's PD layout: one prefill and one decode of TP 1 on this machine, Mooncake over TCP (no RDMA here)."""
    return dict(arch='Qwen3_5MoeForConditionalGeneration', mla=False, sliding_window=False,
                transfer_backend='mooncake_tcp', devices=dict(infiniband=False, memlock_unlimited=False),
                prefill=dict(host='127.0.0.1', http_port=ports['prefill'], bootstrap_port=ports['bootstrap'], tp=1),
                decode=dict(host='127.0.0.1', http_port=ports['decode'], tp=1),
                gateway=dict(host='127.0.0.1', port=ports['gateway']))


def pd_received(url, messages):
    """The stand-in's record of the chat requests it received with these messages (GET /standin/received)."""
    status, text = call(url + '/standin/received', timeout=10)
    if status != 200:
        return None
    return [r for r in json.loads(text)['requests'] if r.get('messages') == messages]


def pd_case(args, workdir, creds, key, case):
    """PD disaggregation behind the real smg (cases pd and pd-down; the module doc says what each asserts)."""
    started = time.time()
    pd_check = load_pd_check(args.repo)
    names = ('prefill', 'bootstrap', 'decode', 'gateway', 'metrics')
    ports = dict(zip(names, free_ports(len(names))))
    layout = pd_layout(ports)
    refusals = pd_check.check(layout)
    model = os.path.join(workdir, 'models', 'pd')
    if not os.path.isdir(model):
        os.makedirs(model)
    procs = {}
    # No API key on the stand-ins: they print their server_args, key included, as the pinned SGLang does (no-leak reads
    # every log here); the gateway requires the key.
    env = dict(os.environ, SGLANG_STANDIN_DELAY='0', SGLANG_STANDIN_SHARDS='0', SGLANG_STANDIN_LATENCY='0.2',
               SGLANG_STANDIN_KV_TIMEOUT='5')
    try:
        for side in ('prefill', 'decode'):
            argv = [sys.executable, os.path.join(args.repo, 'tests', 'sglang', 'standin_server.py'),
                    '--model-path', model, '--served-model-name', 'tiny', '--host', '127.0.0.1',
                    '--port', str(ports[side]), '--tp-size', '1'] + pd_check.extra_args(layout, side)
            procs[side] = subprocess.Popen(argv, env=env, stdout=open(os.path.join(workdir, 'pd-%s.log' % side), 'w'),
                                           stderr=subprocess.STDOUT)
        urls = dict((side, 'http://127.0.0.1:%d' % ports[side]) for side in ('prefill', 'decode'))
        # smg re-probes a worker that failed its first health check only after 30 s: start it once both serve.
        deadline = time.time() + 30
        while time.time() < deadline and not all(call(u + '/health', timeout=2)[0] == 200 for u in urls.values()):
            time.sleep(0.1)
        bootstrap_health = call('http://127.0.0.1:%d/health' % ports['bootstrap'], timeout=2)
        gateway_pd = pd_check.gateway_args(layout)
        argv = ['--host', '127.0.0.1', '--port', str(ports['gateway'])] + gateway_pd + [
            '--health-check-interval-secs', '1', '--health-failure-threshold', '2', '--health-success-threshold', '1',
            '--prometheus-host', '127.0.0.1', '--prometheus-port', str(ports['metrics'])]
        gateway_env = dict(os.environ, CREDENTIALS_DIRECTORY=creds, NO_COLOR='1')
        procs['gateway'] = subprocess.Popen([args.smg_python, args.launcher, '--key-required', '--'] + argv,
                                            env=gateway_env, stdout=open(os.path.join(workdir, 'pd-gateway.log'), 'w'),
                                            stderr=subprocess.STDOUT)
        gateway = 'http://127.0.0.1:%d' % ports['gateway']
        ready, deadline = (0, ''), time.time() + 30
        while time.time() < deadline and ready[0] != 200:
            time.sleep(0.2)
            ready = call(gateway + '/readiness', timeout=2)
        prompt = 'pd-' + ''.join(random.choice(string.ascii_lowercase) for _unused in range(12))
        messages = [{'role': 'user', 'content': prompt}]
        status, text = call(gateway + '/v1/chat/completions', key, {'model': 'tiny', 'max_tokens': 4,
                                                                    'messages': messages})
        answer = STANDIN_ANSWER.match(answer_text(text) if status == 200 else '')
        got = dict((side, pd_received(urls[side], messages)) for side in urls)
        # Exactly one record each: smg sent the request once (no retry) to each side.
        pre, dec = [got[side][0] if got[side] and len(got[side]) == 1 else None for side in ('prefill', 'decode')]
        # What gateway_args() rendered for the prefill: --prefill URL BOOTSTRAP_PORT.
        rendered = gateway_pd[gateway_pd.index('--prefill') + 1:gateway_pd.index('--prefill') + 3]
        direct = call(urls['decode'] + '/v1/chat/completions', None, {'model': 'tiny', 'messages': messages})
        checks = dict(
            layout_accepted=not refusals,
            bootstrap_server=bootstrap_health == (200, 'OK'),
            ready=ready[0] == 200,
            answered=status == 200,
            decode_answered=bool(answer) and answer.group('server') == '%s:%d' % (socket.gethostname(), ports['decode'])
            and answer.group('model') == model,
            prefill_received=bool(pre) and pre['status'] == 200,
            decode_received=bool(dec) and dec['status'] == 200,
            room_equal=bool(pre and dec) and isinstance(pre['bootstrap_room'], int)
            and pre['bootstrap_room'] == dec['bootstrap_room'],
            bootstrap_as_rendered=bool(pre and dec) and rendered == [urls['prefill'], str(pre['bootstrap_port'])]
            and pre['bootstrap_port'] == dec['bootstrap_port'] == ports['bootstrap']
            and pre['bootstrap_host'] == dec['bootstrap_host'] == '127.0.0.1',
            kv_from_prefill=bool(dec) and dec.get('kv_from') == '127.0.0.1:%d' % ports['bootstrap']
            and dec.get('prefill_http_port') == ports['prefill'],
            direct_without_room_refused=direct[0] == 400 and 'without bootstrap room id' in direct[1])
        failed = sorted(k for k, v in checks.items() if not v)
        case('pd', not failed, 'gateway %s; chat %d answered by %s; room %s on both sides, bootstrap %s:%s; decode '
             'direct without a room: %d%s' % (' '.join(gateway_pd), status, answer.group('server') if answer else None,
                                              pre and pre['bootstrap_room'], pre and pre['bootstrap_host'],
                                              pre and pre['bootstrap_port'], direct[0],
                                              '; FAILED: %s' % ', '.join(failed) if failed else ''))
        if failed:
            print('  answer: %s %s\n  prefill received: %s\n  decode received: %s\n  refusals: %s'
                  % (status, text[:300], got['prefill'], got['decode'], refusals))
        pd_down_case(procs, urls, gateway, key, case)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    print('[gateway-lab] pd cases took %.1f s' % (time.time() - started))


def pd_down_case(procs, urls, gateway, key, case):
    """The prefill SIGKILLed under the gateway: what smg answers at once, and once it has marked it unhealthy."""
    procs['prefill'].kill()
    procs['prefill'].wait()
    killed = time.time()
    messages = [{'role': 'user', 'content': 'pd-down-' + ''.join(random.choice(string.ascii_lowercase)
                                                                 for _unused in range(8))}]
    first = call(gateway + '/v1/chat/completions', key, {'model': 'tiny', 'max_tokens': 4, 'messages': messages})
    decode_saw = pd_received(urls['decode'], messages) or []
    marked = None
    while time.time() - killed < 20 and marked is None:
        status, text = call(gateway + '/workers', key, timeout=5)
        entry = [w for w in json.loads(text)['workers'] if w['url'] == urls['prefill']] if status == 200 else []
        if entry and not entry[0]['is_healthy']:
            marked = time.time() - killed
        else:
            time.sleep(0.2)
    later = call(gateway + '/v1/chat/completions', key, {'model': 'tiny', 'max_tokens': 4, 'messages': messages})
    readiness = call(gateway + '/readiness', timeout=5)

    def code(answer):
        try:
            return json.loads(answer[1])['error']['code']
        except (ValueError, KeyError, TypeError):
            return None
    # The decode sees some of smg's attempts (try_join drops its leg when the prefill's fails first): none answered.
    ok = (first[0] == 502 and code(first) == 'PD disaggregation request failed'
          and all(r['status'] == 500 for r in decode_saw) and marked is not None
          and later[0] == 503 and code(later) == 'no_available_workers' and 'prefill' in later[1]
          and readiness[0] == 503)
    case('pd-down', ok, 'at once: %d %s (the decode got %d attempt(s), answered none: %s); prefill marked unhealthy '
         '%.1f s after SIGKILL; then: %d %s; /readiness %d' % (
             first[0], code(first), len(decode_saw), sorted(set(r['status'] for r in decode_saw)), marked or -1,
             later[0], code(later), readiness[0]))
    if not ok:
        print('  at once: %s\n  then: %s' % (first[1][:300], later[1][:300]))


def pd_main(argv):
    """The pd cases alone (no llama.cpp replicas, no model)."""
    parser = argparse.ArgumentParser(prog='gateway_bench.py pd', description=pd_main.__doc__)
    parser.add_argument('--smg-python', required=True)
    parser.add_argument('--launcher', required=True, help="the sglang_gateway role's smg-launch")
    parser.add_argument('--repo', default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument('--check', action='store_true', help='exit 1 when a case fails')
    parser.add_argument('--keep', action='store_true')
    args = parser.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix='gateway_bench_pd.')
    key = 'lab-' + ''.join(random.choice(string.ascii_letters) for _unused in range(24))
    creds = os.path.join(workdir, 'creds')
    os.makedirs(creds)
    fd = os.open(os.path.join(creds, 'api_key'), os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, (key + '\n').encode())
    os.close(fd)
    cases = []

    def case(name, ok, detail):
        cases.append((name, ok, detail))
        print('[gateway-lab] %-9s %s  %s' % (name, 'ok  ' if ok else 'FAIL', detail))
        sys.stdout.flush()

    try:
        pd_case(args, workdir, creds, key, case)
        leaked = [f for f in os.listdir(workdir) if f.endswith('.log') and key in open(os.path.join(workdir, f)).read()]
        case('no-leak', not leaked, 'API key in no log (%s)' % (', '.join(leaked) or 'none'))
    finally:
        if args.keep:
            print('kept %s' % workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    failed = [c for c in cases if not c[1]]
    print('\n%d passed, %d failed' % (len(cases) - len(failed), len(failed)))
    return 1 if (failed and args.check) else 0


if __name__ == '__main__':
    sys.exit(load_main(sys.argv[2:]) if sys.argv[1:2] == ['load'] else
             pd_main(sys.argv[2:]) if sys.argv[1:2] == ['pd'] else main(sys.argv[1:]))
