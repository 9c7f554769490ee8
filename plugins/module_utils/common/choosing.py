# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Choosing among values: the first one that is set, and the nearest of a list of names (the "did you mean" word).

PRIVATE to the collection. Pure functions, used on the controller (the resolver's refusals) and on hosts (the flag
renderer, the release table), so they live at the bottom floor.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib


def pick(*values):
    """The first value that is not None (False, 0 and '' are values), or None."""
    for value in values:
        if value is not None:
            return value
    return None


def nearest(word, candidates, cutoff=0.6, unique_prefix=True):
    """The closest candidate to word (difflib ratio >= cutoff), or None.

    With unique_prefix, a word that matches nothing closely enough but starts exactly one candidate gets that one
    (``llmops_ti`` -> the only ``llmops_ti...`` name). The resolver's refusals use cutoff 0.6 with the prefix rule;
    the release table's messages use cutoff 0.5 without it. Candidates are compared as strings; their order does not
    change the answer (difflib keeps the best score, ties going to the greater string).
    """
    candidates = sorted(set(str(c) for c in candidates))
    matches = difflib.get_close_matches(str(word), candidates, n=1, cutoff=cutoff)
    if matches:
        return matches[0]
    if not unique_prefix:
        return None
    starting = [c for c in candidates if str(word) and c.startswith(str(word))]
    return starting[0] if len(starting) == 1 else None
