# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""model_dir_info through its real argument spec."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

from module_harness import AnsibleExitJson, run

from ansible_collections.llmops.inference.plugins.module_utils.hf.marker import MARKER_NAME
from ansible_collections.llmops.inference.plugins.modules import model_dir_info


def run_module(args, **kwargs):
    return run(model_dir_info.main, args, expect=AnsibleExitJson, **kwargs)[1]


def test_new_directory_is_fine(tmp_path):
    res = run_module({'path': str(tmp_path / 'models' / 'm'), 'forbidden_paths': ['/data']})
    assert res['problems'] == [] and not res['exists'] and res['marker'] is None
    assert res['free_bytes'] > 0 and os.path.ismount(res['mount_point']) and not res['changed']


def test_forbidden_through_symlink_is_a_problem_not_a_failure(tmp_path):
    (tmp_path / 'data').mkdir()
    os.symlink(str(tmp_path / 'data'), str(tmp_path / 'srv'))
    res = run_module({'path': str(tmp_path / 'srv' / 'm'), 'forbidden_paths': [str(tmp_path / 'data')]})
    assert len(res['problems']) == 1 and 'under forbidden path' in res['problems'][0]
    assert res['real_path'] == str(tmp_path / 'data' / 'm')


def test_marker_and_users(tmp_path):
    model = tmp_path / 'models' / 'm'
    model.mkdir(parents=True)
    marker = {'format': 1, 'repo_id': 'o/m', 'revision': 'a' * 40, 'requested_revision': 'main', 'verified_at': 'x',
              'files': {'a.safetensors': {'size': 10, 'sha256': 'b' * 64, 'mtime_ns': 1},
                        'config.json': {'size': 5, 'git_sha1': 'c' * 40, 'mtime_ns': 1}}}
    (model / MARKER_NAME).write_text(json.dumps(marker))
    holder = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], cwd=str(model))
    try:
        res = run_module({'path': str(model), 'forbidden_paths': [], 'service_patterns': []})
    finally:
        holder.kill()
        holder.wait()
    assert res['marker'] == {'repo_id': 'o/m', 'revision': 'a' * 40, 'requested_revision': 'main', 'verified_at': 'x',
                             'files': 2, 'bytes': 15}
    assert res['in_use'] and [p['pid'] for p in res['users']['processes']] == [holder.pid]
    assert res['problems'] == []


def test_read_only_in_check_mode_too(tmp_path):
    res = run_module({'path': str(tmp_path / 'srv' / 'm'), 'forbidden_paths': []}, check_mode=True)
    assert not res['changed'] and res['problems'] == [] and os.listdir(str(tmp_path)) == []


def test_a_mount_point_is_a_problem():
    res = run_module({'path': '/proc', 'forbidden_paths': [], 'check_users': False})
    assert any('system directory' in p for p in res['problems'])
    assert any('mount point' in p for p in res['problems'])
