# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The group link of the sglang_server role's launcher (sglang-launch), with two real launcher processes on loopback
addresses and a stand-in child that prints the release's rendezvous line: a node that dies after the group formed
takes the other down (its SGLang stopped, exit 75 so that Restart= restarts it); before the group formed it does not."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

LAUNCHER = os.path.join(os.path.dirname(__file__), '..', '..', 'roles', 'sglang_server', 'files', 'usr', 'local',
                        'libexec', 'llmops', 'sglang-launch')
MARK = 'Init parallel ends.'
CHILD = ('import sys, time\nprint("[TP0] Init parallel begin.", flush=True)\ntime.sleep(float(sys.argv[1]))\n'
         'print("[TP0] %s elapsed=0.1 s", flush=True)\ntime.sleep(600)\n' % MARK)


def _port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def _launch(me, address, port, peer, peer_address, delay):
    config = dict(host=me, listen='%s:%d' % (address, port), formed_when=[MARK], stop_grace=3,
                  peers=[dict(host=peer, address=peer_address, port=port)])
    env = dict(os.environ, LLMOPS_TP_GROUP_LINK=json.dumps(config))
    env.pop('SGLANG_API_KEY', None)
    return subprocess.Popen([sys.executable, LAUNCHER, '--', sys.executable, '-c', CHILD, str(delay)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)


def _wait_line(proc, text, timeout=30):
    seen = []
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if text in line:
            return seen
    raise AssertionError('no %r in %s' % (text, seen))


def test_a_node_that_dies_takes_the_formed_group_down():
    port = _port()
    head = _launch('node-a', '127.0.0.1', port, 'node-b', '127.0.0.2', 0.5)
    node = _launch('node-b', '127.0.0.2', port, 'node-a', '127.0.0.1', 0.5)
    try:
        _wait_line(head, 'TP group link formed with node-b')
        _wait_line(node, 'TP group link formed with node-a')
        node.kill()  # the whole node gone: its launcher and its sockets
        node.wait(10)
        began = time.time()
        lines = _wait_line(head, 'was lost')
        assert 'the group link to node-b (127.0.0.2:%d) was lost' % port in lines[-1]
        assert 'taking this node down so that the group restarts as one' in lines[-1]
        assert head.wait(15) == 75 and time.time() - began < 10
    finally:
        for proc in (head, node):
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)


def test_before_the_rendezvous_a_restarting_peer_is_waited_for():
    port = _port()
    head = _launch('node-a', '127.0.0.1', port, 'node-b', '127.0.0.2', 8)  # its rendezvous takes 8 s
    first = _launch('node-b', '127.0.0.2', port, 'node-a', '127.0.0.1', 60)
    again = first
    try:
        time.sleep(2)
        first.kill()  # the peer restarts before the group formed
        first.wait(10)
        again = _launch('node-b', '127.0.0.2', port, 'node-a', '127.0.0.1', 0.5)
        _wait_line(head, 'TP group link formed with node-b', timeout=40)
        assert head.poll() is None
        _wait_line(again, 'TP group link formed with node-a')
        again.send_signal(signal.SIGTERM)  # a stop of the node: SIGTERM reaches SGLang, the launcher ends with it
        assert again.wait(15) == 128 + signal.SIGTERM
        assert head.wait(20) == 75  # and the rest of the group goes down with it
    finally:
        for proc in (head, first, again):
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)
