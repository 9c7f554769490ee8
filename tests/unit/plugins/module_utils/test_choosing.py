# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""choosing: the one first-not-None helper and the one nearest-name helper, with the callers that share them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib

from ansible_collections.llmops.inference.plugins.module_utils.common import choosing
from ansible_collections.llmops.inference.plugins.module_utils.common.choosing import nearest, pick
from ansible_collections.llmops.inference.plugins.module_utils.sglang import flags
from ansible_collections.llmops.inference.plugins.module_utils.sglang import release
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import problems, server_checks


def test_pick_keeps_falsy_values():
    assert pick(None, False, True) is False
    assert pick(None, 0, 5) == 0
    assert pick(None, '', 'x') == ''
    assert pick(None, None) is None
    assert pick() is None


def test_nearest_cutoff_is_the_callers():
    # 'abcdefg' / 'abcdxyz': ratio 8/14 = 0.571, between the release table's 0.5 and the resolver's 0.6.
    ratio = difflib.SequenceMatcher(None, 'abcdefg', 'abcdxyz').ratio()
    assert 0.5 < ratio < 0.6
    assert nearest('abcdefg', ['abcdxyz']) is None
    assert nearest('abcdefg', ['abcdxyz'], cutoff=0.5) == 'abcdxyz'


def test_nearest_unique_prefix_rule():
    # Far below the cutoff, but the only candidate that starts with the word.
    candidates = ['tp_size_of_the_whole_group', 'http_port']
    assert nearest('tp', candidates) == 'tp_size_of_the_whole_group'
    assert nearest('tp', candidates, unique_prefix=False) is None
    # Two candidates with that prefix: no guess.
    assert nearest('tp', candidates + ['tp_group_of_the_nodes']) is None
    assert nearest('', ['a']) is None


def test_nearest_order_and_duplicates_do_not_matter():
    words = ['fp8_e4m3', 'fp8_e5m2', 'bfloat16', 'fp8_e5m2']
    assert nearest('fp8-e4m3', words) == nearest('fp8-e4m3', list(reversed(words))) == 'fp8_e4m3'
    assert nearest(3, [1, 2, 3]) == '3'


def test_every_caller_uses_the_shared_helpers():
    # One function each: the resolver, the renderer and the release table hold no copy of their own.
    assert problems.nearest is choosing.nearest
    assert server_checks.nearest is choosing.nearest
    assert release.nearest is choosing.nearest
    assert server_checks.pick is choosing.pick
    assert flags.pick is choosing.pick
    assert not hasattr(flags, '_pick')


def test_release_messages_keep_their_looser_match():
    # check_choice's "nearest:" word comes from cutoff 0.5 without the prefix rule (byte-identical to before).
    rel = dict(version='0.0.0', choices=dict(kv_cache_dtype=['abcdxyz', 'auto']), flags={})
    assert '(nearest: abcdxyz)' in release.check_choice(rel, 'kv_cache_dtype', 'abcdefg')
    rel = dict(version='0.0.0', choices=dict(kv_cache_dtype=['fp8_e4m3_with_a_long_tail', 'auto']), flags={})
    assert 'nearest' not in release.check_choice(rel, 'kv_cache_dtype', 'fp8')
