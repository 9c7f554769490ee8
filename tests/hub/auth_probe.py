#!/usr/bin/env python
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A stand-in Hub endpoint that records whether requests carry the expected token, without ever storing it.

Answers every request with 401 (like a Hub refusing a private repo) and appends one word per request to RECORD:
``match`` (Authorization: Bearer <the token in TOKEN_FILE>), ``other`` (some other credentials) or ``none``.
Usage: auth_probe.py TOKEN_FILE RECORD PORT_FILE   (serves on 127.0.0.1, a free port written to PORT_FILE)
"""
from __future__ import absolute_import, division, print_function

import hmac
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main():
    token_file, record, port_file = sys.argv[1:4]
    with open(token_file) as handle:
        token = handle.read().split(':', 1)[-1].strip()
    expected = ('Bearer ' + token).encode()

    class Handler(BaseHTTPRequestHandler):
        def answer(self):
            got = (self.headers.get('Authorization') or '').encode()
            word = 'none' if not got else ('match' if hmac.compare_digest(got, expected) else 'other')
            with open(record, 'a') as out:
                out.write('%s %s %s\n' % (word, self.command, self.path.split('?')[0]))
            body = b'{"error": "Repository not found"}'
            self.send_response(401)
            self.send_header('Content-Type', 'application/json')
            self.send_header('X-Error-Code', 'RepoNotFound')
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            if self.command != 'HEAD':
                self.wfile.write(body)

        do_GET = do_HEAD = do_POST = answer

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    with open(port_file + '.tmp', 'w') as handle:
        handle.write(str(server.server_address[1]))
    os.rename(port_file + '.tmp', port_file)
    server.serve_forever()


if __name__ == '__main__':
    main()
