# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Test-lab connection plugin: containers.podman.podman with pipelining.

molecule's podman driver writes ``ansible_connection: podman`` into its inventory; extensions/molecule/config.yml
puts this directory on the connection plugin path, so the short name resolves here for every lab scenario.

The upstream plugin cannot pipeline (``podman exec`` without ``-i`` drops stdin), so each task costs about five
podman calls (mount, mkdir, chmod, run, rm), 0.5-2 s each on a 2-core machine. Here a module runs in one
``podman exec -i`` with the module on stdin. Files (copy, template, fetch) go through ``podman cp``, which also
sees the tmpfs that systemd mode mounts on /tmp (the upstream direct copy into the container's storage does not).
Commands still run through podman exec, with the container's capabilities and namespaces.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = """
    name: podman
    short_description: Run tasks in a podman container, with pipelining (llmops.inference test lab)
    description:
        - containers.podman.podman with pipelining and without the direct copy into the container's storage.
    author: llmops.inference maintainers
    options:
      remote_addr:
        description:
          - The ID of the container you want to access.
        default: inventory_hostname
        vars:
          - name: ansible_host
          - name: inventory_hostname
          - name: ansible_podman_host
      remote_user:
        description:
          - User specified via name or UID which is used to execute commands inside the container.
        ini:
          - section: defaults
            key: remote_user
        env:
          - name: ANSIBLE_REMOTE_USER
        vars:
          - name: ansible_user
      podman_extra_args:
        description:
          - Extra arguments to pass to the podman command line.
        default: ''
        ini:
          - section: defaults
            key: podman_extra_args
        vars:
          - name: ansible_podman_extra_args
        env:
          - name: ANSIBLE_PODMAN_EXTRA_ARGS
      podman_executable:
        description:
          - Executable for podman command.
        default: podman
        vars:
          - name: ansible_podman_executable
        env:
          - name: ANSIBLE_PODMAN_EXECUTABLE
      pipelining:
        description:
          - Send modules on stdin instead of copying them into the container first.
        type: bool
        default: true
        vars:
          - name: ansible_pipelining
"""

import shlex

from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.connection import ConnectionBase, ensure_connect
from ansible_collections.containers.podman.plugins.connection.podman import Connection as PodmanConnection


class Connection(PodmanConnection):
    """containers.podman.podman with pipelining."""

    transport = "podman"
    has_pipelining = True

    def _connect(self):
        # No "podman mount": files go through podman cp (put_file/fetch_file fall back to it without a mount point).
        ConnectionBase._connect(self)  # pylint: disable=protected-access
        self._connected = True

    @ensure_connect
    def exec_command(self, cmd, in_data=None, sudoable=False):
        ConnectionBase.exec_command(self, cmd, in_data=in_data, sudoable=sudoable)
        args = ["exec"]
        if in_data is not None:
            # Keep stdin open: with pipelining the module arrives on it.
            args.append("--interactive")
        if self.user:
            args.extend(("--user", self.user))
        return self._podman(args, shlex.split(to_native(cmd, errors="surrogate_or_strict")), in_data)
