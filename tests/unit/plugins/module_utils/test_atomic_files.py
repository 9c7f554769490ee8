# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""atomic_files: atomic writes, the directory exchange, removal."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.common import atomic_files


def test_replace_dir_exchange(tmp_path):
    dest, new, old = tmp_path / 'model', tmp_path / 'new', tmp_path / 'old'
    dest.mkdir()
    (dest / 'v').write_text('1')
    new.mkdir()
    (new / 'v').write_text('2')
    how = atomic_files.replace_dir(str(new), str(dest), str(old))
    assert how in ('exchange', 'rename')
    assert (dest / 'v').read_text() == '2' and (old / 'v').read_text() == '1' and not new.exists()
    with pytest.raises(OSError):
        atomic_files.replace_dir(str(tmp_path / 'x'), str(dest), str(old))  # leftover old dir


def test_replace_dir_new(tmp_path):
    new = tmp_path / 'new'
    new.mkdir()
    assert atomic_files.replace_dir(str(new), str(tmp_path / 'model'), str(tmp_path / 'old')) == 'new'
    assert (tmp_path / 'model').is_dir()


def test_exchange_dirs_is_atomic_when_supported(tmp_path):
    a, b = tmp_path / 'a', tmp_path / 'b'
    a.mkdir()
    b.mkdir()
    (a / 'x').write_text('a')
    (b / 'x').write_text('b')
    if atomic_files.exchange_dirs(str(a), str(b)):
        assert (a / 'x').read_text() == 'b' and (b / 'x').read_text() == 'a'
    else:  # pragma: no cover - kernels/file systems without RENAME_EXCHANGE
        pytest.skip('renameat2(RENAME_EXCHANGE) not supported here')


def test_write_file_atomic_sets_mode_and_leaves_no_temporary(tmp_path):
    target = tmp_path / 'marker.json'
    target.write_text('old')
    atomic_files.write_file_atomic(str(target), 'new\n', 0o640)
    assert target.read_text() == 'new\n' and oct(target.stat().st_mode & 0o777) == '0o640'
    assert sorted(p.name for p in tmp_path.iterdir()) == ['marker.json']


def test_link_or_copy_and_remove_path(tmp_path):
    src = tmp_path / 'src'
    src.write_text('x')
    assert atomic_files.link_or_copy(str(src), str(tmp_path / 'a' / 'b' / 'dst')) == 'link'
    assert (tmp_path / 'a' / 'b' / 'dst').stat().st_ino == src.stat().st_ino
    atomic_files.remove_path(str(tmp_path / 'a'))
    atomic_files.remove_path(str(src))
    atomic_files.remove_path(str(tmp_path / 'never-existed'))
    assert list(tmp_path.iterdir()) == []
