# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Human-readable byte counts, rates and durations, as the collection's progress lines and messages print them.

PRIVATE to the collection. Decimal units (1 MB = 10^6 bytes), the way the Hub and download tools count sizes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

MB = 1000 * 1000


def fmt_bytes(n):
    """Decimal units: '999 B', '1.5 KB', '234.0 GB' (TB at most)."""
    n = float(n or 0)
    for unit in ('B', 'KB', 'MB', 'GB', 'TB'):
        if abs(n) < 1000 or unit == 'TB':
            return ('%.0f %s' if unit == 'B' else '%.1f %s') % (n, unit)
        n /= 1000.0
    return '%.1f TB' % n


def fmt_duration(seconds):
    """'42s', '3m07s', '2h05m'; '?' for None."""
    if seconds is None:
        return '?'
    seconds = int(round(seconds))
    if seconds < 60:
        return '%ds' % seconds
    if seconds < 3600:
        return '%dm%02ds' % (seconds // 60, seconds % 60)
    return '%dh%02dm' % (seconds // 3600, (seconds % 3600) // 60)


def rate_mb(nbytes, seconds):
    """``nbytes`` / ``seconds`` in MB/s, rounded to 0.1; None when either is zero (nothing moved, no time passed)."""
    if not nbytes or not seconds:
        return None
    return round(nbytes / seconds / MB, 1)
