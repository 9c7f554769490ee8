# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The parsers of tp_node_info: dist-info names, a pip lock's NCCL, /proc/net/tcp, the port range, `ip -j addr`,
and the free-port choice. Hand-written inputs with values worked out by hand, plus this machine's real files."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import socket
import subprocess

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.host import node_facts as facts


def test_dist_info_names_give_normalised_versions():
    names = ['sglang-0.4.10.dist-info', 'sglang_kernel-0.4.1.dist-info', 'torch-2.9.1+cu128.dist-info',
             'Jinja2-3.1.6.dist-info', 'zope.interface-7.2.dist-info', 'torch', 'README.txt', 'nvidia_nccl_cu12-2.27.3.dist-info']
    assert facts.dist_versions(names) == {'sglang': '0.4.10', 'sglang_kernel': '0.4.1', 'torch': '2.9.1+cu128',
                                          'jinja2': '3.1.6', 'zope_interface': '7.2', 'nvidia_nccl_cu12': '2.27.3'}


def test_the_versions_of_a_virtualenv():
    names = ['sglang-0.4.10.dist-info', 'sglang_kernel-0.4.1.dist-info', 'torch-2.9.1+cu128.dist-info',
             'nvidia_nccl_cu12-2.27.3.dist-info', 'nvidia_nccl_cu13-2.28.9.dist-info']
    # the kernel package is not SGLang; of two NCCL wheels the newer CUDA major is reported
    assert facts.venv_versions(names) == {'sglang': '0.4.10', 'torch': '2.9.1+cu128', 'nccl': 'nvidia-nccl-cu13 2.28.9'}
    assert facts.venv_versions([]) == {'sglang': None, 'torch': None, 'nccl': None}


def test_a_real_site_packages_directory():
    """This interpreter's own site-packages: pytest's dist-info gives pytest's version."""
    site = os.path.dirname(os.path.dirname(pytest.__file__))
    assert facts.dist_versions(os.listdir(site))['pytest'] == pytest.__version__


def test_the_nccl_pin_of_a_lock():
    lock = ('# generated\n'
            'numpy==2.3.1 \\\n    --hash=sha256:aa\n'
            'nvidia-nccl-cu13==2.28.9 ; platform_machine == "x86_64" \\\n    --hash=sha256:bb\n'
            'nvidia-nvtx-cu13==13.0.85 \\\n')
    assert facts.lock_nccl(lock) == 'nvidia-nccl-cu13 2.28.9'
    assert facts.lock_nccl('  nvidia-nccl-cu12==2.27.3\\\n') == 'nvidia-nccl-cu12 2.27.3'
    assert facts.lock_nccl('numpy==2.3.1\n# nvidia-nccl-cu12==1 (a comment is no pin)\n') is None
    assert facts.lock_nccl(None) is None


PROC_TCP = '''  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 50 1 0 100 0 0 10 0
   1: 0100007F:4E20 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 51 1 0 100 0 0 10 0
   2: 0100007F:8BFE 0100007F:4E20 01 00000000:00000000 03:000011AE 00000000     0        0 0 3 0
'''
PROC_TCP6 = '''  sl  local_address                         remote_address                        st
   0: 00000000000000000000000000000000:4E21 00000000000000000000000000000000:0000 0A 00000000:00000000
   1: 00000000000000000000000000000000:07E8 00000000000000000000000000000000:0000 0A 00000000:00000000
'''


def test_listening_ports_of_proc_net_tcp():
    # 0x07E8 = 2024, 0x4E20 = 20000, 0x4E21 = 20001; the ESTABLISHED (01) line's local port 0x8BFE is not listening
    assert facts.listening_ports(PROC_TCP, PROC_TCP6) == [2024, 20000, 20001]
    assert facts.listening_ports(None, '') == []


def test_a_real_listener_shows_in_this_machines_proc_net_tcp():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        sock.listen(1)
        port = sock.getsockname()[1]
        with open('/proc/net/tcp') as handle:
            assert port in facts.listening_ports(handle.read())
    with open('/proc/net/tcp') as handle:
        assert port not in facts.listening_ports(handle.read())


def test_port_range():
    assert facts.port_range('32768\t60999\n') == (32768, 60999)
    for bad in (None, '', 'auto', '1 2 3', '-1 5'):
        assert facts.port_range(bad) is None


IP_JSON = '''[
 {"ifindex": 1, "ifname": "lo", "flags": ["LOOPBACK", "UP", "LOWER_UP"], "operstate": "UNKNOWN",
  "addr_info": [{"family": "inet", "local": "127.0.0.1"}, {"family": "inet6", "local": "::1"}]},
 {"ifindex": 2, "ifname": "ens5f0", "flags": ["BROADCAST", "MULTICAST"], "operstate": "UP",
  "addr_info": [{"family": "inet", "local": "10.10.0.2"}, {"family": "inet6"}]},
 {"ifindex": 3, "ifname": "ens5f1", "flags": ["BROADCAST", "NO-CARRIER"], "operstate": "DOWN", "addr_info": []},
 {"ifindex": 4}
]'''


def test_interfaces_of_ip_json():
    assert facts.interfaces(IP_JSON) == {
        'lo': {'up': True, 'addresses': ['127.0.0.1', '::1']},
        'ens5f0': {'up': True, 'addresses': ['10.10.0.2']},  # operstate UP counts without the UP flag
        'ens5f1': {'up': False, 'addresses': []},
    }
    assert facts.interfaces('not json') == {} and facts.interfaces('{"ifname": "x"}') == {} and facts.interfaces('') == {}


@pytest.mark.skipif(shutil.which('ip') is None, reason='no ip(8) here')
def test_interfaces_of_this_machines_ip():
    out = subprocess.run(['ip', '-j', 'addr', 'show', 'lo'], capture_output=True, text=True, check=True).stdout
    lo = facts.interfaces(out)['lo']
    assert lo['up'] is True and '127.0.0.1' in lo['addresses']


def test_free_ports_step_through_the_range():
    # span 3 from 32768: start 0 -> 32768 (busy), then 32768 + 7919 % 3 = 32770
    assert facts.free_ports([32768, 32769], 32768, 32770) == [32770]
    # span 5 from 10: start 0 -> 10, 10 + 7919 % 5 = 14, 10 + 15838 % 5 = 13
    assert facts.free_ports([], 10, 14, count=3) == [10, 14, 13]
    # start 7 -> 10 + 7 % 5 = 12, then 10 + (2 + 7919) % 5 = 11
    assert facts.free_ports([], 10, 14, count=2, start=7) == [12, 11]
    assert facts.free_ports([10, 11, 12, 13, 14], 10, 14, count=1) == []
    assert facts.free_ports([], 20, 10) == []


def test_free_ports_are_free_distinct_and_inside_the_range():
    busy = list(range(40000, 40100, 3))
    got = facts.free_ports(busy, 40000, 40099, count=20, start=12345)
    assert len(got) == 20 and len(set(got)) == 20
    assert all(40000 <= p <= 40099 and p not in busy for p in got)
