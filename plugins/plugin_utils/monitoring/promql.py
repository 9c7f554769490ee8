# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""PromQL helpers: the metric names an expression reads, and label matchers. Pure, stdlib only.

``metric_names`` is what proves that every query the monitoring role renders (rules, dashboard, the benchmark's
server-side view) names a metric of the pinned release: string literals, label matchers, ranges, grouping clauses,
functions, keywords and Grafana's ``$variables`` are stripped; what remains are the metric names.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# Functions and keywords of PromQL (Prometheus 2.x/3.x) that are followed by "(" or stand alone.
KEYWORDS = frozenset((
    'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'offset', 'bool', 'atan2',
    'inf', 'nan', 'sum', 'min', 'max', 'avg', 'group', 'stddev', 'stdvar', 'count', 'count_values', 'bottomk', 'topk',
    'quantile', 'limitk', 'limit_ratio',
))
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_MATCHERS = re.compile(r'\{[^{}]*\}')
_RANGE = re.compile(r'\[[^\]]*\]')
_GROUPING = re.compile(r'\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)')
_VARIABLE = re.compile(r'\$\{?[A-Za-z_][A-Za-z0-9_]*(?::[A-Za-z]+)?\}?')
_IDENT = re.compile(r'(?<![A-Za-z0-9_:.$])([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?')
_DURATION = re.compile(r'^\d+(ms|s|m|h|d|w|y)$')
# Histogram series of a family: what a query may append to the family's name.
HISTOGRAM_SUFFIXES = ('_bucket', '_sum', '_count')


def metric_names(expr):
    """The metric names a PromQL expression reads, sorted (functions, keywords, labels and variables excluded)."""
    text = _STRING.sub(' ', expr or '')
    text = _VARIABLE.sub(' ', text)
    text = _RANGE.sub(' ', text)
    text = _GROUPING.sub(' ', text)
    # A selector {__name__=...} is not used by the collection; matchers go (their label names are not metrics).
    text = _MATCHERS.sub(' ', text)
    names = set()
    for match in _IDENT.finditer(text):
        word, call = match.group(1), match.group(2)
        if call or word.lower() in KEYWORDS or _DURATION.match(word):
            continue
        names.add(word)
    return sorted(names)


def family_of(name, histograms):
    """The family a series name belongs to: ``x_bucket`` of a histogram ``x`` is ``x``."""
    for suffix in HISTOGRAM_SUFFIXES:
        if name.endswith(suffix) and name[:-len(suffix)] in histograms:
            return name[:-len(suffix)]
    return name


def unknown_names(expr, known, histograms=(), allowed_prefixes=()):
    """Names ``expr`` reads that are neither a known family (histogram series included) nor recorded by the
    collection's own rules (a name starting with one of ``allowed_prefixes``)."""
    out = []
    for name in metric_names(expr):
        if name.startswith(tuple(allowed_prefixes)):
            continue
        if family_of(name, set(histograms)) not in set(known):
            out.append(name)
    return out


def quote(value):
    """A label value as a PromQL string literal."""
    return '"%s"' % str(value).replace('\\', '\\\\').replace('"', '\\"')


def selector(labels):
    """``{a="x",b="y"}`` from a mapping (sorted), ``''`` for none."""
    if not labels:
        return ''
    return '{%s}' % ','.join('%s=%s' % (key, quote(value)) for key, value in sorted(labels.items()))
