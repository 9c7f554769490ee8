# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""path_users: processes and systemd units that use a directory."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import subprocess
import sys

from ansible_collections.llmops.inference.plugins.module_utils.host import path_users


def test_mentions():
    roots = ['/srv/models/q']
    assert path_users._mentions('--model-path=/srv/models/q', roots)
    assert path_users._mentions('/srv/models/q/config.json', roots)
    assert path_users._mentions('/srv/models/q', roots)
    assert not path_users._mentions('/srv/models/qwen', roots)
    assert not path_users._mentions('/x/srv/models/q', roots)


def test_find_path_users_real_processes(tmp_path):
    model = tmp_path / 'model'
    model.mkdir()
    shard = model / 'w.safetensors'
    shard.write_bytes(b'x' * 4096)
    holder = subprocess.Popen([sys.executable, '-c', 'import sys, time; f = open(sys.argv[1], "rb"); '
                               'print("ready", flush=True); time.sleep(60)', str(shard)],
                              stdout=subprocess.PIPE, universal_newlines=True)
    cwd_user = subprocess.Popen(['sleep', '60'], cwd=str(model))
    try:
        assert holder.stdout.readline().strip() == 'ready'
        users = dict((u['pid'], u) for u in path_users.find_path_users(str(model)))
        assert holder.pid in users and cwd_user.pid in users
        assert 'open file' in users[holder.pid]['reasons'] and 'cmdline' in users[holder.pid]['reasons']
        assert users[cwd_user.pid]['reasons'] == ['cwd'] and users[cwd_user.pid]['comm'] == 'sleep'
        assert path_users.find_path_users(str(tmp_path / 'other')) == []
        text = path_users.describe_users(list(users.values()), [])
        assert 'PID %d' % holder.pid in text
    finally:
        holder.kill()
        cwd_user.kill()
        holder.wait()
        cwd_user.wait()


def test_systemctl_show_parsing_and_units_using():
    text = ('Id=sglang-qwen.service\nActiveState=active\nMainPID=4242\n'
            'ExecStart={ path=/opt/sglang/bin/python ; argv[]=/opt/sglang/bin/python -m sglang.launch_server '
            '--model-path /srv/models/Qwen/Q ; ignore_errors=no }\nWorkingDirectory=/\nEnvironment=\n\n'
            'Id=sglang-other.service\nActiveState=active\nMainPID=5\nExecStart=/bin/x --model-path /srv/models/Qwen/Q2\n\n'
            'Id=sglang-dead.service\nActiveState=inactive\nMainPID=0\nExecStart=/bin/x /srv/models/Qwen/Q\n')
    units = path_users.parse_systemctl_show(text)
    assert [u['Id'] for u in units] == ['sglang-qwen.service', 'sglang-other.service', 'sglang-dead.service']
    found = path_users.units_using(units, '/srv/models/Qwen/Q')
    assert found == [{'unit': 'sglang-qwen.service', 'property': 'ExecStart', 'main_pid': 4242}]
    assert 'unit sglang-qwen.service' in path_users.describe_users([], found)


def test_active_units_using_with_a_fake_systemctl(monkeypatch):
    calls = []

    def run(argv):
        calls.append(argv)
        if argv[1] == 'list-units':
            return 0, 'sglang-qwen.service loaded active running SGLang\n', ''
        return 0, 'Id=sglang-qwen.service\nActiveState=active\nMainPID=7\nExecStart=/x /srv/m\n', ''

    monkeypatch.setattr(os.path, 'isdir', lambda p: p == '/run/systemd/system')
    assert path_users.active_units_using(run, '/bin/systemctl', '/srv/m', ['sglang-*.service'])[0]['unit'] == 'sglang-qwen.service'
    assert calls[0][-1] == 'sglang-*.service' and calls[1][-1] == 'sglang-qwen.service'
    assert path_users.active_units_using(run, None, '/srv/m', ['x']) == []


def test_unit_of_cgroup():
    assert path_users._unit_of('0::/system.slice/sglang-qwen.service\n') == 'sglang-qwen.service'
    assert path_users._unit_of('12:pids:/user.slice/user-0.slice/session-3.scope\n') == 'session-3.scope'
    assert path_users._unit_of('0::/\n') is None
