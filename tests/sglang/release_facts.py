#!/usr/bin/env python
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a bump of SGLang can change for this collection, read from the installed release itself, as JSON (issue #29).

Run with the python of a release's lab venv (tests/bench/setup-bench-venv.sh VERSION); tests/tools/sglang_release.py
compares the facts of two releases and writes the report. Nothing here is copied from the release table: each fact
is the installed release's own.

  server_args   every option of ServerArgs.add_cli_args (its long name, aliases, dest, default, choices, nargs,
                whether its help says deprecated or hides it)
  memory        the memory defaults SGLang's own resolution gives for a few fixed cases (tests/oracle/sglang_oracle.py:
                mem_fraction_static, chunked_prefill_size, cuda_graph_max_bs, max_running_requests, KV tokens), or
                why the oracle could not drive this release
  metrics       every metric family the release's own collectors expose (tests/sglang/sglang_metrics_exposition.py),
                name -> type
  texts         every log text and pre-check wording the collection matches (tests/sglang/test_log_catalogue.py,
                run against this release's table entry, or the pin's as the draft when it has none): label -> PASS,
                FAIL or SKIP with the detail
  registry      the architectures of the release's model registry (ModelRegistry.get_supported_archs)
  host_programs for each host program of the pin's entry, whether this release's source has its missing message
  rendered      every command line the collection renders in the parser check (tests/sglang/test_parser.py
                good_command_lines: the seed's variants and every committed profile), rendered with the same entry
                and parsed by this release's own parser: name -> its flags, whether the parser accepts it, its error

  $PY tests/sglang/release_facts.py --out build/sglang-release/facts-0.5.22.json
"""
import argparse
import importlib.metadata
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'tools'))
sys.path.insert(0, os.path.join(HERE, '..', 'oracle'))
sys.path.insert(0, HERE)
from collection_paths import PIN, ROOT, release_table_data  # noqa: E402  pylint: disable=wrong-import-position

CONFIGS = os.path.join(ROOT, 'tests', 'fixtures', 'hf_configs')
# Fixed cases for the memory defaults: the seed (hybrid GDN MoE with MTP on 96 GB cards), a dense GQA model on an
# 80 GB Hopper and on a 48 GB card. The inputs are the case's, never a release's value.
MEMORY_CASES = [
    dict(id='seed qwen3.5-122b TP4 MTP, 96 GB sm_120', config='Qwen__Qwen3.5-122B-A10B', tp=4, gpu_mem_mib=97887,
         cc='12.0', spec='nextn', free_after_load_gib=35.164, free_before_load_gib=94.193),
    dict(id='llama-3.1-8b TP1, 80 GB sm_90', config='meta-llama__Meta-Llama-3.1-8B', tp=1, gpu_mem_mib=81559, cc='9.0',
         free_before_load_gib=78.5, free_after_load_gib=63.4),
    dict(id='llama-3.1-8b TP1, 48 GB sm_89', config='meta-llama__Meta-Llama-3.1-8B', tp=1, gpu_mem_mib=46068, cc='8.9',
         free_before_load_gib=44.1, free_after_load_gib=29.0),
]
MEMORY_KEYS = ('mem_fraction_static', 'chunked_prefill_size', 'cuda_graph_max_bs', 'max_running_requests')


def jsonable(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple, set)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return dict((str(k), jsonable(v)) for k, v in value.items())
    return repr(value)


def server_args():
    """--long-name -> its facts, for every option of the release's own parser."""
    from sglang.srt.server_args import ServerArgs
    parser = argparse.ArgumentParser(add_help=False)
    ServerArgs.add_cli_args(parser)
    out = {}
    for action in parser._actions:  # pylint: disable=protected-access
        if not action.option_strings:
            continue
        longs = [o for o in action.option_strings if o.startswith('--')]
        name = longs[0] if longs else action.option_strings[0]
        hidden = action.help == argparse.SUPPRESS
        text = '' if hidden or not action.help else ' '.join(str(action.help).split())
        out[name] = dict(aliases=[o for o in action.option_strings if o != name], dest=action.dest,
                         default=jsonable(action.default), nargs=jsonable(action.nargs),
                         choices=[str(c) for c in action.choices] if action.choices else None,
                         deprecated=hidden or bool(re.search(r'deprecat', text, re.I)), help=text[:240])
    return out


def memory():
    """The memory defaults of each fixed case as SGLang resolves them, or the harness's reason it could not."""
    try:
        import sglang_oracle
    # Any import failure is the finding.
    except Exception as exc:  # pylint: disable=broad-except
        return dict(error='the oracle does not import with this release: %s: %s' % (type(exc).__name__, exc))
    out = {}
    for case in MEMORY_CASES:
        inputs = dict(case, config=os.path.join(CONFIGS, case['config']))
        try:
            result = sglang_oracle.run_case(inputs)
        except Exception as exc:  # pylint: disable=broad-except
            out[case['id']] = dict(error='%s: %s' % (type(exc).__name__, str(exc)[:300]))
            continue
        refused = result.get('refused')
        server = result.get('server') or {}
        row = dict((k, server.get(k)) for k in MEMORY_KEYS)
        row['kv_tokens'] = (result.get('pools') or {}).get('max_total_num_tokens')
        if refused:
            row['refused'] = '%s: %s' % (refused.get('stage'), str(refused.get('message'))[:300])
        out[case['id']] = row
    return out


def metrics():
    """name -> type of every family the release's own collectors expose."""
    proc = subprocess.run([sys.executable, os.path.join(HERE, 'sglang_metrics_exposition.py')], capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        return dict(error='the release\'s collectors did not run: %s' % proc.stderr.strip()[-600:])
    families = {}
    for line in proc.stdout.splitlines():
        match = re.match(r'^# TYPE (\S+) (\S+)$', line)
        if match:
            families[match.group(1)] = match.group(2)
    return dict(families=families)


def texts(version):
    """label -> [status, detail] of every text and pre-check the collection matches, against this release."""
    import test_log_catalogue as cat
    try:
        release, entry = _entry(version)
    except ValueError as exc:
        return dict(error='the release table entry of %s does not load: %s' % (version, exc))
    found = cat.origins(cat.site_packages())
    out = []
    cat.check_texts(release, found, out)
    cat.check_prechecks(release, found['sglang'], out)
    return dict(entry=entry, results=dict((label, [status, detail]) for status, label, detail in out))


def registry():
    from sglang.srt.models.registry import ModelRegistry
    return sorted(ModelRegistry.get_supported_archs())


def host_programs():
    """program -> whether the release's own source prints the pin's entry's message for it (the same substring test
    as tests/sglang/test_parser.py)."""
    import sglang
    import test_parser
    source = test_parser.srt_source(os.path.dirname(sglang.__file__))
    programs = (release_table_data()['releases'][PIN].get('host_programs') or {})
    return dict((name, spec['missing_message'] in source) for name, spec in sorted(programs.items()))


def _entry(version):
    """The release table entry the collection's rules use for this release: its own where it has flag rules and
    defaults (a release whose planner is not read yet has them), else the pin's as the draft."""
    from ansible_collections.llmops.inference.plugins.module_utils.sglang import release as sglang_release
    table = release_table_data()
    draft = not set(('flags', 'defaults')) <= set(table['releases'].get(version) or {})
    label = '%s (the pin\'s entry as the draft)' % PIN if draft else version
    return sglang_release.release(table, PIN if draft else version, need=('flags', 'defaults')), label


def rendered(version):
    """name -> {flags, ok, error} of every command line of the parser check, by this release's parser."""
    import test_parser
    try:
        release, label = _entry(version)
    except ValueError as exc:
        return dict(error='the release table entry of %s does not load: %s' % (version, exc))
    lines = {}
    for name, result in sorted(test_parser.good_command_lines(release).items()):
        argv = result['argv']
        parsed = test_parser.checker.check(argv)
        lines[name] = dict(flags=sorted(set(a.split('=')[0] for a in argv if a.startswith('--'))), ok=parsed['ok'],
                           error=None if parsed['ok'] else str(parsed.get('error'))[:300])
    return dict(entry=label, lines=lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--out', help='write the JSON here (default: stdout)')
    parser.add_argument('--skip', default='', help='comma-separated sections to leave out (memory,metrics,texts,rendered,registry,host_programs)')
    args = parser.parse_args(argv)
    version = importlib.metadata.version('sglang')
    skip = set(s for s in args.skip.split(',') if s)
    facts = dict(version=version, server_args=server_args())
    for name, func in (('metrics', metrics), ('texts', lambda: texts(version)), ('rendered', lambda: rendered(version)),
                       ('registry', registry), ('host_programs', host_programs), ('memory', memory)):
        if name not in skip:
            facts[name] = func()
    text = json.dumps(facts, indent=1, sort_keys=True)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, 'w', encoding='utf-8') as handle:
            handle.write(text + '\n')
    else:
        print(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
