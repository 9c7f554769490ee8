# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the SGLang Model Gateway's /workers API and a worker's load endpoints say, as pure functions.

PRIVATE to the collection (the sglang_gateway_worker module). Shapes are those of smg 1.13.0 (profiles/sglang_gateway.yml):
GET /workers -> {"workers": [{"id", "url", "status", "is_healthy", "load", ...}], "total": N}; a worker's
in-flight count from SGLang's GET /v1/loads ({"loads": [{"num_running_reqs", "num_waiting_reqs", ...}]}, one entry
per DP rank) or, for a server without it, from gauges of its Prometheus text (/metrics).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_METRIC = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+([-+0-9.eEinfNa]+)')


def normalise_url(url):
    return (url or '').strip().rstrip('/').lower()


def workers_of(listing):
    """The list of workers of a GET /workers answer (an answer without one is an error of the gateway)."""
    if not isinstance(listing, dict) or not isinstance(listing.get('workers'), list):
        raise ValueError('not a /workers answer of the gateway: %r' % (listing,))
    return listing['workers']


def find_worker(listing, url):
    """The entry of the worker with this URL, or None."""
    want = normalise_url(url)
    for worker in workers_of(listing):
        if normalise_url(worker.get('url')) == want:
            return worker
    return None


def is_serving(worker):
    return bool(worker) and worker.get('is_healthy') is True and worker.get('status', 'ready') == 'ready'


def serving_others(listing, url):
    """URLs of the healthy, routable workers other than this one."""
    want = normalise_url(url)
    return sorted(w['url'] for w in workers_of(listing) if normalise_url(w.get('url')) != want and is_serving(w))


def inflight_from_loads(answer, fields):
    """Requests a worker still has to finish: the sum of ``fields`` over every DP rank of a /v1/loads answer."""
    loads = answer.get('loads') if isinstance(answer, dict) else None
    if not isinstance(loads, list) or not loads:
        raise ValueError('not a /v1/loads answer (no loads list): %r' % (answer,))
    total = 0
    for entry in loads:
        for field in fields:
            value = entry.get(field)
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise ValueError('/v1/loads entry without a number %s: %r' % (field, entry))
            total += value
    return int(total)


def inflight_from_metrics(text, names):
    """The sum of the Prometheus gauges ``names`` (every label set) in a /metrics text; each name must appear."""
    found = dict((name, None) for name in names)
    for line in (text or '').splitlines():
        match = _METRIC.match(line.strip())
        if match and match.group(1) in found:
            found[match.group(1)] = (found[match.group(1)] or 0.0) + float(match.group(3))
    missing = sorted(name for name, value in found.items() if value is None)
    if missing:
        raise ValueError('the worker\'s /metrics has no %s' % ', '.join(missing))
    return int(sum(found.values()))
