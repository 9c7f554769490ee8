# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Test-lab connection plugin: containers.podman.podman with pipelining.

molecule's podman driver writes ``ansible_connection: podman`` into its inventory; extensions/molecule/config.yml
puts this directory on the connection plugin path, so the short name resolves here for every lab scenario.

The upstream plugin cannot pipeline (``podman exec`` without ``-i`` drops stdin), so each task costs about five
podman calls (mount, mkdir, chmod, run, rm), 0.5-2 s each on a 2-core machine. Here a module runs in one exec
with the module on stdin (the upstream direct copy into the container's storage would also miss the tmpfs on /tmp).

Measured on the 2-core machine, ``podman exec`` costs about 160 ms a call (podman, conmon, runc); ``runc exec`` on
the container podman created costs about 40 ms and runs the command from the same OCI state: the container's
namespaces, cgroup, capabilities, seccomp filter and environment (podman exec adds nothing else to a root exec).
So a root command, and a file transfer (a ``cat`` inside the container, which also sees the tmpfs systemd mode
mounts on /tmp), go through runc when podman's runc state for the container is there; otherwise (another runtime,
rootless podman, extra podman arguments, a named user) through ``podman exec`` / ``podman cp`` as upstream does.
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

import os
import re
import shlex
import subprocess
import tempfile

from ansible.errors import AnsibleError
from ansible.module_utils.common.process import get_bin_path
from ansible.module_utils.common.text.converters import to_bytes, to_native
from ansible.plugins.connection import ConnectionBase, ensure_connect
from ansible.utils.display import Display
from ansible_collections.containers.podman.plugins.connection.podman import Connection as PodmanConnection


display = Display()

# podman (rootful, runtime runc as tests/lab/containers.conf sets) keeps each container's OCI state here, named by
# the container's full ID.
RUNC_ROOT = "/run/runc"
# Container name -> full ID, one file per name (an ID costs a podman inspect; a recreated container has a new ID, and
# the old ID's state directory is gone, so a stale entry is noticed and replaced).
ID_CACHE = os.path.join(tempfile.gettempdir(), "llmops-lab-runc-ids")


def _runc_state(container_id):
    return os.path.join(RUNC_ROOT, container_id, "state.json")


class Connection(PodmanConnection):
    """containers.podman.podman with pipelining."""

    transport = "podman"
    has_pipelining = True

    def _connect(self):
        # No "podman mount": files go through podman cp (put_file/fetch_file fall back to it without a mount point).
        ConnectionBase._connect(self)  # pylint: disable=protected-access
        self._runc_target = self._runc_id()
        self._connected = True

    def _runc_id(self):
        """The container's full ID when runc exec can stand in for podman exec, else None."""
        if self.user or self.get_option("podman_extra_args"):
            return None
        try:
            runc = get_bin_path("runc")
        except ValueError:
            return None
        name = self._container_id
        cache = os.path.join(ID_CACHE, name.replace("/", "_"))
        try:
            with open(cache) as handle:
                cached = handle.read().strip()
            if cached and os.path.exists(_runc_state(cached)):
                return runc, cached
        except (IOError, OSError):
            pass
        rc, out, _err = self._podman("inspect", ["--type", "container", "--format", "{{.Id}}", name],
                                     use_container_id=False)
        full_id = to_native(out).strip() if rc == 0 else ""
        if not re.match(r"^[0-9a-f]{64}$", full_id) or not os.path.exists(_runc_state(full_id)):
            return None
        # Both lanes may get here at once.
        os.makedirs(ID_CACHE, 0o700, exist_ok=True)
        tmp = "%s.tmp-%d" % (cache, os.getpid())
        with open(tmp, "w") as handle:
            handle.write(full_id)
        os.rename(tmp, cache)
        return runc, full_id

    def _runc(self, argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, in_data=None):
        runc, full_id = self._runc_target
        # The working directory of podman exec: the image's, / in the lab images.
        local_cmd = [runc, "--root", RUNC_ROOT, "exec", "--cwd", "/", full_id] + argv
        display.vvv("RUN %s" % (local_cmd,), host=self._container_id)
        proc = subprocess.Popen([to_bytes(a, errors="surrogate_or_strict") for a in local_cmd], shell=False,
                                stdin=stdin, stdout=stdout, stderr=subprocess.PIPE)
        out, err = proc.communicate(input=in_data)
        return proc.returncode, out or b"", err or b""

    @ensure_connect
    def exec_command(self, cmd, in_data=None, sudoable=False):
        ConnectionBase.exec_command(self, cmd, in_data=in_data, sudoable=sudoable)
        argv = shlex.split(to_native(cmd, errors="surrogate_or_strict"))
        if self._runc_target:
            # stdin stays open only when the module arrives on it (podman exec --interactive).
            return self._runc(argv, stdin=subprocess.PIPE if in_data is not None else subprocess.DEVNULL,
                              in_data=in_data)
        args = ["exec"]
        if in_data is not None:
            # Keep stdin open: with pipelining the module arrives on it.
            args.append("--interactive")
        if self.user:
            args.extend(("--user", self.user))
        return self._podman(args, argv, in_data)

    @ensure_connect
    def put_file(self, in_path, out_path):
        if not self._runc_target:
            return super(Connection, self).put_file(in_path, out_path)
        ConnectionBase.put_file(self, in_path, out_path)
        display.vvv("PUT %s TO %s" % (in_path, out_path), host=self._container_id)
        with open(to_bytes(in_path, errors="surrogate_or_strict"), "rb") as handle:
            rc, _out, err = self._runc(["/bin/sh", "-c", 'cat >"$1"', "sh", out_path], stdin=handle)
        if rc != 0:
            raise AnsibleError("Failed to copy %s to %s in container %s: %s"
                               % (in_path, out_path, self._container_id, to_native(err)))
        return None

    @ensure_connect
    def fetch_file(self, in_path, out_path):
        if not self._runc_target:
            return super(Connection, self).fetch_file(in_path, out_path)
        ConnectionBase.fetch_file(self, in_path, out_path)
        display.vvv("FETCH %s TO %s" % (in_path, out_path), host=self._container_id)
        with open(to_bytes(out_path, errors="surrogate_or_strict"), "wb") as handle:
            rc, _out, err = self._runc(["/bin/cat", in_path], stdout=handle)
        if rc != 0:
            raise AnsibleError("Failed to fetch %s from container %s to %s: %s"
                               % (in_path, self._container_id, out_path, to_native(err)))
        return None
