# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""safetensors_files: index shard completeness and header sanity."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import struct

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.model import safetensors_files


def write_safetensors(path, tensors, pad_to=None):
    header = {'__metadata__': {'format': 'pt'}}
    offset = 0
    for name, size in tensors:
        header[name] = {'dtype': 'U8', 'shape': [size], 'data_offsets': [offset, offset + size]}
        offset += size
    blob = json.dumps(header).encode()
    blob += b' ' * (-len(blob) % 8)
    data = struct.pack('<Q', len(blob)) + blob + b'\0' * offset
    if pad_to is not None:
        data = data[:pad_to]
    path.write_bytes(data)


def test_safetensors_header(tmp_path):
    good = tmp_path / 'good.safetensors'
    write_safetensors(good, [('a', 100), ('b', 28)])
    assert safetensors_files.safetensors_header_error(str(good)) is None
    short = tmp_path / 'short.safetensors'
    write_safetensors(short, [('a', 100)], pad_to=200)
    assert 'ends at byte' in safetensors_files.safetensors_header_error(str(short))
    tiny = tmp_path / 'tiny.safetensors'
    tiny.write_bytes(b'\x01\x02')
    assert 'shorter' in safetensors_files.safetensors_header_error(str(tiny))
    huge = tmp_path / 'huge.safetensors'
    huge.write_bytes(struct.pack('<Q', 10 ** 12) + b'{}')
    assert 'does not fit' in safetensors_files.safetensors_header_error(str(huge))
    bad_json = tmp_path / 'badjson.safetensors'
    bad_json.write_bytes(struct.pack('<Q', 4) + b'{{{{')
    assert 'unreadable header' in safetensors_files.safetensors_header_error(str(bad_json))


def test_index_shards_and_missing():
    index = json.dumps({'metadata': {'total_size': 3}, 'weight_map': {
        'a': 'model-00001-of-00002.safetensors', 'b': 'model-00002-of-00002.safetensors',
        'c': 'model-00001-of-00002.safetensors'}})
    assert safetensors_files.index_shards(index) == ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']
    assert safetensors_files.index_missing_shards('model.safetensors.index.json', index, {'model-00001-of-00002.safetensors'}) == [
        'model-00002-of-00002.safetensors']
    # An index in a subfolder names shards relative to itself.
    assert safetensors_files.index_missing_shards('sub/model.safetensors.index.json', index, {
        'sub/model-00001-of-00002.safetensors', 'sub/model-00002-of-00002.safetensors'}) == []
    with pytest.raises(ValueError):
        safetensors_files.index_shards('{"metadata": {}}')
    with pytest.raises(ValueError):
        safetensors_files.index_shards('not json')
