# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""For every SGLang server make plan rendered: plan.json and the rendered unit describe the same server.

    python check_consistency.py PLAN_DIR [EXPECT.yml]

Compares, host by host, the VRAM plan (plan.json) with the flags of the unit's ExecStart line (what the deploy
writes): max running requests, mem fraction, context length, TP size, the speculative settings, the mamba strategy
and overlap schedule, radix cache, page size, KV and SSM dtypes. EXPECT.yml (optional) maps host -> {flag: value}
that the inventory's layers must have produced (value null: the flag must be absent). Prints a table; exit 1 on
any difference.
"""

import glob
import json
import os
import shlex
import sys

import yaml


def exec_start(unit_path):
    with open(unit_path) as handle:
        lines = [line for line in handle.read().splitlines() if line.startswith('ExecStart=')]
    assert len(lines) == 1, unit_path
    argv = shlex.split(lines[0][len('ExecStart='):])
    return argv[argv.index('--model-path'):]


def flags(argv):
    out, index = {}, 0
    while index < len(argv):
        arg = argv[index]
        if arg.startswith('--') and index + 1 < len(argv) and not argv[index + 1].startswith('--'):
            out[arg] = argv[index + 1]
            index += 2
        else:
            out[arg] = True
            index += 1
    return out


def compare(plan, got):
    spec = plan['speculative']
    wanted = {
        # Rendered only when the inventory sets it; unset, SGLang's own choice is what the plan reports.
        '--max-running-requests': str(plan['max_running_requests']) if '--max-running-requests' in got else None,
        '--mem-fraction-static': ('%.4f' % plan['mem_fraction_static']).rstrip('0').rstrip('.'),
        '--context-length': str(plan['context_length']),
        '--tp-size': str(plan['tp_size']),
        '--speculative-algorithm': spec['algorithm'] if spec['enabled'] else None,
        '--speculative-num-steps': str(spec['num_steps']) if spec['enabled'] else None,
        '--speculative-eagle-topk': str(spec['eagle_topk']) if spec['enabled'] else None,
        '--speculative-num-draft-tokens': str(spec['num_draft_tokens']) if spec['enabled'] else None,
        '--mamba-radix-cache-strategy': plan['mamba_strategy'],
        '--disable-overlap-schedule': True if plan['disable_overlap_schedule'] else None,
        '--disable-radix-cache': None if plan['radix_cache'] else True,
    }
    if plan['kv_cache_dtype'] not in ('bfloat16', 'float16') or '--kv-cache-dtype' in got:
        wanted['--kv-cache-dtype'] = plan['kv_cache_dtype']
    if plan.get('mamba_ssm_dtype') and '--mamba-ssm-dtype' in got:
        wanted['--mamba-ssm-dtype'] = plan['mamba_ssm_dtype']
    if '--page-size' in got or plan['page_size'] != 1:
        wanted['--page-size'] = str(plan['page_size'])
    if '--chunked-prefill-size' in got:
        wanted['--chunked-prefill-size'] = str(plan['chunked_prefill_size'])
    return dict((flag, (value, got.get(flag))) for flag, value in wanted.items() if got.get(flag) != value)


def main(plan_dir, expect_path=None):
    expect = {}
    if expect_path:
        with open(expect_path) as handle:
            expect = yaml.safe_load(handle) or {}
    rows, failures = [], []
    for path in sorted(glob.glob(os.path.join(plan_dir, '*', 'plan.json'))):
        host = os.path.basename(os.path.dirname(path))
        with open(path) as handle:
            planned = json.load(handle)
        units = glob.glob(os.path.join(plan_dir, host, 'files', 'etc', 'systemd', 'system', 'sglang-*.service'))
        if planned.get('error'):
            failures.append('%s: refused, no consistency to check: %s' % (host, planned['error'][:200]))
            continue
        assert len(units) == 1, (host, units)
        got = flags(exec_start(units[0]))
        diff = compare(planned['plan'], got)
        for flag, value in sorted((expect.get(host) or {}).items()):
            value = None if value is None else str(value) if value is not True else True
            if got.get(flag) != value:
                diff['layer ' + flag] = (value, got.get(flag))
        plan = planned['plan']
        rows.append('| %s | %s | %s | %s | %s | %s | %s | %s |' % (
            host, plan['tp_size'], plan['max_running_requests'], plan['mem_fraction_static'], plan['context_length'],
            '%s/%s/%s' % (plan['speculative']['num_steps'], plan['speculative']['eagle_topk'],
                          plan['speculative']['num_draft_tokens']) if plan['speculative']['enabled'] else 'off',
            plan['mamba_strategy'], 'same' if not diff else 'DIFFERENT'))
        for flag, (want, have) in sorted(diff.items()):
            failures.append('%s: %s plan/expected %r, unit %r' % (host, flag, want, have))
    print('| host | TP | max running | mem fraction | context | MTP | mamba | plan vs unit |')
    print('|---|---|---|---|---|---|---|---|')
    print('\n'.join(rows))
    missing = sorted(set(expect) - set(r.split(' | ')[0][2:] for r in rows))
    for host in missing:
        failures.append('%s: expected but not rendered' % host)
    for failure in failures:
        print(failure, file=sys.stderr)
    if not rows:
        print('no rendered server under %s' % plan_dir, file=sys.stderr)
        return 1
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main(*sys.argv[1:]))
