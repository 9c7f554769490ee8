#!/usr/bin/env python
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Open a self-contained HTML page (a benchmark report.html, make plan's plan.html / topology.html) in headless
Chromium and check that it renders: the page holds its inline SVG charts and no script or external asset, and the
screenshot is not blank (many colours, the charts' colours present).

Usage: check_report_screenshot.py HTML SCREENSHOT_PNG [--min-charts N] [--chromium PATH] [--window W,H]
                                  [--colour RRGGBB[=name] ...] [--svg-xml] [--no-console]
Without --colour, one of the benchmark charts' two first line colours must be in the screenshot; with it, every
colour given must be. --svg-xml: every inline SVG must be well-formed XML. --no-console: the page must log nothing
to the browser console (Chromium's own log, --enable-logging=stderr, lists every console message as CONSOLE).
Stdlib only: the PNG is decoded with zlib (8-bit RGB/RGBA, the format Chromium writes).
"""
from __future__ import absolute_import, division, print_function

import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib
from xml.etree import ElementTree

# Line colours of the first two variants in the charts (bench_report.PALETTE).
CHART_COLOURS = {(0x1f, 0x77, 0xb4): 'blue (first variant)', (0xd6, 0x27, 0x28): 'red (second variant)'}


def decode_png(path):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit, non-interlaced RGB or RGBA PNG."""
    with open(path, 'rb') as handle:
        data = handle.read()
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        raise ValueError('%s is not a PNG' % path)
    pos, idat, header = 8, b'', None
    while pos < len(data):
        length, kind = struct.unpack('>I4s', data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b'IHDR':
            header = struct.unpack('>IIBBBBB', chunk)
        elif kind == b'IDAT':
            idat += chunk
        pos += 12 + length
    width, height, depth, colour, _c, _f, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError('unsupported PNG (depth %d, colour type %d, interlace %d)' % (depth, colour, interlace))
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up = prev[i]
            corner = prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + ((left + up) >> 1)) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
                line[i] = (line[i] + pred) & 0xFF
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def colour_arg(text):
    """'1f77b4' or '1f77b4=weights' -> ((0x1f, 0x77, 0xb4), name)."""
    hexa, _sep, name = text.partition('=')
    hexa = hexa.lstrip('#')
    if not re.match(r'^[0-9a-fA-F]{6}$', hexa):
        raise argparse.ArgumentTypeError('%r is not RRGGBB[=name]' % text)
    rgb = tuple(int(hexa[i:i + 2], 16) for i in (0, 2, 4))
    return rgb, name or '#' + hexa.lower()


def page_problems(page, min_charts, svg_xml):
    """What is wrong with the page's text itself: too few inline SVGs, a script or external asset, bad SVG XML."""
    svgs = re.findall(r'<svg\b.*?</svg>', page, re.S)
    problems = []
    if len(svgs) < min_charts:
        problems.append('%d inline SVG charts, expected at least %d' % (len(svgs), min_charts))
    if re.search(r'<script\b', page) or re.search(r'(?:src|href)\s*=\s*["\']?(?:https?:)?//', page):
        problems.append('the page loads scripts or external assets')
    for i, svg in enumerate(svgs if svg_xml else ()):
        try:
            ElementTree.fromstring(svg)
        except ElementTree.ParseError as exc:
            problems.append('inline SVG %d is not well-formed XML: %s' % (i + 1, exc))
    return len(svgs), problems


def screenshot(args):
    """Run headless Chromium; (returncode, its output, the console lines it logged)."""
    if os.path.exists(args.png):
        os.unlink(args.png)
    cmd = [args.chromium, '--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars', '--no-first-run',
           '--window-size=%s' % args.window, '--screenshot=%s' % os.path.abspath(args.png)]
    if args.no_console:
        cmd += ['--enable-logging=stderr', '--v=0']
    cmd.append('file://%s' % os.path.abspath(args.html))
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=120, check=False)
    console = [line for line in proc.stdout.splitlines() if re.search(r':CONSOLE[:(]', line)]
    return proc.returncode, proc.stdout, console


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('html')
    parser.add_argument('png')
    parser.add_argument('--min-charts', type=int, default=3)
    parser.add_argument('--chromium', default=shutil.which('chromium') or shutil.which('chromium-browser') or 'chromium')
    parser.add_argument('--window', default='1280,2400')
    parser.add_argument('--colour', type=colour_arg, action='append', default=[],
                        help='RRGGBB[=name] that must be in the screenshot (repeat for each); default: a bench chart colour')
    parser.add_argument('--svg-xml', action='store_true', help='every inline SVG must be well-formed XML')
    parser.add_argument('--no-console', action='store_true', help='fail on any browser console message')
    args = parser.parse_args()

    with open(args.html) as handle:
        page = handle.read()
    charts, problems = page_problems(page, args.min_charts, args.svg_xml)
    rc, output, console = screenshot(args)
    if rc != 0 or not os.path.exists(args.png):
        print('chromium failed (rc %d): %s' % (rc, output[-2000:]))
        return 1
    problems += ['the browser console logged: %s' % line for line in console]
    width, height, rows = decode_png(args.png)
    colours = {}
    for row in rows[::2]:
        for pixel in row[::2]:
            colours[pixel] = colours.get(pixel, 0) + 1
    total = sum(colours.values())
    background = max(colours.values()) / float(total)
    wanted = dict(args.colour) if args.colour else CHART_COLOURS
    found = sorted(name for rgb, name in wanted.items() if colours.get(rgb, 0) > 20)
    if len(colours) < 50:
        problems.append('the screenshot has only %d distinct colours (blank page?)' % len(colours))
    if background > 0.98:
        problems.append('%.1f %% of the screenshot is one colour (nothing rendered?)' % (100 * background))
    if not found:
        problems.append('none of the chart colours is in the screenshot (charts not drawn?)')
    elif args.colour and len(found) < len(wanted):
        problems.append('colours missing from the screenshot: %s' % ', '.join(
            sorted(name for rgb, name in wanted.items() if colours.get(rgb, 0) <= 20)))
    print('%s: %dx%d px, %d distinct colours, background %.1f %%, chart colours: %s; %d inline SVG charts in the page'
          '%s' % (args.png, width, height, len(colours), 100 * background, ', '.join(found) or 'none', charts,
                  ', %d console messages' % len(console) if args.no_console else ''))
    for problem in problems:
        print('FAIL: ' + problem)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
