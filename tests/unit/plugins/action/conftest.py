# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures of the *_wait action tests (plugin_utils/actions/async_wait.py's loop): a fake clock and the printed lines."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.llmops.inference.plugins.plugin_utils.actions import async_wait


class Clock(object):
    def __init__(self):
        self.now = 1000.0
        self.sleeps = []

    def time(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch):
    """async_wait's time.time and time.sleep on a fake clock (no sleeping)."""
    fake = Clock()
    monkeypatch.setattr(async_wait.time, 'time', fake.time)
    monkeypatch.setattr(async_wait.time, 'sleep', fake.sleep)
    return fake


@pytest.fixture
def printed(monkeypatch):
    """The lines the wait displays, in order."""
    out = []
    monkeypatch.setattr(async_wait.display, 'display', lambda msg, *a, **k: out.append(msg))
    return out
