# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter llmops.inference.profile_hints: the commands make profile prints after the model_profile module."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
name: profile_hints
short_description: The follow-up commands of make profile, as they work from the operator's directory
description:
  - Takes the result of M(llmops.inference.model_profile) and returns the lines playbooks/profile.yml prints after
    it. A profile written to the collection's C(profiles/models/) gets the C(make plan MODEL=<name> TP=<n>) of it,
    and only a profile that turns on the checkpoint's own MTP layers the same plan with C(SPEC=off); one written
    elsewhere gets the C(cp) into C(profiles/models/) first. The refusal to replace a profile with other content
    gets the command that shows the difference, the one that replaces it and the one that writes it elsewhere.
  - Each command is the operator's own (make or ansible-playbook, with the variables they gave) and works from
    O(invocation.caller_dir) (C(make -C <collection>) where that is not the collection root).
  - The logic is plugins/plugin_utils/views/profile_hints.py.
options:
  _input:
    description: The registered result of M(llmops.inference.model_profile) (or the failed result in a rescue).
    type: dict
    required: true
  invocation:
    description:
      - How the workflow was started. Through make, C(make_dir) (the collection root), C(caller_dir) and C(args)
        (the C([NAME, value]) pairs given on make's command line); by ansible-playbook, C(playbook), C(caller_dir)
        and C(args) (the C([profile_*, value]) pairs given).
    type: dict
    required: true
  check_mode:
    description: The module ran in check mode (nothing was written).
    type: bool
    default: false
'''

EXAMPLES = r'''
- name: Print what to run next
  ansible.builtin.debug:
    msg: "{{ _profile | llmops.inference.profile_hints({'playbook': playbook_dir ~ '/profile.yml', 'caller_dir': '/srv',
                                                        'args': [['profile_repo', 'Qwen/Qwen3-32B']]}) }}"
'''

RETURN = r'''
_value:
  description: The lines to print.
  type: list
  elements: str
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.llmops.inference.plugins.plugin_utils.views import profile_hints as hints_lib


def profile_hints(result, invocation, check_mode=False):
    if not isinstance(result, dict) or not isinstance(invocation, dict):
        raise AnsibleFilterError('profile_hints: the input is the model_profile result and invocation a dict, not %s / '
                                 '%s' % (type(result).__name__, type(invocation).__name__))
    if not (invocation.get('make_dir') or invocation.get('playbook')):
        raise AnsibleFilterError('profile_hints: invocation needs make_dir (make) or playbook (ansible-playbook)')
    return hints_lib.lines(result, invocation, bool(check_mode))


class FilterModule(object):
    def filters(self):
        return {'profile_hints': profile_hints}
