# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a node of a TP group has, read from its files: parsers for tp_node_info. Pure, stdlib only.

The versions that must match on every node (the NVIDIA kernel module, the SGLang, torch and NCCL of the virtualenv,
the Python X.Y the virtualenv is made from), the inter-node interface and its addresses, the ephemeral port range,
the TCP ports something listens on. Nothing here runs a program or imports torch: the virtualenv's packages are read
from their ``*.dist-info`` directory names (pip writes ``<name>-<version>.dist-info``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

# Distribution names (normalised: lower case, '-' and '.' as '_') whose version must match across the nodes.
PACKAGES = ('sglang', 'torch')
# NCCL ships as nvidia-nccl-cu12 / -cu13 (the CUDA major of the wheels).
NCCL_PACKAGE = re.compile(r'^nvidia_nccl_cu(\d+)$')
_DIST_INFO = re.compile(r'^(?P<name>[A-Za-z0-9_.]+?)-(?P<version>[^-]+?)\.dist-info$')
_TCP_LISTEN = '0A'


def normalise(name):
    return re.sub(r'[-_.]+', '_', name).lower()


def dist_versions(names):
    """{normalised distribution name: version} of the directory names of a site-packages directory."""
    out = {}
    for name in names:
        match = _DIST_INFO.match(name)
        if match:
            out[normalise(match.group('name'))] = match.group('version')
    return out


def venv_versions(names):
    """The versions that matter of one virtualenv: sglang, torch, nccl ('<package> <version>'), or None each."""
    found = dist_versions(names)
    out = dict((key, found.get(key)) for key in PACKAGES)
    nccl = sorted((k, v) for k, v in found.items() if NCCL_PACKAGE.match(k))
    out['nccl'] = '%s %s' % (nccl[-1][0].replace('_', '-'), nccl[-1][1]) if nccl else None
    return out


def lock_nccl(text):
    """'nvidia-nccl-cuNN X.Y.Z' pinned by a pip lock (requirements with hashes), or None."""
    for line in (text or '').splitlines():
        match = re.match(r'^\s*(nvidia-nccl-cu\d+)==([^\s\\;]+)', line)
        if match:
            return '%s %s' % (match.group(1), match.group(2))
    return None


def listening_ports(*texts):
    """TCP ports in LISTEN state in /proc/net/tcp and /proc/net/tcp6 (their text), as a sorted list."""
    ports = set()
    for text in texts:
        for line in (text or '').splitlines()[1:]:
            fields = line.split()
            if len(fields) > 3 and fields[3] == _TCP_LISTEN and ':' in fields[1]:
                try:
                    ports.add(int(fields[1].rsplit(':', 1)[1], 16))
                except ValueError:
                    continue
    return sorted(ports)


def port_range(text):
    """(low, high) of /proc/sys/net/ipv4/ip_local_port_range, or None."""
    parts = (text or '').split()
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        return int(parts[0]), int(parts[1])
    return None


def interfaces(ip_json):
    """{ifname: {up, addresses}} from `ip -j addr show` output."""
    try:
        data = json.loads(ip_json or '[]')
    except ValueError:
        return {}
    out = {}
    for item in data if isinstance(data, list) else []:
        name = item.get('ifname')
        if not name:
            continue
        flags = item.get('flags') or []
        out[name] = dict(up='UP' in flags or item.get('operstate') == 'UP',
                         addresses=[a.get('local') for a in item.get('addr_info') or [] if a.get('local')])
    return out


def free_ports(listening, low, high, count=1, start=None):
    """count ports in [low, high] nothing listens on, spread from start (a node's probe ports in its ephemeral range,
    where NCCL's and gloo's own listening sockets are)."""
    busy = set(listening)
    span = high - low + 1
    if span <= 0:
        return []
    first = low + ((start or 0) % span)
    out = []
    for step in range(span):
        port = low + (first - low + step * 7919) % span
        if port not in busy and port not in out:
            out.append(port)
            if len(out) == count:
                break
    return out
