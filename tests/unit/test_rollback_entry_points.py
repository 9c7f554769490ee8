# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One rollback (issue #28 point 4): the restore of a previous SGLang server is written once, as the sglang_server
role's declared ``snapshot`` and ``restore`` entry points, and every caller goes through them:

- the role's own failed-start rollback (tasks/rollback.yml) and its snapshots (tasks/deploy.yml);
- the model swap (playbooks/tasks/model_swap_keep.yml, model_swap_restore*.yml);
- the rolling swap (playbooks/tasks/rolling_swap_keep.yml, rolling_swap_revert.yml, playbooks/rolling_swap.yml).

The file list of a snapshot lives once, in the role's vars; no playbook lists those files, reads a path inside the
role's state, reads a private variable, or repeats one of the role's defaults.
"""

from __future__ import annotations

import glob
import os
import re
import subprocess

import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..'))
ROLE = os.path.join(ROOT, 'roles', 'sglang_server')
# The role's private prefix, spelt so that this file does not itself read like a caller of it (test_contracts.py).
PRIVATE = '_' + 'sglang_server_'
FILE_LIST = PRIVATE + 'snapshot_files'


def read(path):
    with open(os.path.join(ROOT, path), encoding='utf-8') as handle:
        return handle.read()


def role_defaults():
    with open(os.path.join(ROLE, 'defaults', 'main.yml')) as handle:
        return sorted(yaml.safe_load(handle))


def tracked_yaml():
    """The YAML files git would ship (tracked or new, not ignored)."""
    out = subprocess.run(['git', 'ls-files', '-z', '--cached', '--others', '--exclude-standard', '*.yml'], cwd=ROOT,
                         check=True, stdout=subprocess.PIPE).stdout.decode()
    return sorted(p for p in out.split('\0') if p and os.path.isfile(os.path.join(ROOT, p)))


def playbook_files():
    """Every playbook and playbook task file (the callers outside the role)."""
    found = glob.glob(os.path.join(ROOT, 'playbooks', '**', '*.yml'), recursive=True)
    return sorted(os.path.relpath(p, ROOT) for p in found)


# The callers of the rollback path: none of them may repeat a default of the role.
ROLLBACK_CALLERS = ('playbooks/deploy.yml', 'playbooks/rolling_swap.yml', 'playbooks/tasks/model_swap_discover.yml',
                    'playbooks/tasks/model_swap_keep.yml', 'playbooks/tasks/model_swap_restore.yml',
                    'playbooks/tasks/model_swap_restore_service.yml', 'playbooks/tasks/model_swap_finish.yml',
                    'playbooks/tasks/rolling_swap_keep.yml', 'playbooks/tasks/rolling_swap_revert.yml')


def rollback_problems(path, body, defaults):
    """What a caller outside the role must not do: list the snapshot's files, read the role's private variables or
    state paths, repeat a role default."""
    problems = []
    checks = (
        (r'(?<![A-Za-z0-9_])' + PRIVATE + '[a-z]', 'reads a private %s* variable' % PRIVATE),
        (r'(?<![A-Za-z0-9_])__[a-z]', 'reads a private __* variable'),
        (r'deployed\.json', "names the role's record file (the snapshot lists it)"),
        (r'/etc/systemd/system/\{\{', "builds a unit path (the snapshot lists it)"),
        (r'\}\}\.env\b', "builds an environment file path (the snapshot lists it)"),
        (r'sglang_server_(?:config|state)_dir', "reads the role's state or config directory"),
        (r'/rollback\b|/rolling-swap\b', 'names a snapshot directory'),
    )
    for pattern, why in checks:
        for match in re.finditer(pattern, body):
            problems.append('%s: %s (%r)' % (path, why, match.group(0)))
    for name in defaults:
        for match in re.finditer(r'(?<![A-Za-z0-9_])%s\s*\|\s*default\(' % re.escape(name), body):
            problems.append('%s: repeats the role default of %s (%r)' % (path, name, match.group(0)))
    return problems


def test_no_playbook_lists_the_snapshot_files_or_reads_the_roles_private_state():
    defaults = role_defaults()
    problems = []
    for path in playbook_files():
        body = read(path)
        # Only the rollback callers are held to "no role default repeated"; every playbook to the rest.
        problems += rollback_problems(path, body, defaults if path in ROLLBACK_CALLERS else ())
    assert problems == [], problems


def test_the_check_catches_what_the_rolling_swap_did_before():
    """The old rolling_swap.yml listed the role's files and repeated its defaults: the check must refuse that."""
    old = '''
    _swap_keep_dir: /var/lib/llmops-inference/rolling-swap/{{ llmops_deployment.instance }}
    _swap_keep_files:
      - {name: unit, src: "/etc/systemd/system/{{ llmops_deployment.unit }}", mode: "0644"}
      - {name: env, src: "{{ sglang_server_config_dir | default('/etc/sglang') }}/{{ llmops_deployment.instance }}.env", mode: "0600"}
      - {name: record, src: "{{ sglang_server_state_dir | default('/var/lib/sglang-server') }}/{{ x }}/deployed.json", mode: "0600"}
    timeout: "{{ sglang_server_ready_timeout | default(1800) }}"
    when: %scan_roll_back
''' % PRIVATE
    problems = rollback_problems('old.yml', old, role_defaults())
    for why in ('private ' + PRIVATE, 'record file', 'unit path', 'environment file path', 'state or config',
                'snapshot directory', 'role default of sglang_server_ready_timeout',
                'role default of sglang_server_config_dir'):
        assert any(why in p for p in problems), (why, problems)
    assert rollback_problems('new.yml', 'sglang_server_snapshot_name: swap\n', role_defaults()) == []


def test_the_snapshot_file_list_lives_once_in_the_role():
    definitions = []
    users = []
    for rel in tracked_yaml():
        body = read(rel)
        definitions += [rel] * len(re.findall('^' + FILE_LIST + ':', body, re.M))
        if ('loop: "{{ %s }}"' % FILE_LIST) in body:
            users.append(rel)
    assert definitions == ['roles/sglang_server/vars/main.yml']
    # Only the two entry points walk it: deploy.yml and rollback.yml come through them.
    assert users == ['roles/sglang_server/tasks/restore.yml', 'roles/sglang_server/tasks/snapshot.yml'], users


def _tasks(path):
    with open(os.path.join(ROOT, path)) as handle:
        data = yaml.safe_load(handle) or []
    stack, out = list(data), []
    while stack:
        task = stack.pop()
        if isinstance(task, dict):
            out.append(task)
            for key in ('tasks', 'pre_tasks', 'post_tasks', 'handlers', 'block', 'rescue', 'always'):
                stack.extend(task.get(key) or [])
    return out


def _includes(path, key, target):
    return [t for t in _tasks(path) if str((t.get(key) or '')).endswith(target)]


def _role_calls(path, entry):
    calls = []
    for task in _tasks(path):
        body = task.get('ansible.builtin.include_role') or {}
        if body.get('name') == 'llmops.inference.sglang_server' and body.get('tasks_from') == entry:
            calls.append(task)
    return calls


def test_every_caller_goes_through_the_declared_entry_points():
    with open(os.path.join(ROLE, 'meta', 'argument_specs.yml')) as handle:
        specs = yaml.safe_load(handle)['argument_specs']
    assert {'snapshot', 'restore'} <= set(specs)
    assert specs['snapshot']['options']['sglang_server_snapshot_instance']['required']
    assert specs['restore']['options']['sglang_server_restore_snapshot']['required']
    # The role's own failed-start rollback and its snapshots.
    assert len(_includes('roles/sglang_server/tasks/deploy.yml', 'ansible.builtin.import_tasks', 'snapshot.yml')) == 2
    assert _includes('roles/sglang_server/tasks/rollback.yml', 'ansible.builtin.include_tasks', 'restore.yml')
    # The model swap and the rolling swap.
    assert _role_calls('playbooks/tasks/model_swap_keep.yml', 'snapshot')
    assert _role_calls('playbooks/tasks/model_swap_restore_service.yml', 'restore')
    assert _role_calls('playbooks/tasks/rolling_swap_keep.yml', 'snapshot')
    assert _role_calls('playbooks/tasks/rolling_swap_revert.yml', 'restore')
    for path in ('playbooks/deploy.yml', 'playbooks/rolling_swap.yml'):
        assert _includes(path, 'ansible.builtin.include_tasks', 'tasks/model_swap_keep.yml'), path


def test_no_restore_is_written_outside_the_entry_point():
    """Only restore.yml copies files back from a snapshot (remote_src copy) or waits for a restored unit."""
    offenders = []
    for path in playbook_files() + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROLE, 'tasks', '*.yml'))):
        for task in _tasks(path):
            copy = task.get('ansible.builtin.copy') or {}
            if copy.get('remote_src') and path not in ('roles/sglang_server/tasks/snapshot.yml',
                                                       'roles/sglang_server/tasks/restore.yml'):
                offenders.append('%s: %s' % (path, task.get('name')))
            if 'llmops.inference.sglang_server_wait' in task and path.startswith('playbooks/'):
                offenders.append('%s: %s' % (path, task.get('name')))
    assert offenders == [], offenders
