# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The revision lock: which commit a host serves, and where its files go."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import model_revision as mr

REPO = 'Qwen/Qwen3.5-122B-A10B'
A = 'a' * 40
B = '0123456789abcdef' * 2 + '01234567'


def lock(host='ct', repo=REPO, requested='main', commit=A):
    return {'schema': 1, 'hosts': {host: {'repo_id': repo, 'requested': requested, 'commit': commit,
                                          'locked': '2026-12-01T17:00:00Z'}}}


def test_directory_per_commit_and_per_branch():
    assert mr.directory_name(REPO, A) == 'Qwen3.5-122B-A10B@aaaaaaaaaaaa'
    assert mr.directory_name(REPO, 'main') == 'Qwen3.5-122B-A10B@main'
    assert mr.directory_name(REPO, 'refs/pr/3') == 'Qwen3.5-122B-A10B@refs_pr_3'
    assert mr.directory_name(None, 'main') == 'model@main'


def test_commit_in_inventory_wins_over_the_lock():
    out = mr.resolve('ct', REPO, B, lock(), hub_commit=None)
    assert (out['revision'], out['source'], out['write'], out['is_commit']) == (B, 'inventory (a commit)', None, True)


def test_the_lock_keeps_its_commit_while_the_branch_moved():
    out = mr.resolve('ct', REPO, 'main', lock(commit=A), hub_commit=B, lock_file='/inv/llmops-lock.yml')
    assert (out['revision'], out['source'], out['write']) == (A, 'lock', None)
    assert B in out['note'] and A in out['note'] and '/inv/llmops-lock.yml' in out['note']


def test_a_new_branch_is_locked_to_the_hub_commit():
    out = mr.resolve('ct', REPO, 'main', None, hub_commit=B)
    assert out['revision'] == B and out['source'] == 'hub (locked now)' and out['note'] is None
    assert out['write'] == {'repo_id': REPO, 'requested': 'main', 'commit': B}


def test_another_repository_or_branch_locks_again():
    for old in (lock(repo='lab/other'), lock(requested='v2')):
        out = mr.resolve('ct', REPO, 'main', old, hub_commit=B)
        assert out['write']['commit'] == B and 'locked again' in out['note']


def test_an_unresolved_branch_says_so():
    out = mr.resolve('ct', REPO, 'main', lock(host='other'), lock_file='/inv/llmops-lock.yml')
    assert (out['revision'], out['is_commit'], out['write']) == ('main', False, None)
    assert 'not locked yet' in out['note'] and '/inv/llmops-lock.yml' in out['note']


def test_check_lock():
    assert mr.check_lock(None, 'f') == []
    assert mr.check_lock(lock(), 'f') == []
    assert mr.check_lock({'schema': 2, 'hosts': {}}, 'f')[0][0] == 'f'
    assert mr.check_lock(['x'], 'f')[0][1] == ['x']
    bad = lock(commit='ABC')
    problems = mr.check_lock(bad, 'f')
    assert problems[0][0] == 'f: hosts.ct' and '40 lower-case hex' in problems[0][2]
    extra = lock()
    extra['hosts']['ct']['surprise'] = 1
    assert mr.check_lock(extra, 'f')
