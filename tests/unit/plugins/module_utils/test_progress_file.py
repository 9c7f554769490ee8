# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""progress_file: counters, rate over a sliding window, ETA, the file and the progress line."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.common import progress_file


class FakeClock(object):
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_progress_rate_eta_and_file(tmp_path):
    clock = FakeClock()
    path = tmp_path / 'progress.json'
    progress = progress_file.Progress(path=str(path), label='o/m@abc', window=30, clock=clock)
    progress.start('download', bytes_total=1000 * 1000 * 1000, files_total=4)
    for _second in range(10):
        clock.now += 1
        progress.add(10 * 1000 * 1000)
        progress.snapshot()
    progress.file_done()
    progress.write()
    data = json.loads(path.read_text())
    assert data['bytes_done'] == 100 * 1000 * 1000 and data['files_done'] == 1
    assert data['rate_bps'] == pytest.approx(10 * 1000 * 1000)
    assert data['eta_s'] == pytest.approx(90)
    line = progress_file.progress_line(data, now=clock.now)
    assert line == 'download o/m@abc: 100.0 MB / 1.0 GB (10.0%), 10.0 MB/s, ETA 1m30s, 1/4 files'
    # A stalled job says so.
    assert 'no report for 2m00s' in progress_file.progress_line(data, now=clock.now + 120)


def test_progress_rate_uses_a_sliding_window():
    clock = FakeClock()
    progress = progress_file.Progress(window=10, clock=clock)
    progress.start('download', 10 ** 9)
    for _second in range(20):  # fast for 20 s
        clock.now += 1
        progress.add(50 * 10 ** 6)
        progress.snapshot()
    for _second in range(20):  # then slow
        clock.now += 1
        progress.add(1 * 10 ** 6)
        progress.snapshot()
    assert progress.snapshot()['rate_bps'] == pytest.approx(1 * 10 ** 6, rel=0.2)


def test_progress_line_edge_cases():
    assert progress_file.progress_line(None) == 'waiting for the first progress report'
    assert progress_file.progress_line({'phase': 'plan', 'label': 'o/m', 'message': 'resolving main', 'updated': 5}, now=5) == \
        'plan o/m - resolving main'
