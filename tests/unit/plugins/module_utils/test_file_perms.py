# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""file_perms: owner, group and mode of the files of a managed tree and the directories leading to them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.common import file_perms


def mode(path):
    return os.stat(str(path)).st_mode & 0o7777


def test_dir_mode_for():
    assert file_perms.dir_mode_for(0o644) == 0o755
    assert file_perms.dir_mode_for(0o640) == 0o750
    assert file_perms.dir_mode_for(0o600) == 0o700


def test_ensure_perms_dry_run_counts_and_real_run_fixes(tmp_path):
    (tmp_path / 'sub').mkdir(mode=0o700)
    (tmp_path / 'sub' / 'a').write_text('a')
    os.chmod(str(tmp_path / 'sub' / 'a'), 0o600)
    (tmp_path / 'other').write_text('x')
    os.chmod(str(tmp_path / 'other'), 0o600)
    os.chmod(str(tmp_path), 0o755)
    assert file_perms.ensure_perms(str(tmp_path), ['sub/a', 'gone'], -1, -1, 0o644, dry_run=True) == 2
    assert mode(tmp_path / 'sub' / 'a') == 0o600
    assert file_perms.ensure_perms(str(tmp_path), ['sub/a', 'gone'], -1, -1, 0o644) == 2
    assert (mode(tmp_path / 'sub'), mode(tmp_path / 'sub' / 'a')) == (0o755, 0o644)
    assert mode(tmp_path / 'other') == 0o600  # not listed, left alone
    assert file_perms.ensure_perms(str(tmp_path), ['sub/a'], -1, -1, 0o644) == 0


def test_resolve_ids():
    assert file_perms.resolve_ids(None, None) == (-1, -1)
    assert file_perms.resolve_ids('0', '0') == (0, 0)
    assert file_perms.resolve_ids('root', None)[0] == 0
    with pytest.raises(KeyError):
        file_perms.resolve_ids('no-such-user-llmops', None)
