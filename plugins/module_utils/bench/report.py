# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark report: rows from the per-run records of sglang_bench_run, gates (thresholds, baseline), report.md and
a self-contained report.html with inline SVG charts (no scripts, no external assets). Pure: no I/O here."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
from html import escape as _escape

from ansible_collections.llmops.inference.plugins.module_utils.bench.spec_verdict import verdict as spec_verdict

# Metrics a gate or the baseline comparison can name, with their direction and unit.
METRICS = {
    'output_throughput': ('higher', 'tok/s', 'output tok/s'),
    'request_throughput': ('higher', 'req/s', 'requests/s'),
    'total_throughput': ('higher', 'tok/s', 'total tok/s'),
    'accept_length': ('higher', '', 'accept length'),
    'decode_tok_s_per_stream': ('higher', 'tok/s', 'per-stream decode tok/s'),
    'roofline_pct': ('higher', '%', '% of decode roofline'),
    'median_ttft_ms': ('lower', 'ms', 'TTFT p50'),
    'p99_ttft_ms': ('lower', 'ms', 'TTFT p99'),
    'mean_ttft_ms': ('lower', 'ms', 'TTFT mean'),
    'median_itl_ms': ('lower', 'ms', 'ITL p50'),
    'p99_itl_ms': ('lower', 'ms', 'ITL p99'),
    'median_tpot_ms': ('lower', 'ms', 'TPOT p50'),
    'mean_tpot_ms': ('lower', 'ms', 'TPOT mean'),
    'p99_tpot_ms': ('lower', 'ms', 'TPOT p99'),
    'median_e2e_latency_ms': ('lower', 'ms', 'E2E p50'),
    'p99_e2e_latency_ms': ('lower', 'ms', 'E2E p99'),
}
# A change of output tok/s within this many percent is "even" in the speculative-decoding verdict (spec_verdict).
VERDICT_NOISE_PCT = 3.0
PALETTE = ('#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2', '#17becf')


def esc(text):
    return _escape('' if text is None else str(text), quote=True)


def num(value, digits=1):
    if value is None:
        return 'n/a'
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return 'n/a'
    if abs(value) >= 1000:
        return '{:,.0f}'.format(value)
    return ('%.' + str(digits) + 'f') % value


# ---- rows ----------------------------------------------------------------------------------------------------------

def roofline_for(roofline, mtp):
    """The planner's decode ceiling for a run: a number, or {no_mtp, mtp} picked by whether MTP ran."""
    if roofline is None:
        return None
    if isinstance(roofline, (int, float)):
        return float(roofline) or None
    if isinstance(roofline, dict):
        value = roofline.get('mtp') if mtp and roofline.get('mtp') else roofline.get('no_mtp')
        return float(value) if isinstance(value, (int, float)) and value else None
    return None


def build_rows(records, variants=None, roofline=None):
    """One row per run, ordered by variant (as listed), kind (concurrency sweep first), concurrency/rate."""
    variants = variants or []
    order = dict((v.get('name'), i) for i, v in enumerate(variants))
    declared = dict((v.get('name'), v) for v in variants)
    rows = []
    for rec in records:
        m = rec.get('metrics') or {}
        ll = rec.get('llmops') or {}
        labels = ll.get('labels') or {}
        server = rec.get('server') or {}
        variant = labels.get('variant') or 'default'
        vdecl = declared.get(variant) or {}
        mtp = vdecl.get('mtp') if vdecl.get('mtp') is not None else bool(server.get('speculative_algorithm'))
        tpot = m.get('median_tpot_ms')
        per_stream = 1000.0 / tpot if tpot else None
        roof = roofline_for(roofline, mtp)
        rate = m.get('request_rate')
        rows.append(dict(
            run_id=ll.get('run_id'), variant=variant, kind=labels.get('kind', 'concurrency'),
            concurrency=m.get('max_concurrency'), request_rate=None if rate in (None, 'inf') or rate == float('inf') else rate,
            num_prompts=labels.get('num_prompts'), completed=m.get('completed'),
            input_len=m.get('random_input_len'), output_len=m.get('random_output_len'),
            output_throughput=m.get('output_throughput'), request_throughput=m.get('request_throughput'),
            total_throughput=m.get('total_throughput'),
            median_ttft_ms=m.get('median_ttft_ms'), p99_ttft_ms=m.get('p99_ttft_ms'), mean_ttft_ms=m.get('mean_ttft_ms'),
            median_itl_ms=m.get('median_itl_ms'), p99_itl_ms=m.get('p99_itl_ms'),
            median_tpot_ms=tpot, mean_tpot_ms=m.get('mean_tpot_ms'), p99_tpot_ms=m.get('p99_tpot_ms'),
            median_e2e_latency_ms=m.get('median_e2e_latency_ms'), p99_e2e_latency_ms=m.get('p99_e2e_latency_ms'),
            duration_s=m.get('duration'), accept_length=ll.get('accept_length'),
            accept_length_source=ll.get('accept_length_source'), mtp=mtp,
            decode_tok_s_per_stream=round(per_stream, 2) if per_stream else None,
            roofline_tok_s=roof, roofline_pct=round(100.0 * per_stream / roof, 1) if per_stream and roof else None,
        ))
    rows.sort(key=lambda r: (order.get(r['variant'], len(order)), r['variant'], r['kind'] != 'concurrency',
                             r['concurrency'] or 0, r['request_rate'] or 0))
    return rows


def _row_key(row):
    return (row['variant'], row['kind'], row['concurrency'], row['request_rate'])


def _where(row):
    text = 'variant %s' % row['variant']
    if row['kind'] == 'rate':
        text += ', %s req/s' % num(row['request_rate'], 2)
    if row['concurrency']:
        text += ', concurrency %s' % row['concurrency']
    return text


# ---- gates ---------------------------------------------------------------------------------------------------------

def evaluate_thresholds(rows, thresholds):
    """Each threshold {metric, min|max, concurrency?, variant?, request_rate?} against every matching row.
    A threshold that matches no row fails too (a mistyped gate must not pass silently)."""
    gates = []
    for index, gate in enumerate(thresholds or []):
        metric = gate.get('metric')
        label = METRICS.get(metric, (None, '', metric))[2]
        unit = METRICS.get(metric, (None, '', ''))[1]
        if metric not in METRICS:
            gates.append(dict(name='threshold %d' % (index + 1), ok=False,
                              message='unknown metric "%s" (known: %s)' % (metric, ', '.join(sorted(METRICS)))))
            continue
        if gate.get('min') is None and gate.get('max') is None:
            gates.append(dict(name='threshold %d' % (index + 1), ok=False, message='%s: give min or max' % metric))
            continue
        matching = [r for r in rows
                    if (gate.get('concurrency') is None or r['concurrency'] == gate['concurrency'])
                    and (gate.get('variant') is None or r['variant'] == gate['variant'])
                    and (gate.get('request_rate') is None or r['request_rate'] == gate['request_rate'])
                    and (gate.get('request_rate') is not None or gate.get('concurrency') is None or r['kind'] == 'concurrency')]
        scope = ', '.join('%s %s' % (k, gate[k]) for k in ('variant', 'concurrency', 'request_rate') if gate.get(k) is not None)
        if not matching:
            gates.append(dict(name='%s %s' % (metric, scope), ok=False, metric=metric,
                              message='no benchmark run matches this gate (%s)' % (scope or 'all runs')))
            continue
        for row in matching:
            value = row.get(metric)
            if gate.get('min') is not None:
                limit, ok = gate['min'], value is not None and value >= gate['min']
                sign = '>='
            else:
                limit, ok = gate['max'], value is not None and value <= gate['max']
                sign = '<='
            gates.append(dict(
                name='%s %s %s (%s)' % (label, sign, num(limit, 2), _where(row)), ok=ok, metric=metric, value=value,
                limit=limit, variant=row['variant'], concurrency=row['concurrency'],
                message='%s %s %s: measured %s %s (%s)' % (label, sign, num(limit, 2), num(value, 2), unit, _where(row))))
    return gates


def compare_baseline(rows, baseline_rows, max_regression_pct, metrics):
    """Regression of each metric against the same run (variant, kind, concurrency, rate) of a saved summary."""
    by_key = dict((_row_key(r), r) for r in baseline_rows or [])
    gates = []
    for row in rows:
        base = by_key.get(_row_key(row))
        if base is None:
            continue
        for metric in metrics:
            direction = METRICS.get(metric, ('higher',))[0]
            new, old = row.get(metric), base.get(metric)
            if new is None or not old:
                continue
            change = 100.0 * (new - old) / old
            regression = -change if direction == 'higher' else change
            ok = regression <= max_regression_pct
            gates.append(dict(
                name='baseline %s (%s)' % (METRICS.get(metric, ('', '', metric))[2], _where(row)), ok=ok, metric=metric,
                value=new, baseline=old, change_pct=round(change, 1), variant=row['variant'], concurrency=row['concurrency'],
                message='%s %s vs baseline %s (%+.1f %%, %s regression allowed %.0f %%) - %s'
                        % (METRICS.get(metric, ('', '', metric))[2], num(new, 2), num(old, 2), change,
                           'more than the' if not ok else 'within the', max_regression_pct, _where(row))))
    return gates


# ---- A vs B --------------------------------------------------------------------------------------------------------

def ab_rows(rows, variants):
    """For each variant after the first: change vs the first at the same concurrency/rate."""
    names = [v.get('name') for v in variants or []] or sorted(set(r['variant'] for r in rows))
    if len(names) < 2:
        return []
    base = dict(((r['kind'], r['concurrency'], r['request_rate']), r) for r in rows if r['variant'] == names[0])
    out = []
    for row in rows:
        if row['variant'] == names[0]:
            continue
        ref = base.get((row['kind'], row['concurrency'], row['request_rate']))
        if not ref:
            continue

        def pct(metric):
            a, b = ref.get(metric), row.get(metric)
            return round(100.0 * (b - a) / a, 1) if a and b is not None else None
        out.append(dict(a=names[0], b=row['variant'], kind=row['kind'], concurrency=row['concurrency'],
                        request_rate=row['request_rate'], output_throughput_pct=pct('output_throughput'),
                        p99_ttft_pct=pct('p99_ttft_ms'), median_itl_pct=pct('median_itl_ms'),
                        median_tpot_pct=pct('median_tpot_ms'),
                        a_out=ref.get('output_throughput'), b_out=row.get('output_throughput')))
    return out


def spec_pairs(rows, variants):
    """(speculative variant, baseline variant) pairs, from the data: a variant whose every run ran speculative
    decoding (the row's mtp: the variant's declared mtp, else the server's speculative_algorithm) against the first
    variant, in the declared order, whose every run ran without it. Names say nothing here."""
    names = [v.get('name') for v in variants or []] or sorted(set(r['variant'] for r in rows))
    spec, base = [], []
    for name in names:
        flags = set(bool(r.get('mtp')) for r in rows if r['variant'] == name)
        if flags == {True}:
            spec.append(name)
        elif flags == {False}:
            base.append(name)
    return [(name, base[0]) for name in spec] if base else []


def verdicts(rows, variants, noise_pct=VERDICT_NOISE_PCT):
    """The speculative-decoding verdict (spec_verdict.verdict: output tok/s per level of the concurrency sweep) of
    each pair of spec_pairs; request-rate runs are not part of it."""
    out = []
    for spec, base in spec_pairs(rows, variants):
        table = {}
        for row in rows:
            if row['kind'] == 'concurrency' and row['concurrency'] is not None and row['variant'] in (spec, base):
                side = 'spec_tok_s' if row['variant'] == spec else 'base_tok_s'
                table.setdefault(row['concurrency'], dict(concurrency=row['concurrency']))[side] = row.get('output_throughput')
        result = spec_verdict(sorted(table.values(), key=lambda p: p['concurrency']), 'MTP', noise_pct)
        out.append(dict(result, spec=spec, base=base, metric='output_throughput', noise_pct=noise_pct))
    return out


def verdict_heading(item):
    return 'Verdict, %s vs %s' % (item['spec'], item['base'])


VERDICT_NOTE = 'speculative decoding on vs off, output tok/s per concurrency level'


# ---- Markdown ------------------------------------------------------------------------------------------------------

TABLE_COLUMNS = (
    ('variant', 'variant', None), ('load', 'load', None), ('output_throughput', 'out tok/s', 1),
    ('request_throughput', 'req/s', 2), ('median_ttft_ms', 'TTFT p50 ms', 1), ('p99_ttft_ms', 'TTFT p99 ms', 1),
    ('median_itl_ms', 'ITL p50 ms', 2), ('p99_itl_ms', 'ITL p99 ms', 2), ('median_tpot_ms', 'TPOT p50 ms', 2),
    ('accept_length', 'accept len', 2), ('roofline_pct', '% roofline', 1),
)


def load_text(row):
    if row['kind'] == 'rate':
        text = '%s req/s' % num(row['request_rate'], 2)
        if row['concurrency']:
            text += ' (max %s)' % row['concurrency']
        return text
    return 'c=%s' % row['concurrency']


def cell(row, key, digits):
    if key == 'load':
        return load_text(row)
    if key == 'variant':
        return row['variant']
    if key == 'accept_length' and row.get('accept_length') is None:
        return 'n/a' if row.get('accept_length_source') in (None, 'unavailable', 'none') else 'n/a'
    if key == 'accept_length' and row.get('accept_length_source') == 'cumulative':
        return num(row['accept_length'], 2) + '*'
    return num(row.get(key), digits)


def variant_lines(meta):
    """'name: description (vars)' for each declared variant: what every A/B row compares."""
    out = []
    for v in meta.get('variants') or []:
        changes = ', '.join('%s=%s' % (k, v['vars'][k]) for k in sorted(v.get('vars') or {}))
        out.append((v.get('name'), v.get('description') or '', changes or 'as deployed'))
    return out if len(out) > 1 else []


def markdown(meta, rows, gates, ab, smoke, server=None, spec=None):
    lines = ['# %s' % meta.get('title', 'Benchmark'), '']
    lines += ['- host: `%s`, results `%s`' % (meta.get('host'), meta.get('timestamp'))]
    lines += ['- client: `%s` (SGLang %s) from `%s`, backend `%s`, dataset `%s`, %s in / %s out tokens (range ratio %s), '
              'warm-up %s request(s) per run'
              % (meta.get('client_module'), meta.get('client_version') or '?', meta.get('python'), meta.get('backend'),
                 meta.get('dataset_name'), meta.get('input_len'), meta.get('output_len'), meta.get('range_ratio'),
                 meta.get('warmup_requests'))]
    lines += ['- server: %s, model `%s` at `%s`'
              % (meta.get('server_description') or 'unknown', meta.get('model'), meta.get('base_url'))]
    roof = meta.get('roofline')
    if roof:
        lines += ['- decode roofline (planner, single stream, bandwidth bound): %s'
                  % (', '.join('%s %s tok/s' % (k, num(v, 0)) for k, v in sorted(roof.items()) if isinstance(v, (int, float)))
                     if isinstance(roof, dict) else '%s tok/s' % num(roof, 0))]
    for note in meta.get('notes') or []:
        lines += ['- note: %s' % note]
    variants = variant_lines(meta)
    if variants:
        lines += ['', '## Variants', '']
        lines += ['- **%s**: %s (`%s`)' % v for v in variants]
    lines += ['', '## Results', '']
    lines += ['| ' + ' | '.join(h for _k, h, _d in TABLE_COLUMNS) + ' |',
              '|' + '|'.join('---' if k in ('variant', 'load') else '---:' for k, _h, _d in TABLE_COLUMNS) + '|']
    for row in rows:
        lines.append('| ' + ' | '.join(cell(row, k, d) for k, _h, d in TABLE_COLUMNS) + ' |')
    lines += ['', 'TTFT = time to first token; ITL = gap between streamed chunks; TPOT = (E2E - TTFT) / (output tokens - 1). '
              '% roofline = per-stream decode speed (1000 / TPOT p50) against the planner\'s single-stream ceiling. '
              'accept len = speculative tokens per verify step of that run (* cumulative since server start).']
    lines += (server or {}).get('markdown') or []
    if ab:
        lines += ['', '## %s vs %s' % (ab[0]['a'], ', '.join(sorted(set(r['b'] for r in ab)))), '',
                  '| load | variant | out tok/s | change | TTFT p99 | ITL p50 | TPOT p50 |', '|---|---|---:|---:|---:|---:|---:|']
        for r in ab:
            lines.append('| %s | %s vs %s | %s vs %s | %s | %s | %s | %s |' % (
                load_text(dict(kind=r['kind'], concurrency=r['concurrency'], request_rate=r['request_rate'])), r['b'], r['a'],
                num(r['b_out']), num(r['a_out']), _pct(r['output_throughput_pct']), _pct(r['p99_ttft_pct']),
                _pct(r['median_itl_pct']), _pct(r['median_tpot_pct'])))
    if spec and not ab:
        lines += ['', '## Speculative decoding']
    for item in spec or []:
        lines += ['', '**%s** (%s): %s' % (verdict_heading(item), VERDICT_NOTE, item['line'])]
    if gates:
        lines += ['', '## Gates', '']
        for gate in gates:
            lines.append('- %s %s' % ('PASS' if gate['ok'] else '**FAIL**', gate['message']))
    if smoke:
        lines += ['', '## Smoke tests', '', '| check | status | detail |', '|---|---|---|']
        for res in smoke:
            lines.append('| %s | %s | %s |' % (res.get('name'), res.get('status'), (res.get('message') or '').replace('|', '\\|')))
    lines += ['', '## Files', '', 'Raw client output per run: `raw/<variant>/<run>.jsonl` (bench_serving JSONL) and `.log`; '
              'one record per run in `runs.jsonl`; `summary.json` (rows and gates; pass it as a baseline later).', '']
    return '\n'.join(lines)


def _pct(value):
    return 'n/a' if value is None else '%+.1f %%' % value


# ---- SVG charts ----------------------------------------------------------------------------------------------------

def chart_frame(title, width, height, left):
    """The opening lines of every chart of the house style: the svg element, its title, the white ground and the
    bold title at x=left (line_chart, bar_chart, server_view's timelines, make compare's Pareto chart)."""
    return ['<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="%d" height="%d" viewBox="0 0 %d %d">'
            % (width, height, width, height), '<title>%s</title>' % esc(title),
            '<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>' % (width, height),
            '<text x="%d" y="20" font-size="14" font-weight="bold" fill="#222">%s</text>' % (left, esc(title))]


def nice_max(value):
    """A round axis end at or above value: 1, 2, 2.5 or 5 x a power of ten (1.0 for nothing to show)."""
    if not value or value <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * exp:
            return step * exp
    return 10 * exp


def line_chart(title, x_labels, series, y_label, width=560, height=300):
    """Inline SVG line chart. series: [{name, values (None = gap), color, dashed}] over categorical x_labels."""
    left, right, top, bottom = 64, 16, 36, 70
    plot_w, plot_h = width - left - right, height - top - bottom
    values = [v for s in series for v in s['values'] if v is not None]
    y_max = nice_max(max(values) * 1.05 if values else 1.0)
    n = max(len(x_labels), 1)

    def x_at(i):
        return left + (plot_w * (i + 0.5) / n)

    def y_at(v):
        return top + plot_h - plot_h * v / y_max

    out = chart_frame(title, width, height, left)
    for k in range(6):
        v = y_max * k / 5
        y = y_at(v)
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e3e3e3"/>' % (left, y, left + plot_w, y))
        out.append('<text x="%d" y="%.1f" font-size="11" text-anchor="end" fill="#555">%s</text>' % (left - 6, y + 4, esc(num(v, 1))))
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>' % (left, top + plot_h, left + plot_w, top + plot_h))
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>' % (left, top, left, top + plot_h))
    for i, label in enumerate(x_labels):
        out.append('<text x="%.1f" y="%d" font-size="11" text-anchor="middle" fill="#333">%s</text>'
                   % (x_at(i), top + plot_h + 16, esc(label)))
    out.append('<text x="14" y="%d" font-size="11" fill="#555" transform="rotate(-90 14 %d)" text-anchor="middle">%s</text>'
               % (top + plot_h // 2, top + plot_h // 2, esc(y_label)))
    for s in series:
        points = [(x_at(i), y_at(v), v) for i, v in enumerate(s['values']) if v is not None]
        if len(points) > 1:
            out.append('<polyline fill="none" stroke="%s" stroke-width="2.5"%s points="%s"/>'
                       % (s['color'], ' stroke-dasharray="6 4"' if s.get('dashed') else '',
                          ' '.join('%.1f,%.1f' % (x, y) for x, y, _v in points)))
        for x, y, v in points:
            out.append('<circle cx="%.1f" cy="%.1f" r="4" fill="%s"><title>%s: %s</title></circle>'
                       % (x, y, s['color'], esc(s['name']), esc(num(v, 2))))
    lx, ly = left, top + plot_h + 36
    for s in series:
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2.5"%s/>'
                   % (lx, ly, lx + 22, ly, s['color'], ' stroke-dasharray="6 4"' if s.get('dashed') else ''))
        out.append('<text x="%d" y="%d" font-size="11" fill="#333">%s</text>' % (lx + 27, ly + 4, esc(s['name'])))
        lx += 40 + 7 * len(s['name'])
        if lx > width - 120:
            lx, ly = left, ly + 16
    out.append('</svg>')
    return '\n'.join(out)


def bar_chart(title, labels, values, y_label, width=560, height=280):
    """Inline SVG bar chart of signed percentages around a zero line (green up, red down)."""
    left, right, top, bottom = 64, 16, 36, 56
    plot_w, plot_h = width - left - right, height - top - bottom
    finite = [abs(v) for v in values if v is not None]
    span = nice_max(max(finite) * 1.1 if finite else 1.0)
    n = max(len(labels), 1)
    zero = top + plot_h / 2.0

    def y_at(v):
        return zero - (plot_h / 2.0) * v / span

    out = chart_frame(title, width, height, left)
    for k in range(-2, 3):
        v = span * k / 2
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>'
                   % (left, y_at(v), left + plot_w, y_at(v), '#333' if k == 0 else '#e3e3e3'))
        out.append('<text x="%d" y="%.1f" font-size="11" text-anchor="end" fill="#555">%+.0f %%</text>' % (left - 6, y_at(v) + 4, v))
    slot = plot_w / float(n)
    for i, (label, v) in enumerate(zip(labels, values)):
        cx = left + slot * (i + 0.5)
        if v is not None:
            y0, y1 = sorted((zero, y_at(v)))
            out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %s</title></rect>'
                       % (cx - slot * 0.3, y0, slot * 0.6, max(y1 - y0, 1), '#2ca02c' if v >= 0 else '#d62728', esc(label), _pct(v)))
            # Above a rising bar, inside the end of a falling one (clear of the axis labels below).
            out.append('<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle" fill="%s">%s</text>'
                       % (cx, (y_at(v) - 5) if v >= 0 else max(y_at(v) - 5, zero + 13), '#222' if v >= 0 else '#fff',
                          esc(_pct(v))))
        out.append('<text x="%.1f" y="%d" font-size="11" text-anchor="middle" fill="#333">%s</text>' % (cx, top + plot_h + 16, esc(label)))
    out.append('<text x="14" y="%d" font-size="11" fill="#555" transform="rotate(-90 14 %d)" text-anchor="middle">%s</text>'
               % (top + plot_h // 2, top + plot_h // 2, esc(y_label)))
    out.append('</svg>')
    return '\n'.join(out)


def charts(rows, ab):
    """The report's charts (list of (id, svg)), from the concurrency sweep of every variant."""
    sweep = [r for r in rows if r['kind'] == 'concurrency']
    levels = sorted(set(r['concurrency'] for r in sweep if r['concurrency'] is not None))
    names = []
    for r in sweep:
        if r['variant'] not in names:
            names.append(r['variant'])
    labels = ['c=%s' % c for c in levels]
    table = dict(((r['variant'], r['concurrency']), r) for r in sweep)

    def series(metric, dashed=False, suffix=''):
        return [dict(name=v + suffix, color=PALETTE[i % len(PALETTE)], dashed=dashed,
                     values=[(table.get((v, c)) or {}).get(metric) for c in levels]) for i, v in enumerate(names)]
    out = []
    if levels:
        out.append(('throughput', line_chart('Output throughput vs concurrency', labels, series('output_throughput'), 'output tok/s')))
        out.append(('ttft', line_chart('Time to first token (p50 solid, p99 dashed)', labels,
                                       series('median_ttft_ms', suffix=' p50') + series('p99_ttft_ms', True, ' p99'), 'ms')))
        out.append(('itl', line_chart('Inter-token latency (p50 solid, p99 dashed)', labels,
                                      series('median_itl_ms', suffix=' p50') + series('p99_itl_ms', True, ' p99'), 'ms')))
    ab_sweep = [r for r in ab if r['kind'] == 'concurrency']
    if ab_sweep:
        for b in sorted(set(r['b'] for r in ab_sweep)):
            mine = [r for r in ab_sweep if r['b'] == b]
            out.append(('ab-' + b, bar_chart('%s vs %s: output throughput change' % (b, mine[0]['a']),
                                             ['c=%s' % r['concurrency'] for r in mine],
                                             [r['output_throughput_pct'] for r in mine], 'change vs %s' % mine[0]['a'])))
    return out


# ---- HTML ----------------------------------------------------------------------------------------------------------

CSS = """
body{font-family:-apple-system,'Segoe UI',Roboto,'DejaVu Sans',Arial,sans-serif;margin:24px;color:#222;background:#fafafa}
h1{font-size:22px;margin:0 0 8px}h2{font-size:17px;margin:28px 0 10px;border-bottom:1px solid #ddd;padding-bottom:4px}
.meta{font-size:13px;color:#444;line-height:1.6}.meta code{background:#eee;padding:0 3px}
table{border-collapse:collapse;font-size:13px;background:#fff}th,td{border:1px solid #ddd;padding:4px 8px}
th{background:#f0f0f0}td.n{text-align:right;font-variant-numeric:tabular-nums}
.charts{display:flex;flex-wrap:wrap;gap:16px}.charts svg{border:1px solid #ddd;background:#fff}
.pass{color:#1a7f37;font-weight:bold}.fail{color:#c62828;font-weight:bold}.note{font-size:12px;color:#666;max-width:1100px}
.verdict{font-size:14px;max-width:1100px;background:#fff;border-left:4px solid #1f77b4;padding:6px 10px}
.ok{color:#1a7f37}.failed{color:#c62828;font-weight:bold}.unsupported,.skipped{color:#a66400}
"""


def html(meta, rows, gates, ab, smoke, chart_list, server=None, spec=None):
    title = meta.get('title', 'Benchmark')
    out = ['<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">', '<title>%s</title>' % esc(title),
           '<style>%s</style></head><body>' % CSS, '<h1>%s</h1>' % esc(title), '<div class="meta">']
    out.append('host <code>%s</code>, results <code>%s</code><br>' % (esc(meta.get('host')), esc(meta.get('timestamp'))))
    out.append('client <code>%s</code> (SGLang %s), backend <code>%s</code>, dataset <code>%s</code>, %s in / %s out tokens<br>'
               % (esc(meta.get('client_module')), esc(meta.get('client_version') or '?'), esc(meta.get('backend')),
                  esc(meta.get('dataset_name')), esc(meta.get('input_len')), esc(meta.get('output_len'))))
    out.append('server: %s, model <code>%s</code><br>' % (esc(meta.get('server_description') or 'unknown'), esc(meta.get('model'))))
    for note in meta.get('notes') or []:
        out.append('note: %s<br>' % esc(note))
    out.append('</div>')
    variants = variant_lines(meta)
    if variants:
        out.append('<h2>Variants</h2><ul>')
        out += ['<li><b>%s</b>: %s (<code>%s</code>)</li>' % tuple(esc(x) for x in v) for v in variants]
        out.append('</ul>')
    if gates:
        failed = [g for g in gates if not g['ok']]
        tally = '%d failed' % len(failed) if failed else 'all passed'
        out.append('<h2>Gates: <span class="%s">%s</span></h2><ul>' % ('fail' if failed else 'pass', tally))
        for gate in gates:
            state = ('pass', 'PASS') if gate['ok'] else ('fail', 'FAIL')
            out.append('<li><span class="%s">%s</span> %s</li>' % (state[0], state[1], esc(gate['message'])))
        out.append('</ul>')
    out.append('<h2>Charts</h2><div class="charts">')
    for chart_id, svg in chart_list:
        out.append('<figure id="chart-%s" style="margin:0">%s</figure>' % (esc(chart_id), svg))
    if not chart_list:
        out.append('<p>No concurrency sweep in these results.</p>')
    out.append('</div><h2>Results</h2><table><thead><tr>')
    out.append(''.join('<th>%s</th>' % esc(h) for _k, h, _d in TABLE_COLUMNS) + '</tr></thead><tbody>')
    for row in rows:
        out.append('<tr>' + ''.join('<td%s>%s</td>' % ('' if k in ('variant', 'load') else ' class="n"', esc(cell(row, k, d)))
                                    for k, _h, d in TABLE_COLUMNS) + '</tr>')
    out.append('</tbody></table><p class="note">TTFT = time to first token; ITL = gap between streamed chunks; TPOT = '
               '(E2E - TTFT) / (output tokens - 1); % roofline = per-stream decode speed (1000 / TPOT p50) against the '
               'planner\'s single-stream bandwidth ceiling; accept len = speculative tokens per verify step of that run '
               '(* cumulative since server start).</p>')
    out += (server or {}).get('html') or []
    if ab:
        out.append('<h2>A vs B</h2><table><thead><tr><th>load</th><th>variant</th><th>out tok/s</th><th>change</th>'
                   '<th>TTFT p99</th><th>ITL p50</th><th>TPOT p50</th></tr></thead><tbody>')
        for r in ab:
            out.append('<tr><td>%s</td><td>%s vs %s</td><td class="n">%s vs %s</td><td class="n">%s</td><td class="n">%s</td>'
                       '<td class="n">%s</td><td class="n">%s</td></tr>'
                       % (esc(load_text(dict(kind=r['kind'], concurrency=r['concurrency'], request_rate=r['request_rate']))),
                          esc(r['b']), esc(r['a']), esc(num(r['b_out'])), esc(num(r['a_out'])), esc(_pct(r['output_throughput_pct'])),
                          esc(_pct(r['p99_ttft_pct'])), esc(_pct(r['median_itl_pct'])), esc(_pct(r['median_tpot_pct']))))
        out.append('</tbody></table>')
    if spec and not ab:
        out.append('<h2>Speculative decoding</h2>')
    for item in spec or []:
        out.append('<p class="verdict"><b>%s</b> (%s): %s</p>' % (esc(verdict_heading(item)), esc(VERDICT_NOTE), esc(item['line'])))
    if smoke:
        out.append('<h2>Smoke tests</h2><table><thead><tr><th>check</th><th>status</th><th>detail</th></tr></thead><tbody>')
        for res in smoke:
            out.append('<tr><td>%s</td><td class="%s">%s</td><td>%s</td></tr>'
                       % (esc(res.get('name')), esc(res.get('status')), esc(res.get('status')), esc(res.get('message'))))
        out.append('</tbody></table>')
    out.append('</body></html>')
    return '\n'.join(out) + '\n'


def build(meta, records, thresholds=None, baseline_rows=None, max_regression_pct=10.0, baseline_metrics=None,
          smoke=None, server=None):
    """Everything the report module writes: rows, gates, A/B rows, the speculative-decoding verdicts (noise threshold
    meta's verdict_noise_pct, default VERDICT_NOISE_PCT), Markdown, HTML and the summary dict. ``server``: the
    server-side view's sections (bench_server_view.sections), or None."""
    rows = build_rows(records, meta.get('variants'), meta.get('roofline'))
    gates = evaluate_thresholds(rows, thresholds)
    if baseline_rows is not None:
        gates += compare_baseline(rows, baseline_rows, max_regression_pct,
                                  baseline_metrics or ['output_throughput', 'p99_ttft_ms'])
    ab = ab_rows(rows, meta.get('variants'))
    noise = meta.get('verdict_noise_pct')
    spec = verdicts(rows, meta.get('variants'), VERDICT_NOISE_PCT if noise is None else float(noise))
    chart_list = charts(rows, ab)
    md = markdown(meta, rows, gates, ab, smoke, server, spec)
    page = html(meta, rows, gates, ab, smoke, chart_list, server, spec)
    summary = dict(meta=meta, rows=rows, gates=gates, ab=ab, verdicts=spec, server=(server or {}).get('summary'))
    return dict(rows=rows, gates=gates, ab=ab, verdicts=spec, markdown=md, html=page, summary=summary,
                charts=[c[0] for c in chart_list])
