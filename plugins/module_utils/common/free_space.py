# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Free space on the file system that holds (or will hold) a path, and whether a download fits into it.

PRIVATE to the collection.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.llmops.inference.plugins.module_utils.common.path_safety import existing_ancestor


def free_bytes(path):
    """Bytes available to unprivileged writers on the file system that holds (or will hold) ``path``."""
    st = os.statvfs(existing_ancestor(path))
    return st.f_bavail * st.f_frsize


def space_check(need_bytes, available_bytes, margin_bytes):
    """None when ``need_bytes`` + margin fits into ``available_bytes``, else the shortfall in bytes."""
    short = need_bytes + margin_bytes - available_bytes
    return short if short > 0 and need_bytes > 0 else None
