#!/usr/bin/env python
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How well make compare predicts what was measured (issue #30 point 2): every measured point predicted by leave-one-out.

  python benchmarks/compare_accuracy.py [--measurements profiles/measurements/published.yml]
                                        [--records runs.jsonl ... --model PROFILE --gpu PROFILE] [--json FILE]

Each point of profiles/measurements/published.yml (and of the benchmark records given, the sglang_benchmark role's
runs.jsonl of a server of --model on --gpu) is predicted with factors fitted to every other calibrating point
(plugins/module_utils/compare/calibrate.py leave_one_out): a point never calibrates its own prediction. The table gives
measured, predicted and the error per metric; MAPE per metric over the calibrating (SGLang) points; and whether the
goals hold: <= 15 % on TPOT (tpot_ms and tok_s_user, which is 1000 / TPOT), <= 25 % on TTFT. vLLM points are shown as
context and are in no MAPE. Exit status 0 whether or not the goals hold (the table says it); 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'tools'))
import collection_paths as cp  # noqa: E402
import compare_console as console  # noqa: E402

from ansible_collections.llmops.inference.plugins.module_utils.compare import calibrate  # noqa: E402

GOALS = (('TPOT', calibrate.TPOT_CLASS, 15.0), ('TTFT', calibrate.TTFT_METRICS, 25.0))


def table(points, rows):
    by_id = dict((p['id'], p) for p in points)
    out = ['| point | engine | GPU | TP | C | ISL/OSL | metric | measured | predicted | error % | basis |',
           '|---|---|---|---|---|---|---|---|---|---|---|']
    for row in rows:
        point = by_id[row['id']]
        lengths = '%d/%d%s' % (point['isl'], point['osl'], '' if point['lengths_stated'] else ' (assumed)')
        out.append('| %s | %s%s | %s | %d | %d | %s | %s | %.1f | %.1f | %+.1f | %s |' % (
            row['id'], point['engine'], '' if point['calibrates'] else ' (context)', point['gpu'], point['tp'],
            point['concurrency'], lengths, row['metric'], row['measured'], row['predicted'], row['error_pct'], row['basis']))
    return out


def summary(rows):
    out = ['', '| metric | MAPE % (leave-one-out, SGLang points) | figures |', '|---|---|---|']
    for metric in calibrate.METRICS:
        value, count = calibrate.mape(rows, (metric,))
        out.append('| %s | %s | %d |' % (metric, '-' if value is None else '%.1f' % value, count))
    out.append('')
    for name, metrics, goal in GOALS:
        value, count = calibrate.mape(rows, metrics)
        if value is None:
            out.append('%s goal <= %.0f %%: no measured figure' % (name, goal))
        else:
            out.append('%s goal <= %.0f %%: MAPE %.1f %% over %d figure(s) (%s): %s'
                       % (name, goal, value, count, ', '.join(metrics), 'MET' if value <= goal else 'NOT MET'))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--measurements', default=console.MEASUREMENTS)
    parser.add_argument('--records', nargs='*', default=[], help='runs.jsonl files of a server of --model on --gpu')
    parser.add_argument('--model', help='model profile of the records')
    parser.add_argument('--gpu', help='hardware profile of the records')
    parser.add_argument('--json', help='also write the rows as JSON here')
    args = parser.parse_args(argv)
    if args.records and not (args.model and args.gpu):
        print('compare_accuracy: --records needs --model and --gpu (the records do not say which profiles they ran)')
        return 2
    release = cp.release()
    points, skipped = console.published_points(release, args.measurements)
    if args.records:
        more, more_skipped = console.record_points(args.records, args.model, args.gpu, None, release)
        points += more
        skipped += more_skipped
    rows = calibrate.leave_one_out(points)
    print('\n'.join(table(points, rows) + summary(rows)))
    for key, why in skipped:
        print('not predicted: %s: %s' % (key, why))
    if args.json:
        with open(args.json, 'w', encoding='utf-8') as handle:
            json.dump([dict((k, v) for k, v in r.items() if k != 'fit') for r in rows], handle, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
