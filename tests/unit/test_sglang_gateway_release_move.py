# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""roles/sglang_gateway/tasks/release_move.yml through ansible-playbook (check mode, a local connection): an installed
unit that starts another smg release makes it say "would move smg A -> B" with the changes of the committed report
that touch the gateway's own flags; without a report it names the command that writes one; the same release, or no
unit yet, says nothing (issue #29 point 5)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml

from collection_paths import ROOT

with open(os.path.join(ROOT, 'profiles', 'sglang_gateway.yml')) as _stream:
    GATEWAY_PIN = str(yaml.safe_load(_stream)['version'])

PLAY = '''
- hosts: localhost
  gather_facts: false
  vars:
    sglang_gateway_deployment:
      unit: sglang-gateway.service
      argv: %(argv)s
      gateway: {version: "%(to)s", venv: /opt/smg/venv-%(to)s, lock: /elsewhere/locks/smg-%(to)s.txt}
      profiles: {dir: %(profiles)s}
  tasks:
    - name: The role's own variables
      ansible.builtin.include_vars: %(root)s/roles/sglang_gateway/vars/main.yml
    - name: The task file
      ansible.builtin.include_tasks: %(root)s/roles/sglang_gateway/tasks/release_move.yml
'''
UNIT = '[Service]\nExecStart=/opt/smg/venv-%s/bin/python /usr/local/libexec/llmops/smg-launch -- --port 30080\n'


def move(tmp_path, running, to, argv, report=None):
    profiles = tmp_path / 'profiles'
    (profiles / 'locks').mkdir(parents=True)
    unit = tmp_path / 'sglang-gateway.service'
    if running:
        unit.write_text(UNIT % running)
    if report is not None:
        (profiles / 'releases').mkdir()
        (profiles / 'releases' / ('smg-%s-to-%s.json' % (running, to))).write_text(json.dumps(report))
    play = tmp_path / 'play.yml'
    play.write_text(PLAY % dict(profiles=profiles, to=to, argv=json.dumps(argv), root=ROOT))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.collections'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_STDOUT_CALLBACK='ansible.builtin.default')
    run = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '--check', '-i',
                          'localhost,', '-c', 'local', '-e', 'ansible_python_interpreter=%s' % sys.executable,
                          '-e', '_sglang_gateway_unit_file=%s' % unit, str(play)],
                         cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    return ' '.join(run.stdout.split())


def test_a_move_names_the_changes_that_touch_this_command_line(tmp_path):
    report = dict(removed=['--gone', '--not-rendered'], defaults=[dict(flag='--prometheus-host', old='0.0.0.0', new=None)],
                  choices=[dict(flag='--policy', added=['x'], removed=[]), dict(flag='--parser', added=['y'], removed=[])])
    out = move(tmp_path, '1.0.0', GATEWAY_PIN, ['--gone', '1', '--prometheus-host', '127.0.0.1', '--policy=cache_aware'],
               report)
    assert 'would move smg 1.0.0 -> %s (sglang-gateway.service)' % GATEWAY_PIN in out
    assert 'installed in /opt/smg/venv-%s, beside the old virtualenv' % GATEWAY_PIN in out
    assert ('Changes that touch this command line: --gone removed; --prometheus-host default changed; --policy choices '
            'changed.') in out
    assert '--not-rendered' not in out and '--parser' not in out


def test_a_move_without_a_report_names_the_command_that_writes_it(tmp_path):
    out = move(tmp_path, '1.0.0', GATEWAY_PIN, ['--port', '30080'])
    assert 'would move smg 1.0.0 -> %s' % GATEWAY_PIN in out
    assert 'make gateway-release VERSION=%s FROM=1.0.0 writes it' % GATEWAY_PIN in out


def test_the_same_release_or_no_unit_says_nothing(tmp_path):
    assert 'would move' not in move(tmp_path / 'a', GATEWAY_PIN, GATEWAY_PIN, ['--port', '30080'])
    assert 'would move' not in move(tmp_path / 'b', None, GATEWAY_PIN, ['--port', '30080'])
