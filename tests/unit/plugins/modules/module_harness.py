# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One way for every module test to run a module's main() through its real argument spec.

exit_json/fail_json raise (the pattern of ansible's own module tests), so a test gets the result dict; warnings are
collected into the result as Ansible would report them. conftest.py installs the patches for every test here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args


class AnsibleExitJson(Exception):
    pass


class AnsibleFailJson(Exception):
    pass


def patch_exits(monkeypatch):
    warnings = []

    def with_warnings(result):
        if warnings:  # as Ansible reports them: the key only when there are any
            result.setdefault('warnings', list(warnings))
        return result

    def exit_json(self, **kwargs):
        raise AnsibleExitJson(with_warnings(kwargs))

    def fail_json(self, **kwargs):
        kwargs['failed'] = True
        raise AnsibleFailJson(with_warnings(kwargs))

    monkeypatch.setattr(basic.AnsibleModule, 'exit_json', exit_json)
    monkeypatch.setattr(basic.AnsibleModule, 'fail_json', fail_json)
    monkeypatch.setattr(basic.AnsibleModule, 'warn', lambda self, msg: warnings.append(msg))
    return warnings


def run(main, args, expect=(AnsibleExitJson, AnsibleFailJson), check_mode=False, diff=False, tmp_path=None):
    """Run ``main`` with ``args``; returns (exception class, result dict). ``expect`` narrows what may happen."""
    args = dict(args)
    if check_mode:
        args['_ansible_check_mode'] = True
    if diff:
        args['_ansible_diff'] = True
    if tmp_path is not None:
        args.update(_ansible_remote_tmp=str(tmp_path), _ansible_keep_remote_files=False)
    with patch_module_args(args):
        with pytest.raises(expect) as exc:
            main()
    return exc.type, exc.value.args[0]
