# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The verdict on speculative decoding (MTP) from an A/B concurrency sweep: keep it, up to which concurrency, or turn
it off. Pure, stdlib only; the benchmark report and ``make compare`` both call :func:`verdict`, so both apply one rule.

The rule (docs/sglang_benchmark.md, "The speculative-decoding verdict"):

- The metric is the client's output tokens/s of the whole run (``output_throughput`` of SGLang's bench_serving) at
  each concurrency level, with speculative decoding (``spec_tok_s``) and without (``base_tok_s``).
- change = 100 x (spec - base) / base, rounded to 0.1 %; the rounded figure is the one shown and the one judged.
- A level is a ``win`` when change >= +noise_pct, a ``loss`` when change <= -noise_pct, else ``even`` (a change of
  exactly 0 is even, whatever noise_pct is).
- ``keep_up_to`` is the largest measured concurrency C such that no level <= C is a loss and at least one level
  <= C is a win; None when there is no such C.
- The decision: "keep at every level measured" (keep_up_to is the highest level), "keep for <= C concurrent",
  "turn it off: slower at every level measured" (every level a loss), "turn it off: slower at ..., faster nowhere"
  (losses and even levels only), "no clear difference" (every level even), "no single cut-off: ..." (a win only
  above a loss at a lower level) or "nothing to compare" (no level measured on both sides).
- A level that is missing on one side, or whose tok/s is 0, negative, not a number or absent, is skipped and the
  line says so; it is not in ``levels`` and cannot be C.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

OUTCOMES = ('win', 'loss', 'even')


def usable_tok_s(value):
    """A measured tok/s figure as a float, or None where there is none to compare (absent, 0, negative, NaN, inf,
    not a number: a run that produced no tokens measured nothing)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    if math.isnan(value) or math.isinf(value) or value <= 0:
        return None
    return value


def outcome(change_pct, noise_pct):
    """'win', 'loss' or 'even' for one level's change in percent."""
    if change_pct > 0 and change_pct >= noise_pct:
        return 'win'
    if change_pct < 0 and change_pct <= -noise_pct:
        return 'loss'
    return 'even'


def keep_limit(levels):
    """The largest concurrency C with no loss at any level <= C and a win at some level <= C, else None."""
    best, won = None, False
    for level in sorted(levels, key=lambda x: x['concurrency']):
        if level['outcome'] == 'loss':
            break
        won = won or level['outcome'] == 'win'
        if won:
            best = level['concurrency']
    return best


def _concurrency(point):
    value = point.get('concurrency')
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError('concurrency must be an integer >= 1, got %r' % (value,))
    return value


def _skip_reason(base, spec, point, label):
    if base is None and spec is None:
        return 'no usable output tok/s on either side (%s / %s)' % (_raw(point.get('base_tok_s')), _raw(point.get('spec_tok_s')))
    if base is None:
        return ('measured with %s only' % label if point.get('base_tok_s') is None
                else 'no usable output tok/s without %s (%s)' % (label, _raw(point.get('base_tok_s'))))
    return ('measured without %s only' % label if point.get('spec_tok_s') is None
            else 'no usable output tok/s with %s (%s)' % (label, _raw(point.get('spec_tok_s'))))


def _raw(value):
    return 'missing' if value is None else str(value)


def _levels_text(levels):
    return ', '.join('%+.1f %% at c=%d (%.1f -> %.1f)' % (x['change_pct'], x['concurrency'], x['base_tok_s'], x['spec_tok_s'])
                     for x in levels)


def _at(levels):
    return ', '.join('c=%d' % x['concurrency'] for x in levels)


def decision(levels, keep_up_to):
    """The decision in words, from the judged levels and keep_up_to."""
    if not levels:
        return 'nothing to compare: no concurrency level was measured on both sides'
    wins = [x for x in levels if x['outcome'] == 'win']
    losses = [x for x in levels if x['outcome'] == 'loss']
    highest = max(x['concurrency'] for x in levels)
    if keep_up_to is not None:
        if keep_up_to == highest:
            return 'keep at every level measured'
        later = [x for x in wins if x['concurrency'] > keep_up_to]
        text = 'keep for <= %d concurrent' % keep_up_to
        return text + (' (faster again at %s, above a loss)' % _at(later) if later else '')
    if len(losses) == len(levels):
        return 'turn it off: slower at every level measured'
    if not wins and not losses:
        return 'no clear difference'
    if not wins:
        return 'turn it off: slower at %s, faster nowhere' % _at(losses)
    return 'no single cut-off: slower at %s, faster only above it at %s' % (_at(losses), _at(wins))


def verdict(points, label='MTP', noise_pct=3.0):
    """The verdict on speculative decoding over a concurrency sweep.

    points: [dict(concurrency=int, base_tok_s=float, spec_tok_s=float)] - output tokens/s per level without (base)
    and with (spec) speculative decoding; a side may be None (not measured). Returns dict(line=str,
    levels=[dict(concurrency, base_tok_s, spec_tok_s, change_pct, outcome)], keep_up_to=int|None), levels in
    ascending concurrency. The rule is the module's docstring. Raises ValueError on a concurrency that is not an
    integer >= 1, a level given twice, or a negative noise_pct.
    """
    if isinstance(noise_pct, bool) or not isinstance(noise_pct, (int, float)) or math.isnan(noise_pct) or noise_pct < 0:
        raise ValueError('noise_pct must be a number >= 0, got %r' % (noise_pct,))
    seen, levels, skipped = set(), [], []
    for point in sorted(points or [], key=_concurrency):
        concurrency = _concurrency(point)
        if concurrency in seen:
            raise ValueError('concurrency %d is given twice' % concurrency)
        seen.add(concurrency)
        base, spec = usable_tok_s(point.get('base_tok_s')), usable_tok_s(point.get('spec_tok_s'))
        if base is None or spec is None:
            skipped.append('c=%d skipped: %s' % (concurrency, _skip_reason(base, spec, point, label)))
            continue
        change = round(100.0 * (spec - base) / base, 1)
        levels.append(dict(concurrency=concurrency, base_tok_s=base, spec_tok_s=spec, change_pct=change,
                           outcome=outcome(change, noise_pct)))
    keep_up_to = keep_limit(levels)
    line = '%s: ' % label
    if levels:
        line += 'output tok/s %s -> ' % _levels_text(levels)
    line += decision(levels, keep_up_to)
    notes = ['changes within %s %% count as even' % ('%g' % noise_pct)] if levels else []
    line += ' (%s)' % '; '.join(notes + skipped) if notes or skipped else ''
    return dict(line=line, levels=levels, keep_up_to=keep_up_to)
