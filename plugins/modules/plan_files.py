#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: plan_files
short_description: Write the report files of make plan on the controller, one call per host
version_added: 0.2.0
description:
  - An action that runs on the controller only. It writes every file of O(files) under O(dest) (a string as it is,
    anything else as indented JSON), atomically and only when the content changed, and first removes the paths of
    O(remove) (files or directories), so a host that no longer renders keeps none of an earlier run's files.
  - O(templates) are rendered on the controller as M(ansible.builtin.template) renders its source (trim_blocks on,
    lstrip_blocks off, newline V(\\n), C(ansible_managed) and the C(template_*) variables), with the task's variables
    and each entry's O(templates[].vars), and written like O(files) (the bytes the template task writes), without its
    stat and copy module runs.
  - Used by C(playbooks/plan.yml) for C(deployment.json), C(plan.json), C(plan.md), C(sglang_argv.json), the split and
    LXC lines, and by the sglang_server role's render entry point for its unit and environment file (its own
    templates); no module runs, so planning an inventory of many hosts is not dominated by file copies.
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
    details: The written and removed paths are returned instead.
options:
  dest:
    description: Absolute directory on the controller; created when missing.
    type: path
    required: true
  files:
    description: Relative path under O(dest) -> content (a string, or data written as JSON).
    type: dict
    default: {}
  remove:
    description: Relative paths under O(dest) to remove first (files or directories).
    type: list
    elements: str
    default: []
  mode:
    description: Octal mode of the files of O(files).
    type: str
    default: '0644'
  templates:
    description: Templates to render under O(dest), after O(remove).
    type: list
    elements: dict
    default: []
    suboptions:
      src:
        description: Absolute path of the Jinja template on the controller.
        type: path
        required: true
      dest:
        description: Relative path under O(dest).
        type: str
        required: true
      mode:
        description: Octal mode of the rendered file.
        type: str
        default: '0644'
      vars:
        description: Variables for this template only, over the task's (as a template task's C(vars)).
        type: dict
        default: {}
"""

EXAMPLES = r"""
- name: Write the plan of this host
  llmops.inference.plan_files:
    dest: "{{ playbook_dir }}/../build/plan/{{ inventory_hostname }}"
    files:
      deployment.json: "{{ llmops_deployment }}"
      plan.md: "{{ llmops_deployment.plan.report_markdown }}"
    remove: [files, sglang_argv.json]

# In a role (the sglang_server render entry point does this): its own template, with one variable of its own
- name: Render the role's environment file as its template task would
  llmops.inference.plan_files:
    dest: "{{ render_root }}"
    templates:
      - src: "{{ role_path }}/templates/etc/sglang/sglang.env.j2"
        dest: etc/sglang/server.env
        mode: "0600"
        vars:
          redact: true
"""

RETURN = r"""
dest:
  description: The directory written.
  returned: always
  type: str
  sample: /srv/ci/build/plan/sglang-ct
written:
  description: Paths (relative to O(dest)) whose content changed (would change in check mode).
  returned: always
  type: list
  elements: str
  sample: [plan.json, plan.md]
removed:
  description: Paths of O(remove) that existed and were (would be) removed.
  returned: always
  type: list
  elements: str
  sample: [files]
"""
