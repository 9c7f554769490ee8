# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The deployment_info action: a resolver exception is reported like a refusal of that host, never raised."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from unittest.mock import MagicMock

from ansible_collections.llmops.inference.plugins.action import deployment_info


def test_a_resolver_bug_is_a_refusal_naming_the_host(monkeypatch):
    def broken(request, loader):
        return sorted([None, 'eth1'])

    monkeypatch.setattr(deployment_info, 'resolve', broken)
    task = MagicMock()
    task.args = {}
    task.async_val = 0
    action = deployment_info.ActionModule(task, MagicMock(), MagicMock(), MagicMock(), MagicMock(), MagicMock())
    result = action.run(task_vars={'inventory_hostname': 'ct-node-1', 'groups': {}, 'hostvars': {}})
    assert result['failed'] is True and result['deployment'] is None
    assert result['msg'].startswith('ct-node-1: the resolver failed on this host: TypeError: ')
    assert result['problems'] == [dict(variable='ct-node-1', rule=result['problems'][0]['rule'], kind='bug',
                                       fix=result['problems'][0]['fix'])]
    assert 'Traceback' not in result['msg']
