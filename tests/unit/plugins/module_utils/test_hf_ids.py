# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""hf_ids: model repo ids, revisions and commit shas."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.hf import ids as hf_ids


@pytest.mark.parametrize('repo_id', ['Qwen/Qwen3.5-122B-A10B', 'gpt2', 'org_1/model.v2-final', 'a/b'])
def test_repo_id_valid(repo_id):
    assert hf_ids.repo_id_error(repo_id) is None


@pytest.mark.parametrize('repo_id', ['', 'a/b/c', 'bad repo/x', 'org/-x', 'org/x.', 'org--a/b', 'a/b..c', 'a/b.git',
                                     '../etc', 'org/' + 'x' * 97, 'caf\u00e9/x', None])
def test_repo_id_invalid(repo_id):
    assert hf_ids.repo_id_error(repo_id)


@pytest.mark.parametrize('rev', ['main', 'v1.0', 'refs/pr/12', 'a' * 40, 'release-2026_11'])
def test_revision_valid(rev):
    assert hf_ids.revision_error(rev) is None


@pytest.mark.parametrize('rev', ['', 'a b', '../x', 'x/', '/x', 'a//b', 'A' * 40, 'x' * 256, 'main;rm'])
def test_revision_invalid(rev):
    assert hf_ids.revision_error(rev)


def test_is_commit_sha():
    assert hf_ids.is_commit_sha('0123456789abcdef0123456789abcdef01234567')
    assert not hf_ids.is_commit_sha('main')
    assert not hf_ids.is_commit_sha('0123456789abcdef0123456789abcdef0123456')
