# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""tcp_probe against real sockets on 127.0.0.1: a peer that listens and sends its hello, a port nobody listens on,
a port that is already taken, two probes that find each other, and a peer that binds late."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import socket
import threading
import time

from ansible_collections.llmops.inference.plugins.module_utils.host import tcp_probe

LOCAL = '127.0.0.1'


def free_port():
    """A port that was free a moment ago (bound and released, so nothing listens there)."""
    with socket.socket() as sock:
        sock.bind((LOCAL, 0))
        return sock.getsockname()[1]


def connect_and_say(port, line, delay=0.0):
    """A peer that connects to port after delay and sends line (retrying until the listener is up)."""
    def run():
        time.sleep(delay)
        end = time.monotonic() + 10
        while time.monotonic() < end:
            try:
                with socket.create_connection((LOCAL, port), timeout=2) as sock:
                    sock.sendall(line)
                    return
            except OSError:
                time.sleep(0.05)
    thread = threading.Thread(target=run)
    thread.start()
    return thread


class Listener(object):
    """A real listening socket that records the first line of every connection it accepts."""

    def __init__(self, port=0, bind_after=0.0):
        self.lines = []
        self.port = port or free_port()
        self.bind_after = bind_after
        self.ready = threading.Event()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run)
        self.thread.start()
        if not bind_after:
            self.ready.wait(5)

    def _run(self):
        time.sleep(self.bind_after)
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((LOCAL, self.port))
        server.listen(4)
        server.settimeout(0.1)
        self.ready.set()
        try:
            while not self.stop.is_set():
                try:
                    conn, dummy = server.accept()
                except socket.timeout:
                    continue
                with conn:
                    conn.settimeout(2)
                    self.lines.append(conn.recv(256))
        finally:
            server.close()

    def close(self):
        self.stop.set()
        self.thread.join(5)


def test_a_listening_peer_is_reached_and_hears_who_called():
    peer = Listener()
    try:
        out = tcp_probe.probe('node-a', LOCAL, [], [dict(host='node-b', address=LOCAL, port=peer.port)], {}, 5)
    finally:
        time.sleep(0.2)
        peer.close()
    assert out['ok'] is True
    assert out['listen'] == []
    [target] = out['connect']
    assert (target['host'], target['address'], target['port'], target['ok'], target['error']) == \
        ('node-b', LOCAL, peer.port, True, None)
    assert target['attempts'] == 1 and 0 <= target['seconds'] < 5
    assert peer.lines == [b'llmops-tp-probe node-a\n']  # the peer learns which node reached it
    assert out['seconds'] < 5


def test_a_closed_port_fails_with_the_refusal_after_retries():
    port = free_port()
    started = time.monotonic()
    out = tcp_probe.probe('node-a', LOCAL, [], [dict(host='node-b', address=LOCAL, port=str(port))], {}, 1)
    took = time.monotonic() - started
    assert out['ok'] is False
    [target] = out['connect']
    assert target['ok'] is False and target['port'] == port and target['seconds'] is None
    assert target['error'] == '%s (errno %d)' % (os.strerror(errno.ECONNREFUSED), errno.ECONNREFUSED)
    # retried every 0.25 s for the 1 s it had: more than one attempt, and bounded by the deadline
    assert 2 <= target['attempts'] <= 6, target
    assert 0.9 <= took < 3


def test_a_listener_gets_the_expected_peer_and_names_who_is_missing():
    port = free_port()
    peer = connect_and_say(port, b'llmops-tp-probe node-b\n', delay=0.2)
    try:
        out = tcp_probe.probe('node-a', LOCAL, [port], [], {str(port): ['node-b', 'node-c']}, 2)
    finally:
        peer.join(10)
    [entry] = out['listen']
    assert entry['port'] == port and entry['bound'] is True and entry['error'] is None
    assert entry['expected'] == ['node-b', 'node-c']
    assert entry['arrived'] == ['node-b'] and entry['missing'] == ['node-c']
    assert out['ok'] is False
    assert 1.9 <= out['seconds'] < 4  # node-c never came: the probe waited its whole 2 s


def test_a_connection_without_the_hello_does_not_count():
    port = free_port()
    stranger = connect_and_say(port, b'GET / HTTP/1.0\r\n\r\n', delay=0.2)
    try:
        out = tcp_probe.probe('node-a', LOCAL, [port], [], {port: ['node-b']}, 1)
    finally:
        stranger.join(10)
    assert out['listen'][0]['arrived'] == [] and out['listen'][0]['missing'] == ['node-b']
    assert out['ok'] is False


def test_a_port_that_is_taken_is_reported_unbound():
    taken = socket.socket()
    taken.bind((LOCAL, 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        out = tcp_probe.probe('node-a', LOCAL, [port], [], {str(port): ['node-b']}, 1)
    finally:
        taken.close()
    [entry] = out['listen']
    assert entry['bound'] is False
    assert entry['error'] == '%s (errno %d)' % (os.strerror(errno.EADDRINUSE), errno.EADDRINUSE)
    assert out['ok'] is False


def test_two_probes_find_each_other_and_finish_early():
    """Two nodes of a group on one machine: each listens on its port and connects to the other's."""
    port_a, port_b = free_port(), free_port()
    results = {}

    def node(me, mine, other_host, other_port):
        results[me] = tcp_probe.probe(me, LOCAL, [mine], [dict(host=other_host, address=LOCAL, port=other_port)],
                                      {str(mine): [other_host]}, 10)

    threads = [threading.Thread(target=node, args=('a', port_a, 'b', port_b)),
               threading.Thread(target=node, args=('b', port_b, 'a', port_a))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    for me, other in (('a', 'b'), ('b', 'a')):
        out = results[me]
        assert out['ok'] is True, out
        assert out['listen'][0]['arrived'] == [other] and out['listen'][0]['missing'] == []
        assert out['connect'][0]['ok'] is True
        assert out['seconds'] < 5  # done as soon as both directions worked, not at the 10 s deadline


def test_a_peer_that_binds_late_is_reached_by_retrying():
    peer = Listener(bind_after=0.8)
    try:
        out = tcp_probe.probe('node-a', LOCAL, [], [dict(host='node-b', address=LOCAL, port=peer.port)], {}, 5)
    finally:
        time.sleep(0.2)
        peer.close()
    [target] = out['connect']
    assert target['ok'] is True and target['attempts'] >= 2
    assert 0.7 <= target['seconds'] < 5
    assert peer.lines == [b'llmops-tp-probe node-a\n']
