# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action of llmops.inference.plan_files: write the report files of make plan on the controller (docs in the module).

One call per host writes all its files (and removes what a refused host must not keep), with no module run: make
plan over an inventory of many hosts spends its time planning, not copying. A role's template (the sglang_server unit
and environment file) is rendered here as ansible.builtin.template renders it (the same Jinja options, the same
ansible_managed and template_* variables, the task's variables plus the item's vars), then written like the other
files: the bytes the deploy's template task writes, without its stat and copy module runs.
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
from ansible.template import trust_as_template

try:  # ansible-core 2.19: where ansible.builtin.template takes ansible_managed and the template_* variables from
    from ansible._internal._templating import _template_vars
except ImportError:  # pragma: no cover - an older ansible-core
    _template_vars = None


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
    _VALID_ARGS = frozenset(('dest', 'files', 'remove', 'mode', 'templates'))
    _requires_connection = False

    def render_template(self, item, task_vars):
        """Text of one O(templates) entry, rendered as ansible.builtin.template renders its src (defaults of its
        options: trim_blocks, no lstrip_blocks, newline \\n), with the task's variables and the entry's vars."""
        source = to_text(item.get('src') or '')
        if not os.path.isabs(source) or not os.path.isfile(source):
            raise AnsibleActionFail('plan_files: templates: src must be an existing absolute file, got %r' % (source,))
        template_data = trust_as_template(self._loader.get_text_file_contents(source))
        searchpath = list(task_vars.get('ansible_search_path', [])) + [self._loader._basedir, os.path.dirname(source)]
        searchpath = [q for p in searchpath for q in (os.path.join(p, 'templates'), p)]
        temp_vars = dict(task_vars)
        temp_vars.update(item.get('vars') or {})
        if _template_vars is not None:
            temp_vars.update(_template_vars.generate_ansible_template_vars(
                path=source, fullpath=source, dest_path=item.get('dest'),
                include_ansible_managed='ansible_managed' not in temp_vars))
        templar = self._templar.copy_with_new_env(searchpath=searchpath, available_variables=temp_vars)
        resultant = templar.template(template_data, escape_backslashes=False,
                                     overrides=dict(trim_blocks=True, lstrip_blocks=False, newline_sequence='\n'))
        return '' if resultant is None else resultant

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
        templates = args.get('templates') or []
        if not isinstance(templates, list) or not all(isinstance(t, dict) and t.get('dest') for t in templates):
            raise AnsibleActionFail('plan_files: templates is a list of {src, dest, mode, vars}, got %r' % (templates,))
        names = list(files) + list(remove) + [t['dest'] for t in templates]
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
        entries = [(name, render(content), mode) for name, content in sorted(files.items())]
        entries += [(t['dest'], self.render_template(t, task_vars or {}), int(str(t.get('mode') or '0644'), 8))
                    for t in templates]
        for name, text, file_mode in entries:
            path = os.path.join(dest, name)
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
            if write(path, text, file_mode):
                written.append(name)
                changed = True
        result.update(changed=changed, dest=dest, written=written, removed=removed)
        return result
