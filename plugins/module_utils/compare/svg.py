# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Pareto chart of make compare: throughput per GPU against per-user speed, one line per layout.

PRIVATE to the collection. Pure, stdlib only. Self-contained inline SVG, no script, in the house style of
bench/report.py line_chart (white ground, bold title, light grid, legend below); the x axis is numeric here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.bench.report import chart_frame, esc, nice_max, num

COLORS = ('#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2', '#17becf', '#7f7f7f', '#bcbd22')


def pareto_chart(title, series, frontier, x_label, y_label, width=640, height=380):  # pylint: disable=too-many-locals
    """series: [dict(name, points=[(x, y)], dashed, pd)]; frontier: [(x, y)] drawn as a grey step line; pd series
    (prefill/decode layouts, on paper) are drawn with square markers."""
    left, right, top, bottom = 70, 20, 36, 40 + 16 * ((len(series) + 1) // 2)
    plot_w, plot_h = width - left - right, height - top - bottom - 24
    xs = [x for s in series for x, dummy in s['points']] or [1.0]
    ys = [y for s in series for dummy, y in s['points']] or [1.0]
    x_max, y_max = nice_max(max(xs) * 1.05), nice_max(max(ys) * 1.05)

    def px(x):
        return left + plot_w * x / x_max

    def py(y):
        return top + plot_h - plot_h * y / y_max
    out = chart_frame(title, width, height, left)
    for k in range(6):
        gy, gx = py(y_max * k / 5), px(x_max * k / 5)
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e3e3e3"/>' % (left, gy, left + plot_w, gy))
        out.append('<text x="%d" y="%.1f" font-size="11" text-anchor="end" fill="#555">%s</text>' % (left - 6, gy + 4, esc(num(y_max * k / 5, 0))))
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e3e3e3"/>' % (gx, top, gx, top + plot_h))
        out.append('<text x="%.1f" y="%d" font-size="11" text-anchor="middle" fill="#555">%s</text>' % (gx, top + plot_h + 16, esc(num(x_max * k / 5, 0))))
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>' % (left, top + plot_h, left + plot_w, top + plot_h))
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>' % (left, top, left, top + plot_h))
    out.append('<text x="%d" y="%d" font-size="11" text-anchor="middle" fill="#555">%s</text>' % (left + plot_w // 2, top + plot_h + 32, esc(x_label)))
    out.append('<text x="14" y="%d" font-size="11" fill="#555" transform="rotate(-90 14 %d)" text-anchor="middle">%s</text>'
               % (top + plot_h // 2, top + plot_h // 2, esc(y_label)))
    if len(frontier) > 1:
        ordered = sorted(frontier)
        out.append('<polyline fill="none" stroke="#999" stroke-width="6" stroke-opacity="0.35" points="%s"/>'
                   % ' '.join('%.1f,%.1f' % (px(x), py(y)) for x, y in ordered))
    for index, s in enumerate(series):
        color = COLORS[index % len(COLORS)]
        if len(s['points']) > 1:
            out.append('<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>'
                       % (color, ' stroke-dasharray="6 4"' if s.get('dashed') else '',
                          ' '.join('%.1f,%.1f' % (px(x), py(y)) for x, y in s['points'])))
        for x, y in s['points']:
            tip = '<title>%s: %s tok/s/user, %s tok/s/GPU</title>' % (esc(s['name']), esc(num(x, 1)), esc(num(y, 1)))
            if s.get('pd'):
                # PD layouts (on paper): squares, so they never read as a deployable layout's circles.
                out.append('<rect x="%.1f" y="%.1f" width="7" height="7" fill="#ffffff" stroke="%s" stroke-width="1.5">%s</rect>'
                           % (px(x) - 3.5, py(y) - 3.5, color, tip))
            else:
                out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s">%s</circle>' % (px(x), py(y), color, tip))
    ly = top + plot_h + 50
    for index, s in enumerate(series):
        lx = left + (index % 2) * (plot_w // 2)
        y = ly + 16 * (index // 2)
        color = COLORS[index % len(COLORS)]
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2.5"%s/>'
                   % (lx, y, lx + 22, y, color, ' stroke-dasharray="6 4"' if s.get('dashed') else ''))
        if s.get('pd'):
            out.append('<rect x="%d" y="%d" width="7" height="7" fill="#ffffff" stroke="%s" stroke-width="1.5"/>' % (lx + 8, y - 3, color))
        out.append('<text x="%d" y="%d" font-size="11" fill="#333">%s</text>' % (lx + 27, y + 4, esc(s['name'])))
    out.append('</svg>')
    return '\n'.join(out)
