# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Start-up progress of an SGLang server from its log: milestones with their time and the weight shard percentage.

PRIVATE to the collection. Pure, stdlib only. The milestones and their words are the log catalogue's
(sglang_log_catalogue.MILESTONES and PROGRESS, each with the pinned release's source line). :func:`parse` turns a log
tail into milestones; :class:`Tracker` does the same line by line for sglang_server_wait, which prints
:func:`report_lines` for the new ones (the same lines go into the deployment record). Every TP rank prints most
milestones: the n-th time a milestone is reached counts when the first rank reaches it (whichever rank that is, in
whatever order the ranks' lines arrive), a repeat of a rank's own last milestone not at all; the shard bar is one
milestone per new percentage. tqdm begins each update of the bar with a carriage return, so a line is split there
first.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import time

from ansible_collections.llmops.inference.plugins.module_utils.sglang import log_catalogue as catalogue
from ansible_collections.llmops.inference.plugins.module_utils.common.formatting import fmt_duration

_TEXTS = dict(catalogue.MILESTONES)
# (name, label, regex) in the catalogue's progress order.
PATTERNS = tuple((name, label, re.compile('|'.join('(?:%s)' % catalogue.regex(entry['pieces'])
                                                   for entry in _TEXTS[name])))
                 for name, label in catalogue.PROGRESS)
# The figures a milestone line carries (the start-up lines' named groups).
_FIGURES = dict((name, catalogue.compile_text(entry)) for name, entry in catalogue.STARTUP_LINES
                if name in ('load_weight_end', 'kv_cache'))
# SGLang's logger prefix: "[2026-12-01 10:00:07 TP0] ", "[2026-05-07 13:39:14 DP1 TP1 EP1] ", "[2026-12-01 10:00:07] ".
_PREFIX = re.compile(r'^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?P<ranks>[^\]]*)\]')
_TP = re.compile(r'\bTP(\d+)\b')


def log_time(line):
    """Epoch seconds of the line's SGLang logger stamp (the host's local time, as SGLang writes it), or None."""
    match = _PREFIX.match(line)
    if not match:
        return None
    try:
        return time.mktime(time.strptime(match.group(1), '%Y-%m-%d %H:%M:%S'))
    except (ValueError, OverflowError):
        return None


def tp_rank(line):
    match = _PREFIX.match(line)
    rank = _TP.search(match.group('ranks')) if match else None
    return int(rank.group(1)) if rank else None


def _detail(name, line, match):
    """The figures printed with a milestone (shards, graph name, model and memory, KV tokens)."""
    groups = match.groupdict()
    if name == 'weight_shards':
        return dict(percent=int(groups['percent']), done=int(groups['done']), total=int(groups['total']))
    if name in ('cuda_graph_begin', 'cuda_graph_end'):
        return dict(graph=groups.get('graph'))
    figures = _FIGURES.get(name)
    found = figures.search(line) if figures else None
    if found and name == 'load_weight_end':
        return dict(model_type=found.group('model_type'), gib=float(found.group('usage')))
    if found and name == 'kv_cache':
        return dict(tokens=int(found.group('tokens')))
    return {}


def describe(item):
    """The words of a milestone: 'weights 50% (2/4 shards)', 'KV cache allocated (685794 tokens)', ..."""
    label = item['label']
    if item['name'] == 'weight_shards':
        return '%s %d%% (%d/%d shards)' % (label, item['percent'], item['done'], item['total'])
    if item.get('graph'):
        return '%s: %s' % (label, item['graph'])
    if item.get('model_type'):
        return '%s (%s, %.2f GB per GPU)' % (label, item['model_type'], item['gib'])
    if item.get('tokens') is not None:
        return '%s (%d tokens)' % (label, item['tokens'])
    return label


class Tracker(object):
    """Milestones of one start, fed line by line (``add``); ``milestones`` is the list so far, in log order."""

    def __init__(self):
        self.milestones = []
        self._last = {}     # rank -> the key of its last milestone
        self._counts = {}   # (rank, key) -> times that rank reached it
        self._reached = {}  # key -> times any rank reached it

    def add(self, line, at=None):
        """One log line (a journal entry's text) and the time it was written (None: its logger stamp, if any).
        Returns the milestones it added."""
        new = []
        for segment in line.split('\r'):
            for name, label, pattern in PATTERNS:
                match = pattern.search(segment)
                if match:
                    item = dict(name=name, label=label, at=at if at is not None else log_time(segment))
                    item.update(_detail(name, segment, match))
                    if self._first(tp_rank(segment), (name, item.get('graph'), item.get('percent'))):
                        item['text'] = describe(item)
                        new.append(item)
                    break
        self.milestones.extend(new)
        return new

    def _first(self, rank, key):
        """Whether this rank's milestone is the first rank's reaching it (this many times)."""
        if self._last.get(rank) == key:
            return False
        self._last[rank] = key
        count = self._counts.get((rank, key), 0) + 1
        self._counts[(rank, key)] = count
        if count <= self._reached.get(key, 0):
            return False
        self._reached[key] = count
        return True


def parse(lines, times=None):
    """Milestones in a log tail, in order: dicts with name, label, text, at (epoch or None) and the figures
    (percent, done, total for the shard bar; graph; model_type, gib; tokens). ``times``: each line's time."""
    tracker = Tracker()
    for index, line in enumerate(lines):
        tracker.add(line, times[index] if times else None)
    return tracker.milestones


def report_lines(items, start, expected=None):
    """The progress lines for newly seen milestones: elapsed since the unit started (``start``, epoch) and the
    expected total (``expected``: seconds the last measured start took, or None). A burst of shard updates that
    arrived together (one journal entry, the same time) is its last one."""
    lines = []
    for index, item in enumerate(items):
        later = items[index + 1] if index + 1 < len(items) else None
        if item['name'] == 'weight_shards' and later and later['name'] == 'weight_shards' \
                and later['at'] == item['at']:
            continue
        lines.append(progress_line(item, start, expected))
    return lines


def progress_line(item, start, expected=None):
    """'KV cache allocated (685794 tokens) - 1m44s since start, expected ~6m52s (last start)'."""
    when = '%s since start' % fmt_duration(item['at'] - start) if item.get('at') and start else 'time unknown'
    if item['name'] in ('ready', 'follower_ready'):
        tail = ' (last start: %s)' % fmt_duration(expected) if expected else ' (no previous start recorded)'
    else:
        tail = ', expected ~%s (last start)' % fmt_duration(expected) if expected else ', no previous start recorded'
    return '%s - %s%s' % (item['text'], when, tail)


def last_reached(items, start):
    """'KV cache allocated (685794 tokens) at 1m44s', or 'none' (what a timeout names)."""
    if not items:
        return 'none'
    item = items[-1]
    when = ' at %s' % fmt_duration(item['at'] - start) if item.get('at') and start else ''
    return item['text'] + when


def expected_seconds(record):
    """The start-up time of the last measured start, from a deployment record (deployed.json), or None."""
    progress = (record or {}).get('startup_progress') if isinstance(record, dict) else None
    seconds = progress.get('seconds') if isinstance(progress, dict) else None
    return float(seconds) if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds > 0 \
        else None
