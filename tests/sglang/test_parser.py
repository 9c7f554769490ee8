#!/usr/bin/env python
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every command line sglang_flags renders must pass the real parser of the installed SGLang; known-bad ones must not.

Run with the python of the lab SGLang venv (tests/bench/setup-bench-venv.sh: the full sglang==<pin>; no GPU needed):
  tests/sglang/run-parser-tests.sh            (builds/reuses the venv, then runs this file)
Prints one line per case and a closing "N passed, N failed"; exit 1 on any failure.
"""
import importlib.util
import os
import sys
import tempfile

import yaml  # SGLang depends on PyYAML, so the venv has it

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, 'plugins', 'module_utils', name + '.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


flags = load('sglang_flags')
checker = load('sglang_parser_check')


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
        try:
            args = prepare_server_args(list(argv) + ['--config', path])
        except SystemExit as exc:
            return False, 'SGLang refused the config file (exit %s)' % exc.code
    got = dict((flag, getattr(args, flag.replace('-', '_'), None)) for flag in keys)
    return got == keys and mode == 0o600, 'read back %s, file mode %o' % (sorted(k for k in got if got[k] == keys[k]), mode)


def main():
    import sglang
    version = sglang.__version__
    q122, q397 = profile('qwen3.5-122b-a10b'), profile('qwen3.5-397b-a17b-nvfp4')
    plan = dict(mem_fraction_static=0.7851, max_running_requests=22, context_length=262144)
    good = {
        '122b seed (TP4, MTP, SEV-SNP)': flags.render(version, q122, plan, dict(gpu_indices=[0, 1, 2, 3], sev_snp=True),
                                                      dict(model_path='/shared/models/Qwen3.5-122B-A10B', host='0.0.0.0')),
        '122b no MTP, radix off': flags.render(version, q122, plan, {}, dict(
            model_path='/m', speculative_num_draft_tokens=0, radix_cache=False)),
        '122b no_buffer + no overlap': flags.render(version, q122, plan, {}, dict(
            model_path='/m', mamba_strategy='no_buffer', disable_overlap_schedule=True)),
        '122b extra_buffer_lazy, page 64, fp8 KV, bf16 SSM, metrics': flags.render(version, q122, plan, {}, dict(
            model_path='/m', mamba_strategy='extra_buffer_lazy', page_size=64, chunked_prefill_size=8192,
            kv_cache_dtype='fp8_e4m3', mamba_ssm_dtype='bfloat16', enable_metrics=True, watchdog_timeout=1200)),
        '122b two nodes': flags.render(version, q122, plan, dict(nnodes=2, node_rank=1, dist_init_addr='10.0.0.1:5000',
                                                                 gpu_indices=[0, 1]), dict(model_path='/m')),
        '397b NVFP4 TP8': flags.render(version, q397, dict(max_running_requests=64), dict(gpu_indices=list(range(8))),
                                       dict(model_path='/m', attention_backend='flashinfer')),
    }
    bad = {
        'abbreviated --speculative-algo': (['--model-path', '/m', '--speculative-algo', 'NEXTN'], 'abbreviation'),
        'old name --mamba-scheduler-strategy': (['--model-path', '/m', '--mamba-scheduler-strategy', 'extra_buffer'],
                                                'argparse'),
        'invalid reasoning parser': (['--model-path', '/m', '--reasoning-parser', 'qwen35'], 'argparse'),
        'invalid tool parser': (['--model-path', '/m', '--tool-call-parser', 'qwen3-coder'], 'argparse'),
    }
    passed = failed = 0
    # The pre-checks quote SGLang: each refusal the rules produce for the pinned release must be text of that
    # release's own source (one string literal of it), and so must the log lines the stall detector keys on.
    source = srt_source(os.path.dirname(sglang.__file__))
    rules = flags.rules_for(version)[1]
    refusals = {
        'tp_nnodes': (dict(tp_size=4), dict(nnodes=3, node_rank=0, dist_init_addr='h:1'),
                      'tp_size must be divisible by number of nodes'),
        'served_model_name': (dict(served_model_name='a:b'), {}, "served_model_name cannot contain a colon (':') character. "),
        'chunked_prefill_page': (dict(page_size=64, chunked_prefill_size=1000), {},
                                 'chunked_prefill_size must be divisible by page_size'),
        'mamba_no_buffer_overlap': (dict(mamba_strategy='no_buffer'), {},
                                    'no_buffer do not support overlap schedule. Try to set disable_overlap_schedule=True.'),
        'mamba_no_buffer_page': (dict(mamba_strategy='no_buffer', disable_overlap_schedule=True, page_size=64), {},
                                 'no_buffer only supports page_size=1.'),
        'mamba_no_buffer_backend': (dict(mamba_strategy='no_buffer', disable_overlap_schedule=True,
                                         attention_backend='trtllm_mha'), {},
                                    'no_buffer do not support trtllm_mha attention backend.'),
        'context_length': (dict(context_length=300000), {}, 'is greater than the derived context_length'),
        'trtllm_topk': (dict(attention_backend='trtllm_mha', speculative_eagle_topk=2), {},
                        'trtllm_mha backend only supports topk = 1 for speculative decoding.'),
        'fa3_blackwell': (dict(attention_backend='fa3'), dict(compute_capability='10.0'),
                          'FlashAttention v3 Backend requires SM>=80 and SM<=90'),
        'gdn_blackwell_backend': (dict(attention_backend='fa3'), dict(compute_capability='10.0'),
                                  'backends are supported on Blackwell GPUs for hybrid GDN models'),
        # The first string literal of the message (the source splits it over two).
        'pp_spec': (dict(pp_size=2), {}, rules['pp_spec_message'][:40]),
    }
    for check, (server, host, literal) in sorted(refusals.items()):
        rendered = flags.render(version, q122, plan, host, dict(dict(model_path='/m'), **server))
        messages = [c['message'] for c in rendered['preflight'] if c['check'] == check]
        ok = bool(messages) and literal in messages[0] and literal in source
        print('%s wording: %s -> %s' % ('PASS' if ok else 'FAIL', check, messages[0] if messages else 'not refused'))
        passed, failed = passed + ok, failed + (not ok)
    for name in ('parallel_begin', 'parallel_end'):
        ok = rules[name].rstrip('.') in source
        print('%s log line: %s %r' % ('PASS' if ok else 'FAIL', name, rules[name]))
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
    print('sglang %s parser: %d passed, %d failed' % (version, passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
