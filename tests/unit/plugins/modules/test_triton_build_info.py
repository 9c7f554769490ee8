# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""triton_build_info with this machine's real compiler and interpreter (the lab proves it with the pinned Triton)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import sys

import pytest

from module_harness import AnsibleExitJson, AnsibleFailJson, run

from ansible_collections.llmops.inference.plugins.modules import triton_build_info

needs_cc = pytest.mark.skipif(not (shutil.which('gcc') or shutil.which('clang')), reason='no C compiler here')


@needs_cc
def test_builds_and_imports_the_extension(tmp_path):
    kind, result = run(triton_build_info.main, {'python': sys.executable}, tmp_path=tmp_path, check_mode=True)
    assert kind is AnsibleExitJson, result
    assert result['ok'] and result['error'] is None and not result['changed']
    assert result['built'].startswith('llmops_cc_probe.') and result['python_h']
    assert os.path.basename(result['cc']) in ('gcc', 'clang')


def test_a_missing_compiler_fails_with_the_rule_and_the_fix(tmp_path):
    kind, result = run(triton_build_info.main, {'python': sys.executable, 'environment': {'CC': '/nonexistent/cc'}},
                       tmp_path=tmp_path)
    assert kind is AnsibleFailJson
    assert not result['ok'] and result['cc'] == '/nonexistent/cc'
    assert 'cannot build a C extension the way Triton does' in result['msg']
    assert 'No such file or directory' in result['error']
    assert 'Fix: install gcc, libc6-dev' in result['msg']


def test_a_missing_interpreter(tmp_path):
    kind, result = run(triton_build_info.main, {'python': '/nonexistent/python'}, tmp_path=tmp_path)
    assert kind is AnsibleFailJson and 'is not an executable file' in result['msg']


def test_the_probe_finds_the_compiler_as_triton_does(monkeypatch):
    from ansible_collections.llmops.inference.plugins.module_utils.gpu.scripts import triton_build_probe as probe
    monkeypatch.delenv('CC', raising=False)
    found = {'gcc': '/usr/bin/gcc', 'clang': '/usr/bin/clang'}
    monkeypatch.setattr(probe.shutil, 'which', found.get)
    assert probe.find_cc() == '/usr/bin/gcc'
    del found['gcc']
    assert probe.find_cc() == '/usr/bin/clang'
    found.clear()
    with pytest.raises(RuntimeError, match='Failed to find C compiler'):
        probe.find_cc()
    monkeypatch.setenv('CC', 'cc-from-env')
    assert probe.find_cc() == 'cc-from-env'
