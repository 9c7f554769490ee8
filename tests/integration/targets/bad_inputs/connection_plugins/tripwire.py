# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A connection that records every attempt to reach the host and fails it (test plugin of the bad_inputs target).

The inventory of the target gives every host this connection: a playbook that contacts a host while it should
only validate leaves a line in $TRIPWIRE_LOG, and the target fails.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: tripwire
short_description: Record and refuse every connection attempt (test only)
description:
  - Writes the host and the operation to the file named by the environment variable TRIPWIRE_LOG and fails.
author:
  - llmops.inference maintainers (@llmops)
options: {}
"""

import os

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.connection import ConnectionBase


class Connection(ConnectionBase):
    transport = 'tripwire'
    has_pipelining = False

    def _trip(self, what):
        host = self._play_context.remote_addr if self._play_context else '?'
        path = os.environ.get('TRIPWIRE_LOG')
        if path:
            with open(path, 'a') as handle:
                handle.write('%s %s\n' % (what, host))
        raise AnsibleConnectionFailure('tripwire: %s tried to contact the host (%s)' % (what, host))

    def _connect(self):
        self._trip('connect')

    def exec_command(self, cmd, in_data=None, sudoable=True):
        self._trip('exec_command')

    def put_file(self, in_path, out_path):
        self._trip('put_file')

    def fetch_file(self, in_path, out_path):
        self._trip('fetch_file')

    def close(self):
        self._connected = False
