# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""hf_marker: the verification marker, its round trip, equivalence and coverage."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.hf import listing as hf_listing
from ansible_collections.llmops.inference.plugins.module_utils.hf import marker as hf_marker


SHA_A = 'a' * 64
SHA_B = 'b' * 64


def remote():
    return {
        'config.json': hf_listing.remote_entry(100, None, 'c' * 40),
        'model-1.safetensors': hf_listing.remote_entry(1000, SHA_A, 'p' * 40),
        'model-2.safetensors': hf_listing.remote_entry(2000, SHA_B, 'q' * 40),
    }


def marker_for(rem, mtimes):
    return hf_marker.build_marker('o/m', 'f' * 40, 'main', None, None, None, rem,
                                  dict((p, (rem[p]['size'], mtimes[p])) for p in rem))


def test_marker_roundtrip_and_equivalence():
    rem = remote()
    marker = marker_for(rem, dict((p, 7) for p in rem))
    text = hf_marker.marker_json(marker)
    parsed = hf_marker.parse_marker(text)
    assert parsed == json.loads(text)
    assert parsed['files']['model-1.safetensors'] == {'size': 1000, 'sha256': SHA_A, 'mtime_ns': 7}
    assert hf_marker.remote_from_marker(parsed) == rem
    later = dict(parsed, verified_at='2030-01-01T00:00:00Z', requested_revision='f' * 40, endpoint='http://mirror')
    assert hf_marker.marker_equivalent(parsed, later)
    moved = json.loads(text)
    moved['files']['config.json']['mtime_ns'] = 8
    assert not hf_marker.marker_equivalent(parsed, moved)
    assert not hf_marker.marker_equivalent(None, parsed)


@pytest.mark.parametrize('text', ['', 'not json', '[]', '{"format": 99, "files": {}}', '{"format": 1}'])
def test_parse_marker_rejects_garbage(text):
    assert hf_marker.parse_marker(text) is None


def test_marker_covers():
    rem = remote()
    marker = marker_for(rem, dict((p, 7) for p in rem))
    assert hf_marker.marker_covers(marker, 'o/m', 'f' * 40, None, None)
    assert hf_marker.marker_covers(marker, 'o/m', 'f' * 40, [], [])
    assert not hf_marker.marker_covers(marker, 'o/m', 'e' * 40, None, None)
    assert not hf_marker.marker_covers(marker, 'o/m', 'f' * 40, ['*.json'], None)
    assert not hf_marker.marker_covers(None, 'o/m', 'f' * 40, None, None)


def test_read_marker(tmp_path):
    marker = marker_for(remote(), dict((p, 7) for p in remote()))
    (tmp_path / hf_marker.MARKER_NAME).write_text(hf_marker.marker_json(marker))
    assert hf_marker.read_marker(str(tmp_path / hf_marker.MARKER_NAME)) == marker
    assert hf_marker.read_marker(str(tmp_path / 'missing.json')) is None
