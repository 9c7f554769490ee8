# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Read a JSON file for a module: the value, or the message its fail_json should carry. PRIVATE; stdlib only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os


def read_json(path, required=True, missing_hint=''):
    """(value, error): value None and error None when an optional file is absent."""
    if not os.path.exists(path):
        return None, ('%s does not exist%s' % (path, missing_hint)) if required else None
    try:
        with open(path) as handle:
            return json.load(handle), None
    except (IOError, OSError, ValueError) as exc:
        return None, 'cannot read %s: %s' % (path, exc)
