# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every module test runs with exit_json/fail_json raising (module_harness); ``module_warnings`` lists warnings."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from module_harness import patch_exits


@pytest.fixture(autouse=True)
def module_warnings(monkeypatch):
    return patch_exits(monkeypatch)
