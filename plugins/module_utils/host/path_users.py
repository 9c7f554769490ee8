# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Who uses a directory: processes (a ``/proc`` scan) and active systemd units whose definition names it.

PRIVATE to the collection. A process counts when its cwd, exe, root, command line, memory maps or open files are
under the directory; a unit when its ExecStart, WorkingDirectory, Environment, RootDirectory or bind paths name it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.llmops.inference.plugins.module_utils.common.path_safety import path_under


def _mentions(text, roots):
    """True when ``text`` contains one of ``roots`` as a whole path (followed by end, '/', or a separator)."""
    for root in roots:
        start = text.find(root)
        while start != -1:
            end = start + len(root)
            before_ok = start == 0 or text[start - 1] in ' =:,"\'\t'
            after_ok = end == len(text) or text[end] in '/ :,"\'\t'
            if before_ok and after_ok:
                return True
            start = text.find(root, start + 1)
    return False


def _unit_of(cgroup_text):
    for line in cgroup_text.splitlines():
        for part in reversed(line.split(':', 2)[-1].split('/')):
            if part.endswith(('.service', '.scope')):
                return part
    return None


def find_path_users(path, proc_root='/proc', skip_pids=None):
    """Processes whose cwd, exe, root, command line, memory maps or open files are under ``path``.

    Returns [{'pid', 'comm', 'unit', 'reasons'}]. Processes that vanish or cannot be read are skipped.
    """
    roots = sorted(set(p.rstrip('/') for p in (os.path.abspath(path), os.path.realpath(path))))
    skip = set(skip_pids or ()) | {os.getpid()}
    users = []
    try:
        pids = [int(p) for p in os.listdir(proc_root) if p.isdigit()]
    except OSError:
        return users
    for pid in sorted(pids):
        if pid in skip:
            continue
        base = os.path.join(proc_root, str(pid))
        reasons = []
        for link in ('cwd', 'exe', 'root'):
            try:
                target = os.readlink(os.path.join(base, link))
            except OSError:
                continue
            target = target.replace(' (deleted)', '')
            if link == 'root' and target == '/':
                continue
            if any(path_under(target, r) for r in roots):
                reasons.append(link)
        try:
            with open(os.path.join(base, 'cmdline'), 'rb') as handle:
                argv = handle.read().decode('utf-8', 'replace').split('\0')
            if any(_mentions(arg, roots) for arg in argv if arg):
                reasons.append('cmdline')
        except OSError:
            pass
        try:
            with open(os.path.join(base, 'maps'), 'r') as handle:
                for line in handle:
                    fields = line.split(None, 5)
                    if len(fields) == 6 and any(path_under(fields[5].strip().replace(' (deleted)', ''), r) for r in roots):
                        reasons.append('mmap')
                        break
        except (OSError, UnicodeDecodeError):
            pass
        try:
            fd_dir = os.path.join(base, 'fd')
            for fd in os.listdir(fd_dir):
                try:
                    target = os.readlink(os.path.join(fd_dir, fd)).replace(' (deleted)', '')
                except OSError:
                    continue
                if target.startswith('/') and any(path_under(target, r) for r in roots):
                    reasons.append('open file')
                    break
        except OSError:
            pass
        if not reasons:
            continue
        entry = {'pid': pid, 'reasons': reasons, 'comm': None, 'unit': None}
        try:
            with open(os.path.join(base, 'comm')) as handle:
                entry['comm'] = handle.read().strip()
        except OSError:
            pass
        try:
            with open(os.path.join(base, 'cgroup')) as handle:
                entry['unit'] = _unit_of(handle.read())
        except OSError:
            pass
        users.append(entry)
    return users


def parse_systemctl_show(text):
    """``systemctl show -p A -p B u1 u2`` output -> [{prop: value}] (units separated by blank lines)."""
    units, current = [], {}
    for line in text.splitlines():
        if not line.strip():
            if current:
                units.append(current)
                current = {}
            continue
        key, _sep, value = line.partition('=')
        current[key] = value
    if current:
        units.append(current)
    return units


def units_using(units, path):
    """Active units (parsed ``systemctl show``) whose ExecStart/WorkingDirectory/Environment name ``path``."""
    roots = sorted(set(p.rstrip('/') for p in (os.path.abspath(path), os.path.realpath(path))))
    found = []
    for unit in units:
        if unit.get('ActiveState') not in ('active', 'activating', 'reloading', 'deactivating'):
            continue
        for prop in ('ExecStart', 'WorkingDirectory', 'Environment', 'RootDirectory', 'BindPaths', 'BindReadOnlyPaths'):
            if _mentions(unit.get(prop, ''), roots):
                found.append({'unit': unit.get('Id'), 'property': prop, 'main_pid': int(unit.get('MainPID') or 0)})
                break
    return found


SYSTEMCTL_SHOW_PROPS = ('Id', 'ActiveState', 'MainPID', 'ExecStart', 'WorkingDirectory', 'Environment', 'RootDirectory',
                        'BindPaths', 'BindReadOnlyPaths')


def active_units_using(run, systemctl, path, patterns):
    """Running units matching ``patterns`` whose definition names ``path``; [] without systemd.

    ``run(argv) -> (rc, stdout, stderr)`` (AnsibleModule.run_command in a module, a fake in tests).
    """
    if not systemctl or not patterns or not os.path.isdir('/run/systemd/system'):
        return []
    rc, out, _err = run([systemctl, 'list-units', '--type=service', '--state=active,activating,reloading,deactivating',
                         '--plain', '--no-legend', '--no-pager'] + list(patterns))
    names = [line.split()[0] for line in out.splitlines() if line.strip()] if rc == 0 else []
    if not names:
        return []
    argv = [systemctl, 'show', '--no-pager']
    for prop in SYSTEMCTL_SHOW_PROPS:
        argv += ['-p', prop]
    rc, out, _err = run(argv + names)
    return units_using(parse_systemctl_show(out), path) if rc == 0 else []


def describe_users(processes, units):
    parts = ['unit %s (%s names the model directory, main PID %s)' % (u['unit'], u['property'], u['main_pid'])
             for u in units]
    for proc in processes:
        parts.append('PID %d (%s%s: %s)' % (proc['pid'], proc['comm'] or '?', ', ' + proc['unit'] if proc.get('unit') else '',
                                            ', '.join(proc['reasons'])))
    return '; '.join(parts)
