# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The picture of a multi-node TP group for plan.md: hosts, their GPUs, the TP ranks each runs, who serves HTTP.

PRIVATE to the collection. Pure, stdlib only. Input: the group as deployment_tp_group.public() publishes it plus the
head's HTTP endpoint, the unit and the GPU model's name.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def _row(cells, widths):
    return ' '.join(str(c).rjust(w) for c, w in zip(cells, widths))


def _gpu_lines(item, per_node):
    gpus = item['gpu_indices'] or list(range(per_node or 0))
    ranks = list(range(item['tp_ranks'][0], item['tp_ranks'][1] + 1)) if item.get('tp_ranks') else ['?'] * len(gpus)
    widths = [max(len(str(g)), len(str(r))) for g, r in zip(gpus, ranks)]
    return 'GPU  ' + _row(gpus, widths), 'TP   ' + _row(ranks, widths)


def picture(group, http_host, http_port, unit, gpu_name):
    """Text lines of the topology (a column of boxes, head first)."""
    per_node = group.get('gpus_per_node')
    boxes = []
    for item in group['ranks']:
        head = item['node_rank'] == 0
        title = '%s: rank %d%s' % (item['host'], item['node_rank'], ', head' if head else '')
        body = ['%s on %s, %s' % (item['address'], item['ifname'] or 'unset',
                                  'rendezvous tcp://%s (TCPStore)' % group['dist_init_addr'] if head
                                  else 'joins tcp://%s' % group['dist_init_addr'])]
        gpu, tp = _gpu_lines(item, per_node)
        body += [gpu + '   (%sx %s)' % (per_node or '?', gpu_name), tp]
        body.append('%s, HTTP %s:%s for clients and the gateway' % (unit, http_host, http_port) if head else
                    '%s, health stub 127.0.0.1:%s (always 200: never trusted)' % (unit, http_port))
        boxes.append((title, body))
    width = max(max(len(line) for line in body) for dummy, body in boxes) + 4
    width = max(width, max(len(title) for title, dummy in boxes) + 8)
    # A node without an interface (refused on that node) is drawn, not sorted against the others.
    ifnames = '/'.join(sorted(set(i['ifname'] or 'unset' for i in group['ranks'])))
    infiniband = 'InfiniBand: %s' % group['ib_hca'] if group['ib_hca'] else 'InfiniBand off'
    link = 'NCCL + gloo over %s (%s)' % (ifnames, infiniband)
    mid = width // 2
    lines = ['clients / gateway --HTTP %s:%s--> %s' % (http_host, http_port, group['head'])]
    for index, (title, body) in enumerate(boxes):
        if index:
            lines.append(' ' * mid + '|  ' + link)
        top = '+-- %s ' % title
        lines.append(top + '-' * (width - len(top) - 1) + '+')
        lines += ['| ' + line.ljust(width - 4) + ' |' for line in body]
        if index < len(boxes) - 1:
            lines.append('+' + '-' * (mid - 1) + '+' + '-' * (width - mid - 2) + '+')
        else:
            lines.append('+' + '-' * (width - 2) + '+')
    return lines


def markdown(group, http_host, http_port, unit, gpu_name):
    """The plan.md section of a node of a TP group: the picture and one row per node."""
    out = ['', '## Tensor-parallel group %s: TP%s over %d nodes' % (
        group['name'], (group.get('gpus_per_node') or 0) * group['nnodes'] or '?', group['nnodes']), '',
        'One SGLang server across the hosts of the inventory group `%s` (`--nnodes %d`, `--dist-init-addr %s`, '
        '`--dist-timeout %s`). This file is rank %d\'s (%s). Only the head serves HTTP; the nodes start, fail and '
        'restart as one group, and the decode roofline above ignores the link between the nodes.'
        % (group['name'], group['nnodes'], group['dist_init_addr'], group['dist_timeout'], group['node_rank'],
           group['role']), '', '```text']
    out += picture(group, http_host, http_port, unit, gpu_name)
    out += ['```', '', '| node | rank | address | interface | GPUs | TP ranks | serves |', '|---|---|---|---|---|---|---|']
    for item in group['ranks']:
        gpus = ','.join(str(g) for g in item['gpu_indices']) or 'all (%s)' % (group.get('gpus_per_node') or '?')
        ranks = '%d-%d' % tuple(item['tp_ranks']) if item.get('tp_ranks') else '?'
        serves = 'HTTP %s:%s' % (http_host, http_port) if item['node_rank'] == 0 else 'health stub only'
        out.append('| %s | %d | %s | %s | %s | %s | %s |'
                   % (item['host'], item['node_rank'], item['address'], item['ifname'] or 'unset', gpus, ranks, serves))
    env = ', '.join('%s=%s' % kv for kv in sorted(group['env'].items()))
    out += ['', 'Rendezvous ports on the head: %s. Environment of this node: %s.' % (
        ', '.join(str(p) for p in group['port_block']), env), '']
    return '\n'.join(out)
