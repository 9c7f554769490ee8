# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""`make compare`: which layout serves a load - every layout of a model on a host's GPUs, sized by the VRAM planner,
estimated at the target traffic and ranked (docs/compare.md; issue #30).

    python tests/tools/compare_console.py                      # the example inventory's server, stated defaults
    python tests/tools/compare_console.py --model qwen3.5-122b-a10b --gpu rtx-pro-6000-blackwell-server --gpus 4 \
        --isl 1024 --osl 1024 --rate 2 --ttft-p99 2000 --tpot-p99 50 [--inventory inventories/example] \
        [--records runs.jsonl ...] [--record-dir DIR] [--out DIR]

Without --model/--gpu/--gpus it reads the first host of sglang_servers of the inventory (default inventories/example):
llmops_model_profile, llmops_gpu_profile, the GPUs as len(llmops_gpu_indices) (else llmops_tp_size). The traffic
shape comes from the inventory's sglang_benchmark_input_len / _output_len, else the sglang_benchmark role's defaults;
the rate from the first of sglang_benchmark_request_rates, else DEFAULT_RATE; the targets default to DEFAULT_TTFT_P99_MS
and DEFAULT_TPOT_P99_MS. It writes build/compare/<knobs>/compare.md, pareto.svg and snippet.yml and prints the table
and its own wall time.

Measured points: the published table (profiles/measurements/published.yml), the sglang_benchmark role's records in
the deployment record (<record dir>/<host>/<instance>/benchmarks.json; the record dir is --record-dir, else the
inventory's llmops_record_dir, else build/deploy of this checkout, the resolver's default), and runs.jsonl files given
with --records. --sample (the committed docs/samples/ copy) reads the published table only, unless --record-dir is given.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collection_paths as cp  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.llmops.inference.plugins.module_utils.bench import record as bench_record  # noqa: E402
from ansible_collections.llmops.inference.plugins.module_utils.compare import calibrate  # noqa: E402
from ansible_collections.llmops.inference.plugins.module_utils.compare import layouts as layouts_lib  # noqa: E402
from ansible_collections.llmops.inference.plugins.module_utils.compare import pd as pd_lib  # noqa: E402
from ansible_collections.llmops.inference.plugins.module_utils.compare import perf  # noqa: E402
from ansible_collections.llmops.inference.plugins.module_utils.compare import rank as rank_lib  # noqa: E402
from ansible_collections.llmops.inference.plugins.module_utils.compare import report  # noqa: E402
from ansible_collections.llmops.inference.plugins.module_utils.compare import svg  # noqa: E402
from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan  # noqa: E402

ROOT = cp.ROOT
MEASUREMENTS = os.path.join(ROOT, 'profiles', 'measurements', 'published.yml')
DEFAULT_INVENTORY = 'inventories/example'
DEFAULT_RATE = 1.0
DEFAULT_TTFT_P99_MS = 2000.0
DEFAULT_TPOT_P99_MS = 50.0


def load_yaml(path):
    with open(path, encoding='utf-8') as handle:
        return yaml.safe_load(handle) or {}


def profile(kind, name):
    path = os.path.join(ROOT, 'profiles', kind, '%s.yml' % name)
    if not os.path.isfile(path):
        names = sorted(n[:-4] for n in os.listdir(os.path.join(ROOT, 'profiles', kind)) if n.endswith('.yml'))
        raise SystemExit('compare: no profile profiles/%s/%s.yml (known: %s)' % (kind, name, ', '.join(names)))
    return load_yaml(path)


# ---------------------------------------------------------------------------------------------------------------------
# Measured points: the published table and benchmark records


def _setup_model(model):
    if model.get('profile'):
        prof = profile('models', model['profile'])
        config, weights = prof['config'], prof.get('weights_bytes')
    else:
        with open(os.path.join(ROOT, model['config']), encoding='utf-8') as handle:
            config, weights = json.load(handle), None
    if model.get('quantization_config'):
        config = dict(config, quantization_config=model['quantization_config'])
    return config, weights


def prepare(setup_id, setup, point, release, cache):
    """One measured level as calibrate.py takes it, or None (with the reason) when the planner cannot size it."""
    key = setup_id
    if key not in cache:
        config, weights = _setup_model(setup['model'])
        gpu = profile('hardware', setup['gpu'])
        spec = setup.get('speculative') or {}
        kwargs = dict(model_config=config, weights_bytes=weights, gpu_profile=gpu, tp_size=setup['tp'], release=release,
                      speculative_num_draft_tokens=spec.get('num_draft_tokens') or 0,
                      speculative_num_steps=spec.get('num_steps'), speculative_eagle_topk=spec.get('eagle_topk'),
                      speculative_algorithm=spec.get('algorithm'))
        facts = vram_plan.model_facts_once(config, release)
        try:
            result = vram_plan.plan(model_facts=facts, **kwargs)
        except vram_plan.PlanError as exc:
            cache[key] = (None, str(exc))
        else:
            cache[key] = ((facts, result, gpu), None)
    planned, why = cache[key]
    if planned is None:
        return None, why
    facts, result, gpu = planned
    accept = point.get('accept_length') or setup.get('accept_length')
    lengths = setup.get('lengths') or {}
    return dict(id='%s@c%d' % (setup_id, point['concurrency']), setup=setup_id, engine=setup.get('engine', 'sglang'),
                calibrates=bool(setup.get('calibrates')) and setup.get('engine') == 'sglang',
                group=(gpu['compute_capability'], result['family']), gpu=setup['gpu'], gpus=setup['gpus'],
                tp=setup['tp'], concurrency=int(point['concurrency']), isl=lengths.get('isl'), osl=lengths.get('osl'),
                lengths_stated=bool(lengths.get('stated')), source=setup.get('source'),
                measured=dict((m, point[m]) for m in calibrate.METRICS if point.get(m)),
                cost=perf.costs(facts, result, accept), hw=perf.hardware(gpu), cap=_cap(setup, point, result),
                spec=(setup.get('speculative') or {}).get('algorithm') or 'off'), None


def _cap(setup, point, result):
    """Requests the measured server ran at once: the record's (or setup's) max_running_requests, else what SGLang
    takes by default for that model and GPU (the plan's max_running_requests: published runs state no such flag)."""
    del point
    return int(setup.get('max_running_requests') or result['max_running_requests'])


SETUP_KEYS = {'engine', 'calibrates', 'gpu', 'gpus', 'tp', 'model', 'dtype', 'speculative', 'accept_length', 'lengths',
              'source', 'points', 'max_running_requests'}
POINT_KEYS = {'concurrency', 'accept_length'} | set(calibrate.METRICS)


def check_measurements(data):
    """Problems of a measurements file (unknown keys, a vLLM setup that calibrates, a point without a metric)."""
    problems = []
    for setup_id, setup in sorted((data.get('setups') or {}).items()):
        unknown = set(setup) - SETUP_KEYS
        if unknown:
            problems.append('%s: unknown keys %s (known: %s)' % (setup_id, sorted(unknown), sorted(SETUP_KEYS)))
        if setup.get('engine') not in ('sglang', 'vllm'):
            problems.append('%s: engine must be sglang or vllm' % setup_id)
        if setup.get('calibrates') and setup.get('engine') != 'sglang':
            problems.append('%s: only SGLang setups calibrate' % setup_id)
        if not setup.get('source'):
            problems.append('%s: no source' % setup_id)
        for point in setup.get('points') or ():
            if set(point) - POINT_KEYS or not set(point) & set(calibrate.METRICS) or 'concurrency' not in point:
                problems.append('%s: point %s needs concurrency and a metric of %s' % (setup_id, point, calibrate.METRICS))
    return problems


def published_points(release, path=MEASUREMENTS):
    """(points, skipped [(id, why)]) of profiles/measurements/published.yml."""
    data = load_yaml(path)
    problems = check_measurements(data)
    if problems:
        raise SystemExit('compare: %s: %s' % (path, '; '.join(problems)))
    cache, points, skipped = {}, [], []
    for setup_id, setup in sorted((data.get('setups') or {}).items()):
        for point in setup.get('points') or ():
            prepared, why = prepare(setup_id, setup, point, release, cache)
            if prepared is None:
                skipped.append(('%s@c%s' % (setup_id, point.get('concurrency')), why))
            else:
                points.append(prepared)
    return points, skipped


def record_points(files, model_name, gpu_name, gpus, release):
    """Benchmark records (the sglang_benchmark role's runs.jsonl) of a server of ``model_name`` on ``gpu_name``, as
    measured points that calibrate (their own setup per tp / speculative settings / lengths)."""
    points, skipped, cache = [], [], {}
    for path in files:
        with open(path, encoding='utf-8') as handle:
            lines = [json.loads(line) for line in handle if line.strip()]
        for number, rec in enumerate(lines, 1):
            metrics, server = rec.get('metrics') or {}, rec.get('server') or {}
            tp = int(server.get('tp_size') or gpus)
            spec = None
            if server.get('speculative_algorithm'):
                spec = dict(algorithm=server['speculative_algorithm'], num_steps=server.get('speculative_num_steps'),
                            eagle_topk=server.get('speculative_eagle_topk'),
                            num_draft_tokens=server.get('speculative_num_draft_tokens'))
            setup_id = 'record:%s:%d' % (os.path.basename(path), number)
            setup = dict(engine='sglang', calibrates=True, gpu=gpu_name, gpus=tp, tp=tp, model=dict(profile=model_name),
                         max_running_requests=server.get('internal_max_running_requests') or server.get('max_running_requests'),
                         speculative=spec, lengths=dict(isl=metrics.get('random_input_len'),
                                                        osl=metrics.get('random_output_len'), stated=True),
                         source=path)
            point = dict(concurrency=metrics.get('max_concurrency') or 1, output_tok_s=metrics.get('output_throughput'),
                         ttft_ms=metrics.get('median_ttft_ms'), tpot_ms=metrics.get('median_tpot_ms'),
                         accept_length=(rec.get('llmops') or {}).get('accept_length'))
            _add_record_point(points, skipped, (setup_id, setup, point), release, cache,
                              'the record has no random_input_len / random_output_len')
    return points, skipped


def _add_record_point(points, skipped, measured, release, cache, no_lengths):
    """One benchmark record's level, (setup_id, setup, point), into points, or into skipped with why: no request
    lengths (no_lengths), or the planner cannot size its setup."""
    setup_id, setup, point = measured
    if not (setup['lengths']['isl'] and setup['lengths']['osl']):
        skipped.append((setup_id, no_lengths))
        return
    prepared, why = prepare(setup_id, setup, point, release, cache)
    if prepared is None:
        skipped.append((setup_id, why))
    else:
        points.append(prepared)


def deployment_record_files(record_dir):
    """Every instance's benchmarks.json under a deployment record directory (llmops_record_dir: <dir>/<host>/<instance>/)."""
    return sorted(glob.glob(os.path.join(record_dir, '*', '*', bench_record.FILE_NAME)))


def deployment_record_points(files, model_name, gpu_name, release):
    """The concurrency runs the sglang_benchmark role kept in the deployment record (bench/record.py) for this model
    profile on this GPU profile, as measured points that calibrate; a run with speculative decoding on is sized with
    the model profile's own MTP settings (the record keeps the variant's mtp flag, not its flags)."""
    spec_profile = ((profile('models', model_name).get('serving') or {}).get('speculative') or {})
    points, skipped, cache = [], [], {}
    for path in files:
        with open(path, encoding='utf-8') as handle:
            doc, error = bench_record.parse(handle.read(), path)
        if error:
            skipped.append((path, error))
            continue
        for run in bench_record.measured_points(doc):
            ctx = run['benchmark']
            setup_id = 'record:%s/%s:%s:%s' % (ctx.get('host'), ctx.get('instance'), ctx.get('id'), run.get('variant'))
            if (ctx.get('model_profile'), ctx.get('gpu_profile')) != (model_name, gpu_name):
                continue
            if run.get('kind') != 'concurrency' or not run.get('concurrency') or not ctx.get('tp_size'):
                skipped.append((setup_id, 'not a concurrency run of a known TP size'))
                continue
            spec = None
            if run.get('mtp'):
                spec = dict(algorithm=spec_profile.get('algorithm'), num_steps=spec_profile.get('num_steps'),
                            eagle_topk=spec_profile.get('eagle_topk'), num_draft_tokens=spec_profile.get('num_draft_tokens'))
            tp = int(ctx['tp_size'])
            setup = dict(engine='sglang', calibrates=True, gpu=gpu_name, gpus=tp, tp=tp, model=dict(profile=model_name),
                         max_running_requests=None, speculative=spec,
                         lengths=dict(isl=run.get('input_len'), osl=run.get('output_len'), stated=True), source=path)
            point = dict(concurrency=run['concurrency'], output_tok_s=run.get('output_tok_s'), ttft_ms=run.get('ttft_p50_ms'),
                         tpot_ms=run.get('tpot_p50_ms'), accept_length=run.get('accept_length'))
            _add_record_point(points, skipped, (setup_id, setup, point), release, cache, 'the record has no input/output length')
    return points, skipped


# ---------------------------------------------------------------------------------------------------------------------
# The inventory and the knobs


def inventory_server(inventory):
    """(vars of the first sglang_servers host: group_vars/all.yml, group_vars/sglang_servers.yml, its host_vars and
    hosts.yml vars merged; its name)."""
    base = os.path.join(ROOT, inventory)
    hosts = load_yaml(os.path.join(base, 'hosts.yml'))
    group = (((hosts.get('all') or {}).get('children') or {}).get('sglang_servers') or {})
    names = sorted((group.get('hosts') or {}).keys())
    if not names:
        raise SystemExit('compare: %s has no host in sglang_servers (give --model, --gpu and --gpus)' % inventory)
    name = names[0]
    merged = {}
    for rel in ('group_vars/all.yml', 'group_vars/sglang_servers.yml', 'host_vars/%s.yml' % name):
        path = os.path.join(base, rel)
        if os.path.isfile(path):
            merged.update(load_yaml(path))
    merged.update(group.get('vars') or {})
    merged.update((group.get('hosts') or {}).get(name) or {})
    return merged, name


def resolve_args(args):
    """Fill what the command line left out from the inventory and the stated defaults; return (knobs, notes)."""
    notes = []
    server, host = inventory_server(args.inventory)
    role = load_yaml(os.path.join(ROOT, 'roles', 'sglang_benchmark', 'defaults', 'main.yml'))
    model = args.model or server.get('llmops_model_profile')
    gpu = args.gpu or server.get('llmops_gpu_profile') or server.get('llmops_host_gpu_profile')
    indices = server.get('llmops_gpu_indices') or []
    gpus = args.gpus or len(indices) or server.get('llmops_tp_size')
    if not (model and gpu and gpus):
        raise SystemExit('compare: give --model, --gpu and --gpus (the inventory %s does not name them all)' % args.inventory)
    if not args.gpus:
        notes.append('GPUs: %d, from %s host %s (llmops_gpu_indices %s)' % (gpus, args.inventory, host, indices))
    knobs = dict(model=model, gpu=gpu, gpus=int(gpus), indices=list(indices) if len(indices) == int(gpus) else list(range(int(gpus))))
    for key, var, default in (('isl', 'sglang_benchmark_input_len', None), ('osl', 'sglang_benchmark_output_len', None)):
        value = getattr(args, key)
        if value is None:
            value = server.get(var, role.get(var))
            notes.append('%s %s from %s' % (key.upper(), value, '%s %s' % (args.inventory, var) if var in server
                                            else 'the sglang_benchmark role default %s' % var))
        knobs[key] = int(value)
    rates = server.get('sglang_benchmark_request_rates') or []
    knobs['rate'] = args.rate if args.rate is not None else float(rates[0]) if rates else DEFAULT_RATE
    if args.rate is None:
        where = 'the inventory\'s first sglang_benchmark_request_rates' if rates else 'stated default: no rate in the inventory'
        notes.append('RATE %g req/s (%s)' % (knobs['rate'], where))
    knobs['ttft_p99_ms'] = args.ttft_p99 if args.ttft_p99 is not None else DEFAULT_TTFT_P99_MS
    knobs['tpot_p99_ms'] = args.tpot_p99 if args.tpot_p99 is not None else DEFAULT_TPOT_P99_MS
    for flag, key in (('ttft_p99', 'TTFT_P99'), ('tpot_p99', 'TPOT_P99')):
        if getattr(args, flag) is None:
            notes.append('%s %g ms (stated default)' % (key, knobs[flag + '_ms']))
    knobs['record_dir'] = _record_dir(args, server)
    return knobs, notes


def _record_dir(args, server):
    """The deployment record directory whose benchmarks.json files calibrate: --record-dir, else (not for --sample,
    whose output is committed) the inventory's llmops_record_dir when it is a plain path, else the resolver's default
    build/deploy of this checkout."""
    if args.record_dir:
        return os.path.abspath(args.record_dir)
    if args.sample:
        return None
    configured = server.get('llmops_record_dir')
    if configured and '{{' not in str(configured):
        return os.path.join(ROOT, args.inventory, configured) if not os.path.isabs(configured) else configured
    return os.path.join(ROOT, 'build', 'deploy')


def knob_dir(knobs):
    return '%s_%s_g%d_i%d_o%d_r%g_ttft%g_tpot%g' % (knobs['model'], knobs['gpu'], knobs['gpus'], knobs['isl'], knobs['osl'],
                                                    knobs['rate'], knobs['ttft_p99_ms'], knobs['tpot_p99_ms'])


def _drop_empty(argv):
    out, skip = [], False
    for index, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        if arg.startswith('--') and '=' not in arg and index + 1 < len(argv) and argv[index + 1] == '':
            skip = True
            continue
        if arg.startswith('--') and arg.endswith('='):
            continue
        out.append(arg)
    return out


def parse(argv):
    parser = argparse.ArgumentParser(prog='make compare', description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--model', help='model profile (profiles/models/<name>.yml)')
    parser.add_argument('--gpu', help='hardware profile (profiles/hardware/<name>.yml)')
    parser.add_argument('--gpus', type=int, help='GPUs of the host the layouts may use')
    parser.add_argument('--isl', type=int, help='prompt tokens per request')
    parser.add_argument('--osl', type=int, help='output tokens per request')
    parser.add_argument('--rate', type=float, help='requests per second (Poisson arrivals)')
    parser.add_argument('--ttft-p99', type=float, help='p99 time-to-first-token target, ms')
    parser.add_argument('--tpot-p99', type=float, help='p99 time-per-output-token target, ms')
    parser.add_argument('--inventory', default=DEFAULT_INVENTORY, help='inventory for what is not given (default %(default)s)')
    parser.add_argument('--records', nargs='*', default=[], help='benchmark records (runs.jsonl) of this model and GPU')
    parser.add_argument('--record-dir', help='deployment record directory whose benchmarks.json files calibrate (default: the '
                        "inventory's llmops_record_dir, else build/deploy; none with --sample)")
    parser.add_argument('--measurements', default=MEASUREMENTS, help='published points (default %(default)s)')
    parser.add_argument('--out', help='output folder (default build/compare/<knobs>)')
    parser.add_argument('--sample', help='also write PREFIX.md and PREFIX.svg (the committed docs/samples/ copy)')
    # make passes an unset variable as an empty argument ('--isl ""' is not given).
    return parser.parse_args(_drop_empty(argv))


def run(args):
    """Everything make compare computes: dict(knobs, notes, rows, ranked, fit, band, points, loo, verdicts, top)."""
    knobs, notes = resolve_args(args)
    release = cp.release()
    model, gpu = profile('models', knobs['model']), profile('hardware', knobs['gpu'])
    hw = perf.hardware(gpu)
    points, skipped = published_points(release, args.measurements)
    if args.records:
        more, more_skipped = record_points(args.records, knobs['model'], knobs['gpu'], knobs['gpus'], release)
        points += more
        skipped += more_skipped
    record_dir = knobs.get('record_dir')
    if record_dir:
        files = deployment_record_files(record_dir)
        more, more_skipped = deployment_record_points(files, knobs['model'], knobs['gpu'], release)
        points += more
        skipped += more_skipped
        notes.append('deployment records: %d measured point(s) of %s on %s from %d benchmarks.json under %s' % (
            len(more), knobs['model'], knobs['gpu'], len(files), os.path.relpath(record_dir, ROOT)
            if record_dir.startswith(ROOT + os.sep) else record_dir))
    loo = calibrate.leave_one_out(points)
    facts = vram_plan.model_facts_once(model.get('config'), release)
    group = (gpu['compute_capability'], facts['family'] if facts else None)
    fit = calibrate.factors(group, points)
    band = calibrate.bands(loo, group, points)
    traffic = dict(isl=knobs['isl'], osl=knobs['osl'], rate=knobs['rate'], ttft_p99_ms=knobs['ttft_p99_ms'],
                   tpot_p99_ms=knobs['tpot_p99_ms'])
    layouts = layouts_lib.enumerate_layouts(model, gpu, release, knobs['gpus'], knobs['isl'], knobs['osl'])
    rows = [rank_lib.evaluate(layout, hw, traffic, fit, band) for layout in layouts]
    ranked = rank_lib.rank(rows)
    verdicts = rank_lib.spec_lines(rows, hw, traffic, fit)
    # PD layouts (issue #30 point 4): on paper; the host's devices are not known here, so no RDMA is assumed.
    pd_layouts = pd_lib.enumerate_pd(model, gpu, release, knobs['gpus'], knobs['isl'], knobs['osl'], devices=None)
    pd_rows = [pd_lib.evaluate(layout, hw, traffic, fit, band, gpu) for layout in pd_layouts]
    return dict(knobs=knobs, notes=notes, rows=rows, ranked=ranked, fit=fit, band=band, group=group, points=points,
                skipped=skipped, loo=loo, verdicts=verdicts, traffic=traffic, hw=hw, model=model, gpu=gpu,
                pd_rows=pd_rows, pd_ranked=pd_lib.rank(pd_rows), release=release)


def write(out, result, sample=None):
    os.makedirs(out, exist_ok=True)
    series, frontier_pts = report.pareto_series(result)
    chart = svg.pareto_chart('%s on %d x %s' % (
        result['knobs']['model'], result['knobs']['gpus'], result['knobs']['gpu']), series, frontier_pts,
        'tok/s per user (1000 / TPOT p50)', 'output tok/s per GPU', height=360 + 16 * ((len(series) + 1) // 2))
    md = report.markdown(result, 'pareto.svg')
    snippet = report.snippet(result)
    for name, text in (('compare.md', md), ('pareto.svg', chart), ('snippet.yml', snippet)):
        with open(os.path.join(out, name), 'w', encoding='utf-8') as handle:
            handle.write(text)
    if sample:
        for path, text in ((sample + '.md', report.markdown(result, os.path.basename(sample) + '.svg')), (sample + '.svg', chart)):
            with open(path, 'w', encoding='utf-8') as handle:
                handle.write(text)
    return md


def main(argv=None):
    start = time.monotonic()
    args = parse(sys.argv[1:] if argv is None else argv)
    result = run(args)
    out = args.out or os.path.join(ROOT, 'build', 'compare', knob_dir(result['knobs']))
    md = write(out, result, args.sample)
    print(md)
    for name in ('compare.md', 'pareto.svg', 'snippet.yml'):
        print('wrote %s' % os.path.relpath(os.path.join(out, name), os.getcwd()))
    print('make compare took %.1f s (%d layouts and %d PD layouts planned and estimated, %d measured points, leave-one-out '
          'included)' % (time.monotonic() - start, len(result['rows']), len(result['pd_rows']), len(result['points'])))
    return 0 if result['ranked'] else 2


if __name__ == '__main__':
    sys.exit(main())
