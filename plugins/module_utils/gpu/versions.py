# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA driver version strings: parsing, numeric comparison, prefix matching, the branch.

PRIVATE to the collection. Versions have a 3+ digit branch and 2 or 3 parts (515.76, 590.48.01); NVML reports
some as 2 parts ("565.57" for 565.57.01), so :func:`versions_match` treats a 2-part version as a prefix.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

# A driver version as it appears in file names and banners: 3+ digit branch, 2 or 3 parts (515.76, 590.48.01).
DRIVER_VERSION_RE = re.compile(r"^\d{3,}\.\d+(?:\.\d+)?$")


def parse_version(text):
    """'590.48.01' -> (590, 48, 1); None unless it looks like a driver version."""
    if text is None:
        return None
    text = str(text).strip()
    if not DRIVER_VERSION_RE.match(text):
        return None
    return tuple(int(part) for part in text.split("."))


def compare_versions(left, right):
    """Numeric compare of two version strings (-1, 0, 1); a missing third part counts as 0."""
    lt, rt = parse_version(left), parse_version(right)
    if lt is None or rt is None:
        raise ValueError("not a driver version: %r / %r" % (left, right))
    lt, rt = lt + (0,) * (3 - len(lt)), rt + (0,) * (3 - len(rt))
    return (lt > rt) - (lt < rt)


def versions_match(left, right):
    """Equal versions, or a 2-part version that is a prefix of the other (NVML reports "565.57" for 565.57.01)."""
    lt, rt = parse_version(left), parse_version(right)
    if lt is None or rt is None:
        return False
    if len(lt) == len(rt):
        return lt == rt
    shorter, longer = (lt, rt) if len(lt) < len(rt) else (rt, lt)
    return longer[:len(shorter)] == shorter


def driver_branch(version):
    parsed = parse_version(version)
    return parsed[0] if parsed else None
