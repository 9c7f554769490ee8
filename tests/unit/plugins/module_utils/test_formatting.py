# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""formatting: bytes, rates and durations."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.common import formatting


def test_fmt():
    assert formatting.fmt_bytes(999) == '999 B'
    assert formatting.fmt_bytes(234017456128) == '234.0 GB'
    assert formatting.fmt_duration(59) == '59s'
    assert formatting.fmt_duration(3601) == '1h00m'
    assert formatting.fmt_duration(None) == '?'


def test_rate_mb():
    assert formatting.rate_mb(234 * 10 ** 6, 2.0) == 117.0
    assert formatting.rate_mb(0, 2.0) is None and formatting.rate_mb(10, 0) is None
