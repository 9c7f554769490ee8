# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The few lines per host that `make plan` prints and the deploy ends with, from a resolved llmops_deployment.

Controller only: the console of make plan (tests/tools/plan_console.py) and the filter
llmops.inference.deployment_summary (the deploy's last play) call host_lines() with the same dict, so the two
summaries cannot differ. Never raises on a partial deployment (a host refused before it was resolved has only
``refusal`` and ``problems``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmops.inference.plugins.module_utils.planner.vram_report import tight_reason

MAX_REFUSAL_CHARS = 160


def number(value):
    """684739 -> '684,739'; 20.280 -> '20.28'; None -> '?'."""
    if value is None:
        return '?'
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return '{:,}'.format(value)
    if isinstance(value, float):
        return ('%.2f' % value).rstrip('0').rstrip('.')
    return str(value)


def first_problem(host, refusal):
    """The first problem of a refusal ("host: 2 problems, ...:\\n1. <this>\\n2. ..."), else its first line."""
    lines = [line.strip() for line in (refusal or '').strip().splitlines() if line.strip()]
    if not lines:
        return ''
    numbered = [line for line in lines if re.match(r'^1\. ', line)]
    first = numbered[0][3:] if numbered else lines[0]
    return first[len(host) + 2:] if first.startswith(host + ': ') else first


def server_lines(host, deployment):
    plan = deployment.get('plan') or {}
    gpus = deployment.get('gpus') or {}
    verdict = plan.get('verdict') or 'no plan'
    lines = ['%s  %s  %s on %s x %s, TP%s, SGLang %s' % (
        host, verdict, (deployment.get('profiles') or {}).get('model', '?'), gpus.get('count', '?'),
        gpus.get('display_name', '?'), (deployment.get('parallel') or {}).get('tp_size', '?'),
        (deployment.get('sglang') or {}).get('version', '?'))]
    if plan:
        bound = str(plan.get('max_running_requests_bound_by') or '?').replace('_', ' ')
        lines.append('  KV tokens %s | max running requests %s (bound by %s) | context %s' % (
            number(plan.get('kv_cache_tokens')), number(plan.get('max_running_requests')), bound,
            number(plan.get('context_length'))))
        kv = (plan.get('k_size_gib') or 0) + (plan.get('v_size_gib') or 0)
        lines.append('  per GPU: weights %s GiB, KV %s GiB, headroom %s GiB | mem fraction static %s' % (
            number(plan.get('weights_gib_per_gpu')), number(float(kv)), number(plan.get('headroom_gib')),
            plan.get('mem_fraction_static', '?')))
        if 'tight' in verdict:
            lines.append('  tight = it starts, but %s' % tight_reason(plan))
    return lines


def proxmox_lines(host, deployment):
    nvidia, vfio = deployment.get('nvidia_addresses') or [], deployment.get('vfio_addresses') or []
    containers = ', '.join('%s (CT %s, %d GPUs)' % (c.get('host'), c.get('ctid'), len(c.get('addresses') or []))
                           for c in deployment.get('containers') or [])
    vms = ', '.join('VM %s (%d GPUs)' % (vm.get('vmid'), len(vm.get('hostpci') or []))
                    for vm in deployment.get('vfio_vms') or [])
    return ['%s  Proxmox host: %d GPUs on nvidia%s, %d on vfio-pci (%s)%s' % (
        host, len(nvidia), (' (' + containers + ')') if containers else '', len(vfio), vms or 'VMs',
        ', SEV-SNP' if deployment.get('sev_snp') else '')]


def gateway_lines(host, deployment):
    return ['%s  gateway: %d workers, smg %s' % (host, len(deployment.get('workers') or []),
                                                 (deployment.get('gateway') or {}).get('version', '?'))]


def host_lines(host, deployment, shown_refusal=False):
    """The summary of one host. shown_refusal: its refusal was printed in full already (the first refusal)."""
    deployment = deployment if isinstance(deployment, dict) else {}
    if deployment.get('refusal'):
        if shown_refusal:
            return ['%s  REFUSED (the message above)' % host]
        text = first_problem(host, deployment['refusal'])
        if len(text) > MAX_REFUSAL_CHARS:
            text = text[:MAX_REFUSAL_CHARS - 3] + '...'
        return ['%s  REFUSED: %s' % (host, text)]
    kind = deployment.get('kind')
    if kind == 'sglang_server':
        return server_lines(host, deployment)
    if kind == 'proxmox_host':
        return proxmox_lines(host, deployment)
    if kind == 'sglang_gateway':
        return gateway_lines(host, deployment)
    return ['%s  %s' % (host, kind or 'not resolved')]
