# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write the stand-in's SGLang 0.5.23 start-up lines for the seed deployment from the collection's own plan.

The lab has no GPU, so its SGLang stand-ins replay start-up lines with KNOWN numbers
(tests/fixtures/sglang_startup/); the start-up record (sglang_startup.py) then compares them with the plan. The
numbers are those of `make plan` for the example inventory's server (build/plan/<host>/plan.json), so the lab's
"correct profile" start agrees with the plan and a deliberately wrong hardware profile drifts. Every line is a format
string of the installed 0.5.23 source (docs/dev/sglang-memory.md section 8; tests/sglang/test_log_catalogue.py
checks the ones the collection parses); CUDA-graph memory is invented (the planner does not size it).

    make plan && .venv/bin/python tests/sglang/make_startup_fixture.py build/plan/sglang-ct/plan.json \
        > tests/fixtures/sglang_startup/qwen3.5-122b-a10b-tp4-rtx-pro-6000.log

Run it again whenever the seed's plan moves (the molecule assertions read the numbers from llmops_deployment).
"""

import json
import sys

GRAPHS = (('target verify', 4, 1.85, 21.33), ('draft decode', 1, 0.31, 4.87), ('draft extend', 4, 0.17, 3.02))


def batch_sizes(running):
    sizes = [b for b in (1, 2, 4, 8, 12, 16, 20, 24, 32, 40, 48) if b < running]
    return sizes + [running]


def lines(plan, gpu_total_mib, tp):
    pre = plan['free_before_load_gib']
    w = plan['weights_detail']
    target, draft = w['target_gib'], w['draft_at_sizing_gib']
    after_target = pre - target
    after_draft = after_target - draft
    slots, running = plan['mamba_cache_slots'], plan['max_running_requests']
    steps = plan['speculative']['num_draft_tokens']
    ssm_slot = plan['ssm_state_gib'] / (slots + 1)
    conv_slot = plan['conv_state_gib'] / (slots + 1)
    # memory_pool.py:864-965: SSM states for (max_running + 1) requests x draft tokens; the conv windows (D + K - 2
    # columns there) are approximated the same way: the record does not compare either.
    inter_ssm = ssm_slot * (running + 1) * steps
    inter_conv = conv_slot * (running + 1) * steps
    tokens = plan['kv_cache_tokens']
    k, v, dk = plan['k_size_gib'], plan['v_size_gib'], plan['draft_kv_gib'] / 2
    # The last "Memory pool end" (the draft's) is what the plan leaves free after every pool; the target's comes
    # before the draft's KV pool.
    draft_end = plan['free_after_pools_gib']
    pool_end = draft_end + plan['draft_kv_gib']
    ranks = ['TP%d' % r for r in range(tp)]
    out = []

    def each(stamp, text):
        out.extend('[2026-12-01 %s %s] %s' % (stamp, rank, text) for rank in ranks)

    def rank0(stamp, text):
        out.append('[2026-12-01 %s TP0] %s' % (stamp, text))

    graph_stamps = iter(('10:01:45', '10:02:07', '10:02:07', '10:02:12', '10:02:12', '10:02:15'))

    each('10:00:05', 'Init parallel begin.')
    each('10:00:07', 'Init parallel ends. elapsed=1.52 s')
    each('10:00:07', 'Memory baseline taken. mem usage=%.2f GB' % (gpu_total_mib / 1024.0 - pre))
    each('10:00:07', 'Load weight begin. avail mem=%.2f GB' % pre)
    each('10:01:42', 'Load weight end. elapsed=95.31 s, type=%s, avail mem=%.2f GB, mem usage=%.2f GB.'
         % (plan['arch'], after_target, target))
    each('10:01:42', 'Load weight begin. avail mem=%.2f GB' % after_target)
    each('10:01:44', 'Load weight end. elapsed=2.10 s, type=%s, avail mem=%.2f GB, mem usage=%.2f GB.'
         % (w['draft_class'], after_draft, draft))
    rank0('10:01:44', 'Reserving %.2f GB of the KV budget for post-sizing multimodal allocations (feature-transport '
          'pools + embedding cache).' % plan['mm_reserve_gib'])
    rank0('10:01:45', 'Mamba Cache is allocated. max_mamba_cache_size: %d, conv_state size: %.2fGB, ssm_state size: '
          '%.2fGB intermediate_ssm_state_cache size: %.2fGB intermediate_conv_window_cache size: %.2fGB '
          % (slots, plan['conv_state_gib'], plan['ssm_state_gib'], inter_ssm, inter_conv))
    rank0('10:01:45', 'KV Cache is allocated. dtype: torch.bfloat16, #tokens: %d, K size: %.2f GB, V size: %.2f GB'
          % (tokens, k, v))
    rank0('10:01:45', 'Memory pool end. avail mem=%.2f GB' % pool_end)
    rank0('10:01:45', 'KV Cache is allocated. dtype: torch.bfloat16, #tokens: %d, K size: %.2f GB, V size: %.2f GB'
          % (tokens, dk, dk))
    rank0('10:01:45', 'Memory pool end. avail mem=%.2f GB' % draft_end)
    avail = draft_end
    sizes = ', '.join(str(b) for b in batch_sizes(running))
    for name, per_req, usage, elapsed in GRAPHS:
        bs = '' if name == 'target verify' else 'bs=[%s], ' % sizes
        rank0(next(graph_stamps), 'Capture %s CUDA graph begin. backend=full, num_tokens_per_req=%d, %savail mem=%.2f GB'
              % (name, per_req, bs, avail))
        tail = 'bs=[%s], ' % sizes if name == 'target verify' else ''
        avail -= usage
        rank0(next(graph_stamps), 'Capture %s CUDA graph end. %selapsed=%.2f s, mem usage=%.2f GB, avail mem=%.2f GB.'
              % (name, tail, elapsed, usage, avail))
    rank0('10:02:15', 'max_total_num_tokens=%d, chunked_prefill_size=%d, max_prefill_tokens=16384, '
          'max_running_requests=%d, context_len=%d, available_gpu_mem=%.2f GB'
          % (tokens, plan['chunked_prefill_size'], running, plan['context_length'], avail))
    return out


def main(path):
    with open(path) as stream:
        report = json.load(stream)
    plan = report['plan']
    header = [
        'SGLang 0.5.23 start-up lines (abridged: every TP rank\'s parallel, baseline and weight lines, TP rank 0\'s',
        'pool, graph and scheduler lines) for the seed deployment: %s, TP%d, MTP NEXTN %d/%d/%d, %s,'
        % (report['model_profile'], plan['tp_size'], plan['speculative']['num_steps'], plan['speculative']['eagle_topk'],
           plan['speculative']['num_draft_tokens'], plan['mamba_strategy']),
        '--max-running-requests %d, on %d GPUs of %d MiB. NOT a captured log: format strings of the installed 0.5.23'
        % (plan['max_running_requests'], plan['tp_size'], plan['gpu_memory_mib']),
        'source filled with KNOWN numbers, those of the collection\'s plan (tests/sglang/make_startup_fixture.py from',
        'make plan: free before load %.2f GiB, weights %.2f + draft %.2f GiB, %d mamba slots, %d KV tokens, %d running'
        % (plan['free_before_load_gib'], plan['weights_detail']['target_gib'],
           plan['weights_detail']['draft_at_sizing_gib'], plan['mamba_cache_slots'], plan['kv_cache_tokens'],
           plan['max_running_requests']),
        'requests; graph memory invented). The lab\'s stand-ins replay it; \'#\' lines are skipped.',
    ]
    print('\n'.join('# ' + line for line in header))
    print('\n'.join(lines(plan, plan['gpu_memory_mib'], plan['tp_size'])))


if __name__ == '__main__':
    main(sys.argv[1] if len(sys.argv) > 1 else 'build/plan/sglang-ct/plan.json')
