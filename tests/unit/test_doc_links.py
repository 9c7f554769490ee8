# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every relative link of README.md and docs/ (Markdown files at any depth) points to a file or directory of the
checkout, and a ``#fragment`` into a Markdown file names one of its headings (GitHub's anchors: lower case,
punctuation dropped, spaces to hyphens, ``-1``, ``-2`` for repeats). Links inside code are not links."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools
import glob
import os
import re
import sys

from collection_paths import ROOT

FENCE = re.compile(r'^(```|~~~).*?^\1[^\n]*$', re.S | re.M)
# [text](target) and ![alt](target), the text allowing one level of nested brackets; an optional "title".
LINK = re.compile(r'!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
SCHEME = re.compile(r'^[A-Za-z][A-Za-z0-9+.-]*:')


def markdown_files():
    docs = glob.glob(os.path.join(ROOT, 'docs', '**', '*.md'), recursive=True)
    return ['README.md'] + sorted(os.path.relpath(path, ROOT) for path in docs)


def read(path):
    with open(os.path.join(ROOT, path), encoding='utf-8') as handle:
        return handle.read()


def slug(heading):
    heading = re.sub(r'`', '', heading.strip().lower())
    heading = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', heading)
    return re.sub(r'[^\w\- ]', '', heading).replace(' ', '-')


@functools.lru_cache(maxsize=None)
def anchors(full):
    """The anchors of the Markdown file at the absolute path ``full`` (cached: docs/reference.md is linked often)."""
    with open(full, encoding='utf-8') as handle:
        text = FENCE.sub('', handle.read())
    found, seen = set(), {}
    for match in re.finditer(r'^#{1,6}\s+(.*?)\s*#*\s*$', text, re.M):
        base = slug(match.group(1))
        count = seen.get(base, 0)
        found.add(base if count == 0 else '%s-%d' % (base, count))
        seen[base] = count + 1
    found.update(re.findall(r'<a\s+(?:name|id)="([^"]+)"', text))
    return found


def links(path):
    text = re.sub(r'`[^`\n]*`', '', FENCE.sub('', read(path)))
    return [m.group(1) for m in LINK.finditer(text)]


def broken(path):
    out = []
    for url in links(path):
        if SCHEME.match(url):
            continue
        target, fragment = (url.split('#', 1) + [''])[:2]
        full = os.path.normpath(os.path.join(ROOT, os.path.dirname(path), target)) if target else os.path.join(ROOT, path)
        if not full.startswith(ROOT + os.sep):
            out.append('%s: %s leaves the checkout' % (path, url))
        elif not os.path.exists(full):
            out.append('%s: %s: no such file' % (path, url))
        elif fragment and full.endswith('.md') and fragment not in anchors(full):
            out.append('%s: %s: no heading with that anchor in %s' % (path, url, os.path.relpath(full, ROOT)))
    return out


def test_every_relative_link_of_the_readme_and_docs_resolves():
    files = markdown_files()
    assert 'docs/overview.md' in files and 'docs/dev/oracle.md' in files, files
    assert sum(len(links(path)) for path in files) > 50, 'the link pattern stopped matching'
    problems = [line for path in files for line in broken(path)]
    assert problems == [], '\n'.join(problems)


def test_the_checker_finds_a_bad_file_and_a_bad_anchor(tmp_path, monkeypatch):
    (tmp_path / 'docs').mkdir()
    (tmp_path / 'docs' / 'a.md').write_text('# A `title`: here\n\n## Twice\n\n## Twice\n')
    (tmp_path / 'README.md').write_text(
        '[ok](docs/a.md#a-title-here) [ok2](docs/a.md#twice-1) [web](https://example.org/x.md) `[code](nope.md)`\n'
        '```\n[fenced](nope.md)\n```\n[gone](docs/b.md) [bad anchor](docs/a.md#twice-2) [up](../x.md)\n')
    monkeypatch.setattr(sys.modules[__name__], 'ROOT', str(tmp_path))
    assert broken('README.md') == [
        'README.md: docs/b.md: no such file',
        'README.md: docs/a.md#twice-2: no heading with that anchor in docs/a.md',
        'README.md: ../x.md leaves the checkout']
