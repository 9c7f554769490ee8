# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""path_safety: forbidden paths through symlinks and mount points, unsafe destinations."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.common import path_safety


def test_forbidden_plain_and_prefix(tmp_path):
    forbidden = tmp_path / 'data'
    forbidden.mkdir()
    assert 'under forbidden path' in path_safety.forbidden_reason(str(forbidden / 'models' / 'x'), [str(forbidden)])
    assert 'under forbidden path' in path_safety.forbidden_reason(str(forbidden), [str(forbidden)])
    # A sibling that only shares the prefix is fine.
    assert path_safety.forbidden_reason(str(tmp_path / 'data2' / 'x'), [str(forbidden)]) is None
    assert path_safety.forbidden_reason(str(tmp_path / 'srv' / 'x'), [str(forbidden)]) is None
    assert path_safety.forbidden_reason(str(tmp_path / 'srv' / 'x'), []) is None


def test_forbidden_through_symlink(tmp_path):
    forbidden = tmp_path / 'data'
    (forbidden / 'models').mkdir(parents=True)
    (tmp_path / 'srv').mkdir()
    os.symlink(str(forbidden / 'models'), str(tmp_path / 'srv' / 'models'))
    reason = path_safety.forbidden_reason(str(tmp_path / 'srv' / 'models' / 'qwen'), [str(forbidden)])
    assert 'under forbidden path' in reason and 'resolves to' in reason


def test_forbidden_path_that_is_itself_a_symlink(tmp_path):
    real = tmp_path / 'disk2'
    real.mkdir()
    os.symlink(str(real), str(tmp_path / 'data'))
    # The destination names the real directory, the forbidden list names the link.
    assert path_safety.forbidden_reason(str(real / 'models' / 'x'), [str(tmp_path / 'data')])


def test_forbidden_mount_point_by_device(monkeypatch, tmp_path):
    """A forbidden mount point forbids other views of the same file system (bind mounts): same st_dev."""
    forbidden = tmp_path / 'data'
    other = tmp_path / 'srv'
    forbidden.mkdir()
    other.mkdir()
    real_ismount = os.path.ismount
    monkeypatch.setattr(os.path, 'ismount', lambda p: p == str(forbidden) or real_ismount(p))
    reason = path_safety.forbidden_reason(str(other / 'x'), [str(forbidden)])
    assert 'file system mounted at forbidden path' in reason
    # A forbidden directory that is not a mount point does not forbid its whole file system.
    monkeypatch.setattr(os.path, 'ismount', real_ismount)
    assert path_safety.forbidden_reason(str(other / 'x'), [str(forbidden)]) is None


@pytest.mark.parametrize('dest', ['/', '/srv', '/srv/', '/usr/local', '/data', 'relative/path', '/x'])
def test_unsafe_dest(dest):
    assert path_safety.unsafe_dest_reason(dest)


def test_safe_dest():
    assert path_safety.unsafe_dest_reason('/srv/models/Qwen/Qwen3.5-122B-A10B') is None
    assert path_safety.unsafe_dest_reason('/opt/models') is None


def test_existing_ancestor_and_mount_point(tmp_path):
    assert path_safety.existing_ancestor(str(tmp_path / 'a' / 'b' / 'c')) == str(tmp_path)
    assert os.path.ismount(path_safety.mount_point(str(tmp_path / 'a' / 'b')))


def test_dest_refusal(tmp_path):
    forbidden = tmp_path / 'data'
    forbidden.mkdir()
    msg, details = path_safety.dest_refusal(str(forbidden / 'm'), [str(forbidden)])
    assert msg.startswith('refusing: destination') and details == {'path': str(forbidden / 'm'), 'forbidden_paths': [str(forbidden)]}
    (tmp_path / 'file').write_text('x')
    assert path_safety.dest_refusal(str(tmp_path / 'file'), [])[0].endswith('exists and is not a directory')
    assert path_safety.dest_refusal(str(tmp_path / 'srv' / 'm'), [str(forbidden)]) is None
