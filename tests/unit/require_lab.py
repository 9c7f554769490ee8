# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The expected suite: a test marked ``requires_lab`` that skips fails instead, when the run must be complete.

A test that needs a runtime of the lab (the lab SGLang venv's torch for the P2P worker's end-to-end runs, ...) skips
when a developer runs pytest without it. Where the suite is expected whole (``make unit`` sets LLMOPS_REQUIRE_ALL=1,
and CI providers set CI=true), such a skip is a failure naming the missing runtime: a suite that silently skipped its
end-to-end tests would pass without having tested them. Whatever makes the test skip (a ``skipif`` mark,
``pytest.skip()`` in the test or a fixture, ``pytest.importorskip``) counts; ``xfail`` is not a skip.

Rule: LLMOPS_REQUIRE_ALL=1 requires, LLMOPS_REQUIRE_ALL=0 allows the skips, unset (or empty) follows CI=true.
tests/unit/conftest.py loads these hooks; tests/unit/test_require_lab.py runs pytest on a small file to prove it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

VARIABLE = 'LLMOPS_REQUIRE_ALL'
MARKER = 'requires_lab'
_REQUIRED = pytest.StashKey()


def required(environ=None):
    """Whether skips of requires_lab tests fail; a value other than 0/1 is a usage error naming the fix."""
    environ = os.environ if environ is None else environ
    value = environ.get(VARIABLE, '')
    if value == '':
        return environ.get('CI', '').strip().lower() == 'true'
    if value not in ('0', '1'):
        raise pytest.UsageError(
            '%s=%r: the value must be 1 (a skipped test marked %s fails) or 0 (it may skip); unset, CI=true decides. '
            'Fix: export %s=1 or %s=0' % (VARIABLE, value, MARKER, VARIABLE, VARIABLE))
    return value == '1'


def pytest_configure(config):
    config.addinivalue_line('markers', '%s: needs a runtime of the lab (e.g. the lab SGLang venv through '
                            'P2PCHECK_TEST_PYTHON); skipping it fails under %s=1 or CI=true' % (MARKER, VARIABLE))
    config.stash[_REQUIRED] = required()


def _reason(report):
    if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        return str(report.longrepr[2])
    return str(report.longrepr)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):  # pylint: disable=unused-argument
    report = yield
    if report.skipped and not hasattr(report, 'wasxfail') and item.get_closest_marker(MARKER) is not None \
            and item.config.stash.get(_REQUIRED, False):
        why = _reason(report)
        if why.startswith('Skipped: '):
            why = why[len('Skipped: '):]
        report.outcome = 'failed'
        report.longrepr = (
            '%s is marked %s and skipped (%s), but this run must be complete (%s=%s, CI=%s): a skipped end-to-end '
            'test is a test that did not run. Fix: provide the runtime (make unit sets P2PCHECK_TEST_PYTHON to the '
            'lab SGLang venv\'s python, tests/bench/setup-bench-venv.sh), or allow the skip with %s=0'
            % (item.nodeid, MARKER, why, VARIABLE, os.environ.get(VARIABLE, '') or '(unset)',
               os.environ.get('CI', '') or '(unset)', VARIABLE))
    return report
