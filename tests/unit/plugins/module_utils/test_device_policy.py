# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The DevicePolicy= probe's pure parts, from real outputs (uid_map of a Proxmox unprivileged CT and of the podman
lab, stat -f of /sys/fs/cgroup, the probe's own output in the lab and in the QEMU guest)."""
import subprocess

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.host import device_policy as dp

# /proc/self/uid_map in a Proxmox VE unprivileged container (default idmap 100000, 65536 ids).
PVE_UNPRIVILEGED = '         0     100000      65536\n'
# The same in the podman lab container and on a bare host.
IDENTITY = '         0          0 4294967295\n'


def test_user_namespace():
    assert dp.user_namespace(PVE_UNPRIVILEGED) is True
    assert dp.user_namespace(IDENTITY) is False
    assert dp.user_namespace('') is None
    assert dp.user_namespace(None) is None


@pytest.mark.parametrize('fs_type, unified_dir, expected', [
    ('cgroup2fs', False, 'unified'),   # stat -f -c %T /sys/fs/cgroup on Debian 12 / PVE 8
    ('tmpfs', True, 'hybrid'),         # the CI machine and its podman lab
    ('tmpfs', False, 'legacy'),
    ('', False, 'unknown'),
])
def test_cgroup_layout(fs_type, unified_dir, expected):
    assert dp.cgroup_layout(fs_type, unified_dir) == expected


@pytest.mark.parametrize('rc, out, expected', [
    (0, 'open\n', False),
    (0, 'denied\n', True),
    (1, 'Failed to start transient service unit: Access denied\n', None),
    (0, '', None),
    (127, 'denied', None),
])
def test_probe_verdict(rc, out, expected):
    assert dp.probe_verdict(rc, out) is expected


def test_probe_script_reports_what_the_open_did(tmp_path):
    """The probe's shell line itself: 'open' where /dev/null opens, 'denied' where the open fails."""
    ok = subprocess.run(['/bin/sh', '-c', dp.PROBE_SCRIPT], stdout=subprocess.PIPE, universal_newlines=True, check=True)
    assert ok.stdout.strip() == 'open'
    blocked = dp.PROBE_SCRIPT.replace('/dev/null', str(tmp_path / 'no' / 'such' / 'node'), 1)
    denied = subprocess.run(['/bin/sh', '-c', blocked], stdout=subprocess.PIPE, universal_newlines=True, check=True)
    assert denied.stdout.strip() == 'denied'


def test_probe_argv_is_a_strict_collected_transient_unit():
    argv = dp.probe_argv('/usr/bin/systemd-run', timeout_s=7)
    assert argv[0] == '/usr/bin/systemd-run'
    assert '--property=DevicePolicy=strict' in argv and '--collect' in argv and '--wait' in argv
    assert '--property=RuntimeMaxSec=7' in argv
    assert argv[-1] == dp.PROBE_SCRIPT


def test_explain_names_the_cause():
    unpriv = dp.explain(False, 'lxc', True, 'unified')
    assert 'container lxc' in unpriv and 'user namespace (unprivileged)' in unpriv
    assert 'lxc/lxc#4051' in unpriv and 'lxc.cgroup2.devices.allow' in unpriv
    lab = dp.explain(False, 'podman', False, 'hybrid')
    assert 'cgroup v1 devices controller' in lab
    assert 'restrict its devices' in dp.explain(True, 'none', False, 'unified')
    assert 'did not run' in dp.explain(None, 'none', None, 'unknown')
    # What systemd-run 252 prints in a guest without dbus.
    no_bus = dp.explain(None, 'none', False, 'unified', 'Failed to connect to bus: No such file or directory')
    assert 'install and start dbus' in no_bus and 'No such file or directory' in no_bus
