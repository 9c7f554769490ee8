# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Render a vram_plan result as a terminal table and as Markdown. PRIVATE to the collection.

Numbers come from the plan; the one row the plan has no level for (the binding running-request count of the context
table) is computed by the planner's own vram_plan.context_table on the plan's values.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.planner.vram_plan import context_table

MIB = 1 << 20


# vram_plan.verdict() says "FITS (tight)" below this many running requests, or below SGLang's own activation
# reserve: the reports say which.
TIGHT_RUNNING_REQUESTS = 32


def _num(value):
    return '-' if value is None else '{:,}'.format(value)


def tight_reason(plan):
    """Why a fitting plan is "tight", in words (empty when it is not)."""
    reasons = []
    running = plan.get('max_running_requests')
    if isinstance(running, int) and running < TIGHT_RUNNING_REQUESTS:
        reasons.append('max running requests %d < %d' % (running, TIGHT_RUNNING_REQUESTS))
    reserve, headroom = plan.get('sglang_runtime_reserve_gib'), plan.get('headroom_gib')
    if isinstance(reserve, (int, float)) and isinstance(headroom, (int, float)) and headroom < reserve:
        reasons.append('headroom %.1f GiB < SGLang\'s activation reserve %.1f GiB' % (headroom, reserve))
    return ' and '.join(reasons)


def headline(plan):
    """One sentence: fits or not, KV tokens, max running requests and what binds them, context; "tight" defined."""
    text = '**%s**: %s KV cache tokens, max running requests %s (bound by %s), context length %s.' % (
        plan['verdict'], _num(plan.get('kv_cache_tokens')), _num(plan.get('max_running_requests')),
        str(plan.get('max_running_requests_bound_by') or '?').replace('_', ' '), _num(plan.get('context_length')))
    if 'tight' in plan['verdict']:
        text += ' *Tight* means it starts, but %s.' % tight_reason(plan)
    return text


def context_rows(plan):
    """The rows of the context table: the planned concurrency levels and, in order among them, the binding
    running-request count (the plan's max running requests), marked ``binding``. Its context comes from the planner's
    own rule (vram_plan.context_table) on the plan's KV tokens and context length."""
    running = plan.get('max_running_requests')
    rows = [dict(row, binding=row['concurrency'] == running) for row in plan['max_context_at_concurrency']]
    if isinstance(running, int) and running > 0 and not any(row['binding'] for row in rows):
        row = context_table(plan['kv_cache_tokens'], plan['context_length'], running, [running])[0]
        rows.append(dict(row, binding=True))
    return sorted(rows, key=lambda row: row['concurrency'])


def _running_words(plan):
    return 'max running requests, bound by %s%s' % (
        str(plan.get('max_running_requests_bound_by') or '?').replace('_', ' '),
        ', per DP worker' if plan.get('attn_dp_size', 1) > 1 else '')


def _ctx(plan):
    cells = []
    for row in context_rows(plan):
        level = '%d (%s)' % (row['concurrency'], _running_words(plan)) if row['binding'] else str(row['concurrency'])
        if row['max_context_tokens'] is None:
            cells.append('%s: queued (more than SGLang runs at once)' % level)
        else:
            cells.append('%s: %s' % (level, _num(row['max_context_tokens'])))
    return ' | '.join(cells)


def _roofline(plan):
    roof = plan['decode_roofline_tok_s']
    if roof.get('no_mtp') is None:
        return 'n/a'
    text = '%d tok/s' % roof['no_mtp']
    if roof.get('mtp'):
        text += ', with MTP (accept %.1f) %d tok/s' % (roof['accept_length'], roof['mtp'])
    return text


def summary_rows(plan):
    """(label, value) pairs shared by the text and Markdown renderings."""
    frac = plan['mem_fraction_static']
    heur = plan['mem_fraction_heuristic']
    if plan['mem_fraction_static_source'] == 'input':
        frac_text = '%.3f (set)' % frac
    else:
        frac_text = '%.3f (SGLang default: %.3f' % (frac, heur['before_vlm_factor'])
        frac_text += ' x VLM %.3f)' % heur['vlm_factor'] if heur['vlm_factor'] != 1.0 else ')'
    weights = plan['weights_detail']
    weights_text = '%.1f GiB' % plan['weights_gib_per_gpu']
    spec = plan['speculative']
    draft = spec.get('draft')
    if weights['draft_gib']:
        weights_text += ' (target %.1f + %s draft %.1f)' % (weights['target_gib'], 'EAGLE-3' if draft else 'MTP',
                                                            weights['draft_gib'])
    rows = [
        ('sglang', '%s (%s rules)' % (plan['sglang_version'], plan['sglang_rules'])),
        ('mem_fraction_static', frac_text),
        ('weights / GPU', weights_text),
    ]
    if not str(weights['source']).startswith('config'):
        # A quantized checkpoint: say whether the size is the index's total or computed (and how sure that is).
        rows.append(('weights sized from', weights['source']))
    rows += [
        ('free before load / budget', '%.1f GiB / %.1f GiB (%s)' % (
            plan['free_before_load_gib'], plan['static_budget_gib'], plan['free_memory_source'])),
    ]
    if plan['mamba_cache_slots'] is not None:
        rows.append(('mamba slots', '%s x %.1f MiB (%s SSM), %s per request (%s)' % (
            _num(plan['mamba_cache_slots']), plan['mamba_bytes_per_slot'] / float(MIB), plan['mamba_ssm_dtype'],
            plan['mamba_slots_per_request'], plan['mamba_strategy'] or 'radix off')))
    if plan.get('attn_dp_size', 1) > 1:
        rows.append(('DP attention', '%d workers x attention TP %d: %d requests, %s KV tokens each (total %d, %s)' % (
            plan['attn_dp_size'], plan['attn_tp_size'], plan['max_running_requests'], _num(plan['kv_cache_tokens']),
            plan['max_running_requests_total'], _num(plan['kv_cache_tokens_total']))))
    if spec['enabled'] and draft:
        rows.append(('EAGLE-3', '%s %d/%d/%d, draft %s (%d layer(s)): %.2f GiB at sizing, %.2f GiB freed after, '
                     'KV %s B/token (%s in the cell)' % (
                         spec['algorithm'], spec['num_steps'], spec['eagle_topk'], spec['num_draft_tokens'], draft['arch'],
                         draft['layers'], draft['weights_at_sizing_gib'], draft['freed_after_sizing_gib'],
                         _num(draft['kv_bytes_per_token']), _num(plan['kv_bytes_per_token_draft_in_budget']))))
    elif spec['enabled']:
        rows.append(('MTP', '%s %d/%d/%d, verify states %.2f GiB' % (
            spec.get('algorithm') or 'NEXTN', spec['num_steps'], spec['eagle_topk'], spec['num_draft_tokens'],
            plan['spec_state_gib'])))
        if weights.get('draft_class'):
            # The MTP class's own embedding and lm_head: resident when the pools are sized, freed afterwards.
            rows.append(('MTP draft', '%s: %.2f GiB at sizing, %.2f GiB freed after (own embedding + lm_head)' % (
                weights['draft_class'], weights['draft_at_sizing_gib'], weights['draft_freed_after_gib'])))
    rows += [
        ('KV tokens', '%s (%s B/token, %s%s)' % (
            _num(plan['kv_cache_tokens']), _num(plan['kv_bytes_per_token']), plan['kv_cache_dtype'],
            ', DSA indexer %s B' % _num(plan['dsa_indexer_bytes_per_token']) if plan.get('dsa_indexer_bytes_per_token')
            else '')),
        ('max running requests', '%d (bound by %s)' % (plan['max_running_requests'],
                                                       plan['max_running_requests_bound_by'].replace('_', ' '))),
        ('max context @ concurrency', _ctx(plan)),
        ('headroom / GPU', '%.1f GiB left after weights and pools for activations, CUDA graphs and NCCL (SGLang\'s '
         'activation reserve estimate %.1f GiB)' % (plan['headroom_gib'], plan['sglang_runtime_reserve_gib'])),
        ('decode roofline', _roofline(plan)),
        ('verdict', verdict_text(plan)),
    ]
    return rows


def verdict_text(plan):
    """The verdict, with "tight" defined where it appears."""
    if 'tight' in plan['verdict']:
        return '%s: tight = it starts, but %s' % (plan['verdict'], tight_reason(plan))
    return plan['verdict']


def render_text(plan, title):
    """Lines for ansible.builtin.debug: a two-column table, limits and recommendations."""
    rows = summary_rows(plan)
    width = max(len(label) for label, _value in rows)
    lines = [title, '-' * len(title)]
    lines += ['%s  %s' % (label.ljust(width), value) for label, value in rows]
    for limit in plan['limits']:
        lines.append('limit: %s' % limit)
    for rec in plan.get('recommendations') or []:
        lines.append('try: %s -- %s' % (' '.join(rec['flags']), _effect_text(rec)))
    for note in plan.get('notes') or []:
        lines.append('note: %s' % note)
    return lines


def _effect_text(rec):
    if rec.get('error'):
        return 'fails: %s' % rec['error']
    effect = rec.get('effect')
    if not effect:
        return rec['why']
    parts = []
    for key, label in (('max_running_requests', 'running'), ('kv_cache_tokens', 'KV tokens'),
                       ('mamba_cache_slots', 'mamba slots'), ('headroom_gib', 'headroom GiB')):
        old, new = effect[key]
        if old != new:
            parts.append('%s %s -> %s' % (label, _num(old), _num(new)))
    return '%s (%s)' % ('; '.join(parts) or 'no change', rec['why'])


def _cell(value):
    return '-' if value is None else str(value).replace('|', '\\|')


def provenance_markdown(rows):
    """The section "Command line and environment: where each value comes from" of plan.md: one table row per row of
    llmops_deployment.provenance (the launcher, each flag, each environment variable)."""
    out = ['## Command line and environment: where each value comes from', '',
           'Every word of the SGLang command line (flags in their order) and every environment variable of the unit, '
           'as the resolver decided them (`llmops_deployment.provenance`). Sources: *profile* = a key of the model '
           'or hardware profile file named; *inventory* = an `llmops_*` variable as Ansible merged it (group_vars, '
           'host_vars or `-e`), with the profile value it *overrides* (the profile had a value of its own, the '
           'inventory\'s wins); *override* = `deployment_overrides` or a variant\'s overrides; *collection default* = '
           'the variable\'s default (docs/reference.md) when nothing sets it; *collection rule* / *release rule* = '
           'fixed by this collection / by the pinned SGLang release (profiles/sglang_releases.yml); *planner* = '
           'the VRAM plan above. Secrets are shown as `<redacted>`.', '',
           '| kind | name | value | source |', '|---|---|---|---|']
    out += ['| %s | `%s` | %s | %s |' % (row['kind'], row['name'], '`%s`' % _cell(row['value'])
                                         if row['value'] is not None else '-', _cell(row['source'])) for row in rows]
    return out + ['']


def render_markdown(plan, title, flags=None, provenance=None):
    """A self-contained Markdown report (build/plan/<host>/plan.md); provenance: llmops_deployment.provenance."""
    out = ['# %s' % title, '',
           'Computed by `llmops.inference.vram_plan_info` from SGLang %s\'s own memory-planning rules; '
           'not measured on a GPU.' % plan['sglang_version'], '', headline(plan), '']
    if flags:
        out += ['SGLang flags planned: `%s`' % ' '.join(flags), '']
    out += ['| item | value |', '|---|---|']
    out += ['| %s | %s |' % (label, value.replace('|', '/')) for label, value in summary_rows(plan)]
    out += ['', '## Max context per request at N concurrent requests', '',
            'The longest context (prompt + output tokens) each of N requests can hold while all N run at once, the '
            'KV cache shared evenly. SGLang runs at most %s requests at once (%s); the row marked so is that count. '
            '*Bound by*: *context length* = the server\'s --context-length; *kv cache* = the KV cache tokens / N; '
            '*max running requests* = N is more than SGLang runs at once, so the rest queue (-).'
            % (_num(plan.get('max_running_requests')), _running_words(plan)), '',
            '| concurrent | max context (tokens) | bound by |', '|---|---|---|']
    for row in context_rows(plan):
        level = ('**%d** (%s)' % (row['concurrency'], _running_words(plan)) if row['binding']
                 else '%d' % row['concurrency'])
        out.append('| %s | %s | %s |' % (level, _num(row['max_context_tokens']), row['bound_by'].replace('_', ' ')))
    out += ['', '## What binds first', '']
    out += ['- %s' % limit for limit in plan['limits']]
    recs = plan.get('recommendations') or []
    if recs:
        out += ['', '## Recommendations (each re-planned)', '', '| flags | effect |', '|---|---|']
        out += ['| `%s` | %s |' % (' '.join(rec['flags']), _effect_text(rec).replace('|', '/')) for rec in recs]
    out += ['', '## Memory per GPU (GiB)', '', '| pool | GiB |', '|---|---|']
    for label, key in (('free before loading', 'free_before_load_gib'), ('free after loading', 'free_after_load_gib'),
                       ('static budget (x mem_fraction_static)', 'static_budget_gib'),
                       ('left for mamba + KV pools', 'rest_for_pools_gib'), ('mamba state pool', 'mamba_pool_gib'),
                       ('MTP verify states', 'spec_state_gib'), ('KV cache K', 'k_size_gib'),
                       ('KV cache V', 'v_size_gib'), ('draft KV (MTP / EAGLE-3)', 'draft_kv_gib'),
                       ('multimodal reserve', 'mm_reserve_gib')):
        out.append('| %s | %.2f |' % (label, plan[key] or 0.0))
    freed = plan['weights_detail'].get('draft_freed_after_gib')
    if freed:
        # Counted in "free after loading" (resident at sizing), given back once init_lm_head shares the target's.
        out.append('| draft\'s own embedding + lm_head, freed after sizing | +%.2f |' % freed)
    out.append('| headroom | %.2f |' % plan['headroom_gib'])
    for note in plan.get('notes') or []:
        out.append('')
        out.append('Note: %s' % note)
    out.append('')
    if provenance:
        out += provenance_markdown(provenance)
    return '\n'.join(out)
