# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""roles/sglang_server/tasks/release_move.yml through ansible-playbook (check mode, a local connection): a deployed
record of another release makes it say "would move SGLang A -> B" with the changes of the committed report that
touch the instance's own flags; without a report it names the command that writes one; the same release says
nothing (issue #29 point 4)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from collection_paths import PIN, ROOT

PLAY = '''
- hosts: localhost
  gather_facts: false
  vars:
    sglang_server_state_dir: %(state)s
    sglang_server_deployment:
      instance: qa
      argv: %(argv)s
      profiles: {dir: %(profiles)s}
      sglang: {version: "%(to)s", venv: /opt/sglang/venv-%(to)s}
  tasks:
    - name: The role's own variables
      ansible.builtin.include_vars: %(root)s/roles/sglang_server/vars/main.yml
    - name: The task file
      ansible.builtin.include_tasks: %(root)s/roles/sglang_server/tasks/release_move.yml
'''


def move(tmp_path, deployed, to, argv, report=None):
    state, profiles = tmp_path / 'state', tmp_path / 'profiles'
    (state / 'qa').mkdir(parents=True)
    (state / 'qa' / 'deployed.json').write_text(json.dumps(deployed))
    if report is not None:
        (profiles / 'releases').mkdir(parents=True)
        (profiles / 'releases' / ('sglang-%s-to-%s.json' % (deployed['sglang_version'], to))).write_text(
            json.dumps(report))
    play = tmp_path / 'play.yml'
    play.write_text(PLAY % dict(state=state, profiles=profiles, to=to, argv=json.dumps(argv), root=ROOT))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.collections'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_STDOUT_CALLBACK='ansible.builtin.default')
    run = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '--check', '-i',
                          'localhost,', '-c', 'local', '-e', 'ansible_python_interpreter=%s' % sys.executable,
                          str(play)], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    return ' '.join(run.stdout.split())


def test_a_move_names_the_changes_that_touch_this_command_line(tmp_path):
    report = dict(removed=['--gone', '--not-rendered'], deprecated=['--tp-size'], renamed={},
                  defaults={'--enable-tf32-matmul': dict(old=False, new=None)},
                  choices={'--tool-call-parser': dict(added=['beam'], removed=[]), '--lora-backend': {}})
    out = move(tmp_path, dict(sglang_version='0.5.22', sglang_venv='/opt/sglang/venv-0.5.22'), PIN,
               ['--model-path', '/m', '--tp-size', '4', '--tool-call-parser', 'qwen3_coder', '--gone',
                '--enable-tf32-matmul'], report)
    assert 'would move SGLang 0.5.22 -> %s (qa)' % PIN in out, out
    assert 'installed in /opt/sglang/venv-%s, beside /opt/sglang/venv-0.5.22, which stays for the rollback' % PIN in out
    assert ('Changes that touch this command line: --gone removed; --tp-size deprecated; --enable-tf32-matmul default '
            'changed; --tool-call-parser choices changed.') in out, out
    assert '--not-rendered' not in out and '--lora-backend' not in out


def test_without_a_report_it_names_the_command_that_writes_one(tmp_path):
    out = move(tmp_path, dict(sglang_version='0.5.18'), PIN, ['--model-path', '/m'])
    assert 'would move SGLang 0.5.18 -> %s' % PIN in out, out
    assert 'make sglang-release VERSION=%s FROM=0.5.18 writes it' % PIN in out, out


def test_the_same_release_says_nothing(tmp_path):
    out = move(tmp_path, dict(sglang_version=PIN), PIN, ['--model-path', '/m'])
    assert 'would move' not in out and 'skipping: [localhost]' in out, out
