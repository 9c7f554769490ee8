# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The kernel's CPU list format (``0-31,64-95``): parse, union, format; and the cpuset a set of GPUs implies.

The format is what sysfs prints for ``local_cpulist`` and ``cpulist`` files and what cgroup v2 ``cpuset.cpus`` and
``cpuset.mems`` take (Documentation/admin-guide/cgroup-v2.rst, "Cpuset Interface Files"): comma-separated decimal
numbers and ``lo-hi`` ranges. The kernel prints a single number for a one-element range (``0-3,8``). The parser
accepts that plain form only; the ``lo-hi:used/group`` stride form of bitmap_parselist() is refused, sysfs never
prints it.

Lists are kept as sorted, merged ``(lo, hi)`` intervals, so a huge range costs nothing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_PART_RE = re.compile(r'^(\d+)(?:-(\d+))?\Z')
# Far above NR_CPUS (8192 with CONFIG_MAXSMP) and MAX_NUMNODES: a typo, not a CPU.
MAX_ID = 65535


class CpuListError(ValueError):
    pass


def parse_cpulist(text):
    """``'0-3,8'`` -> ``[(0, 3), (8, 8)]`` (sorted, overlapping and adjacent ranges merged).

    Surrounding white space (sysfs files end in a newline) is ignored; ``''`` is the empty list. Anything else that is
    not a comma-separated list of numbers and ``lo-hi`` ranges raises CpuListError naming the bad part."""
    if not isinstance(text, str):
        raise CpuListError('%r is not a CPU list: expected a string such as 0-31,64-95' % (text,))
    stripped = text.strip()
    if not stripped:
        return []
    intervals = []
    for part in stripped.split(','):
        match = _PART_RE.match(part)
        if not match:
            raise CpuListError('%r is not a CPU list: %r is neither a number nor a lo-hi range (expected e.g. '
                               '0-31,64-95: decimal numbers and ranges, comma-separated, no blanks)' % (text, part))
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) is not None else low
        if low > high:
            raise CpuListError('%r is not a CPU list: the range %r runs backwards' % (text, part))
        if high > MAX_ID:
            raise CpuListError('%r is not a CPU list: %d is above %d' % (text, high, MAX_ID))
        intervals.append((low, high))
    return _merge(intervals)


def _merge(intervals):
    merged = []
    for low, high in sorted(intervals):
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged


def format_cpulist(intervals):
    """``[(0, 3), (8, 8)]`` -> ``'0-3,8'``, as the kernel prints it (intervals are merged first)."""
    return ','.join('%d' % low if low == high else '%d-%d' % (low, high) for low, high in _merge(intervals))


def intersect_cpulists(a, b):
    """The CPUs of two CPU lists in common, formatted ('' when none): ``('0-127', '64-255')`` -> ``'64-127'``."""
    common = []
    for low_a, high_a in parse_cpulist(a):
        for low_b, high_b in parse_cpulist(b):
            low, high = max(low_a, low_b), min(high_a, high_b)
            if low <= high:
                common.append((low, high))
    return format_cpulist(common)


def union_cpulists(texts):
    """The union of several CPU lists, formatted: ``['0-3,8', '4-7']`` -> ``'0-8'``."""
    intervals = []
    for text in texts:
        intervals.extend(parse_cpulist(text))
    return format_cpulist(intervals)


def gpu_cpuset(gpus):
    """The cpuset the GPUs imply: the union of their ``local_cpulist`` and the set of their NUMA nodes.

    ``gpus``: dicts with ``name`` (for messages, e.g. the PCI address), ``numa_node`` (int, -1 or None when unknown)
    and ``local_cpulist`` (the attribute's text, None when unreadable). Returns ``{'cpus', 'mems', 'problems'}``: when
    any GPU has no usable NUMA node or CPU list, ``cpus`` and ``mems`` are None and ``problems`` says which and why (a
    cpuset without that GPU's CPUs would pin the container to the wrong node). No GPU at all gives None too."""
    problems = []
    cpulists = []
    nodes = []
    for gpu in gpus:
        name = gpu['name']
        numa = gpu.get('numa_node')
        text = gpu.get('local_cpulist')
        if numa is None or numa < 0:
            problems.append('%s has no NUMA node (numa_node %s: the firmware reports no affinity)'
                            % (name, 'unreadable' if numa is None else numa))
            continue
        if text is None:
            problems.append('%s has no readable local_cpulist' % name)
            continue
        try:
            intervals = parse_cpulist(text)
        except CpuListError as exc:
            problems.append('%s: local_cpulist %s' % (name, exc))
            continue
        if not intervals:
            problems.append('%s has an empty local_cpulist' % name)
            continue
        cpulists.append(intervals)
        nodes.append((numa, numa))
    if not gpus:
        problems.append('no GPU to take the CPUs from')
    if problems:
        return {'cpus': None, 'mems': None, 'problems': problems}
    return {'cpus': format_cpulist([interval for intervals in cpulists for interval in intervals]),
            'mems': format_cpulist(nodes), 'problems': []}
