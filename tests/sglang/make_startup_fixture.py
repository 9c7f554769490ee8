# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write the lab stand-in's start-up lines for the seed deployment from SGLang's OWN numbers, not the plan's.

NOT a captured log and NOT the plan: the pool lines are printed by the pinned release's own code. Run in the lab venv
(PY = `tests/bench/setup-bench-venv.sh | tail -n 1`), the script parses the command line the collection renders
(build/plan/<host>/sglang_argv.json) with SGLang's own parser (server_args.prepare_server_args), hands it to the SGLang
oracle (tests/oracle/sglang_oracle.py: SGLang's server-argument resolution and KVCacheConfigurator with only the
device queries answered), and lets that configurator build its pools on PyTorch's "meta" device (no memory): the
"Reserving ... multimodal", "Mamba Cache is allocated", "KV Cache is allocated" and "Memory pool end" lines are the
ones SGLang's logger prints, captured verbatim. The draft worker's pool (speculative decoding) is SGLang's
MHATokenToKVPool on the meta device with the target's token count and the draft's layers (the config's MTP layer
count; the draft worker itself is not built). "Memory pool end" shows the free memory after the weights less the
bytes the pools allocated on the meta device (counted per torch.zeros/empty/ones/full call).

Where the other numbers come from (none from plan.json):

- device facts SGLang measures at start-up, which no CPU can: memory.total and the free memory before the weights
  come from the hardware profile (profiles/hardware/<gpu>.yml memory_total_mib minus startup_overhead_gib: an
  ESTIMATE, no start of the seed's GPU was measured) or a measured start-up memory file (--measured, the shape of
  tests/fixtures/startup_memory/*.json); the weight memory per GPU (target and draft) is --weights-gib /
  --draft-weights-gib, with the source stated in --weights-source (it lands in the file's header);
- the scheduler line: the oracle's max_total_num_tokens, max_running_requests, context length, chunked prefill and
  SGLang's resolved max_prefill_tokens;
- CUDA-graph memory cannot be computed without a GPU: GRAPHS below are placeholders, and the start-up record lists
  graph memory "logged only".

The oracle's answer and the captured lines are kept next to the fixture (<fixture>.oracle.json), so the file can be
re-rendered without the lab venv (--from-json, any python3) and the unit tests can compare the fixture with it.

Regenerate (repository root; the oracle path is where the harness lives in your checkout):

    make plan
    PY=$(tests/bench/setup-bench-venv.sh | tail -n 1)
    $PY tests/sglang/make_startup_fixture.py --oracle tests/oracle/sglang_oracle.py \\
        --argv build/plan/sglang-ct/sglang_argv.json --config tests/fixtures/hf_configs/Qwen__Qwen3.5-122B-A10B \\
        --gpu-profile profiles/hardware/rtx-pro-6000-blackwell-server.yml --weights-gib 57.143 \\
        --draft-weights-gib 1.886 --out tests/fixtures/sglang_startup/qwen3.5-122b-a10b-tp4-rtx-pro-6000.log

The molecule and unit assertions read the planned side from llmops_deployment and the logged side from this file:
they report the difference and flag drift beyond the record's thresholds; they never assume there is none.
"""

import argparse
import contextlib
import json
import os
import sys

# Placeholders (no GPU): (graph, tokens per request, mem usage GB, elapsed s). Nothing is compared against these.
GRAPHS = (('target verify', 4, 1.85, 21.33), ('draft decode', 1, 0.31, 4.87), ('draft extend', 4, 0.17, 3.02))
GIB = float(1 << 30)
STAMP = '2026-12-01'
# Captured SGLang lines that go into the fixture (TP rank 0's pool lines), in the order SGLang prints them.
POOL_PREFIXES = ('Reserving ', 'Mamba Cache is allocated', 'KV Cache is allocated', 'Memory pool end')


def load_yaml_scalar(path, key):
    """A top-level scalar of a flat profile file (no PyYAML needed in either venv)."""
    with open(path) as handle:
        for line in handle:
            if line.startswith(key + ':'):
                return line.split(':', 1)[1].split('#')[0].strip().strip('"\'')
    raise SystemExit('make_startup_fixture: %s has no %s' % (path, key))


def device(args):
    """(gpu_total_mib, free_before_load_gib, source) of the GPU."""
    total = int(load_yaml_scalar(args.gpu_profile, 'memory_total_mib'))
    name = load_yaml_scalar(args.gpu_profile, 'name')
    if args.measured:
        with open(args.measured) as handle:
            data = json.load(handle)
        free = data.get('free_memory_before_load_gib')
        if not isinstance(free, (int, float)):
            raise SystemExit('make_startup_fixture: --measured %s has no free_memory_before_load_gib; fix: give the '
                             'file the start-up record wrote (startup_memory/<gpu>-tp<N>.json)' % args.measured)
        return total, float(free), 'measured (%s)' % args.measured
    overhead = float(load_yaml_scalar(args.gpu_profile, 'startup_overhead_gib'))
    return total, round(total / 1024.0 - overhead, 3), (
        'hardware profile %s estimate (memory_total_mib %d minus startup_overhead_gib %.2f; not measured)'
        % (name, total, overhead))


def sglang_argv(rendered, config_dir):
    """The rendered SGLang command line for the oracle: the model path is the config directory (no weights here),
    no tokenizer (none is in a config fixture), the CUDA device the oracle mocks."""
    out, skip = [], False
    for item in rendered:
        if skip:
            skip = False
            continue
        if item in ('--model-path', '--device'):
            skip = True
            continue
        out.append(item)
    return ['--model-path', config_dir, '--device', 'cuda', '--skip-tokenizer-init'] + out


def _load_oracle(path):
    import importlib.util
    spec = importlib.util.spec_from_file_location('sglang_oracle', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_sglang(args, argv, case, free_after_load):
    """The oracle's answer for this case plus the pool lines SGLang's own code prints (lab venv only)."""
    import logging
    import types
    from unittest import mock

    oracle = _load_oracle(args.oracle)
    captured, seen = [], {}

    class Capture(logging.Handler):
        def emit(self, record):
            captured.append(record.getMessage())

    original = oracle._stage

    def stage(name, func, *a, **k):
        sg = oracle._sglang()
        if func is sg['ServerArgs']:
            # The rendered command line, parsed by SGLang's own CLI (every flag the unit passes, as SGLang reads it).
            from sglang.srt.server_args import prepare_server_args  # pylint: disable=import-error
            sa = original(name, prepare_server_args, argv)
            seen['server_args'] = sa
            return sa
        if getattr(func, '__name__', '') == '_resolve_memory_pool_config':
            seen['pools_built'] = build_pools(func.__self__, a[0], free_after_load, sg, captured, Capture, args)
        return original(name, func, *a, **k)

    with mock.patch.object(oracle, '_stage', stage):
        result = oracle.run_case(case)
    if result.get('refused'):
        raise SystemExit('make_startup_fixture: SGLang refused the rendered command line (%s): %s'
                         % (result['refused'].get('stage'), result['refused'].get('message')))
    sa = seen.get('server_args')
    return dict(oracle=result, sglang_lines=captured, pools_built=seen.get('pools_built'),
                max_prefill_tokens=getattr(sa, 'max_prefill_tokens', None), argv=argv,
                mamba_radix_cache_strategy=getattr(sa, 'mamba_radix_cache_strategy', None))


def build_pools(kvc, pre_model_load_memory, free_after_load, sg, captured, capture_cls, args):
    """KVCacheConfigurator.configure() on the meta device inside the oracle's device mocks: SGLang sizes and builds
    its own pools and logs their lines; the free memory it reports after them is the mocked figure less the bytes
    allocated (meta tensors take none)."""
    import logging
    import torch  # pylint: disable=import-error
    from unittest import mock
    from sglang.srt.mem_cache import memory_pool as mp  # pylint: disable=import-error

    allocated = [0]
    depth = [0]

    def counting(real):
        def make(*a, **k):
            # torch.zeros calls torch.empty inside: count the outermost call only.
            depth[0] += 1
            try:
                tensor = real(*a, **k)
            finally:
                depth[0] -= 1
            if depth[0] == 0 and tensor.device.type == 'meta':
                allocated[0] += tensor.numel() * tensor.element_size()
            return tensor
        return make

    def avail(*_a, **_k):
        return free_after_load - allocated[0] / GIB

    real_module = torch.get_device_module
    stub = type('MetaDevice', (), dict(Stream=staticmethod(lambda *a, **k: None),
                                       current_stream=staticmethod(lambda *a, **k: None),
                                       stream=staticmethod(lambda *a, **k: contextlib.nullcontext())))
    handler = capture_cls()
    handler.setLevel(logging.INFO)
    log = logging.getLogger('sglang')
    level = log.level
    with contextlib.ExitStack() as stack:
        for fname in ('zeros', 'empty', 'ones', 'full'):
            stack.enter_context(mock.patch.object(torch, fname, counting(getattr(torch, fname))))
        stack.enter_context(mock.patch.object(torch, 'get_device_module',
                                              lambda d=None: stub if str(d) == 'meta' else real_module(d)))
        # The copy-kernel warm-up reads tensor values (none on meta); it sizes nothing.
        stack.enter_context(mock.patch.object(mp.MHATokenToKVPool, '_init_kv_copy_and_warmup',
                                              lambda self, *a, **k: None))
        stack.enter_context(mock.patch.object(sg['kvcm'], 'get_available_gpu_memory', avail))
        logging.disable(logging.NOTSET)
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        try:
            kvc.device = 'meta'
            built = kvc.configure(pre_model_load_memory=pre_model_load_memory)
            out = dict(max_total_num_tokens=built.max_total_num_tokens,
                       max_running_requests=built.max_running_requests, target_pools_gib=allocated[0] / GIB)
            layers = draft_layers(kvc)
            if layers:
                from sglang.srt.runtime_context import get_parallel  # pylint: disable=import-error
                mc = kvc.model_config
                before = allocated[0]
                mp.MHATokenToKVPool(
                    built.max_total_num_tokens, page_size=kvc.pool_page_size, dtype=kvc.kv_cache_dtype,
                    head_num=mc.get_num_kv_heads(get_parallel().attn_tp_size), head_dim=mc.head_dim,
                    v_head_dim=mc.v_head_dim, layer_num=layers, device='meta', enable_memory_saver=False,
                    enable_kv_cache_copy=True)
                # The draft worker's configure() ends with the same line (kv_cache_configurator.py, configure()).
                captured.append('Memory pool end. avail mem=%.2f GB' % avail())
                out.update(draft_layers=layers, draft_pool_gib=(allocated[0] - before) / GIB)
        finally:
            log.removeHandler(handler)
            log.setLevel(level)
            logging.disable(logging.WARNING)
            kvc.device = 'cuda'
    return out


def draft_layers(kvc):
    """The layers of the speculative draft's own KV pool: the checkpoint's MTP layers (NEXTN) or none."""
    from sglang.srt.runtime_context import get_spec  # pylint: disable=import-error
    algorithm = get_spec().speculative_algorithm
    if not algorithm or algorithm in ('NGRAM',):
        return 0
    cfg = kvc.model_config.hf_text_config
    for key in ('mtp_num_hidden_layers', 'num_nextn_predict_layers'):
        if getattr(cfg, key, None):
            return int(getattr(cfg, key))
    return 0


def oracle_name(path):
    """The harness as the repository names it (tests/oracle/...), wherever the checkout running it is."""
    path = os.path.abspath(path)
    mark = os.sep + 'tests' + os.sep + 'oracle' + os.sep
    return 'tests/oracle/' + path.split(mark, 1)[1] if mark in path else os.path.relpath(path)


def sha256(path):
    import hashlib
    with open(path, 'rb') as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def batch_sizes(running):
    sizes = [b for b in (1, 2, 4, 8, 12, 16, 20, 24, 32, 40, 48) if b < running]
    return sizes + [running]


def lines(meta, answer):
    oracle = answer['oracle']
    pools, server = oracle['pools'], oracle['server']
    tp = meta['tp']
    pre = meta['free_before_load_gib']
    target, draft = meta['weights_gib'], meta['draft_weights_gib']
    after_target = pre - target
    after_draft = after_target - draft
    spec = bool(server.get('speculative_algorithm'))
    ranks = ['TP%d' % r for r in range(tp)]
    out = []

    def each(stamp, text):
        out.extend('[%s %s %s] %s' % (STAMP, stamp, rank, text) for rank in ranks)

    def rank0(stamp, text):
        out.append('[%s %s TP0] %s' % (STAMP, stamp, text))

    each('10:00:05', 'Init parallel begin.')
    each('10:00:07', 'Init parallel ends. elapsed=1.52 s')
    each('10:00:07', 'Memory baseline taken. mem usage=%.2f GB' % (meta['gpu_total_mib'] / 1024.0 - pre))
    each('10:00:07', 'Load weight begin. avail mem=%.2f GB' % pre)
    each('10:01:42', 'Load weight end. elapsed=95.31 s, type=%s, avail mem=%.2f GB, mem usage=%.2f GB.'
         % (oracle['model']['arch'], after_target, target))
    if spec and draft:
        each('10:01:42', 'Load weight begin. avail mem=%.2f GB' % after_target)
        each('10:01:44', 'Load weight end. elapsed=2.10 s, type=%s, avail mem=%.2f GB, mem usage=%.2f GB.'
             % (meta['draft_class'], after_draft, draft))
    pool_lines = [text for text in answer['sglang_lines'] if text.startswith(POOL_PREFIXES)]
    if not any(text.startswith('KV Cache is allocated') for text in pool_lines):
        raise SystemExit('make_startup_fixture: SGLang printed no "KV Cache is allocated" line (captured: %s)'
                         % answer['sglang_lines'])
    for text in pool_lines:
        rank0('10:01:45', text.rstrip())
    ends = [text for text in pool_lines if text.startswith('Memory pool end')]
    avail = float(ends[-1].split('avail mem=')[1].split()[0])
    running = pools['max_running_requests']
    sizes = ', '.join(str(b) for b in batch_sizes(running))
    stamps = iter(('10:01:45', '10:02:07', '10:02:07', '10:02:12', '10:02:12', '10:02:15'))
    for name, per_req, usage, elapsed in (GRAPHS if spec else (('decode', 1, 1.85, 21.33),)):
        bs = '' if name == 'target verify' else 'bs=[%s], ' % sizes
        rank0(next(stamps), 'Capture %s CUDA graph begin. backend=full, num_tokens_per_req=%d, %savail mem=%.2f GB'
              % (name, per_req, bs, avail))
        tail = 'bs=[%s], ' % sizes if name == 'target verify' else ''
        avail -= usage
        rank0(next(stamps), 'Capture %s CUDA graph end. %selapsed=%.2f s, mem usage=%.2f GB, avail mem=%.2f GB.'
              % (name, tail, elapsed, usage, avail))
    rank0('10:02:15', 'max_total_num_tokens=%d, chunked_prefill_size=%d, max_prefill_tokens=%d, '
          'max_running_requests=%d, context_len=%d, available_gpu_mem=%.2f GB'
          % (pools['max_total_num_tokens'], server['chunked_prefill_size'], answer['max_prefill_tokens'], running,
             server['context_length'], avail))
    return out


def header(meta, answer):
    oracle = answer['oracle']
    pools = oracle['pools']
    text = [
        'SGLang %s start-up lines for the seed deployment (%s, TP%d, %d MiB GPUs; abridged: every TP rank\'s parallel,'
        % (oracle['sglang_version'], meta['model'], meta['tp'], meta['gpu_total_mib']),
        'baseline and weight lines, TP rank 0\'s pool, graph and scheduler lines). NOT a captured log and NOT the plan:',
        'the pool lines were printed by SGLang %s\'s own KVCacheConfigurator (pools on the meta device) for the rendered'
        % oracle['sglang_version'],
        'command line (%s, parsed by SGLang), through the oracle (%s):' % (meta['argv_name'], meta['oracle_name']),
        '%d KV tokens, %s mamba slots, %d running requests (tests/sglang/make_startup_fixture.py).'
        % (pools['max_total_num_tokens'], pools['max_mamba_cache_size'], pools['max_running_requests']),
        'Free memory before load %.2f GiB: %s.' % (meta['free_before_load_gib'], meta['free_source']),
        'Weights %.2f + draft %.2f GiB per GPU: %s.' % (meta['weights_gib'], meta['draft_weights_gib'],
                                                        meta['weights_source']),
        'CUDA-graph memory: placeholders (no GPU). SGLang\'s answer: %s. \'#\' lines are skipped.' % meta['json_name'],
    ]
    return ['# ' + line for line in text]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('--oracle', help='tests/oracle/sglang_oracle.py (the harness); run in the lab venv')
    parser.add_argument('--from-json', help='re-render from a saved answer (<fixture>.oracle.json), any python3')
    parser.add_argument('--argv', default='build/plan/sglang-ct/sglang_argv.json')
    parser.add_argument('--config', default='tests/fixtures/hf_configs/Qwen__Qwen3.5-122B-A10B')
    parser.add_argument('--gpu-profile', default='profiles/hardware/rtx-pro-6000-blackwell-server.yml')
    parser.add_argument('--cc', help='compute capability (default: the hardware profile\'s)')
    parser.add_argument('--measured', help='a measured start-up memory JSON (free_memory_before_load_gib)')
    parser.add_argument('--weights-gib', type=float)
    parser.add_argument('--draft-weights-gib', type=float, default=0.0)
    parser.add_argument('--draft-class', default='Qwen3_5ForCausalLMMTP')
    parser.add_argument('--weights-source', default=(
        'ESTIMATE, not measured (no public start of this checkpoint on this GPU was found): the bf16 parameter '
        'bytes of the config over TP and the MTP layer, as make plan prints them in weights_detail'))
    parser.add_argument('--out', required=True)
    args = parser.parse_args(argv)
    base = args.out[:-4] if args.out.endswith('.log') else args.out
    json_path = base + '.oracle.json'
    if args.from_json:
        with open(args.from_json) as handle:
            saved = json.load(handle)
        meta, answer = saved['meta'], saved['answer']
    else:
        if not (args.oracle and args.weights_gib is not None):
            parser.error('--oracle and --weights-gib are needed to ask SGLang (or --from-json)')
        with open(args.argv) as handle:
            rendered = json.load(handle)['argv']
        tp = int(rendered[rendered.index('--tp-size') + 1]) if '--tp-size' in rendered else 1
        total, free, source = device(args)
        free_after_load = round(free - args.weights_gib - args.draft_weights_gib, 3)
        cc = args.cc or load_yaml_scalar(args.gpu_profile, 'compute_capability')
        full_argv = sglang_argv(rendered, args.config)
        case = dict(config=args.config, tp=tp, gpu_mem_mib=total, free_before_load_gib=free,
                    free_after_load_gib=free_after_load, cc=cc)
        answer = run_sglang(args, full_argv, case, free_after_load)
        built = answer['pools_built'] or {}
        for key in ('max_total_num_tokens', 'max_running_requests'):
            if built.get(key) != answer['oracle']['pools'][key]:
                raise SystemExit('make_startup_fixture: the pools SGLang built (%s %s) differ from the oracle\'s '
                                 'sizing (%s): report it to the oracle harness' % (key, built.get(key),
                                                                                   answer['oracle']['pools'][key]))
        meta = dict(model=os.path.basename(args.config.rstrip('/')), tp=tp, gpu_total_mib=total,
                    free_before_load_gib=free, free_source=source, weights_gib=args.weights_gib,
                    draft_weights_gib=args.draft_weights_gib, weights_source=args.weights_source,
                    draft_class=args.draft_class, free_after_load_gib=free_after_load, cc=cc,
                    oracle_name=oracle_name(args.oracle), oracle_sha256=sha256(args.oracle),
                    argv_name=os.path.relpath(args.argv),
                    json_name=os.path.basename(json_path))
        saved = dict(meta=meta, answer=answer)
        with open(json_path, 'w') as handle:
            json.dump(saved, handle, indent=1, sort_keys=True, default=str)
            handle.write('\n')
    text = '\n'.join(header(meta, answer) + lines(meta, answer)) + '\n'
    with open(args.out, 'w') as handle:
        handle.write(text)
    pools = answer['oracle']['pools']
    sys.stderr.write('wrote %s (%d KV tokens, %s mamba slots, %d running requests)\n'
                     % (args.out, pools['max_total_num_tokens'], pools['max_mamba_cache_size'],
                        pools['max_running_requests']))


if __name__ == '__main__':
    main()
