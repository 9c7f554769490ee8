# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The plan_files action: writes only what changed, removes first, stays inside dest, honours check mode."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from unittest.mock import MagicMock

from ansible.errors import AnsibleActionFail

from ansible_collections.llmops.inference.plugins.action import plan_files


def run(args, check=False):
    task = MagicMock()
    task.args = args
    task.async_val = 0
    task.check_mode = check
    action = plan_files.ActionModule(task, MagicMock(), MagicMock(), MagicMock(), MagicMock(), MagicMock())
    return action.run(task_vars={})


def test_writes_json_and_text_then_nothing_changes(tmp_path):
    dest = str(tmp_path / 'host')
    result = run(dict(dest=dest, files={'plan.json': {'b': 1, 'a': [2]}, 'plan.md': '# x\n'}))
    assert result['changed'] and sorted(result['written']) == ['plan.json', 'plan.md']
    assert json.load(open(os.path.join(dest, 'plan.json'))) == {'a': [2], 'b': 1}
    assert oct(os.stat(os.path.join(dest, 'plan.md')).st_mode & 0o777) == '0o644'
    again = run(dict(dest=dest, files={'plan.json': {'a': [2], 'b': 1}, 'plan.md': '# x\n'}))
    assert again['changed'] is False and again['written'] == []


def test_removes_an_earlier_runs_files_first(tmp_path):
    dest = tmp_path / 'host'
    (dest / 'files' / 'etc').mkdir(parents=True)
    (dest / 'sglang_argv.json').write_text('{}')
    result = run(dict(dest=str(dest), remove=['files', 'sglang_argv.json', 'absent'], files={'plan.md': 'x'}))
    assert sorted(result['removed']) == ['files', 'sglang_argv.json']
    assert not (dest / 'files').exists() and not (dest / 'sglang_argv.json').exists()


def test_check_mode_writes_nothing(tmp_path):
    dest = tmp_path / 'host'
    result = run(dict(dest=str(dest), files={'plan.md': 'x'}), check=True)
    assert result['changed'] and result['written'] == ['plan.md'] and not dest.exists()


@pytest.mark.parametrize('name', ['../escape.md', '/etc/passwd', 'a/../../b'])
def test_refuses_paths_outside_dest(tmp_path, name):
    with pytest.raises(AnsibleActionFail, match='not a path inside'):
        run(dict(dest=str(tmp_path), files={name: 'x'}))


def test_refuses_a_relative_dest():
    with pytest.raises(AnsibleActionFail, match='absolute directory'):
        run(dict(dest='build/plan', files={}))


def run_with_templar(args, task_vars):
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar
    task = MagicMock()
    task.args = args
    task.async_val = 0
    task.check_mode = False
    loader = DataLoader()
    action = plan_files.ActionModule(task, MagicMock(), MagicMock(), loader, Templar(loader=loader), MagicMock())
    return action.run(task_vars=task_vars)


def test_renders_a_template_as_the_template_action_does(tmp_path):
    """trim_blocks on, lstrip_blocks off, ansible_managed given, the entry's vars over the task's, its own mode."""
    src = tmp_path / 'unit.j2'
    src.write_text('# {{ ansible_managed }}\n{% if on %}\nA={{ a }}\n{% endif %}\n  {% if on %}B{% endif %}\nC={{ c }}\n')
    dest = str(tmp_path / 'host')
    entry = {'src': str(src), 'dest': 'files/etc/x.env', 'mode': '0600', 'vars': {'c': 'entry'}}
    result = run_with_templar(dict(dest=dest, templates=[entry]), {'on': True, 'a': 1, 'c': 'task'})
    path = os.path.join(dest, 'files', 'etc', 'x.env')
    assert result['written'] == ['files/etc/x.env']
    assert open(path).read() == '# Ansible managed\nA=1\n  BC=entry\n'  # trim_blocks eats the newline after a block
    assert oct(os.stat(path).st_mode & 0o777) == '0o600'


def test_refuses_a_template_outside_dest_or_missing(tmp_path):
    with pytest.raises(AnsibleActionFail, match='not a path inside'):
        run(dict(dest=str(tmp_path), templates=[{'src': '/etc/hostname', 'dest': '../x'}]))
    with pytest.raises(AnsibleActionFail, match='existing absolute file'):
        run_with_templar(dict(dest=str(tmp_path), templates=[{'src': 'rel.j2', 'dest': 'x'}]), {})
