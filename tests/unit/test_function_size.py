# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Short functions: no function (or method, or nested function) under plugins/ is longer than MAX_LINES.

A function's length is counted from its ``def`` line to its last line (ast ``end_lineno - lineno + 1``; decorators
not counted, docstring and comments counted), read with ast from every .py under plugins/ (no import runs). There is
no ignore list: a function over the limit is split along its own sections (read, decide, act, report). A test of the
test plants a long function in a copy of the tree and shows the rule naming it, and one of exactly MAX_LINES passing.
"""

from __future__ import absolute_import, division, print_function

import ast
import os
import shutil

from collection_paths import ROOT

MAX_LINES = 80


def long_functions(root, max_lines=MAX_LINES):
    """'path:line name (N lines): split it along its sections' for every function below root/plugins over max_lines,
    path relative to root, sorted by path and line."""
    found = []
    plugins = os.path.join(root, 'plugins')
    for directory, subdirs, names in os.walk(plugins):
        subdirs[:] = sorted(name for name in subdirs if name != '__pycache__')
        for name in sorted(names):
            if not name.endswith('.py'):
                continue
            path = os.path.join(directory, name)
            with open(path) as handle:
                tree = ast.parse(handle.read(), filename=path)
            rel = os.path.relpath(path, root).replace(os.sep, '/')
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    length = node.end_lineno - node.lineno + 1
                    if length > max_lines:
                        found.append((rel, node.lineno, '%s:%d %s (%d lines): split it along its sections'
                                      % (rel, node.lineno, node.name, length)))
    return [text for _rel, _line, text in sorted(found)]


def test_no_function_in_plugins_is_over_the_limit():
    found = long_functions(ROOT)
    assert not found, '%d function(s) over %d lines:\n%s' % (len(found), MAX_LINES, '\n'.join(found))


def _function(name, lines):
    """Source of a function ``name`` of exactly ``lines`` lines (def line included)."""
    body = ['    value = %d' % index for index in range(lines - 2)]
    return '\n'.join(['def %s():' % name] + body + ['    return value']) + '\n'


def test_the_rule_names_a_planted_long_function(tmp_path):
    """A test of the test: a copy of plugins/ with one function of MAX_LINES + 1 lines (a method, nested in a class)
    and one of exactly MAX_LINES added is refused, naming the long one with path, line and length, and only it."""
    root = str(tmp_path)
    shutil.copytree(os.path.join(ROOT, 'plugins'), os.path.join(root, 'plugins'),
                    ignore=shutil.ignore_patterns('__pycache__'))
    before = set(long_functions(root))
    assert before == set(long_functions(ROOT))
    path = os.path.join(root, 'plugins', 'module_utils', 'common', 'planted_size.py')
    long_method = ''.join('    %s\n' % line if line else '\n'
                          for line in _function('planted_long', MAX_LINES + 1).split('\n')[:-1])
    source = _function('planted_at_limit', MAX_LINES) + '\n\nclass Planted(object):\n' + long_method
    with open(path, 'w') as handle:
        handle.write(source)
    line = MAX_LINES + 4  # the at-limit function, two blank lines, the class line: the method's def is the next
    assert source.split('\n')[line - 1].strip() == 'def planted_long():'
    added = set(long_functions(root)) - before
    assert added == {'plugins/module_utils/common/planted_size.py:%d planted_long (%d lines): split it along its '
                     'sections' % (line, MAX_LINES + 1)}, added
