# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The options and attributes every *_wait action shares (plugins/plugin_utils/actions/async_wait.py). Each action
    # documents O(jid) (which module's job) and the option naming where the job leaves its progress.
    DOCUMENTATION = r'''
options:
  interval:
    description:
      - Seconds between progress lines, at most V(30).
    type: int
    default: 15
  timeout:
    description:
      - Give up waiting after this many seconds (the job itself keeps running until its own C(async) limit).
    type: int
    default: 86400
  label:
    description:
      - Text put in front of every progress line.
    type: str
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
  async:
    description: Supports being used with the C(async) keyword.
    support: none
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: Only reads the job status and the job's progress on the target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
notes:
  - Polls every second at first, so a job that finishes quickly returns at once; then at the print interval.
  - The job's results file is cleaned up afterwards.
'''
