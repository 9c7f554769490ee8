#!/usr/bin/env python
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The PD checker (plugins/module_utils/sglang/pd_check.py) against the installed SGLang: its rules are SGLang's, its
facts are SGLang's, and the prefill and decode command lines it renders for the seed model are accepted by SGLang's
own parser and PD hooks, resolving as intended; known-bad layouts are refused by the checker with the rule and the
fix, and, where SGLang refuses them at start-up, by SGLang's own code too.

Run with the python of the lab SGLang venv (tests/bench/setup-bench-venv.sh: the full sglang==<pin>; no GPU needed):
  "$(tests/bench/setup-bench-venv.sh | tail -n 1)" tests/sglang/test_pd_parser.py
(its place in make parser: a line after test_parser.py in tests/sglang/run-parser-tests.sh). Prints one line per
check and a closing "N passed, N failed"; exit 1 on any failure. Under another release than the pin (make
parser-releases) it says SKIP and exits 0: the PD rules were read in the pin's source only.

What SGLang only checks once a KV transfer runs (TP, page size, KV dtype, PP, SWA states, a prefill-only draft) needs
two GPU servers; here the checker's rule for each is shown to quote SGLang's lines (the cites check), and the two
command lines of such a layout are shown to pass SGLang's parser each on its own: only the pair is wrong, which is
why the collection checks layouts before anything starts.
"""
import argparse
import importlib.util
import io
import logging
import os
import re
import sys
import warnings
from contextlib import redirect_stderr

os.environ.setdefault('HF_HUB_OFFLINE', '1')  # the seed's config.json fixture is a local folder; nothing is fetched
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tools'))
import collection_paths as cp  # noqa: E402  pylint: disable=wrong-import-position
# SGLang depends on PyYAML, so the lab venv has it.
import yaml  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.llmops.inference.plugins.module_utils.sglang import flags  # noqa: E402
from ansible_collections.llmops.inference.plugins.module_utils.sglang import pd_check  # noqa: E402
from ansible_collections.llmops.inference.plugins.module_utils.sglang import release as sglang_release  # noqa: E402

SEED_CONFIG = os.path.join(cp.ROOT, 'tests', 'fixtures', 'hf_configs', 'Qwen__Qwen3.5-122B-A10B')
RESULTS = []


def record(name, ok, detail=''):
    RESULTS.append(ok)
    print('%s %s%s' % ('PASS' if ok else 'FAIL', name, ' (%s)' % detail if detail else ''))


def load_checker():
    """parser_check.py from its file, as the sglang_server_args module ships it."""
    path = os.path.join(cp.ROOT, 'plugins', 'module_utils', 'sglang', 'parser_check.py')
    spec = importlib.util.spec_from_file_location('parser_check', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def seed_layout(**changes):
    """The seed (Qwen3.5-122B-A10B, the facts from its profile) as one prefill and one decode worker on one host."""
    layout = dict(
        arch='Qwen3_5MoeForConditionalGeneration', mla=False, sliding_window=False, transfer_backend='mooncake_tcp',
        devices=dict(infiniband=False, memlock_unlimited=False),
        prefill=dict(host='gpu1', listen='0.0.0.0', http_port=30000, bootstrap_port=8998, tp=4, speculative='NEXTN'),
        decode=dict(host='gpu1', listen='0.0.0.0', http_port=30001, tp=4, speculative='NEXTN'))
    for key, value in changes.items():
        if '.' in key:
            side, field = key.split('.', 1)
            layout[side] = dict(layout[side], **{field: value})
        else:
            layout[key] = value
    return layout


def seed_facts(release):
    """mla and sliding_window of the layout from the collection's own model facts of the seed profile."""
    with open(os.path.join(cp.PROFILES, 'models', 'qwen3.5-122b-a10b.yml')) as stream:
        model = yaml.safe_load(stream)
    from ansible_collections.llmops.inference.plugins.module_utils.model.config import model_facts
    facts = model_facts(model['config'], release['architectures'])
    return model, dict(arch=facts['arch'], mla=facts['attention'] == 'mla', sliding_window=bool(facts['n_swa']))


def render(release, model, layout, side):
    server = dict(pd_check.server_options(layout, side), model_path=SEED_CONFIG)
    worker = pd_check.workers(layout, side)[0]
    first = 0 if side == 'prefill' else 8  # the two workers on GPUs of their own
    gpus = list(range(first, first + worker['tp'] * worker['pp']))
    return flags.render(release, model, dict(max_running_requests=16), dict(gpu_indices=gpus), server)


def parse(argv):
    from sglang.srt.server_args import ServerArgs
    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    return parser, parser.parse_args(argv)


def run_hooks(argv):
    """SGLang's own PD and speculative hooks on one argv: (resolved view, None) or (None, 'Exception: text')."""
    from sglang.srt.server_args import ServerArgs
    from sglang.srt.arg_groups.overrides import resolving_view
    from sglang.srt.arg_groups.pd_disaggregation_hook import handle_pd_disaggregation
    from sglang.srt.arg_groups.speculative_hook import handle_speculative_decoding
    from sglang.srt.arg_groups.validation_hook import check_pipeline_parallel_compat
    saved = os.environ.get('MC_FORCE_TCP')
    try:
        with redirect_stderr(io.StringIO()):
            args = ServerArgs.from_cli_args(parse(argv)[1])
            handle_pd_disaggregation(args)
            handle_speculative_decoding(args)
            view = resolving_view(args)
            if view.pp_size > 1:
                check_pipeline_parallel_compat(view)
        return dict(backend=view.disaggregation_transfer_backend, disable_radix_cache=view.disable_radix_cache,
                    speculative=view.speculative_algorithm, mc_force_tcp=os.environ.get('MC_FORCE_TCP')), None
    except (AssertionError, ValueError, RuntimeError) as exc:
        return None, '%s: %s' % (type(exc).__name__, exc)
    finally:
        if saved is None:
            os.environ.pop('MC_FORCE_TCP', None)
        else:
            os.environ['MC_FORCE_TCP'] = saved


def check_cites(srt):
    for rule, spec in sorted(pd_check.RULES.items()):
        for path, first, last, quote in spec['cites']:
            with open(os.path.join(srt, path), encoding='utf-8') as stream:
                text = '\n'.join(stream.read().splitlines()[first - 1:last])
            record('cite %s %s:%d-%d' % (rule, path, first, last), quote in text,
                   '' if quote in text else 'quote %r not in those lines' % quote)


def check_facts(srt):
    from sglang.srt.arg_groups.choices import DISAGG_TRANSFER_BACKEND_CHOICES
    from sglang.srt.arg_groups.speculative_hook import _resolve_speculative_algorithm_alias
    from sglang.srt.environ import envs
    from sglang.srt import server_args
    facts = pd_check.FACTS
    parser = parse(['--model-path', '/m'])[0]
    actions = dict((a.dest, a) for a in parser._actions)  # pylint: disable=protected-access
    backend = actions['disaggregation_transfer_backend']
    record('facts transfer_backends = the parser\'s choices', list(backend.choices) == facts['transfer_backends'] ==
           list(DISAGG_TRANSFER_BACKEND_CHOICES), 'parser %s' % list(backend.choices))
    record('facts transfer_backend_default', backend.default == facts['transfer_backend_default'], backend.default)
    port = actions['disaggregation_bootstrap_port'].default
    record('facts bootstrap_port_default', port == facts['bootstrap_port_default'], port)
    policy = actions['disaggregation_decode_allocation_policy']
    record('facts allocation_policies', list(policy.choices) == facts['allocation_policies'] and
           policy.default == facts['allocation_policy_default'], '%s, default %s' % (list(policy.choices), policy.default))
    record('facts mooncake is RDMA by default', envs.MOONCAKE_PROTOCOL.get() == 'rdma' and
           'mooncake' in facts['rdma_backends'], envs.MOONCAKE_PROTOCOL.get())
    record('facts nixl is UCX by default', envs.SGLANG_DISAGGREGATION_NIXL_BACKEND.get() == 'UCX' and
           'nixl' in facts['rdma_backends'], envs.SGLANG_DISAGGREGATION_NIXL_BACKEND.get())
    aliases = dict((name, _resolve_speculative_algorithm_alias(name, None)) for name in facts['spec_aliases'])
    record('facts spec_aliases', aliases == facts['spec_aliases'], aliases)
    with open(os.path.join(srt, 'arg_groups', 'speculative_hook.py'), encoding='utf-8') as stream:
        allowed = re.search(r'cfg\.speculative_algorithm not in \(None, ([^)]*)\)', stream.read())
    allowed = sorted(re.findall(r'"(\w+)"', allowed.group(1))) if allowed else None
    record('facts radix_spec_algorithms', allowed == sorted(facts['radix_spec_algorithms']), allowed)
    from sglang.srt.configs import model_config
    with open(model_config.__file__, encoding='utf-8') as stream:
        block = re.search(r'self\.is_hybrid_swa_compress = self\.hf_config\.architectures\[0\] in \[(.*?)\]', stream.read(), re.S)
    names = re.findall(r'"(\w+)"', block.group(1)) if block else []
    if block and '*MIMO_V2_MODEL_ARCHS' in block.group(1):
        names += list(model_config.MIMO_V2_MODEL_ARCHS)
    record('facts swa_compress_archs = ModelConfig.is_hybrid_swa_compress\'s', bool(names) and sorted(names) == sorted(
        facts['swa_compress_archs']), sorted(names))
    with open(server_args.__file__, encoding='utf-8') as stream:
        derived = re.search(r'NUM_DERIVED_PORTS = (\d+) if not is_rust_server', stream.read())
    count = 1 + int(derived.group(1)) if derived else None  # dist_init_port and the derived ports above it
    record('facts DP-attention ports', server_args.ZMQ_TCP_PORT_DELTA == facts['dp_port_delta'] and
           count == facts['dp_port_count'], 'delta %s, %s ports' % (server_args.ZMQ_TCP_PORT_DELTA, count))


def check_lock():
    """The pin's lock and the lab venv (its real resolution) against the transfer_engine_package rule."""
    lock = os.path.join(cp.PROFILES, 'locks', 'sglang-%s-py%d.%d.txt' % ((cp.PIN,) + sys.version_info[:2]))
    with open(lock) as stream:
        names = [m.group(1) for m in re.finditer(r'^([A-Za-z0-9][A-Za-z0-9._-]*)==', stream.read(), re.M)]
    has_engine = any(n.lower().startswith('mooncake-transfer-engine') for n in names)
    importable = importlib.util.find_spec('mooncake') is not None
    refused = 'transfer_engine_package' in [r['rule'] for r in pd_check.check(seed_layout(packages=names))]
    record('lock: mooncake refused exactly when the pin\'s lock lacks its engine', refused == (not has_engine) and
           has_engine == importable, '%d packages, engine in lock %s, importable in the lab venv %s'
           % (len(names), has_engine, importable))


def check_good(release, model, checker):
    cases = [('seed over mooncake_tcp', seed_layout(), dict(prefill=False, decode=True)),
             ('seed, decode radix cache with NEXTN', seed_layout(**{'decode.radix_cache': True}),
              dict(prefill=False, decode=False)),
             ('seed over mooncake RDMA, MTP on the decode only', seed_layout(
                 transfer_backend='mooncake', devices=dict(infiniband=True, memlock_unlimited=True),
                 **{'prefill.speculative': None}), dict(prefill=False, decode=True))]
    for name, layout, radix_off in cases:
        refusals = pd_check.check(layout)
        record('good %s: the checker accepts it' % name, refusals == [], pd_check.format_refusals(refusals)
               if refusals else '')
        for side in ('prefill', 'decode'):
            rendered = render(release, model, layout, side)
            argv = rendered['argv']
            result = checker.check(argv)
            record('good %s: SGLang\'s parser accepts the %s argv' % (name, side), result['ok'] and
                   not rendered['preflight'], result.get('error') or rendered['preflight'] or '')
            ns = parse(argv)[1]
            worker = layout[side]
            want = dict(disaggregation_mode=side, disaggregation_transfer_backend=layout['transfer_backend'],
                        port=worker['http_port'], tp_size=worker['tp'], host=worker['listen'],
                        disaggregation_decode_enable_radix_cache=bool(worker.get('radix_cache')),
                        disaggregation_bootstrap_port=worker.get('bootstrap_port', pd_check.FACTS['bootstrap_port_default']),
                        speculative_algorithm=worker.get('speculative'))
            got = dict((k, getattr(ns, k)) for k in want)
            record('good %s: the %s argv resolves as laid out' % (name, side), got == want,
                   '' if got == want else 'got %s, want %s' % (got, want))
            view, error = run_hooks(argv)
            want_backend = 'mooncake' if layout['transfer_backend'] in ('mooncake', 'mooncake_tcp') else None
            ok = error is None and view['backend'] == want_backend and (
                view['mc_force_tcp'] == '1') == (layout['transfer_backend'] == 'mooncake_tcp') and (
                side == 'prefill' or view['disable_radix_cache'] == radix_off[side])
            record('good %s: SGLang\'s PD and speculative hooks accept the %s argv' % (name, side), ok,
                   error or view)


def check_pp_prefill(release, model):
    """pp 2 with MTP on the prefill only: SGLang runs it (PP + EAGLE on a prefill server), the checker accepts it."""
    layout = seed_layout(**{'prefill.pp': 2})
    refusals = pd_check.check(layout)
    rendered = render(release, model, layout, 'prefill')
    view, error = run_hooks(rendered['argv'])
    record('good pp 2 prefill with MTP: the checker and SGLang\'s PD, speculative and PP checks accept it',
           refusals == [] and error is None and view['speculative'] == 'EAGLE', error or refusals or view)
    # The renderer's own pre-check (flags.py pp_spec) predates PD and refuses PP with MTP everywhere.
    print('NOTE sglang_flags pre-checks for that prefill argv: %s' % ([c['check'] for c in rendered['preflight']] or 'none'))


def bad_cases():
    """(name, layout, rule, side whose argv SGLang's own start-up code refuses (None: only the pair is wrong),
    SGLang's words)."""
    return [
        ('backend tcp', seed_layout(transfer_backend='tcp'), 'transfer_backend_choice', 'prefill',
         "argument --disaggregation-transfer-backend: invalid choice: 'tcp'"),
        ('fake backend', seed_layout(transfer_backend='fake'), 'transfer_backend_fake', 'prefill',
         "Prefill server does not support 'fake' as the transfer backend"),
        ('decode radix cache with NGRAM', seed_layout(**{'prefill.speculative': None, 'decode.speculative': 'NGRAM',
                                                         'decode.radix_cache': True}),
         'decode_radix_speculative', 'decode', 'is incompatible with speculative decoding (--speculative-algorithm NGRAM)'),
        ('prefill_complete on TP 4', seed_layout(allocation_policy='prefill_complete'), 'allocation_policy', 'decode',
         'attention tensor parallelism greater than one'),
        ('prefill_complete over nixl', seed_layout(allocation_policy='prefill_complete', transfer_backend='nixl',
                                                   devices=dict(infiniband=True, memlock_unlimited=True)),
         'allocation_policy', 'prefill', 'transfer backends other than Mooncake'),
        ('pp 2 decode with MTP', seed_layout(**{'prefill.pp': 2, 'decode.pp': 2}), 'pp_speculative', 'decode',
         'PP + speculative decoding (MTP) is only supported on prefill nodes'),
        ('TP 4 prefill, TP 2 decode', seed_layout(**{'decode.tp': 2}), 'tp_mismatch', None, None),
        ('page size 64 on the prefill only', seed_layout(**{'prefill.page_size': 64}), 'page_size_mismatch', None, None),
        ('fp8 KV on the decode only', seed_layout(**{'decode.kv_cache_dtype': 'fp8_e4m3'}), 'kv_cache_dtype_mismatch',
         None, None),
        ('MTP on the prefill only', seed_layout(**{'decode.speculative': None}), 'speculative_prefill_only', None, None),
        ('decode on the prefill\'s bootstrap port', seed_layout(**{'decode.http_port': 8998}), 'ports', None, None),
    ]


def check_bad(release, model, checker):
    for name, layout, rule, side, words in bad_cases():
        refusals = [r for r in pd_check.check(layout) if r['rule'] == rule]
        record('bad %s: the checker refuses it with %s' % (name, rule), bool(refusals) and all(
            r['fix'] and r['source'] for r in refusals), refusals[0]['fix'] if refusals else 'not refused')
        if side is None:
            results = [checker.check(render(release, model, layout, s)['argv']) for s in ('prefill', 'decode')]
            record('bad %s: SGLang\'s parser accepts each side on its own' % name, all(r['ok'] for r in results),
                   [r.get('error') for r in results if not r['ok']])
            continue
        argv = render(release, model, layout, side)['argv']
        result = checker.check(argv)
        if not result['ok']:
            error = result['error']
        else:
            error = run_hooks(argv)[1]
        record('bad %s: SGLang refuses the %s argv too' % (name, side), bool(error) and words in error, error)


def check_ib_device():
    """ib_device_sysfs: SGLang's own validation of --disaggregation-ib-device on a machine without an HCA."""
    if os.path.isdir('/sys/class/infiniband'):
        print('SKIP bad ib_device without an HCA (this machine has /sys/class/infiniband)')
        return
    from sglang.srt.arg_groups.validation_hook import validate_ib_devices
    try:
        validate_ib_devices('mlx5_0')
        error = None
    except RuntimeError as exc:
        error = str(exc)
    layout = seed_layout(transfer_backend='mooncake', ib_device='mlx5_0', devices=dict(memlock_unlimited=True))
    refused = 'ib_device_sysfs' in [r['rule'] for r in pd_check.check(layout)]
    record('bad ib_device without an HCA: the checker and SGLang refuse it', refused and bool(error) and
           'InfiniBand sysfs path not found' in error, error)


def main():
    logging.disable(logging.WARNING)
    warnings.simplefilter('ignore')
    import sglang
    if sglang_release.normalize_version(sglang.__version__) != cp.PIN:
        # pd_check.FACTS and RULES were read in the pin's source only (make parser-releases runs older releases).
        print('SKIP sglang %s PD: the PD rules were read for the pin %s only' % (sglang.__version__, cp.PIN))
        return 0
    srt = os.path.join(os.path.dirname(sglang.__file__), 'srt')
    release = cp.release(sglang.__version__)
    model, facts = seed_facts(release)
    record('seed facts: no MLA, no sliding window', facts == dict(
        arch='Qwen3_5MoeForConditionalGeneration', mla=False, sliding_window=False), facts)
    checker = load_checker()
    check_cites(srt)
    check_facts(srt)
    check_lock()
    check_good(release, model, checker)
    check_bad(release, model, checker)
    check_pp_prefill(release, model)
    check_ib_device()
    failed = RESULTS.count(False)
    print('sglang %s PD: %d passed, %d failed' % (sglang.__version__, len(RESULTS) - failed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
