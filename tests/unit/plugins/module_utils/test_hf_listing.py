# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""hf_listing: listing entries and the allow/ignore pattern selection."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.hf import listing as hf_listing


def test_filter_paths_matches_snapshot_download_rules():
    paths = ['config.json', 'model-00001-of-00002.safetensors', 'original/consolidated.pth', 'original/params.json',
             '.gitattributes', 'tokenizer.json']
    assert hf_listing.filter_paths(paths) == paths
    assert hf_listing.filter_paths(paths, ['*.safetensors', '*.json']) == [
        'config.json', 'model-00001-of-00002.safetensors', 'original/params.json', 'tokenizer.json']
    # A trailing slash means the whole folder; fnmatch '*' crosses '/'.
    assert hf_listing.filter_paths(paths, ignore_patterns=['original/']) == [
        'config.json', 'model-00001-of-00002.safetensors', '.gitattributes', 'tokenizer.json']
    assert hf_listing.filter_paths(paths, ['*'], ['.*', '*.pth']) == [
        'config.json', 'model-00001-of-00002.safetensors', 'original/params.json', 'tokenizer.json']
    # Case-sensitive like fnmatchcase.
    assert hf_listing.filter_paths(['A.JSON'], ['*.json']) == []


SHA_A = 'a' * 64


def test_remote_entry_prefers_sha256():
    assert hf_listing.remote_entry(5, 'ABC', 'def') == {'size': 5, 'sha256': 'abc'}
    assert hf_listing.remote_entry(5, None, 'DEF') == {'size': 5, 'git_sha1': 'def'}
    assert hf_listing.expected_digest({'size': 1}) == (None, None)


def test_missing_lfs_hashes():
    rem = {'a.safetensors': {'size': 1}, 'b.safetensors': {'size': 1, 'sha256': SHA_A}}
    assert hf_listing.missing_lfs_hashes(rem, {'a.safetensors', 'b.safetensors'}) == ['a.safetensors']
