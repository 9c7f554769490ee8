# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Progress of a long job, written to a JSON file on the target and printed as one line on the controller.

PRIVATE to the collection. The job (hf_snapshot) counts bytes and files per phase in :class:`Progress`; a
:class:`ProgressWriter` thread rewrites the file every few seconds (atomically: tmp file + rename); the wait action
reads it back and prints :func:`progress_line` (rate over a sliding window, ETA, files, stalls).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import threading
import time

from ansible_collections.llmops.inference.plugins.module_utils.common.formatting import fmt_bytes, fmt_duration


def progress_line(progress, now=None):
    """One human line from a progress dict (what the controller prints at every poll)."""
    if not progress:
        return 'waiting for the first progress report'
    now = now or time.time()
    phase = progress.get('phase', '?')
    text = '%s %s' % (phase, progress.get('label', ''))
    total = progress.get('bytes_total') or 0
    done = progress.get('bytes_done') or 0
    if total:
        text += ': %s / %s (%.1f%%)' % (fmt_bytes(done), fmt_bytes(total), 100.0 * done / total)
        rate = progress.get('rate_bps')
        if rate:
            text += ', %s/s' % fmt_bytes(rate)
        eta = progress.get('eta_s')
        # The client reports downloads in 10 MB chunks: before the first ones arrive an ETA is noise.
        if eta is not None and done < total and done >= total / 100.0 and eta < 7 * 86400:
            text += ', ETA %s' % fmt_duration(eta)
    if progress.get('files_total'):
        text += ', %d/%d files' % (progress.get('files_done', 0), progress['files_total'])
    if progress.get('message'):
        text += ' - %s' % progress['message']
    age = now - (progress.get('updated') or now)
    if age > 60:
        text += ' (no report for %s)' % fmt_duration(age)
    return text.replace('  ', ' ').strip()


class Progress(object):
    """Thread-safe byte/file counters for one phase, with a rate over the last ``window`` seconds.

    ``write()`` dumps a JSON snapshot atomically (tmp file + rename) for the controller to read.
    """

    def __init__(self, path=None, label='', window=30.0, clock=time.time):
        self.path = path
        self.label = label
        self.window = window
        self.clock = clock
        self.lock = threading.Lock()
        self.phase = 'plan'
        self.message = None
        self._reset(0, 0)

    def _reset(self, bytes_total, files_total):
        self.bytes_total = bytes_total
        self.files_total = files_total
        self.bytes_done = 0
        self.files_done = 0
        self.started = self.clock()
        self.samples = [(self.started, 0)]

    def start(self, phase, bytes_total=0, files_total=0, message=None):
        with self.lock:
            self.phase = phase
            self.message = message
            self._reset(bytes_total, files_total)
        self.write()

    def add(self, n):
        with self.lock:
            self.bytes_done += n

    def file_done(self):
        with self.lock:
            self.files_done += 1

    def snapshot(self):
        with self.lock:
            now = self.clock()
            self.samples.append((now, self.bytes_done))
            while len(self.samples) > 2 and now - self.samples[1][0] > self.window:
                self.samples.pop(0)
            t0, b0 = self.samples[0]
            rate = (self.bytes_done - b0) / (now - t0) if now - t0 > 0.5 else None
            eta = None
            if rate and self.bytes_total > self.bytes_done:
                eta = (self.bytes_total - self.bytes_done) / rate
            return {
                'label': self.label, 'phase': self.phase, 'message': self.message,
                'bytes_done': self.bytes_done, 'bytes_total': self.bytes_total,
                'files_done': self.files_done, 'files_total': self.files_total,
                'rate_bps': rate, 'eta_s': eta, 'phase_seconds': now - self.started,
                'updated': now, 'pid': os.getpid(),
            }

    def write(self):
        if not self.path:
            return
        data = json.dumps(self.snapshot())
        tmp = '%s.tmp-%d' % (self.path, os.getpid())
        try:
            with open(tmp, 'w') as handle:
                handle.write(data)
            os.rename(tmp, self.path)
        except OSError:
            pass  # progress is best effort; the download must not fail for it


class ProgressWriter(threading.Thread):
    """Background thread that writes the progress file every ``interval`` seconds until stopped."""

    def __init__(self, progress, interval=2.0):
        super(ProgressWriter, self).__init__()
        self.daemon = True
        self.progress = progress
        self.interval = interval
        self.stopped = threading.Event()

    def run(self):
        while not self.stopped.wait(self.interval):
            self.progress.write()

    def stop(self):
        self.stopped.set()
        self.progress.write()
