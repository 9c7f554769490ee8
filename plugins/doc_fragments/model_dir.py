# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # Where a model directory may live and what counts as using it: the same checks (module_utils/common/path_safety.py,
    # path_users.py) with the same defaults in hf_snapshot (before a download or removal) and model_dir_info.
    DOCUMENTATION = r'''
options:
  forbidden_paths:
    description:
      - The model directory may not be under any of these, after resolving symlinks. A forbidden path that is a mount
        point also forbids every other view (bind mount) of its file system.
    type: list
    elements: path
    default: ['/data']
  service_patterns:
    description:
      - systemd units (glob) that count as using the model directory when they are active and their ExecStart,
        WorkingDirectory, Environment, RootDirectory or bind paths name it. Processes that use it are found through
        C(/proc), whatever their unit.
    type: list
    elements: str
    default: ['sglang-*.service']
'''
