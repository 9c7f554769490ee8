# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""tp_port_probe's main(): its option checks, and a real probe on 127.0.0.1 (a listener that is reached, a port
nobody listens on)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import socket

from ansible_collections.llmops.inference.plugins.modules import tp_port_probe
from module_harness import AnsibleExitJson, AnsibleFailJson, run


def test_a_timeout_below_one_second_is_refused():
    kind, result = run(tp_port_probe.main, dict(host='a', address='127.0.0.1', timeout=0))
    assert kind is AnsibleFailJson and result['msg'] == 'timeout must be at least 1 second, got 0'


def test_a_target_without_a_port_is_refused():
    kind, result = run(tp_port_probe.main, dict(host='a', address='127.0.0.1',
                                                connect=[dict(host='b', address='10.0.0.2', port=20000),
                                                         dict(host='c', address='10.0.0.3')]))
    assert kind is AnsibleFailJson
    assert result['msg'] == "connect[1] needs host, address and port, got {'host': 'c', 'address': '10.0.0.3'}"


def test_a_real_probe_reaches_a_listener_and_names_a_closed_port():
    with socket.socket() as closed:
        closed.bind(('127.0.0.1', 0))
        closed_port = closed.getsockname()[1]
    with socket.socket() as server:
        server.bind(('127.0.0.1', 0))
        server.listen(4)
        open_port = server.getsockname()[1]
        kind, result = run(tp_port_probe.main, dict(
            host='a', address='127.0.0.1', timeout=1,
            connect=[dict(host='b', address='127.0.0.1', port=open_port),
                     dict(host='c', address='127.0.0.1', port=str(closed_port))]), check_mode=True)
        conn, dummy = server.accept()
        with conn:
            assert conn.recv(64) == b'llmops-tp-probe a\n'
    assert kind is AnsibleExitJson, result
    assert result['changed'] is False and result['ok'] is False
    got = [(c['host'], c['port'], c['ok']) for c in result['connect']]
    assert got == [('b', open_port, True), ('c', closed_port, False)]
    assert 'Connection refused' in result['connect'][1]['error']
