# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What make compare writes: the ranked markdown table, the Pareto series and the inventory snippet of the top layout.

PRIVATE to the collection. Pure, stdlib only. ``result`` is the console's dict (tests/tools/compare_console.py run()):
knobs, notes, rows, ranked, fit, band, group, points, skipped, loo, verdicts, traffic, hw, model, gpu.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.bench.report import num
from ansible_collections.llmops.inference.plugins.module_utils.compare import pd as pd_lib
from ansible_collections.llmops.inference.plugins.module_utils.compare import rank as rank_lib

SPEC_TEXT = {'off': 'no-spec', 'mtp': 'MTP', 'eagle3': 'EAGLE-3'}
CHART_LAYOUTS = 8
PD_CHART_LAYOUTS = 2
# vram_plan.recommend's own caveat for the same flag.
FP8_KV_NOTE = '  # halves KV bytes per token; without calibrated scales this risks reasoning accuracy (cookbook warning)'


def banded(value, frac, digits=1):
    """'v (low-high)' with the relative band, 'v (ceiling)' for an uncalibrated roofline, '-' for none."""
    if value is None:
        return '-'
    if frac is None:
        return '%s (ceiling)' % num(value, digits)
    frac = min(frac, 0.95)
    return '%s (%s-%s)' % (num(value, digits), num(value * (1 - frac), digits), num(value * (1 + frac), digits))


def _binds(row):
    cap = row['capacity']
    slots = '; %d mamba slots' % cap['mamba_slots'] if cap.get('mamba_slots') else ''
    text = 'fits; %s binds (cap %d%s)' % (row['cap_bound'], row['cap'], slots)
    run = row['run']
    if not run['sustainable']:
        text += '; %s' % ('prefill saturates at this rate' if run['bound'] == 'prefill'
                          else 'the rate needs a batch above the cap')
    if cap['verdict'] != 'FITS':
        text += ' (%s)' % cap['verdict']
    return text


def _latency(row, key, band_key):
    run = row['run']
    if not run['sustainable']:
        return '-'
    frac = row['band'].get(band_key)
    return '%s / %s' % (banded(run[key + '_p50'] * 1e3, frac), banded(run[key + '_p99'] * 1e3, frac))


def _basis(row):
    band = row['band']
    if row['basis'] == 'roofline':
        return 'roofline (uncalibrated ceiling)'
    text = row['basis']
    if band.get('decode') is not None:
        text += ', band +/-%.0f %% decode (LOO, %d)' % (100 * band['decode'], band['decode_n'])
    if band.get('ttft') is not None:
        text += ', +/-%.0f %% TTFT (%s, LOO, %d)' % (100 * band['ttft'], row['basis_ttft'], band['ttft_n'])
    return text


def table(ranked):
    out = ['| # | layout | GPUs | fits / what binds | KV tokens | max running | tok/s/GPU at SLO | tok/s/user | '
           'TTFT p50 / p99 ms | TPOT p50 / p99 ms | meets targets? | basis |',
           '|---|---|---|---|---|---|---|---|---|---|---|---|']
    for index, row in enumerate(ranked, 1):
        cap = row['capacity']
        frac = row['band'].get('decode')
        out.append('| %d | %s | %d | %s | %s | %d | %s | %s | %s | %s | %s | %s |' % (
            index, row['name'], row['gpus'], _binds(row), '{:,}'.format(cap['kv_tokens']), cap['max_running'],
            banded(row['tok_s_gpu'], frac), banded(row['tok_s_user'], frac), _latency(row, 'ttft', 'ttft'),
            _latency(row, 'tpot', 'decode'), row['meets'], _basis(row)))
    return out


def _fit_lines(result):
    fit, band, group = result['fit'], result['band'], result['group']
    own = [p for p in result['points'] if p['group'] == group and p['calibrates']]
    lines = ['Calibration group: GPU kind compute capability %s, planner family %s: %d measured point(s) of its own '
             '(%s).' % (group[0], group[1], len(own), ', '.join(sorted(set(p['setup'] for p in own))) or 'none'),
             'Factors: every step takes x%.2f its roofline + %.1f us per layer pass (%s, %d figures); TTFT + %.0f ms outside the GPU '
             '(%s, %d figures).' % (fit['kd'], fit['t_fwd'] * 1e6, fit['basis'], fit['n_decode'], fit['ttft_s'] * 1e3,
                                    fit['basis_ttft'], fit['n_ttft'])]
    for key, label in (('decode', 'decode (TPOT, tok/s)'), ('ttft', 'TTFT')):
        if band.get(key) is None:
            lines.append('Uncertainty of %s: none known (no leave-one-out error): roofline figures are ceilings.' % label)
        else:
            lines.append('Uncertainty of %s: +/-%.0f %%, the leave-one-out MAPE of %d measured figure(s) '
                         '(benchmarks/compare_accuracy.py).' % (label, 100 * band[key], band[key + '_n']))
    return lines


def markdown(result, svg_name):
    knobs, traffic = result['knobs'], result['traffic']
    out = ['# make compare: %s on %d x %s' % (knobs['model'], knobs['gpus'], knobs['gpu']), '',
           'Traffic: ISL %d, OSL %d tokens, %g requests/s (Poisson, split evenly over the replicas); targets TTFT p99 '
           '<= %g ms, TPOT p99 <= %g ms. Estimated, never measured on this host unless the basis says measured.'
           % (traffic['isl'], traffic['osl'], traffic['rate'], traffic['ttft_p99_ms'], traffic['tpot_p99_ms']), '']
    out += ['- %s' % note for note in result['notes']] + ([''] if result['notes'] else [])
    out += _fit_lines(result) + ['', '## Ranked layouts', '']
    out += ['tok/s/GPU at SLO: output tokens/s per GPU at the largest rate whose p99 TTFT and TPOT meet the targets. '
            'tok/s/user: 1000 / TPOT p50 at the target rate. Ranges are the uncertainty band. Model: docs/compare.md.', '']
    out += table(result['ranked']) if result['ranked'] else ['No layout fits: see below.']
    out += ['', '![throughput per GPU vs per-user speed](%s)' % svg_name, '', '## Speculative decoding (estimated)', '']
    out += ['- %s' % line for line in result['verdicts']] or ['- no layout has a speculative twin that fits']
    out += measured(result)
    top = result['ranked'][0] if result['ranked'] else None
    out += ['', '## Inventory snippet of the top layout', '']
    if top:
        out += ['%s (%s): snippet.yml' % (top['name'], top['meets'] == 'yes' and 'meets the targets'
                                          or 'meets: %s' % top['meets']), '', '```yaml', snippet(result).rstrip('\n'), '```']
    unfit = [r for r in result['rows'] if not r['fits'] and r['replicas'] == 1]
    out += ['', '## Layouts that do not fit (never ranked)', '']
    if unfit:
        out += ['| layout | why |', '|---|---|']
        out += ['| %s | %s |' % (r['name'], (r['why'] or '').replace('|', '/')[:240]) for r in unfit]
    else:
        out.append('Every layout fits.')
    out += pd_section(result)
    if result['skipped']:
        out += ['', 'Measured points the planner could not size (not used): %s' % '; '.join(
            '%s: %s' % (key, why[:120]) for key, why in result['skipped'])]
    return '\n'.join(out) + '\n'


def _cell(text, limit=240):
    return (text or '').replace('|', '/')[:limit]


def pd_table(ranked):
    out = ['| # | PD layout | GPUs (P + D) | decode cap (KV tokens, max running) | tok/s/GPU at SLO | tok/s/user | '
           'TTFT p50 / p99 ms | TPOT p50 / p99 ms | prefill / KV transfer ms | meets targets? | basis |',
           '|---|---|---|---|---|---|---|---|---|---|---|']
    for index, row in enumerate(ranked, 1):
        cap, frac = row['capacity'], row['band'].get('decode')
        state = '' if row['run']['sustainable'] else '; %s' % (
            'prefill saturates at this rate' if row['run']['bound'] == 'prefill' else 'the rate needs a batch above the cap')
        out.append('| %d | %s | %d (%d + %d) | %d (%s, %d)%s | %s | %s | %s | %s | %s / %s | %s | %s; %s |' % (
            index, row['name'], row['gpus'], row['prefill'][0] * row['prefill'][1], row['decode'][0] * row['decode'][1],
            row['cap'], '{:,}'.format(cap['kv_tokens']), cap['max_running'], state, banded(row['tok_s_gpu'], frac),
            banded(row['tok_s_user'], frac), _latency(row, 'ttft', 'ttft'), _latency(row, 'tpot', 'decode'),
            num(row['prefill_ms'], 1), num(row['transfer_ms'], 1), row['meets'], _basis(row), pd_lib.ON_PAPER))
    return out


def pd_section(result):
    """PD layouts (compare/pd.py): ranked on their own, the best one's flags, those refused or not fitting."""
    rows, ranked = result.get('pd_rows') or [], result.get('pd_ranked') or []
    if not rows:
        return []
    first = rows[0]
    out = ['', '## Prefill/decode (PD) layouts (%s)' % pd_lib.ON_PAPER, '',
           'P prefill workers x TP_p + D decode workers x TP_d on these %d GPUs, each side planned on its own; transfer '
           'backend %s (%s); KV transfer over %s GB/s (%s). Checked by pd_check (docs/pd_disaggregation.md). '
           'Model: docs/compare.md.' % (result['knobs']['gpus'], first['backend'], first['backend_why'],
                                        num(pd_lib.link_bytes_s(first['backend'], result['gpu']) / 1e9, 1),
                                        'pd.TCP_LINK_GBS, an assumption' if first['backend'] == 'mooncake_tcp'
                                        else 'the PCIe bandwidth of the GPU profile'), '']
    if ranked:
        out += pd_table(ranked)
        top = ranked[0]
        flags = pd_lib.flags(top, result.get('release'))
        aggregated = result['ranked'][0] if result['ranked'] else None
        out += ['', 'Best PD layout: %s, %s tok/s/GPU at SLO (meets: %s)%s. No llmops_* variables deploy PD yet; '
                'the flags of its first prefill worker, first decode worker and of the gateway:' % (
                    top['name'], num(top['tok_s_gpu'], 1), top['meets'], '' if aggregated is None else
                    '; the top aggregated layout %s: %s tok/s/GPU (meets: %s)' % (
                        aggregated['name'], num(aggregated['tok_s_gpu'], 1), aggregated['meets'])), '', '```']
        out += ['# prefill: %s' % ' '.join(flags['prefill']), '# decode: %s' % ' '.join(flags['decode']),
                '# gateway (smg): %s' % ' '.join(flags['gateway']), '```']
    else:
        fitting = sorted(set(r['smallest_tp'] for r in rows if r['smallest_tp']))
        why = ''
        if not fitting:
            why = ': no worker fits at any TP up to the GPUs'
        elif 2 * fitting[0] > result['knobs']['gpus']:
            why = ': the smallest TP a worker fits at is TP%d, so one prefill and one decode worker need %d GPUs' % (
                fitting[0], 2 * fitting[0])
        out.append('No PD layout fits and passes pd_check on these %d GPUs%s.' % (result['knobs']['gpus'], why))
    groups = {}
    for row in rows:
        for item in row['refusals']:
            names = groups.setdefault((item['rule'], item['message'], item['fix'], item['enforced_by']), [])
            if row['name'] not in names:
                names.append(row['name'])
    if groups:
        out += ['', '### PD layouts pd_check refuses (never ranked)', '',
                '| PD layouts | rule | what (values) | fix | refused by |', '|---|---|---|---|---|']
        for (rule, message, fix, by), names in groups.items():
            shown = ', '.join(names[:4]) + (' and %d more' % (len(names) - 4) if len(names) > 4 else '')
            out.append('| %s | %s | %s | %s | %s |' % (shown, rule, _cell(message, 400), _cell(fix, 200), by))
    unfit = {}
    for row in rows:
        for key in ('prefill', 'decode'):
            info = row['side'][key]
            if info['cost'] is None:
                unfit.setdefault(row[key][1], [info['why'], 0])[1] += 1
    if unfit:
        out += ['', '### PD workers that do not fit (their layouts are never ranked)', '']
        out += ['- a TP%d worker (%d PD layout sides): %s' % (tp, count, _cell(why)) for tp, (why, count) in sorted(unfit.items())]
    return out


def measured(result):
    """The benchmark records' figures (--records and the deployment record; basis measured) beside their leave-one-out
    estimates, or nothing without records."""
    points = dict((p['id'], p) for p in result['points'] if p['id'].startswith('record:'))
    rows = [r for r in result['loo'] if r['id'] in points]
    if not rows:
        return []
    out = ['', '## Measured (benchmark records: --records and the deployment record)', '',
           'Basis measured: what the records say, beside what the model predicts for the same setup without them.', '',
           '| record | TP | speculative | concurrency | ISL/OSL | metric | measured | estimate (leave-one-out) | error % |',
           '|---|---|---|---|---|---|---|---|---|']
    for row in rows:
        point = points[row['id']]
        out.append('| %s | %d | %s | %d | %d/%d | %s | %s | %s | %+.1f |' % (
            row['id'], point['tp'], point['spec'], point['concurrency'], point['isl'], point['osl'], row['metric'],
            num(row['measured'], 1), num(row['predicted'], 1), row['error_pct']))
    return out


def pareto_series(result):
    """(series for svg.pareto_chart over the CHART_LAYOUTS best distinct one-replica layouts and the PD_CHART_LAYOUTS
    best PD layouts (pd=True), frontier points of the former)."""
    seen, series, everything = set(), [], []
    for row in result['ranked']:
        key = (row['tp'], row['spec'], row['kv_dtype'], row['context'])
        if key in seen:
            continue
        seen.add(key)
        points = rank_lib.curve(row, result['hw'], result['traffic'], result['fit'])
        if not points:
            continue
        everything += points
        name = row['name'].split(' ', 1)[1] if row['replicas'] > 1 else row['name']
        series.append(dict(name=name, points=points, dashed=row['spec'] == 'off'))
        if len(series) >= CHART_LAYOUTS:
            break
    # The best PD layouts (compare/pd.py) as their own series with a distinct marker; on paper, not on the frontier.
    for row in (result.get('pd_ranked') or [])[:PD_CHART_LAYOUTS]:
        points = pd_lib.curve(row, result['traffic'], result['fit'], result['gpu'], result['hw'])
        if points:
            series.append(dict(name=row['name'] + ' (on paper)', points=points, dashed=row['spec'] == 'off', pd=True))
    frontier = [everything[i] for i in rank_lib.pareto(everything)]
    return series, frontier


def snippet(result):
    """The top layout as an inventory (hosts.yml) fragment: one sglang_servers host per replica, the gateway in front
    when there are several (docs/sglang_gateway.md), the llmops_* settings of the layout."""
    if not result['ranked']:
        return '# make compare: no layout fits\n'
    top, knobs = result['ranked'][0], result['knobs']
    lines = ['---', '# make compare top layout: %s (%s; meets targets: %s). Estimated: check it with the sglang_benchmark role.'
             % (top['name'], top['basis'], top['meets']), 'all:', '  children:', '    sglang_servers:', '      vars:',
             '        llmops_model_profile: %s' % knobs['model'], '        llmops_gpu_profile: %s' % knobs['gpu'],
             '        llmops_tp_size: %d' % top['tp'],
             '        llmops_kv_cache_dtype: %s%s' % (top['kv_dtype'], FP8_KV_NOTE if top['kv_dtype'] == 'fp8_e4m3' else ''),
             '        llmops_context_length: %d' % top['context']]
    lines += ['        %s' % line for line in _spec_vars(result['model'], top['spec'])]
    lines.append('      hosts:')
    indices = knobs['indices']
    for replica in range(top['replicas']):
        mine = indices[replica * top['tp']:(replica + 1) * top['tp']]
        lines.append('        replica-%d:' % (replica + 1))
        lines.append('          llmops_gpu_indices: [%s]' % ', '.join(str(i) for i in mine))
        if top['replicas'] > 1:
            lines.append('          llmops_http_port: %d' % (30000 + replica))
    if top['replicas'] > 1:
        lines += ['    sglang_gateways:', '      hosts:', '        gateway:', '      vars:',
                  '        llmops_gateway_replicas: []  # every host of sglang_servers']
    return '\n'.join(lines) + '\n'


def _spec_vars(model, spec):
    """The speculative settings as llmops_* variables (plan_console.py's SPEC knob does the same)."""
    if spec == 'off':
        return ['llmops_speculative_num_draft_tokens: 0']
    own = ((model.get('serving') or {}).get('speculative') or {})
    if spec == 'mtp' and own.get('draft'):
        return ['# MTP instead of the profile\'s EAGLE-3 draft has no llmops_* variable: use a profile whose serving.speculative is NEXTN',
                'llmops_speculative_num_draft_tokens: null', 'llmops_speculative_num_steps: null']
    return ['llmops_speculative_num_draft_tokens: null  # the profile\'s own %s settings' % SPEC_TEXT[spec],
            'llmops_speculative_num_steps: null']
