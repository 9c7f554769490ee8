#!/usr/bin/env python
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A quantization_rules family of profiles/sglang_releases.yml for another release: every `source: file:line` moved
to where that release's wheel has the same quote (issue #29: carrying the rules over to a new release).

  relocate_citations.py FAMILY OLD_SRT NEW_SRT NEW_NAME [--version V]

OLD_SRT and NEW_SRT are the sglang/srt folders of the family's release and the other one (their lab venvs). Each
citation's quote is looked up in the same file of NEW_SRT; found once (or as often as in the old file: the same occurrence by
order), the span moves with it (same length, same offset of the quote); else the line keeps its old span and is
marked UNVERIFIED. Prints
the new family's YAML block (to paste under quantization_rules:) and a summary on stderr; exit 1 while anything is
UNVERIFIED. make parser SGLANG_PIN=<release> then checks every citation against that release's wheel.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

from collection_paths import TABLE_FILE, release_table_data

CITE = re.compile(r'^(?P<path>[\w/.]+\.py):(?P<first>\d+)(?:-(?P<last>\d+))?$')


def _cites(rules):
    yield rules['messages']['capability']
    yield rules['messages']['unknown']
    for fmt in rules['formats']:
        yield fmt
        yield from fmt['archs']
    kv = rules.get('kv_cache_auto') or {}
    if kv:
        yield kv['rule']
        yield from kv['methods'].values()


def _read(srt, path):
    with open(os.path.join(srt, path), encoding='utf-8') as stream:
        return stream.read().splitlines()


def _quote_line(lines, first, last, quote):
    """The 0-based line where ``quote`` starts inside lines[first-1:last], or None."""
    text = '\n'.join(lines[first - 1:last])
    at = text.find(quote)
    return None if at < 0 else first - 1 + text[:at].count('\n')


def relocate(source, quote, old_srt, new_srt):
    """(new source, None) or (old source, why not)."""
    match = CITE.match(source)
    if not match:
        return source, 'not a file:line citation'
    path, first = match.group('path'), int(match.group('first'))
    last = int(match.group('last') or first)
    try:
        old, new = _read(old_srt, path), _read(new_srt, path)
    except OSError as exc:
        return source, 'file missing: %s' % exc
    start = _quote_line(old, first, last, quote)
    if start is None:
        return source, 'the quote is not in the cited lines of the old release'
    offset = start - (first - 1)
    joined = '\n'.join(new)
    hits = [m.start() for m in re.finditer(re.escape(quote), joined)]
    # A quote the file has several times: the same occurrence (by order) where both releases have it equally often.
    old_joined = '\n'.join(old)
    old_hits = [old_joined[:m.start()].count('\n') for m in re.finditer(re.escape(quote), old_joined)]
    ordinal = min(range(len(old_hits)), key=lambda i: abs(old_hits[i] - start)) if old_hits else 0
    if not hits or (len(hits) > 1 and len(hits) != len(old_hits)):
        return source, 'the quote is %s in %s of the new release' % ('nowhere' if not hits else
                                                                     '%d times' % len(hits), path)
    line = joined[:hits[ordinal if len(hits) > 1 else 0]].count('\n')
    new_first = line - offset + 1
    span = '%d-%d' % (new_first, new_first + last - first) if last != first else '%d' % new_first
    return '%s:%s' % (path, span), None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('family')
    parser.add_argument('old_srt')
    parser.add_argument('new_srt')
    parser.add_argument('new_name')
    parser.add_argument('--version', help='the new release (for the family\'s source line)')
    args = parser.parse_args(argv)
    rules = release_table_data()['quantization_rules'][args.family]
    moved, unverified = {}, {}
    for item in _cites(rules):
        new, why = relocate(item['source'], item['quote'], args.old_srt, args.new_srt)
        if why:
            unverified[item['source']] = why
        elif moved.setdefault(item['source'], new) != new:
            unverified[item['source']] = 'two quotes of one span land in different places'
    with open(TABLE_FILE, encoding='utf-8') as stream:
        text = stream.read()
    start = text.index('\n  %s:\n' % args.family) + 1
    end = re.search(r'\n  \S[^\n]*:\n|\n\S', text[start + 1:])
    block = text[start:start + 1 + end.start() + 1] if end else text[start:]
    out = []
    for line in block.splitlines():
        match = re.match(r'^(\s*(?:- )?source: )(\S+)$', line)
        if match and match.group(2) in unverified:
            line = '%s%s  # UNVERIFIED: %s' % (match.group(1), match.group(2), unverified[match.group(2)])
        elif match and match.group(2) in moved:
            line = match.group(1) + moved[match.group(2)]
        out.append(line)
    out[0] = '  %s:' % args.new_name
    print('\n'.join(out))
    print('%s -> %s: %d citations moved, %d UNVERIFIED%s' % (
        args.family, args.new_name, len(moved), len(unverified),
        ''.join('\n  %s: %s' % item for item in sorted(unverified.items()))), file=sys.stderr)
    return 1 if unverified else 0


if __name__ == '__main__':
    sys.exit(main())
