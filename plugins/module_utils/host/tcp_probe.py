# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A real TCP probe between the nodes of a TP group, bounded in time. Stdlib sockets only.

Every node runs ``probe()`` at the same time: it listens on its own ports (the head: the rendezvous port block; every
node: a port of its ephemeral range, where NCCL and gloo listen) on its inter-node address, and connects to every
other node's ports, retrying while a peer has not bound yet, until each of its connections worked and each of its
listeners accepted the peers it expects, or the deadline passes. A peer's connection is identified by the one line it
sends (``llmops-tp-probe <host>``), so an accepted connection proves which node reached which port.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import select
import socket
import time

HELLO = b'llmops-tp-probe '
_RETRY_S = 0.25


def _family(address):
    return socket.AF_INET6 if ':' in address else socket.AF_INET


def _listen(address, port):
    sock = socket.socket(_family(address), socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address, port))
        sock.listen(16)
    except (OSError, socket.error) as exc:
        sock.close()
        return None, '%s (errno %s)' % (os.strerror(exc.errno) if exc.errno else exc, exc.errno)
    sock.setblocking(False)
    return sock, None


class _Attempt(object):
    """One target: repeated non-blocking connects until one completes or the deadline passes."""

    def __init__(self, me, target):
        self.me = me
        self.target = target
        self.sock = None
        self.ok = False
        self.error = None
        self.attempts = 0
        self.seconds = None
        self.next_at = 0.0

    def start(self, now):
        self.attempts += 1
        self.sock = socket.socket(_family(self.target['address']), socket.SOCK_STREAM)
        self.sock.setblocking(False)
        code = self.sock.connect_ex((self.target['address'], int(self.target['port'])))
        if code not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN):
            self._fail(code, now)

    def _fail(self, code, now):
        self.error = '%s (errno %d)' % (os.strerror(code), code)
        self.sock.close()
        self.sock = None
        self.next_at = now + _RETRY_S

    def writable(self, now, began):
        code = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            self._fail(code, now)
            return
        try:
            self.sock.send(HELLO + self.me.encode('utf-8') + b'\n')
        except (OSError, socket.error) as exc:
            self._fail(exc.errno or errno.EPIPE, now)
            return
        self.ok = True
        self.error = None
        self.seconds = round(now - began, 3)
        self.sock.close()
        self.sock = None


def probe(me, address, listen, connect, expect, timeout, clock=time.monotonic):
    """Listen on ``listen`` ports of ``address``, connect to ``connect`` targets ({host, address, port}), wait for
    ``expect`` ({port: [host, ...]}) to arrive; at most ``timeout`` seconds. Returns dict(listen, connect, seconds,
    ok): per listener the hosts that arrived and those that did not, per target whether it worked and the last error.
    """
    began = clock()
    deadline = began + timeout
    listeners, out_listen = {}, []
    for port in listen:
        sock, error = _listen(address, port)
        out_listen.append(dict(port=port, bound=sock is not None, error=error, arrived=[],
                               expected=sorted(expect.get(port) or expect.get(str(port)) or [])))
        if sock is not None:
            listeners[sock] = out_listen[-1]
    attempts = [_Attempt(me, t) for t in connect]
    accepted = []
    while True:
        now = clock()
        for item in attempts:
            if not item.ok and item.sock is None and now >= item.next_at:
                item.start(now)
        done_out = all(a.ok for a in attempts)
        done_in = all(set(entry['expected']) <= set(entry['arrived']) for entry in out_listen if entry['bound'])
        if (done_out and done_in) or now >= deadline:
            break
        readers = list(listeners) + [c for c, dummy in accepted]
        writers = [a.sock for a in attempts if a.sock is not None]
        try:
            readable, writable, dummy = select.select(readers, writers, [], min(_RETRY_S, max(0.0, deadline - now)))
        except (OSError, select.error):
            readable, writable = [], []
        now = clock()
        for item in attempts:
            if item.sock is not None and item.sock in writable:
                item.writable(now, began)
        for sock in readable:
            if sock in listeners:
                try:
                    conn, dummy = sock.accept()
                except (OSError, socket.error):
                    continue
                conn.setblocking(False)
                accepted.append((conn, listeners[sock]))
                continue
            entry = next(e for c, e in accepted if c is sock)
            try:
                data = sock.recv(256)
            except (OSError, socket.error):
                data = b''
            if data.startswith(HELLO):
                host = data[len(HELLO):].split(b'\n')[0].decode('utf-8', 'replace')
                if host not in entry['arrived']:
                    entry['arrived'].append(host)
            accepted = [(c, e) for c, e in accepted if c is not sock]
            sock.close()
    for sock in list(listeners) + [c for c, dummy in accepted] + [a.sock for a in attempts if a.sock is not None]:
        sock.close()
    for entry in out_listen:
        entry['missing'] = sorted(set(entry['expected']) - set(entry['arrived']))
    out_connect = [dict(host=a.target['host'], address=a.target['address'], port=int(a.target['port']),
                        ok=a.ok, error=None if a.ok else (a.error or 'no answer within the probe\'s %s s' % timeout),
                        attempts=a.attempts, seconds=a.seconds) for a in attempts]
    ok = all(c['ok'] for c in out_connect) and all(e['bound'] and not e['missing'] for e in out_listen)
    return dict(listen=out_listen, connect=out_connect, seconds=round(clock() - began, 3), ok=ok)
