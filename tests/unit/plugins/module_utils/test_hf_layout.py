# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""hf_layout: reserved names, safe repo paths, the work directory, the scan of a model tree."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.hf import layout as hf_layout
from ansible_collections.llmops.inference.plugins.module_utils.hf import marker as hf_marker


@pytest.mark.parametrize('path', ['/etc/passwd', '../x', 'a/../../x', 'a//b', './x', '.llmops-hf-model.json', '.cache/x', ''])
def test_repo_path_error(path):
    assert hf_layout.repo_path_error(path)


def test_repo_path_ok():
    assert hf_layout.repo_path_error('original/params.json') is None
    assert hf_layout.repo_path_error('.gitattributes') is None


def test_work_paths():
    paths = hf_layout.work_paths('/srv/models/Qwen/Qwen3', 'a' * 40)
    assert paths['work'] == '/srv/models/Qwen/.Qwen3.hf_model'
    assert paths['staging'] == '/srv/models/Qwen/.Qwen3.hf_model/partial-' + 'a' * 40
    assert os.path.dirname(paths['lock']) == paths['work']


def test_scan_tree_skips_marker_cache_and_symlinks(tmp_path):
    (tmp_path / 'sub').mkdir()
    (tmp_path / 'sub' / 'w.bin').write_bytes(b'12345')
    (tmp_path / 'config.json').write_text('{}')
    (tmp_path / hf_marker.MARKER_NAME).write_text('{}')
    (tmp_path / '.cache' / 'huggingface').mkdir(parents=True)
    (tmp_path / '.cache' / 'huggingface' / 'x.incomplete').write_text('x')
    os.symlink('/etc/hostname', str(tmp_path / 'link.json'))
    found = hf_layout.scan_tree(str(tmp_path))
    assert sorted(found) == ['config.json', 'sub/w.bin']
    assert found['sub/w.bin'][0] == 5
    assert hf_layout.scan_tree(str(tmp_path / 'nope')) == {}
