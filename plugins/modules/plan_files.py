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
  - Used by C(playbooks/plan.yml) for C(deployment.json), C(plan.json), C(plan.md) and C(sglang_argv.json); no module
    runs, so planning an inventory of many hosts is not dominated by file copies.
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
    description: Octal mode of the written files.
    type: str
    default: '0644'
"""

EXAMPLES = r"""
- name: Write the plan of this host
  llmops.inference.plan_files:
    dest: "{{ playbook_dir }}/../build/plan/{{ inventory_hostname }}"
    files:
      deployment.json: "{{ llmops_deployment }}"
      plan.md: "{{ llmops_deployment.plan.report_markdown }}"
    remove: [files, sglang_argv.json]
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
