#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: model_dir_info
short_description: Describe a model directory before it is written or removed (forbidden paths, space, users, marker)
version_added: 0.1.0
description:
  - Resolves O(path) through symlinks and finds the file system (mount point, free space) that holds or would hold it.
  - Reports why O(path) may not be used as a model directory, in RV(problems) (under one of O(forbidden_paths) after
    resolving symlinks and mount points, a system directory, a mount point itself, not a directory).
  - Reports the verified state recorded by M(llmops.inference.hf_snapshot) (repo, revision, files, bytes).
  - Reports processes (cwd, executable, command line, memory maps, open files; from C(/proc)) and active systemd units
    matching O(service_patterns) that use O(path).
  - Needs only the Python standard library, so it runs before any virtualenv exists. Read-only.
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.attributes.read_only
  - llmops.inference.model_dir
options:
  path:
    description:
      - The model directory (it does not need to exist).
    type: path
    required: true
  check_users:
    description:
      - Scan C(/proc) and systemd units for users of O(path).
    type: bool
    default: true
notes:
  - Linux only (the C(/proc) layout of processes, mount points).
seealso:
  - module: llmops.inference.hf_snapshot
"""

EXAMPLES = r"""
- name: Check a destination before downloading into it
  llmops.inference.model_dir_info:
    path: /srv/models/Qwen/Qwen3.5-122B-A10B
  register: model_dir

- name: Refuse a forbidden destination
  ansible.builtin.assert:
    that: model_dir.problems | length == 0
    fail_msg: "{{ model_dir.problems | join('; ') }}"
"""

RETURN = r"""
path:
  description: O(path) as given.
  returned: always
  type: str
  sample: /srv/models/Qwen/Qwen3.5-122B-A10B
real_path:
  description: O(path) with every symlink of its existing part resolved.
  returned: always
  type: str
  sample: /srv/models/Qwen/Qwen3.5-122B-A10B
exists:
  description: Whether O(path) exists.
  returned: always
  type: bool
  sample: true
mount_point:
  description: Mount point of the file system that holds (or would hold) O(path).
  returned: always
  type: str
  sample: /srv
free_bytes:
  description: Bytes free for unprivileged writers on that file system.
  returned: always
  type: int
  sample: 1500000000000
problems:
  description: Reasons O(path) cannot be a model directory; empty when it can.
  returned: always
  type: list
  elements: str
  sample: ["destination /srv/models/x is under forbidden path /data (/srv/models/x resolves to /data/models/x)"]
marker:
  description: The verified state recorded in the directory, or null.
  returned: always
  type: dict
  sample: {repo_id: Qwen/Qwen3.5-122B-A10B, revision: 0123456789abcdef0123456789abcdef01234567, files: 45, bytes: 234017456128}
users:
  description: Processes and active units that use O(path).
  returned: always
  type: dict
  sample: {processes: [{pid: 4242, comm: python3, unit: sglang-qwen.service, reasons: [mmap]}], units: []}
in_use:
  description: Whether RV(users) lists anything.
  returned: always
  type: bool
  sample: false
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils.common.free_space import free_bytes
from ansible_collections.llmops.inference.plugins.module_utils.hf.marker import MARKER_NAME, parse_marker
from ansible_collections.llmops.inference.plugins.module_utils.common.path_safety import (
    forbidden_reason,
    mount_point,
    unsafe_dest_reason,
)
from ansible_collections.llmops.inference.plugins.module_utils.host.path_users import active_units_using, find_path_users


def marker_summary(path):
    try:
        with open(os.path.join(path, MARKER_NAME)) as handle:
            marker = parse_marker(handle.read())
    except (IOError, OSError):
        return None
    if marker is None:
        return None
    return {
        'repo_id': marker.get('repo_id'),
        'revision': marker.get('revision'),
        'requested_revision': marker.get('requested_revision'),
        'verified_at': marker.get('verified_at'),
        'files': len(marker['files']),
        'bytes': sum(int(entry.get('size', 0)) for entry in marker['files'].values()),
    }


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', required=True),
            forbidden_paths=dict(type='list', elements='path', default=['/data']),
            service_patterns=dict(type='list', elements='str', default=['sglang-*.service']),
            check_users=dict(type='bool', default=True),
        ),
        supports_check_mode=True,
    )
    path = os.path.normpath(module.params['path'])
    problems = []
    for reason in (unsafe_dest_reason(path), forbidden_reason(path, module.params['forbidden_paths'])):
        if reason:
            problems.append(reason)
    exists = os.path.lexists(path)
    if exists and not os.path.isdir(path):
        problems.append('%s exists and is not a directory' % path)
    elif exists and os.path.ismount(path):
        problems.append('%s is a mount point; the model directory is replaced as a whole, use a directory inside it' % path)
    processes, units = [], []
    if module.params['check_users'] and exists:
        processes = find_path_users(path)
        units = active_units_using(module.run_command, module.get_bin_path('systemctl'), path,
                                   module.params['service_patterns'])
    try:
        free = free_bytes(path)
    except OSError as exc:
        free = None
        problems.append('cannot read free space for %s: %s' % (path, exc))
    module.exit_json(
        changed=False,
        path=path,
        real_path=os.path.realpath(path),
        exists=exists,
        mount_point=mount_point(path),
        free_bytes=free,
        problems=problems,
        marker=marker_summary(path) if exists else None,
        users={'processes': processes, 'units': units},
        in_use=bool(processes or units),
    )


if __name__ == '__main__':
    main()
