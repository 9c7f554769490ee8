#!/usr/bin/env python
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every command line sglang_flags renders must pass the real parser of the installed SGLang; known-bad ones must not;
and the release table's facts for the installed release (profiles/sglang_releases.yml: its argparse choices, the
mamba flag and its choices, the host programs' messages) must be that release's own. The wording the pre-checks
quote and every log line the collection matches (and the Prometheus metric families here): test_log_catalogue.py (run after this file).

Run with the python of the lab SGLang venv (tests/bench/setup-bench-venv.sh: the full sglang==<pin>; no GPU needed):
  tests/sglang/run-parser-tests.sh            (builds/reuses the venv, then runs this file)
Prints one line per case and a closing "N passed, N failed"; exit 1 on any failure.
"""
import argparse
import contextlib
import importlib.util
import json
import os
import re
import sys
import tempfile

import yaml  # SGLang depends on PyYAML, so the venv has it

# The module_utils import each other as ansible_collections.llmops.inference.plugins.module_utils.*: the checkout's
# .collections tree (a symlink to the checkout) makes that importable without Ansible in this venv; importing
# tests/tools/collection_paths.py (ROOT, the release table) puts it on sys.path.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tools'))
from collection_paths import ROOT, release_table_data  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.llmops.inference.plugins.module_utils.sglang import flags  # noqa: E402
from ansible_collections.llmops.inference.plugins.module_utils.sglang import release as sglang_release  # noqa: E402


def load(name):
    spec = importlib.util.spec_from_file_location(name.replace('/', '_'), os.path.join(ROOT, 'plugins', 'module_utils', *name.split('/')) + '.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Loaded from its file, as the sglang_server_args module ships it (it must stay stdlib-only and self-contained).
checker = load('sglang/parser_check')
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import release_rules  # noqa: E402  pylint: disable=wrong-import-position


def table():
    return release_table_data()


def parser_choices():
    """dest -> [choices] of every action of the installed release's own parser that has choices."""
    from sglang.srt.server_args import ServerArgs
    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    strings = {}
    for action in parser._actions:  # pylint: disable=protected-access
        strings.setdefault(action.dest, []).extend(action.option_strings)
    return dict((action.dest, [str(c) for c in action.choices]) for action in parser._actions  # pylint: disable=protected-access
                if action.choices), strings


def table_matches_parser(release):
    """(name, ok, detail) per fact of the table the installed parser can confirm."""
    choices, option_strings = parser_choices()
    out = []
    for option, recorded in sorted(release['choices'].items()):
        if option == 'mamba_strategy':
            continue
        real = choices.get(option)
        out.append(('choices %s' % option, real == recorded,
                    'table %s, parser %s' % (recorded, real) if real != recorded else '%d choices' % len(real)))
    # Options the collection renders as values: every one the parser gives choices must be recorded for the pin.
    for option in sglang_release.CHOICE_OPTIONS:
        if option in choices and option not in release['choices']:
            out.append(('choices %s' % option, False, 'the parser has choices, the table records none'))
    mamba_flag = release['flags']['mamba_flag']
    dest = mamba_flag.lstrip('-').replace('-', '_')
    # The flag, and the deprecated old name where the table says the release still accepts it (same dest).
    wanted = sorted([mamba_flag] + ([release['flags']['mamba_alias']] if release['flags']['mamba_alias'] else []))
    out.append(('mamba flag %s' % mamba_flag, sorted(option_strings.get(dest) or []) == wanted,
                'table %s, parser: %s' % (wanted, option_strings.get(dest))))
    out.append(('mamba choices', choices.get(dest) == release['flags']['mamba_choices'],
                'table %s, parser %s' % (release['flags']['mamba_choices'], choices.get(dest))))
    return out


def architectures_match_source(release):
    """(name, ok, detail) for the architecture sets of the table against the installed release's own lists."""
    from sglang.srt.arg_groups.overrides import _MAMBA_EXTRA_BUFFER_ARCHS  # pylint: disable=import-error
    from sglang.srt.configs.model_config import multimodal_model_archs  # pylint: disable=import-error
    from sglang.srt.layers.attention import attention_registry  # pylint: disable=import-error
    arch = release['architectures']
    out = []
    for name, ours, theirs in (('hybrid_gdn', arch['hybrid_gdn'], _MAMBA_EXTRA_BUFFER_ARCHS),
                               ('multimodal', arch['multimodal'], multimodal_model_archs)):
        extra = sorted(set(ours) - set(theirs))
        out.append(('architectures %s' % name, not extra, 'not in SGLang\'s list: %s' % extra if extra else
                    '%d of SGLang\'s %d' % (len(ours), len(theirs))))
    # The breakable-prefill-graph allow-list decides a term of the default mem_fraction_static: all of it, no more.
    from sglang.srt.configs import model_config as sg_model_config  # pylint: disable=import-error
    theirs = set(sg_model_config.multimodal_breakable_cuda_graph_supported_model_archs)
    # The table's sets are the pin's; a release that does not serve a name (its model registry) cannot list it.
    ours = set(arch['breakable_graph_multimodal']) & set(arch['served'] or arch['breakable_graph_multimodal'])
    out.append(('architectures breakable_graph_multimodal', ours == theirs,
                'table %s, SGLang %s' % (sorted(ours), sorted(theirs))))
    # The planner families: each name a model class of the release; the MLA and SWA names where the release decides
    # those layouts (configs/model_config.py: AttentionArch.MLA, is_hybrid_swa_model and SWA_SINK_ARCHS).
    import sglang  # pylint: disable=import-error
    package = os.path.dirname(sglang.__file__)
    models = ''
    models_dir = os.path.join(package, 'srt', 'models')
    for name in sorted(os.listdir(models_dir)):
        if name.endswith('.py'):
            with open(os.path.join(models_dir, name), encoding='utf-8', errors='replace') as stream:
                models += stream.read()
    with open(os.path.join(package, 'srt', 'configs', 'model_config.py'), encoding='utf-8') as stream:
        model_config = stream.read()
    for family in ('gqa', 'mla', 'hybrid_swa'):
        absent = sorted(n for n in arch[family] if not re.search(r'^class %s\(' % re.escape(n), models, re.M))
        out.append(('architectures %s are model classes' % family, not absent,
                    'no class in sglang/srt/models: %s' % absent if absent else '%d names' % len(arch[family])))
        if family != 'gqa':
            absent = sorted(n for n in arch[family] if '"%s"' % n not in model_config)
            out.append(('architectures %s named in configs/model_config.py' % family, not absent,
                        'not named there: %s' % absent if absent else '%d names' % len(arch[family])))
    # The DSA, DeepSeek-family, SM100 page-override and EAGLE-3 draft sets (docs/dev/sglang-memory.md sections 2.4, 5.3
    # and 9 item 12).
    from sglang.srt.arg_groups.overrides import _DEEPSEEK_FAMILY_ARCHS  # pylint: disable=import-error
    # (As for breakable_graph_multimodal: the names this release serves, where its model registry was read.)
    family = set(arch['deepseek_family']) & set(arch['served'] or arch['deepseek_family'])
    out.append(('architectures deepseek_family', family == set(_DEEPSEEK_FAMILY_ARCHS),
                'table %s, _DEEPSEEK_FAMILY_ARCHS %s' % (sorted(family), sorted(_DEEPSEEK_FAMILY_ARCHS))))
    absent = sorted(n for n in set(arch['dsa']) & set(arch['served'] or arch['dsa']) if '"%s"' % n not in model_config)
    out.append(('architectures dsa named in configs/model_config.py', not absent, 'not named: %s' % absent
                if absent else '%d names' % len(arch['dsa'])))
    out.append(_sm100_hybrid_page(arch))
    out.append(_sm100_flashinfer(arch))
    absent = sorted(n for n in arch['eagle3_draft'] if not re.search(r'^class %s\(' % re.escape(n), models, re.M))
    out.append(('architectures eagle3_draft are model classes', not absent, 'absent: %s' % absent if absent else
                '%d names' % len(arch['eagle3_draft'])))
    # Path-less MTP drafts: each class is a model class, and configs/model_config.py rewrites the draft of exactly that
    # target architecture to it (one `if is_draft_model and ...` clause per rewrite; MIMO_V2_MODEL_ARCHS by its tuple).
    rewrites = {}
    tuples = dict((name, re.findall(r'"(\w+)"', body))
                  for name, body in re.findall(r'^(\w+_ARCHS) = \((.*?)\)', model_config, re.M | re.S))
    for clause in model_config.split('if is_draft_model')[1:]:
        target = re.search(r'architectures(?:\[0\])? = (?:\[)?"(\w+)"', clause)
        if target is None:
            continue
        condition = clause[:target.start()]
        names = re.findall(r'"(\w+)"', condition)
        for name, members in tuples.items():
            if re.search(r'\bin %s\b' % name, condition):
                names += members
        for name in names:
            rewrites.setdefault(name, target.group(1))
    wrong = sorted('%s -> %s (SGLang: %s)' % (target, rule['class'], rewrites.get(target))
                   for target, rule in arch['mtp_draft'].items() if rewrites.get(target) != rule['class'])
    absent = sorted(set(rule['class'] for rule in arch['mtp_draft'].values()
                        if not re.search(r'^class %s\(' % re.escape(rule['class']), models, re.M)))
    out.append(('architectures mtp_draft are the draft rewrites of configs/model_config.py', not wrong and not absent,
                'wrong: %s; no model class: %s' % (wrong, absent) if wrong or absent else
                '%d targets' % len(arch['mtp_draft'])))
    # DP attention: each architecture's model file builds attention over attn_tp_size (or runs the DeepSeek-V3 model).
    missing = []
    for name in sorted(arch['dp_attention']):
        for fname in sorted(os.listdir(models_dir)):
            if not fname.endswith('.py'):
                continue
            with open(os.path.join(models_dir, fname), encoding='utf-8', errors='replace') as stream:
                text = stream.read()
            if re.search(r'^class %s\(' % re.escape(name), text, re.M):
                if 'attn_tp_size' not in text and 'models.deepseek_v2 import' not in text:
                    missing.append(name)
                break
        else:
            missing.append(name)
    out.append(('architectures dp_attention split attention over attn_tp_size', not missing,
                'not: %s' % missing if missing else '%d names' % len(arch['dp_attention'])))
    out.extend(_blackwell_gdn_backends(arch, attention_registry))
    return out


def _blackwell_gdn_backends(arch, attention_registry):
    """The table's Blackwell backends for hybrid GDN models against the release's: HYBRID_GDN_SM100_BACKENDS (0.5.22+,
    SM100 only), or 0.5.18's two `allowed = {...}` sets of its hybrid-GDN backend check (SM120, then SM100)."""
    import ast
    import inspect
    theirs = getattr(attention_registry, 'HYBRID_GDN_SM100_BACKENDS', None)
    if theirs is not None:
        found = {'10': set(theirs)}
    else:
        match = re.search(r'if is_sm120_supported\(\):\s*allowed = (\{[^}]*\})\s*else:\s*allowed = (\{[^}]*\})',
                          inspect.getsource(attention_registry))
        found = dict(zip(('12', '10'), (ast.literal_eval(m) for m in match.groups()))) if match else {}
    if not found:
        return [('blackwell_gdn_backends', False, 'neither HYBRID_GDN_SM100_BACKENDS nor the allowed sets of the '
                 'hybrid-GDN check in layers/attention/attention_registry.py')]
    return [('blackwell_gdn_backends %s' % major, set(arch['blackwell_gdn_backends'].get(major, ())) == backends,
             'table %s, SGLang %s' % (sorted(arch['blackwell_gdn_backends'].get(major, ())), sorted(backends)))
            for major, backends in sorted(found.items())]


def _override_registry():
    """The model-override registry: arg_groups/model_override_base (0.5.22+), arg_groups/overrides (0.5.18)."""
    try:
        from sglang.srt.arg_groups import model_override_base as registry  # pylint: disable=import-error
    except ImportError:
        from sglang.srt.arg_groups import overrides as registry  # pylint: disable=import-error  # 0.5.18
    return registry._MODEL_OVERRIDE_FNS  # pylint: disable=protected-access


# An override that sets attention_backend flashinfer within three lines of an SM100 test (0.5.18 overrides.py:1307).
_SM100_FLASHINFER = re.compile(r'sm100[^\n]*\n(?:[^\n]*\n){0,2}?\s*overrides\["attention_backend"\] = "flashinfer"')


def _sm100_flashinfer(arch):
    """The architectures whose own override picks flashinfer on SM100 (layout.default_page_size: no page constraint),
    read from the source of every registered override function."""
    import inspect
    registered = sorted(name for name, fns in _override_registry().items()
                        if any(_SM100_FLASHINFER.search(inspect.getsource(fn)) for fn in fns))
    return ('architectures sm100_flashinfer', sorted(arch['sm100_flashinfer']) == registered,
            'table %s, overrides setting flashinfer on SM100 %s' % (sorted(arch['sm100_flashinfer']), registered))


def _sm100_hybrid_page(arch):
    """The architectures whose SM100 override forces the hybrid page size: those _qwen3_5_hybrid_overrides is registered
    for (arg_groups/model_override_base._MODEL_OVERRIDE_FNS; 0.5.18: arg_groups/overrides._MODEL_OVERRIDE_FNS)."""
    registered = sorted(name for name, fns in _override_registry().items()
                        if any(fn.__name__ == '_qwen3_5_hybrid_overrides' for fn in fns))
    return ('architectures sm100_hybrid_page', sorted(arch['sm100_hybrid_page']) == registered,
            'table %s, _qwen3_5_hybrid_overrides %s' % (sorted(arch['sm100_hybrid_page']), registered))


def parse_exposition(text):
    """family -> dict(type, samples [(sample name, labels dict)]) of a Prometheus text exposition."""
    families, current = {}, None
    for line in text.splitlines():
        if line.startswith('# TYPE '):
            name, kind = line.split()[2:4]
            current = families.setdefault(name, dict(type=kind, samples=[]))
            continue
        if not line.strip() or line.startswith('#'):
            continue
        match = re.match(r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+\S+$', line)
        assert match, 'not a sample line: %r' % line
        labels = dict(re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"', match.group(2) or ''))
        name = match.group(1)
        family = families.get(name) or families.get(re.sub(r'_(bucket|sum|count)$', '', name)) or current
        family['samples'].append((name, labels))
    return families


def family_shape(family):
    """(type, label names of the samples (without le), bucket bounds) of one parsed family."""
    names = set()
    bounds = set()
    for sample, labels in family['samples']:
        names.add(tuple(sorted(k for k in labels if k != 'le')))
        if sample.endswith('_bucket'):
            bounds.add(float(labels['le']))
    return family['type'], names, sorted(bounds)


def metrics_match_source(release):
    """(name, ok, detail) per metric family of the table against the /metrics text of the installed release's own
    collectors (tests/sglang/sglang_metrics_exposition.py), and the lab stand-in's /metrics against both."""
    import json
    import socket
    import subprocess
    import time
    from urllib.request import urlopen
    table = release['metrics']
    proc = subprocess.run([sys.executable, os.path.join(ROOT, 'tests', 'sglang', 'sglang_metrics_exposition.py')],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    if proc.returncode != 0:
        return [('metrics exposition of the installed release', False, proc.stderr[-800:])]
    real = parse_exposition(proc.stdout)
    out = []
    foreign = sorted(n for n in real if not n.startswith(table['prefix']))
    out.append(('metrics prefix %r' % table['prefix'], not foreign and bool(real),
                '%d families, none without the prefix' % len(real) if not foreign else 'without it: %s' % foreign))
    for key, family in sorted(table['families'].items()):
        name = family['name']
        if name not in real:
            out.append(('metric %s (%s)' % (key, name), False, 'not exposed by the release\'s own collectors'))
            continue
        kind, labelsets, bounds = family_shape(real[name])
        expected = tuple(sorted(set(table['label_sets'][family['labels']]) | set(family.get('extra_labels') or [])))
        problems = []
        if kind != family['type']:
            problems.append('type %s, table %s' % (kind, family['type']))
        if labelsets != {expected}:
            problems.append('labels %s, table %s' % (sorted(labelsets), expected))
        if family['type'] == 'histogram' and bounds != sorted(float(b) for b in family['buckets'] + [float('inf')]):
            problems.append('buckets %s, table %s' % (bounds, family['buckets']))
        out.append(('metric %s (%s)' % (key, name), not problems, '; '.join(problems) or '%s %s' % (kind, expected)))

    # The monitoring role's dashboard and rules, rendered from the table, read only what these collectors expose.
    from ansible_collections.llmops.inference.plugins.plugin_utils.monitoring import dashboard as monitoring_dashboard
    from ansible_collections.llmops.inference.plugins.plugin_utils.monitoring import promql
    sys.path.insert(0, os.path.join(ROOT, 'tests', 'monitoring'))
    import render_fixture  # pylint: disable=import-error
    names = dict((key, family['name']) for key, family in table['families'].items())
    histograms = set(n for n, f in real.items() if f['type'] == 'histogram')
    exprs = [expr for dummy, expr in monitoring_dashboard.queries(monitoring_dashboard.dashboard(names))]
    rendered = render_fixture.build('/rules.yml')
    exprs += [rule['expr'] for group in rendered['rules']['groups'] for rule in group['rules']]
    read = set(promql.family_of(n, histograms) for expr in exprs for n in promql.metric_names(expr))
    read = set(n for n in read if n != 'up' and not n.startswith('llmops:'))
    out.append(('dashboard and rules read metrics of this release', bool(read) and read <= set(real),
                '%d metrics, not exposed: %s' % (len(read), sorted(read - set(real)))))

    # The stand-in (tests/sglang/standin_server.py) serves the same families in the same shape.
    with tempfile.TemporaryDirectory() as tmp:
        catalogue = os.path.join(tmp, 'metrics.json')
        with open(catalogue, 'w') as stream:
            json.dump(table, stream)
        sock = socket.socket()
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
        sock.close()
        env = dict(os.environ, SGLANG_STANDIN_DELAY='0', SGLANG_STANDIN_METRICS=catalogue)
        standin = subprocess.Popen([sys.executable, os.path.join(ROOT, 'tests', 'sglang', 'standin_server.py'),
                                    '--model-path', '/m', '--port', str(port), '--enable-metrics',
                                    '--speculative-algorithm', 'EAGLE'], env=env, stdout=subprocess.DEVNULL)
        text = None
        try:
            for dummy in range(100):
                try:
                    text = urlopen('http://127.0.0.1:%d/metrics' % port, timeout=2).read().decode()
                    break
                except (IOError, OSError):
                    time.sleep(0.1)
        finally:
            standin.terminate()
            standin.wait()
    if text is None:
        return out + [('stand-in /metrics', False, 'no answer on port %d' % port)]
    mine = parse_exposition(text)
    by_name = dict((f['name'], k) for k, f in table['families'].items())
    # A fresh server has retracted and aborted nothing: SGLang creates those series at the first event.
    wanted = set(by_name) - set(table['families'][k]['name'] for k in ('retracted_requests', 'aborted_requests'))
    missing = sorted(wanted - set(mine))
    out.append(('stand-in /metrics serves the table', not missing and set(mine) <= set(by_name),
                'missing %s, extra %s' % (missing, sorted(set(mine) - set(by_name))) if missing or not set(mine) <= set(
                    by_name) else '%d families' % len(mine)))
    for name in sorted(set(mine) & set(real)):
        ok = family_shape(mine[name]) == family_shape(real[name])
        out.append(('stand-in %s' % name, ok, '' if ok else 'stand-in %s, SGLang %s' % (
            family_shape(mine[name]), family_shape(real[name]))))
    return out


def profile(name):
    with open(os.path.join(ROOT, 'profiles', 'models', name + '.yml')) as stream:
        return yaml.safe_load(stream)


def srt_source(package_dir):
    """The text of every .py file of the installed sglang/srt."""
    chunks = []
    for base, dummy, files in os.walk(os.path.join(package_dir, 'srt')):
        for name in files:
            if name.endswith('.py'):
                with open(os.path.join(base, name), encoding='utf-8', errors='replace') as stream:
                    chunks.append(stream.read())
    return '\n'.join(chunks)


def launcher_config_reaches_sglang(argv):
    """Write the keys as sglang-launch does and let SGLang's own prepare_server_args read them back."""
    from importlib.machinery import SourceFileLoader
    from sglang.srt.server_args import prepare_server_args
    loader = SourceFileLoader('sglang_launch', os.path.join(
        ROOT, 'roles', 'sglang_server', 'files', 'usr', 'local', 'libexec', 'llmops', 'sglang-launch'))
    launcher = importlib.util.module_from_spec(importlib.util.spec_from_loader('sglang_launch', loader))
    loader.exec_module(launcher)
    keys = dict((flag, 'key-%s-Zq3' % flag) for dummy, flag in launcher.SECRET_FLAGS)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'secrets.yaml')  # the launcher's file name (SGLang insists on a YAML suffix)
        launcher.write_config(path, keys)
        mode = os.stat(path).st_mode & 0o777
        # 0.5.18 resolves inside ServerArgs.__post_init__ (a GPU and the model's files): what is checked here is the
        # parse of --config, which comes before it, so that resolution is skipped (0.5.22+ resolve later anyway).
        from unittest import mock
        from sglang.srt.server_args import ServerArgs
        skip = (mock.patch.object(ServerArgs, '_run_resolution_pipeline', lambda self: None)
                if hasattr(ServerArgs, '_run_resolution_pipeline') else contextlib.nullcontext())
        try:
            with skip:
                args = prepare_server_args(list(argv) + ['--config', path])
        except SystemExit as exc:
            return False, 'SGLang refused the config file (exit %s)' % exc.code
    got = dict((flag, getattr(args, flag.replace('-', '_'), None)) for flag in keys)
    return got == keys and mode == 0o600, 'read back %s, file mode %o' % (sorted(k for k in got if got[k] == keys[k]), mode)


def batch_matches_single(good, bad):
    """The resolver sends every command line of a deployment (and its variants) in one JSON list: the checker's CLI
    must answer one result per command line, in order, each the same as a single check, and exit 2 for a refusal."""
    import contextlib
    import io
    import json
    argvs = [sorted(good.items())[0][1]['argv'], sorted(bad.items())[0][1][0]]
    out = io.StringIO()
    saved = sys.stdin
    sys.stdin = io.StringIO(json.dumps(argvs))
    try:
        with contextlib.redirect_stdout(out):
            rc = checker.main([])
    finally:
        sys.stdin = saved
    results = json.loads(out.getvalue().strip().splitlines()[-1])
    singles = [checker.check(argv) for argv in argvs]
    ok = rc == 2 and [r['ok'] for r in results] == [True, False] and [r.get('error') for r in results] == [
        r.get('error') for r in singles]
    return ok, 'rc %s, ok %s' % (rc, [r['ok'] for r in results])


def hardware(name):
    with open(os.path.join(ROOT, 'profiles', 'hardware', name + '.yml')) as stream:
        return yaml.safe_load(stream)


def fixture_config(name):
    with open(os.path.join(ROOT, 'tests', 'fixtures', 'hf_configs', name, 'config.json')) as stream:
        return json.load(stream)


def quantization_paths(release):
    """Command lines for each quantization path of the release rules on the GPUs where they differ (rendered from
    real checkpoint configs), for the parser; plus (name, ok, detail) checks of what each rendered."""
    nvfp4 = profile('qwen3.5-397b-a17b-nvfp4')
    # The release rules alone decide: the seed's explicit serving.quantization and backend extra args removed, the
    # real quantization_config of nvidia/Qwen3.5-397B-A17B-NVFP4 in.
    nvfp4['serving'].pop('quantization', None)
    nvfp4['serving'].pop('extra_args', None)
    nvfp4['config']['quantization_config'] = fixture_config('nvidia__Qwen3.5-397B-A17B-NVFP4')['quantization_config']
    cases = [('nvfp4', nvfp4, gpu, 8) for gpu in ('rtx-pro-6000-blackwell-server', 'b200', 'h200')]
    for name, gpus in (('deepseek-ai__DeepSeek-V3', ('h200', 'l40s')), ('openai__gpt-oss-120b', ('b200', 'h100-80gb')),
                       ('moonshotai__Kimi-K2.5', ('h200',))):
        model = dict(name=name, serving=dict(tp_size=8), config=fixture_config(name))
        cases += [(name, model, gpu, 8) for gpu in gpus]
    good, checks = {}, []
    for label, model, gpu, tp in cases:
        rendered = flags.render(release, model, dict(max_running_requests=8), dict(
            gpu_indices=list(range(tp)), compute_capability=hardware(gpu)['compute_capability'], gpu_name=gpu),
            dict(model_path='/m', tp_size=tp))
        good['quantization %s on %s (%s)' % (label, gpu, rendered['quantization']['format'])] = rendered
        want = 'modelopt_fp4' if (label == 'nvfp4' and gpu.startswith('rtx-pro')) else None
        argv = rendered['argv']
        got = argv[argv.index('--quantization') + 1] if '--quantization' in argv else None
        checks.append(('quantization %s on %s renders --quantization %s' % (label, gpu, want), got == want,
                       'rendered %s' % got))
    return good, checks


def good_command_lines(release):
    """name -> flags.render() result of every command line the collection renders for the checks: the seed in its
    variants, the 397B NVFP4, every committed profile (make sglang-release renders them with a new release's rules
    and parses them with its parser: tests/sglang/release_facts.py)."""
    q122, q397 = profile('qwen3.5-122b-a10b'), profile('qwen3.5-397b-a17b-nvfp4')
    plan = dict(mem_fraction_static=0.7851, max_running_requests=22, context_length=262144)
    good = {
        '122b seed (TP4, MTP, SEV-SNP)': flags.render(release, q122, plan, dict(gpu_indices=[0, 1, 2, 3], sev_snp=True),
                                                      dict(model_path='/shared/models/Qwen3.5-122B-A10B', host='0.0.0.0')),
        '122b no MTP, radix off': flags.render(release, q122, plan, {}, dict(
            model_path='/m', speculative_num_draft_tokens=0, radix_cache=False)),
        '122b no MTP, auto (explicit extra_buffer)': flags.render(release, q122, plan, {}, dict(
            model_path='/m', speculative_num_draft_tokens=0)),
        '122b no_buffer + no overlap': flags.render(release, q122, plan, {}, dict(
            model_path='/m', mamba_strategy='no_buffer', disable_overlap_schedule=True)),
        '122b auto resolving to no_buffer (overlap off)': flags.render(release, q122, plan, {}, dict(
            model_path='/m', disable_overlap_schedule=True)),
        '122b extra_buffer_lazy, page 64, fp8 KV, bf16 SSM, metrics': flags.render(release, q122, plan, {}, dict(
            model_path='/m', mamba_strategy='extra_buffer_lazy', page_size=64, chunked_prefill_size=8192,
            kv_cache_dtype='fp8_e4m3', mamba_ssm_dtype='bfloat16', enable_metrics=True, watchdog_timeout=1200)),
        '122b two nodes': flags.render(release, q122, plan, dict(nnodes=2, node_rank=1, dist_init_addr='10.0.0.1:5000',
                                                                 gpu_indices=[0, 1]), dict(model_path='/m')),
        '397b NVFP4 TP8': flags.render(release, q397, dict(max_running_requests=64), dict(gpu_indices=list(range(8))),
                                       dict(model_path='/m', attention_backend='flashinfer')),
        '122b DP attention 2 x TP2, mamba slots and pool share': flags.render(
            release, q122, plan, dict(gpu_indices=[0, 1, 2, 3]), dict(
                model_path='/m', dp_size=2, enable_dp_attention=True, max_mamba_cache_size=120,
                mamba_full_memory_ratio=0.5)),
    }
    # Every other committed profile (most of them generated by make profile) renders a command line SGLang accepts.
    for name in sorted(n[:-4] for n in os.listdir(os.path.join(ROOT, 'profiles', 'models')) if n.endswith('.yml')):
        if name in ('qwen3.5-122b-a10b', 'qwen3.5-397b-a17b-nvfp4'):
            continue
        data = profile(name)
        tp = data['serving']['tp_size']
        # An EAGLE-3 profile's draft checkpoint is downloaded beside the model (llmops_deployment.model.draft.path).
        draft = '/d' if (data['serving'].get('speculative') or {}).get('draft') else None
        good['profile %s (TP%d)' % (name, tp)] = flags.render(
            release, data, dict(max_running_requests=8), dict(gpu_indices=list(range(tp))),
            dict(model_path='/m', speculative_draft_model_path=draft))
    return good


def main():
    import sglang
    version = sglang.__version__
    release = sglang_release.release(table(), version)
    good = good_command_lines(release)
    quant_good, quant_checks = quantization_paths(release)
    good.update(quant_good)
    bad = {
        'abbreviated --speculative-algo': (['--model-path', '/m', '--speculative-algo', 'NEXTN'], 'abbreviation'),
        'invalid reasoning parser': (['--model-path', '/m', '--reasoning-parser', 'qwen35'], 'argparse'),
        'invalid tool parser': (['--model-path', '/m', '--tool-call-parser', 'qwen3-coder'], 'argparse'),
    }
    alias = release['flags']['mamba_alias']
    if alias is None and release['flags']['mamba_flag'] != '--mamba-scheduler-strategy':
        # The old name is gone (0.5.20 on): argparse refuses it.
        bad['old name --mamba-scheduler-strategy'] = (
            ['--model-path', '/m', '--mamba-scheduler-strategy', 'extra_buffer'], 'argparse')
    elif alias is not None:
        # Still a deprecated alias of the new flag (0.5.15, 0.5.18): it parses, and the collection never renders it.
        good['deprecated alias %s' % alias] = dict(argv=['--model-path', '/m', alias, 'extra_buffer'], preflight=[])
    passed = failed = 0
    # The pre-checks' SGLang wording and every log line the collection matches: tests/sglang/test_log_catalogue.py.
    source = srt_source(os.path.dirname(sglang.__file__))
    # The draft's context refusal quotes configs/model_config.py (the draft is built with the target's context).
    eagle = profile('qwen3-32b-eagle3')
    eagle['serving']['speculative']['draft']['config']['max_position_embeddings'] = 2048
    rendered = flags.render(release, eagle, {}, {}, dict(model_path='/m', speculative_draft_model_path='/d'))
    messages = [c['message'] for c in rendered['preflight'] if c['check'] == 'draft_context_length']
    literal = "context_length ({context_length}) is greater than the derived context_length"
    ok = bool(messages) and 'is greater than the derived context_length (2048)' in messages[0] and literal in source
    print('%s wording: draft_context_length -> %s' % ('PASS' if ok else 'FAIL', messages[0] if messages else 'not refused'))
    passed, failed = passed + ok, failed + (not ok)
    for program, spec in sorted((release.get('host_programs') or {}).items()):
        ok = spec['missing_message'] in source
        print('%s host program: %s (%s) %r' % ('PASS' if ok else 'FAIL', program, spec['package'], spec['missing_message']))
        passed, failed = passed + ok, failed + (not ok)
    # The release table's argparse facts for this release are the parser's own; its quantization rules cite the
    # wheel's own lines and its parser-detection rules give SGLang's own verdicts (tests/sglang/release_rules.py).
    srt = os.path.join(os.path.dirname(sglang.__file__), 'srt')
    for name, ok, detail in (table_matches_parser(release) + architectures_match_source(release) +
                             release_rules.quantization_rules_match_source(release, srt) +
                             release_rules.detection_matches_sglang(release) + quant_checks +
                             metrics_match_source(release)):
        print('%s table: %s (%s)' % ('PASS' if ok else 'FAIL', name, detail))
        passed, failed = passed + ok, failed + (not ok)
    # The role's launcher hands the API keys to SGLang as a --config file: the pinned release must read them from it.
    ok, detail = launcher_config_reaches_sglang(good['122b seed (TP4, MTP, SEV-SNP)']['argv'])
    print('%s launcher --config: %s' % ('PASS' if ok else 'FAIL', detail))
    passed, failed = passed + ok, failed + (not ok)
    for name, rendered in sorted(good.items()):
        assert not rendered['preflight'], (name, rendered['preflight'])
        result = checker.check(rendered['argv'])
        ok = result['ok']
        values = result.get('values') or {}
        if ok and '--max-running-requests' in rendered['argv']:
            ok = values.get('max_running_requests') == int(rendered['argv'][rendered['argv'].index('--max-running-requests') + 1])
        print('%s good: %s%s' % ('PASS' if ok else 'FAIL', name, '' if ok else ' -> %s' % result.get('error')))
        passed, failed = passed + ok, failed + (not ok)
    for name, (argv, kind) in sorted(bad.items()):
        result = checker.check(argv)
        ok = not result['ok'] and result['kind'] == kind
        print('%s bad: %s -> %s' % ('PASS' if ok else 'FAIL', name, result.get('error')))
        passed, failed = passed + ok, failed + (not ok)
    ok, detail = batch_matches_single(good, bad)
    print('%s batch: %s' % ('PASS' if ok else 'FAIL', detail))
    passed, failed = passed + ok, failed + (not ok)
    print('sglang %s parser: %d passed, %d failed' % (version, passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
