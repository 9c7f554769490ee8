# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""No literal SGLang pin in tests and lab files: a bump is an edit of profiles/sglang.yml (plus its lock), not of tests.

Code reads the pin (collection_paths.PIN in Python, ``llmops_deployment.sglang.version`` in plays). Scanned: every
file git knows (tracked or not ignored) under tests/, extensions/ and benchmarks/. Allowed: recorded data
(tests/fixtures/: logs, oracle output and configs captured from a release say which one), a path named for its
version, and prose - comments and docstrings may cite the release a fact was read from ("0.5.x's scheduler.py:1098").
A line that names the release as one entry of the table, not as the pin (the table's list of releases), says so in a
comment: ``# not the pin: <why>``.
"""

from __future__ import absolute_import, division, print_function

import ast
import os
import re
import subprocess

import collection_paths as cp

TREES = ('tests', 'extensions', 'benchmarks')
RECORDED = 'tests/fixtures/'
MARKER = '# not the pin'


def pin_pattern(pin):
    """The pin as a whole version: not 0.5.230 or 10.5.23 (a part of another version)."""
    return re.compile(r'(?<![\d.])%s(?![\d])' % re.escape(pin))


def _docstrings(tree):
    nodes = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                nodes.add(id(first.value))
    return nodes


def python_hits(text, pattern):
    """Line numbers of string constants (f-string parts included) naming the pin, docstrings and marked lines left
    out."""
    tree = ast.parse(text)
    skip = _docstrings(tree)
    lines = text.splitlines()
    return sorted(set(node.lineno for node in ast.walk(tree)
                      if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
                      and pattern.search(node.value)
                      and not any(MARKER in line for line in lines[node.lineno - 1:node.end_lineno])))


def text_hits(text, pattern):
    """Line numbers naming the pin outside a # comment (YAML, shell, INI, containers.conf, ...)."""
    return [number for number, line in enumerate(text.splitlines(), 1)
            if pattern.search(re.sub(r'(^|\s)#.*$', '', line)) and MARKER not in line]


def hits(path, text, pattern):
    return python_hits(text, pattern) if path.endswith('.py') else text_hits(text, pattern)


def scanned(root, pin):
    out = subprocess.run(['git', 'ls-files', '-z', '--cached', '--others', '--exclude-standard', '--'] + list(TREES),
                         cwd=root, check=True, stdout=subprocess.PIPE).stdout.decode('utf-8')
    for path in sorted(set(p for p in out.split('\0') if p)):
        if path.startswith(RECORDED) or pin in path or not os.path.isfile(os.path.join(root, path)):
            continue
        yield path


def find_literal_pins(root, pin):
    """[(path, line)] of every literal pin in the scanned files."""
    pattern = pin_pattern(pin)
    found = []
    for path in scanned(root, pin):
        try:
            with open(os.path.join(root, path), encoding='utf-8') as handle:
                text = handle.read()
        except UnicodeDecodeError:
            continue  # a binary stand-in (e.g. the NVIDIA .run of the lxc_gpu scenario)
        found.extend((path, line) for line in hits(path, text, pattern))
    return found


def test_no_literal_pin_in_tests_or_lab_files():
    found = find_literal_pins(cp.ROOT, cp.PIN)
    assert not found, ('the SGLang pin %s is written out in %s; read it instead (Python: collection_paths.PIN, '
                       'plays: llmops_deployment.sglang.version), or move recorded data under tests/fixtures/'
                       % (cp.PIN, ', '.join('%s:%d' % hit for hit in found)))


def test_the_guard_finds_a_planted_pin(tmp_path):
    pin = cp.PIN
    subprocess.run(['git', 'init', '-q', str(tmp_path)], check=True)
    files = {
        'tests/unit/test_x.py': '"""Docstrings may cite %s."""\n# so may comments: %s\nVERSION = "%s"\n'
                                'MESSAGE = f"SGLang {VERSION} != %s"\nOTHER = "%s0"\n'
                                'KNOWN = ["0.1", "%s"]  %s: a list of releases\n' % (pin, pin, pin, pin, pin, pin, MARKER),
        'extensions/molecule/x/converge.yml': '- hosts: all  # %s\n  vars:\n    version: "%s"\n' % (pin, pin),
        'benchmarks/x.sh': 'echo ok # %s\npip install sglang==%s\necho %s  %s: why\n' % (pin, pin, pin, MARKER),
        'tests/fixtures/log.txt': 'SGLang %s\n' % pin,
        'tests/sglang/v%s/expected.py' % pin: 'VERSION = "%s"\n' % pin,
    }
    for path, text in files.items():
        os.makedirs(os.path.dirname(str(tmp_path / path)), exist_ok=True)
        (tmp_path / path).write_text(text, encoding='utf-8')
    assert find_literal_pins(str(tmp_path), pin) == [
        ('benchmarks/x.sh', 2), ('extensions/molecule/x/converge.yml', 3),
        ('tests/unit/test_x.py', 3), ('tests/unit/test_x.py', 4)]
