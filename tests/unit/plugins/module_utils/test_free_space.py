# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""free_space: free bytes and the space check of a download."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.common import free_space


def test_space_check():
    assert free_space.space_check(100, 1000, 10) is None
    assert free_space.space_check(100, 105, 10) == 5
    assert free_space.space_check(0, 0, 10) is None  # nothing to download needs no space
    assert free_space.free_bytes('/') > 0
