# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action of llmops.inference.plan_files: write the report files of make plan on the controller (docs in the module).

One call per host writes all its files (and removes what a refused host must not keep), with no module run: make
plan over an inventory of many hosts spends its time planning, not copying.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import tempfile

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_bytes, to_text
from ansible.plugins.action import ActionBase


def render(content):
    """Text of one file: a string as it is, anything else as indented JSON."""
    if isinstance(content, str):
        return content
    return json.dumps(content, indent=2, sort_keys=True, default=str) + '\n'


def write(path, text, mode):
    """Write atomically; True when the file changed."""
    data = to_bytes(text)
    try:
        with open(path, 'rb') as handle:
            if handle.read() == data:
                return False
    except (IOError, OSError):
        pass
    handle, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix='.plan_files.')
    try:
        with os.fdopen(handle, 'wb') as stream:
            stream.write(data)
        os.chmod(tmp, mode)
        os.rename(tmp, path)
    except Exception:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return True


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(('dest', 'files', 'remove', 'mode'))
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = self._task.args
        dest = args.get('dest')
        if not dest or not os.path.isabs(to_text(dest)):
            raise AnsibleActionFail('plan_files: dest must be an absolute directory, got %r' % (dest,))
        dest = os.path.normpath(to_text(dest))
        files = args.get('files') or {}
        remove = args.get('remove') or []
        mode = int(str(args.get('mode') or '0644'), 8)
        names = list(files) + list(remove)
        for name in names:
            full = os.path.normpath(os.path.join(dest, name))
            if os.path.isabs(name) or not full.startswith(dest + os.sep):
                raise AnsibleActionFail('plan_files: %r is not a path inside %s' % (name, dest))
        changed, written, removed = False, [], []
        check = self._task.check_mode
        if not check:
            os.makedirs(dest, exist_ok=True)
        for name in remove:
            path = os.path.join(dest, name)
            if os.path.lexists(path):
                removed.append(name)
                changed = True
                if not check:
                    if os.path.isdir(path) and not os.path.islink(path):
                        shutil.rmtree(path)
                    else:
                        os.unlink(path)
        for name, content in sorted(files.items()):
            path = os.path.join(dest, name)
            text = render(content)
            if check:
                try:
                    with open(path, 'rb') as handle:
                        same = handle.read() == to_bytes(text)
                except (IOError, OSError):
                    same = False
                if not same:
                    written.append(name)
                    changed = True
                continue
            if not os.path.isdir(os.path.dirname(path)):
                os.makedirs(os.path.dirname(path))
            if write(path, text, mode):
                written.append(name)
                changed = True
        result.update(changed=changed, dest=dest, written=written, removed=removed)
        return result
