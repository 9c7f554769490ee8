# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""tp_node_info's main() through its argument spec: a node's files and commands faked (a virtualenv in tmp_path,
/proc and /sys texts, ip/nvidia-smi/systemctl answers), then once on this machine as it is."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import socket

from ansible.module_utils import basic

from ansible_collections.llmops.inference.plugins.modules import tp_node_info
from module_harness import AnsibleExitJson, AnsibleFailJson, run

PROC_TCP = '''  sl  local_address rem_address   st tx_queue
   0: 0A0A0002:4E20 00000000:0000 0A 00000000:00000000
   1: 0A0A0002:4E22 00000000:0000 0A 00000000:00000000
'''
IP_JSON = json.dumps([{'ifname': 'ens5f0', 'flags': ['BROADCAST', 'UP'], 'operstate': 'UP',
                       'addr_info': [{'local': '10.10.0.2'}]}])
FILES = {'/sys/module/nvidia/version': '580.95.05\n', '/proc/sys/net/ipv4/ip_local_port_range': '20000 20002\n',
         '/proc/net/tcp': PROC_TCP, '/proc/net/tcp6': None}


def make_venv(tmp_path):
    site = tmp_path / 'venv' / 'lib' / 'python3.11' / 'site-packages'
    for name in ('sglang-0.4.10.dist-info', 'torch-2.9.1.dist-info', 'nvidia_nccl_cu12-2.27.3.dist-info', 'six.py'):
        (site / name).mkdir(parents=True)
    return str(tmp_path / 'venv')


def fake_node(monkeypatch, answers, files=None, tools=('python3', 'ip', 'nvidia-smi', 'systemctl')):
    calls = []
    files = dict(FILES, **(files or {}))
    monkeypatch.setattr(tp_node_info, '_read', files.get)
    monkeypatch.setattr(tp_node_info.os, 'getpid', lambda: 0)
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path',
                        lambda self, name, *a, **kw: '/usr/bin/' + name if name in tools else None)

    def run_command(self, args, **kwargs):
        calls.append(args)
        assert kwargs.get('environ_update') == {'LC_ALL': 'C'}
        return answers[os.path.basename(args[0])]

    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    return calls


def test_a_node_as_its_files_and_commands_say(monkeypatch, tmp_path):
    venv = make_venv(tmp_path)
    calls = fake_node(monkeypatch, {'python3': (0, '3.11\n', ''), 'ip': (0, IP_JSON, ''),
                                    'nvidia-smi': (0, '0\n1\n2\n3\n\n', ''), 'systemctl': (3, 'inactive\n', '')})
    kind, result = run(tp_node_info.main, dict(venv=venv, interfaces=['ens5f0', 'ib0'], ports=[20000, 20001],
                                               unit='sglang-tp.service'))
    assert kind is AnsibleExitJson, result
    assert result['changed'] is False
    assert result['driver'] == '580.95.05' and result['python'] == '3.11'
    assert result['venv'] == {'sglang': '0.4.10', 'torch': '2.9.1', 'nccl': 'nvidia-nccl-cu12 2.27.3',
                              'exists': True, 'path': venv}
    assert result['interfaces'] == {'ens5f0': {'up': True, 'addresses': ['10.10.0.2'], 'exists': True},
                                    'ib0': {'exists': False}}
    assert result['ephemeral_range'] == [20000, 20002]
    assert result['listening'] == [20000]  # 0x4E20; 20001 is asked for but free (0x4E22 = 20002 listens)
    # the range 20000-20002 from 20000 + pid 0: 20000 busy, then 20000 + 7919 % 3 = 20002 busy, then 20001
    assert result['probe_ports'] == [20001]
    assert result['gpu_count'] == 4 and result['unit_active'] is False
    assert ['/usr/bin/systemctl', 'is-active', 'sglang-tp.service'] in calls
    assert ['/usr/bin/nvidia-smi', '--query-gpu=index', '--format=csv,noheader'] in calls


def test_a_bare_node(monkeypatch, tmp_path):
    """No driver, no virtualenv, no nvidia-smi or systemctl, no port range: each says so instead of guessing."""
    fake_node(monkeypatch, {'python3': (1, '', 'boom'), 'ip': (0, '[]', '')}, tools=('python3', 'ip'),
              files={'/sys/module/nvidia/version': None, '/proc/sys/net/ipv4/ip_local_port_range': None})
    kind, result = run(tp_node_info.main, dict(venv=str(tmp_path / 'none'), interfaces=['eth1'], unit='x.service'))
    assert kind is AnsibleExitJson, result
    assert (result['driver'], result['python'], result['gpu_count'], result['unit_active']) == (None, None, None, None)
    assert result['venv'] == {'sglang': None, 'torch': None, 'nccl': None, 'exists': False,
                              'path': str(tmp_path / 'none')}
    assert result['interfaces'] == {'eth1': {'exists': False}}
    assert result['ephemeral_range'] is None and result['probe_ports'] == []


def test_a_failing_ip_is_an_error_naming_the_command(monkeypatch, tmp_path):
    fake_node(monkeypatch, {'python3': (0, '3.12\n', ''), 'ip': (255, '', 'Cannot open netlink socket\n')})
    kind, result = run(tp_node_info.main, dict(venv=make_venv(tmp_path)))
    assert kind is AnsibleFailJson
    assert result['msg'] == 'ip -j addr show failed (rc=255): Cannot open netlink socket'
    assert result['python'] == '3.12'  # what was read before is still reported


def test_this_machine(tmp_path):
    """Unfaked: a port this test listens on is reported listening, a released one is not."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        sock.listen(1)
        busy = sock.getsockname()[1]
        with socket.socket() as other:
            other.bind(('127.0.0.1', 0))
            free = other.getsockname()[1]
        kind, result = run(tp_node_info.main, dict(venv=make_venv(tmp_path), ports=[busy, free], probe_ports=3))
    assert kind is AnsibleExitJson, result
    assert result['listening'] == [busy]
    with open('/proc/sys/net/ipv4/ip_local_port_range') as handle:
        low, high = [int(x) for x in handle.read().split()]
    assert result['ephemeral_range'] == [low, high]
    assert len(result['probe_ports']) == 3 and all(low <= p <= high for p in result['probe_ports'])
    assert result['venv']['sglang'] == '0.4.10'
