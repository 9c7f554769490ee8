# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""file_lock: an exclusive lock file that names its holder."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.llmops.inference.plugins.module_utils.common import file_lock


def test_lock_is_exclusive_and_names_the_holder(tmp_path):
    path = str(tmp_path / 'lock')
    first, second = file_lock.Lock(path), file_lock.Lock(path)
    assert first.acquire() is None
    # flock treats every open file description on its own, even within one process.
    assert second.acquire() == str(os.getpid())
    first.release()
    assert second.acquire() is None
    second.release()
    second.release()  # releasing twice is harmless
