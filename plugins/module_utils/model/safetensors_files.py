# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""safetensors checks: the shards a ``*.safetensors.index.json`` names, and the header of a ``.safetensors`` file.

PRIVATE to the collection. Cheap structural checks (no tensor data is read).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import struct


def index_shards(index_text):
    """Shard file names referenced by a ``*.safetensors.index.json`` weight_map (relative to the index file)."""
    data = json.loads(index_text)
    weight_map = data.get('weight_map') if isinstance(data, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise ValueError('no weight_map in index')
    return sorted(set(str(v) for v in weight_map.values()))


def index_missing_shards(index_path, index_text, wanted_paths):
    """Shards an index names that are not in ``wanted_paths`` (the file set after patterns), as repo paths."""
    base = os.path.dirname(index_path)
    missing = []
    for shard in index_shards(index_text):
        repo_path = shard if not base else base + '/' + shard
        if repo_path not in wanted_paths:
            missing.append(repo_path)
    return missing


def safetensors_header_error(path):
    """Cheap structural check of a .safetensors file: 8-byte LE header length, JSON header, data ends at EOF."""
    try:
        size = os.path.getsize(path)
        with open(path, 'rb') as handle:
            raw = handle.read(8)
            if len(raw) < 8:
                return 'shorter than the 8-byte header length'
            header_len = struct.unpack('<Q', raw)[0]
            if header_len > size - 8 or header_len > 100 * 1024 * 1024:
                return 'header length %d does not fit the file size %d' % (header_len, size)
            header = json.loads(handle.read(header_len).decode('utf-8'))
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        return 'unreadable header: %s' % exc
    end = 0
    for name, info in header.items():
        if name == '__metadata__':
            continue
        try:
            end = max(end, int(info['data_offsets'][1]))
        except (KeyError, IndexError, TypeError, ValueError):
            return 'tensor %r has no data_offsets' % name
    if 8 + header_len + end != size:
        return 'tensor data ends at byte %d but the file has %d bytes' % (8 + header_len + end, size)
    return None
