# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The test of the expected suite (require_lab.py): pytest, run on a small file of its own, fails a skipped
requires_lab test when LLMOPS_REQUIRE_ALL=1 or CI=true, and lets it skip otherwise."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

TINY = '''
import pytest

@pytest.mark.requires_lab
@pytest.mark.skipif(True, reason='the lab runtime XYZ is missing')
def test_lab_by_mark():
    pass

@pytest.mark.requires_lab
def test_lab_by_call():
    pytest.skip('no torch in this interpreter')

@pytest.mark.requires_lab
def test_lab_that_runs():
    pass

@pytest.mark.skipif(True, reason='an optional tool')
def test_optional_skip():
    pass

@pytest.mark.requires_lab
@pytest.mark.xfail(reason='a known gap', strict=True)
def test_lab_known_gap():
    assert False
'''


@pytest.fixture(scope='module')
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp('require_lab')
    (root / 'test_tiny.py').write_text(TINY)
    (root / 'pytest.ini').write_text('[pytest]\naddopts = --strict-markers\n')
    return root


def run_pytest(root, **env):
    full = dict((k, v) for k, v in os.environ.items() if k not in ('LLMOPS_REQUIRE_ALL', 'CI'))
    full.update(env)
    full['PYTHONPATH'] = HERE + os.pathsep + full.get('PYTHONPATH', '')
    proc = subprocess.run([sys.executable, '-m', 'pytest', '-p', 'require_lab', '-p', 'no:cacheprovider', '-rfEs',
                           '-q', str(root / 'test_tiny.py')], cwd=str(root), env=full, capture_output=True,
                          text=True, timeout=120, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def counts(output):
    tail = output.strip().splitlines()[-1]
    return dict((word, int(n)) for n, word in re.findall(r'(\d+) (\w+)', tail))


@pytest.mark.parametrize('env', [dict(LLMOPS_REQUIRE_ALL='1'), dict(CI='True', LLMOPS_REQUIRE_ALL='')],
                         ids=['require-all', 'ci'])
def test_a_required_run_fails_each_skipped_lab_test(tiny, env):
    rc, out = run_pytest(tiny, **env)
    assert rc == 1, out
    # a skip in the setup phase (a skipif mark) fails as an error of the setup, one in the test as a failure
    assert counts(out) == {'failed': 1, 'error': 1, 'passed': 1, 'skipped': 1, 'xfailed': 1}, out
    failed = sorted(re.findall(r'^(FAILED|ERROR) \S+::(\w+)', out, re.M))
    assert failed == [('ERROR', 'test_lab_by_mark'), ('FAILED', 'test_lab_by_call')], out
    # the failure names the test, why it skipped, the rule and the fix
    assert 'test_tiny.py::test_lab_by_mark is marked requires_lab and skipped (the lab runtime XYZ is missing)' in out
    assert '(no torch in this interpreter)' in out
    assert 'allow the skip with LLMOPS_REQUIRE_ALL=0' in out and 'P2PCHECK_TEST_PYTHON' in out


@pytest.mark.parametrize('env', [{}, dict(CI='true', LLMOPS_REQUIRE_ALL='0'), dict(CI='false')],
                         ids=['plain', 'ci-allowed', 'ci-false'])
def test_an_ordinary_run_lets_them_skip(tiny, env):
    rc, out = run_pytest(tiny, **env)
    assert rc == 0, out
    assert counts(out) == {'passed': 1, 'skipped': 3, 'xfailed': 1}, out


def test_a_bad_value_is_a_usage_error(tiny):
    rc, out = run_pytest(tiny, LLMOPS_REQUIRE_ALL='yes')
    assert rc == 4, out
    assert "LLMOPS_REQUIRE_ALL='yes': the value must be 1" in out and 'Fix: export LLMOPS_REQUIRE_ALL=1' in out


def test_the_lab_tests_of_this_suite_are_marked():
    """The tests make unit provides a runtime for carry the mark (else their skip would pass unnoticed)."""
    marked = {}
    for name in ('test_p2p_worker', 'test_p2p_multinode'):
        path = os.path.join(HERE, 'plugins', 'module_utils', name + '.py')
        spec = importlib.util.spec_from_file_location('require_lab_check_' + name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for test in dir(module):
            if test.startswith('test_'):
                marked[test] = 'requires_lab' in [m.name for m in getattr(getattr(module, test), 'pytestmark', [])]
    assert sorted(name for name, yes in marked.items() if yes) == [
        'test_sim_clean_phase', 'test_sim_corrupt_copy_caught', 'test_sim_hang_killed_within_deadline',
        'test_sim_outer_sigterm_reports_partial_result', 'test_the_head_alone_times_out_at_the_rendezvous',
        'test_two_gloo_nodes_on_loopback']
