# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every import of this collection's plugins written anywhere in the repository resolves: Python files, and the
Python inside shell scripts, playbooks and docs (heredocs, `python -c`, examples), which no import check sees. A
folder of plugins/ is a package with an empty __init__.py, so `from <package> import <name>` must name a module or
a folder in it. The subpackage moves of issue #28 missed one such heredoc (tests/integration/targets/model_profile)
and only the lab found it."""

from __future__ import annotations

import os
import re
import subprocess

from collection_paths import ROOT

PREFIX = 'ansible_collections.llmops.inference.'
FROM = re.compile(r'from\s+ansible_collections\.llmops\.inference\.([A-Za-z0-9_.]+)\s+import\s+\(?([A-Za-z0-9_, \t]+)')
IMPORT = re.compile(r'(?<![\w.])import\s+ansible_collections\.llmops\.inference\.([A-Za-z0-9_.]+)')
THIS = os.path.relpath(os.path.abspath(__file__), ROOT)
SUFFIXES = ('.py', '.sh', '.yml', '.yaml', '.md', '.j2', '.cfg', '.txt', '.ini')


def tracked():
    out = subprocess.run(['git', 'ls-files'], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [p for p in out.splitlines() if p.endswith(SUFFIXES) or p in ('Makefile',)]


def _is_module(root, dotted):
    path = os.path.join(root, *dotted.split('.'))
    return os.path.isfile(path + '.py') or os.path.isdir(path)


def unresolved(root, text):
    """The imports of this collection in text that name no file or folder under root."""
    bad = []
    for match in FROM.finditer(text):
        package, names = match.group(1), [n.split()[0] for n in match.group(2).split(',') if n.strip()]
        if not _is_module(root, package):
            bad.append(PREFIX + package)
            continue
        if os.path.isdir(os.path.join(root, *package.split('.'))):
            bad += ['%s%s.%s' % (PREFIX, package, n) for n in names if not _is_module(root, package + '.' + n)]
    for match in IMPORT.finditer(text):
        if not _is_module(root, match.group(1)):
            bad.append(PREFIX + match.group(1))
    return bad


def test_every_import_of_the_collection_resolves():
    found, bad = 0, []
    for rel in tracked():
        if rel == THIS:  # its planted wrong imports are the test of the test below
            continue
        with open(os.path.join(ROOT, rel), encoding='utf-8', errors='replace') as handle:
            text = handle.read()
        if PREFIX not in text:
            continue
        found += 1
        bad += ['%s: %s' % (rel, name) for name in unresolved(ROOT, text)]
    assert found > 50, 'expected imports of the collection in many files, found %d' % found
    assert bad == [], 'imports that name no module (moved or renamed?):\n' + '\n'.join(bad)


def test_the_check_names_a_moved_module():
    """The heredoc the lab found, and three other shapes, against the real tree."""
    text = '\n'.join([
        'from ansible_collections.llmops.inference.plugins.module_utils import sglang_release as sr, vram_plan as vp',
        'from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan',
        'import ansible_collections.llmops.inference.plugins.module_utils.vram_plan',
        'from ansible_collections.llmops.inference.plugins.module_utils.sglang.release import load_table',
    ])
    assert unresolved(ROOT, text) == [PREFIX + 'plugins.module_utils.sglang_release',
                                      PREFIX + 'plugins.module_utils.vram_plan',
                                      PREFIX + 'plugins.module_utils.vram_plan']
