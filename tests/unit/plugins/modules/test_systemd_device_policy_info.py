# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""systemd_device_policy_info's main(): the commands it runs and what it makes of their answers (an unprivileged
LXC container that ignores DevicePolicy=, a host that enforces it, no systemd-run, no D-Bus)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible.module_utils import basic

from ansible_collections.llmops.inference.plugins.modules import systemd_device_policy_info as mod
from module_harness import AnsibleExitJson, run

SCRIPT = 'if true >/dev/null 2>/dev/null; then echo open; else echo denied; fi'
UNPRIVILEGED = '         0     100000      65536\n'
HOST = '         0          0 4294967295\n'


@pytest.fixture
def host(monkeypatch):
    """A fake host: set state['tools'], ['answers'] (program name -> (rc, out, err)), ['uid_map'], ['unified']."""
    state = dict(tools=('systemd-detect-virt', 'stat', 'systemd-run'), answers={}, uid_map=HOST, unified=False,
                 calls=[])
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path',
                        lambda self, name, *a, **kw: '/usr/bin/' + name if name in state['tools'] else None)

    def run_command(self, args, **kwargs):
        state['calls'].append(args)
        assert kwargs.get('environ_update') == {'LC_ALL': 'C'}
        return state['answers'][os.path.basename(args[0])]

    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    monkeypatch.setattr(mod, 'read_text', lambda path: state['uid_map'] if path == '/proc/self/uid_map' else None)
    real_isdir = os.path.isdir
    monkeypatch.setattr(mod.os.path, 'isdir',
                        lambda path: state['unified'] if path == '/sys/fs/cgroup/unified' else real_isdir(path))
    return state


def test_an_unprivileged_container_ignores_the_policy(host):
    host.update(uid_map=UNPRIVILEGED, answers={'systemd-detect-virt': (0, 'lxc\n', ''), 'stat': (0, 'cgroup2fs\n', ''),
                                               'systemd-run': (0, 'open\n', '')})
    kind, result = run(mod.main, dict(timeout=7))
    assert kind is AnsibleExitJson, result
    assert (result['changed'], result['enforced'], result['container'], result['user_namespace'], result['cgroup']) == \
        (False, False, 'lxc', True, 'unified')
    assert result['probe'] == {'rc': 0, 'stdout': 'open', 'stderr': ''}
    assert result['reason'].startswith('container lxc, user namespace (unprivileged), cgroup hierarchy unified: '
                                       'DevicePolicy=strict did not stop the probe from opening /dev/null: the kernel '
                                       'refuses cgroup BPF device programs inside a user namespace')
    assert host['calls'] == [
        ['/usr/bin/systemd-detect-virt', '--container'],
        ['/usr/bin/stat', '-f', '-c', '%T', '/sys/fs/cgroup'],
        ['/usr/bin/systemd-run', '--quiet', '--wait', '--pipe', '--collect', '--property=DevicePolicy=strict',
         '--property=RuntimeMaxSec=7', '/bin/sh', '-c', SCRIPT]]


def test_a_host_that_enforces_it(host):
    # outside a container systemd-detect-virt prints "none" and exits 1; a hybrid hierarchy is tmpfs + unified/
    host.update(unified=True, answers={'systemd-detect-virt': (1, 'none\n', ''), 'stat': (0, 'tmpfs\n', ''),
                                       'systemd-run': (0, 'denied\n', '')})
    kind, result = run(mod.main, {})
    assert (result['enforced'], result['container'], result['user_namespace'], result['cgroup']) == \
        (True, 'none', False, 'hybrid')
    assert result['reason'].startswith('no container, no user namespace, cgroup hierarchy hybrid: systemd applied '
                                       'DevicePolicy=strict')
    assert '--property=RuntimeMaxSec=20' in host['calls'][-1]  # the default timeout


def test_without_systemd_run_nothing_is_known(host):
    host.update(tools=('stat',), uid_map='', answers={'stat': (0, 'tmpfs\n', '')})
    kind, result = run(mod.main, {})
    assert kind is AnsibleExitJson
    assert (result['enforced'], result['container'], result['user_namespace'], result['cgroup']) == \
        (None, 'unknown', None, 'legacy')
    assert result['probe'] == {'rc': None, 'stdout': '', 'stderr': 'systemd-run not found'}
    assert result['reason'] == ('container unknown, user namespace unknown, cgroup hierarchy legacy: the probe did '
                                'not run, so nothing is known about DevicePolicy= here: systemd-run not found')


def test_no_dbus_says_what_to_install(host):
    err = 'Failed to connect to bus: No such file or directory\n'
    host.update(answers={'systemd-detect-virt': (0, 'docker\n', ''), 'stat': (0, 'cgroup2fs\n', ''),
                         'systemd-run': (1, '', err)})
    kind, result = run(mod.main, {})
    assert result['enforced'] is None and result['probe']['rc'] == 1
    assert result['reason'] == ('container docker, no user namespace, cgroup hierarchy unified: the probe did not '
                                'run (systemd-run needs the D-Bus system bus: install and start dbus), so nothing is '
                                'known about DevicePolicy= here: Failed to connect to bus: No such file or directory')
