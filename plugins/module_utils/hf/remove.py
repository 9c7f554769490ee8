# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Removing a model directory (hf_snapshot state=absent): refused while in use or when hf_snapshot did not write it.

PRIVATE to the collection. The directory is renamed into its work directory first, so the model disappears at once
and a crash mid-delete leaves only the work directory behind.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import time

from ansible_collections.llmops.inference.plugins.module_utils.common.atomic_files import remove_path
from ansible_collections.llmops.inference.plugins.module_utils.common.failures import ModuleFailure
from ansible_collections.llmops.inference.plugins.module_utils.common.file_lock import Lock
from ansible_collections.llmops.inference.plugins.module_utils.hf.layout import work_paths
from ansible_collections.llmops.inference.plugins.module_utils.hf.marker import MARKER_NAME
from ansible_collections.llmops.inference.plugins.module_utils.common.path_safety import dest_refusal
from ansible_collections.llmops.inference.plugins.module_utils.host.path_users import (
    active_units_using,
    describe_users,
    find_path_users,
)


def remove_model(p, run_command, systemctl, check_mode, diff, started):
    """The result of state=absent for the module parameters ``p``; ModuleFailure for a refusal.

    ``run_command``/``systemctl``: AnsibleModule.run_command and the systemctl path (None without systemd).
    """
    dest = p['dest']
    refusal = dest_refusal(dest, p['forbidden_paths'])
    if refusal:
        raise ModuleFailure(refusal[0], **refusal[1])
    paths = work_paths(dest, None)
    result = dict(changed=False, path=dest, removed=[])
    present = [x for x in (dest, paths['work']) if os.path.lexists(x)]
    if not present:
        result['total_seconds'] = round(time.time() - started, 3)
        return result

    processes = find_path_users(dest) if os.path.lexists(dest) else []
    units = active_units_using(run_command, systemctl, dest, p['service_patterns'])
    if processes or units:
        raise ModuleFailure('refusing to remove %s: in use by %s. Stop the service first.'
                            % (dest, describe_users(processes, units)),
                            path=dest, users={'processes': processes, 'units': units})

    if os.path.isdir(dest) and os.listdir(dest) and not os.path.exists(os.path.join(dest, MARKER_NAME)) and not p['force']:
        raise ModuleFailure('refusing to remove %s: it has no %s, so hf_snapshot did not write it; set force to remove'
                            ' it anyway' % (dest, MARKER_NAME), path=dest)
    result['changed'] = True
    result['removed'] = present
    if diff:
        result['diff'] = {'before': 'path %s\nstate present\n' % dest, 'after': 'path %s\nstate absent\n' % dest}
    if not check_mode:
        lock = None
        if os.path.isdir(paths['work']):
            lock = Lock(paths['lock'])
            holder = lock.acquire()
            if holder:
                raise ModuleFailure('another hf_snapshot run (pid %s) holds %s' % (holder, paths['lock']), path=dest)
        if os.path.lexists(dest):
            # Rename first: the model disappears at once, a crash mid-delete leaves only the work directory behind.
            if not os.path.isdir(paths['work']):
                os.makedirs(paths['work'])
            removing = paths['removing']
            remove_path(removing)
            os.rename(dest, removing)
        if lock:
            lock.release()
        remove_path(paths['work'])
    result['total_seconds'] = round(time.time() - started, 3)
    return result
