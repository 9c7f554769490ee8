# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""An exclusive, non-blocking lock file that names the process holding it.

PRIVATE to the collection. ``flock`` based: the kernel drops the lock when the process dies, so a crashed run never
leaves a stale lock behind.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fcntl
import os


class Lock(object):
    """Exclusive lock on ``path`` (hf_snapshot: one per destination, so two runs never share a staging directory)."""

    def __init__(self, path):
        self.path = path
        self.handle = None

    def acquire(self):
        """Take the lock and write our pid into it: None, or the holder's pid ('?' if unknown) when it is taken."""
        self.handle = open(self.path, 'a+')
        try:
            fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except (IOError, OSError):
            self.handle.seek(0)
            holder = self.handle.read().strip()
            self.handle.close()
            self.handle = None
            return holder or '?'
        self.handle.seek(0)
        self.handle.truncate()
        self.handle.write(str(os.getpid()))
        self.handle.flush()
        return None

    def release(self):
        if self.handle is not None:
            self.handle.close()
            self.handle = None
