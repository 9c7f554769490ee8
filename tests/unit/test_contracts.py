# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Structure the collection promises (issue #13), checked over every file git would ship:

- the pinned SGLang version is written in profiles/ only (docs, changelogs and tests may name it as data);
- nothing outside roles/sglang_server reads its private ``_sglang_server_*`` variables;
- every ``tasks_from`` targets an entry point the role declares in meta/argument_specs.yml, and every declared entry
  point has its task file;
- no role or playbook reaches into another role's directory (``role_path ~ '/../'``, ``roles/<x>/...`` paths).
"""

from __future__ import annotations

import os
import re
import subprocess

import yaml

from collection_paths import PIN, ROOT

SELF = os.path.relpath(os.path.abspath(__file__), ROOT)


def shipped_files():
    out = subprocess.run(['git', 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], cwd=ROOT,
                         check=True, stdout=subprocess.PIPE).stdout.decode()
    files = []
    for path in out.split('\0'):
        full = os.path.join(ROOT, path)
        if path and os.path.isfile(full) and not path.startswith(('.collections/', 'tests/fixtures/captured/')):
            files.append(path)
    return files


def text(path):
    try:
        with open(os.path.join(ROOT, path), encoding='utf-8') as handle:
            return handle.read()
    except (UnicodeDecodeError, OSError):
        return ''


def test_the_pin_is_written_in_profiles_only():
    literal = re.compile(r'(?<![0-9.])%s(?![0-9])' % re.escape(PIN))
    # tests/: recorded data and prose only, as tests/unit/test_pin_literals.py checks.
    allowed = ('profiles/', 'docs/', 'changelogs/', 'tests/', 'README.md')
    # An inventory's approved plan (make plan-accept, docs/ci.md) is generated: it records the version it planned for.
    offenders = [p for p in shipped_files() if not p.startswith(allowed) and not p.endswith('/.plan-approved.json')
                 and literal.search(text(p))]
    assert offenders == [], offenders


def test_no_private_sglang_server_variable_outside_the_role():
    private = re.compile(r'(?<![A-Za-z0-9_])_sglang_server_[a-z]')
    offenders = [p for p in shipped_files() if not p.startswith('roles/sglang_server/') and p != SELF
                 and private.search(text(p))]
    assert offenders == [], offenders


def declared_entry_points():
    out = {}
    for role in sorted(os.listdir(os.path.join(ROOT, 'roles'))):
        path = os.path.join(ROOT, 'roles', role, 'meta', 'argument_specs.yml')
        with open(path) as handle:
            out[role] = set((yaml.safe_load(handle) or {}).get('argument_specs') or {})
    return out


def test_every_role_declares_main_and_has_the_task_file_of_each_entry_point():
    for role, entries in declared_entry_points().items():
        assert 'main' in entries, role
        for entry in entries:
            assert os.path.isfile(os.path.join(ROOT, 'roles', role, 'tasks', entry + '.yml')), (role, entry)


def _walk(node, found):
    if isinstance(node, dict):
        for key in ('ansible.builtin.include_role', 'ansible.builtin.import_role', 'include_role', 'import_role'):
            body = node.get(key)
            if isinstance(body, dict) and body.get('tasks_from'):
                found.append((body.get('name'), body['tasks_from']))
        for value in node.values():
            _walk(value, found)
    elif isinstance(node, list):
        for value in node:
            _walk(value, found)


def test_tasks_from_only_into_declared_entry_points():
    declared = declared_entry_points()
    calls = []
    for path in shipped_files():
        if not path.endswith(('.yml', '.yaml')) or path.startswith('tests/fixtures/'):
            continue
        try:
            data = yaml.safe_load(text(path))
        except yaml.YAMLError:
            continue
        found = []
        _walk(data, found)
        calls += [(path, name, entry) for name, entry in found]
    assert calls, 'expected the playbooks to use declared entry points'
    bad = []
    for path, name, entry in calls:
        role = str(name).rsplit('.', maxsplit=1)[-1]
        entry = re.sub(r'\.ya?ml$', '', str(entry))
        if role in declared and entry not in declared[role]:
            bad.append('%s: %s tasks_from %s (declared: %s)' % (path, name, entry, sorted(declared[role])))
    assert bad == [], bad


def test_nothing_reaches_into_another_role():
    offenders = []
    for path in shipped_files():
        if path.startswith(('tests/', 'docs/')) or path == 'README.md' or path.endswith('.md'):
            continue
        body = text(path)
        if re.search(r"role_path\s*~\s*['\"]/\.\./", body):
            offenders.append('%s: role_path ~ "/../"' % path)
        own = path.split('/')[1] if path.startswith('roles/') else None
        for match in re.finditer(r"roles/([a-z_]+)/(?:tasks|templates|files|defaults|vars)/", body):
            if match.group(1) != own:
                offenders.append('%s: %s' % (path, match.group(0)))
    assert offenders == [], offenders
