# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Resolve a Proxmox host: its GPUs, the vfio-pci / nvidia split, and the containers that take its GPUs.

PRIVATE to the collection. ``resolve_proxmox(ctx)`` returns ``(deployment, problems)`` with the
``kind: proxmox_host`` object of docs/deployment_resolver.md. It catches what would otherwise surface on the host: an
address given twice, NUMA nodes on both sides of the split, a card that goes to vfio-pci while a container is
given it, two containers sharing a GPU.

ctx: host, settings (deployment_inputs.read), variables (the raw role variables: gpu_partition_*devices,
lxc_gpu_addresses), containers ([{host, ctid, numa_node, addresses}] of the servers whose llmops_lxc_host is
this host), gpu_names (the hardware profiles).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmops.inference.plugins.module_utils.host.cpulist import (
    CpuListError, format_cpulist, intersect_cpulists, parse_cpulist)
from ansible_collections.llmops.inference.plugins.module_utils.common.choosing import nearest
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.problems import NOVALUE, Problems
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.vms import resolve_vms

SCHEMA = 1
_PCI = re.compile(r'^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$')
_DEVICE_LISTS = ('gpu_partition_default_devices', 'gpu_partition_devices', 'gpu_partition_group_devices',
                 'gpu_partition_host_devices')


def _gpus(settings, problems):
    gpus = settings['llmops_host_gpus']
    if gpus is None:
        problems.add('llmops_host_gpus', NOVALUE, 'is required for a host of proxmox_hosts',
                     'list the cards as llmops.inference.gpu_info reports them: [{address: 0000:81:00.0, numa_node: 1}]')
        return []
    out, seen = [], set()
    for index, gpu in enumerate(gpus):
        where = 'llmops_host_gpus[%d]' % index
        unknown = sorted(set(gpu) - set(('address', 'numa_node')))
        for key in unknown:
            close = nearest(key, ('address', 'numa_node'))
            problems.add('%s.%s' % (where, key), gpu[key], 'unknown key (address, numa_node)',
                         'rename it to %s' % close if close else 'remove it')
        address = gpu.get('address')
        if not isinstance(address, str) or not _PCI.match(address):
            problems.add('%s.address' % where, address, 'must be a full lower-case PCI address with domain',
                         'e.g. 0000:81:00.0 (as gpu_info and lspci -D print it)')
            continue
        if address in seen:
            problems.add('%s.address' % where, address, 'each address once', 'remove the duplicate entry')
            continue
        seen.add(address)
        node = gpu.get('numa_node')
        if isinstance(node, bool) or not isinstance(node, int) or node < 0:
            problems.add('%s.numa_node' % where, node, 'must be the NUMA node number (>= 0)',
                         'copy it from gpu_info (numa_node)')
            continue
        out.append(dict(address=address, numa_node=node))
    return out


def numa_cpus(raw):
    """llmops_host_numa_cpus -> ({node: CPU list as the kernel prints it}, [(key, value, rule, fix)]).

    Keys are NUMA node numbers (YAML ints, or digit strings as -e JSON gives them), values CPU lists in the kernel's
    format. Invalid entries are left out of the map and reported (the Proxmox host's own resolution refuses them)."""
    out, errors = {}, []
    if raw is None:
        return out, errors
    for key, value in sorted(raw.items(), key=lambda item: str(item[0])):
        where = 'llmops_host_numa_cpus.%s' % key
        node = key if isinstance(key, int) and not isinstance(key, bool) else None
        if node is None and isinstance(key, str) and key.isdigit():
            node = int(key)
        if node is None:
            errors.append((where, key, 'keys are NUMA node numbers', "e.g. {0: '0-63,128-191'}"))
            continue
        try:
            intervals = parse_cpulist(value if isinstance(value, str) else str(value))
        except CpuListError as exc:
            errors.append((where, value, str(exc), 'copy it from /sys/devices/system/node/node%d/cpulist on the host'
                           % node))
            continue
        if not intervals:
            errors.append((where, value, 'a NUMA node with GPUs has CPUs', 'copy it from /sys/devices/system/node/'
                           'node%d/cpulist on the host' % node))
            continue
        out[node] = format_cpulist(intervals)
    # The kernel gives every CPU to one node: a CPU in two lists is a copy-paste mistake (the deploy would refuse it
    # later, against the host's sysfs).
    for first, second in ((a, b) for a in sorted(out) for b in sorted(out) if a < b):
        common = intersect_cpulists(out[first], out[second])
        if common:
            errors.append(('llmops_host_numa_cpus.%d' % second, out[second], 'CPUs %s are also in node %d (%s): a CPU '
                           'belongs to one NUMA node' % (common, first, out[first]), 'copy each list from '
                           '/sys/devices/system/node/node<N>/cpulist on the host'))
    return out, errors


def container_cpuset(requested, node_cpus, nodes, host):
    """The container's cpuset, decided once: {source, cpus, mems, origin}, and the (rule, fix) of a refusal or None.

    ``requested``: lxc_gpu_cpuset of the container (auto, '' or a CPU list); ``node_cpus``: numa_cpus() of its
    Proxmox host; ``nodes``: the NUMA nodes of the container's GPUs (llmops_host_gpus). ``auto`` is the union of the
    nodes' CPU lists as cpuset.cpus and the nodes as cpuset.mems, what the GPUs' local_cpulist and numa_node give on
    the host (the deploy compares the two)."""
    if requested == 'auto':
        missing = [n for n in nodes if n not in node_cpus]
        if missing or not nodes:
            return None, ('lxc_gpu_cpuset auto pins the container to the CPUs of its GPUs\' NUMA node(s) %s, and '
                          'llmops_host_numa_cpus of %s gives none for node(s) %s' % (nodes, host, missing or nodes),
                          "set llmops_host_numa_cpus of %s, e.g. {%d: '<cpulist>'} with the output of `cat "
                          "/sys/devices/system/node/node%d/cpulist` there (the local_cpulist of `ansible %s -m "
                          "llmops.inference.gpu_info`), or lxc_gpu_cpuset: '' to leave the container on every CPU"
                          % (host, (missing or nodes or [0])[0], (missing or nodes or [0])[0], host))
        cpus = format_cpulist([i for n in nodes for i in parse_cpulist(node_cpus[n])])
        origin = 'llmops_host_numa_cpus of %s (%s)' % (host, ', '.join('node %d: %s' % (n, node_cpus[n]) for n in nodes))
        return dict(source='auto', cpus=cpus, mems=format_cpulist([(n, n) for n in nodes]), origin=origin), None
    if requested == '':
        return dict(source='none', cpus=None, mems=None, origin="lxc_gpu_cpuset: ''"), None
    try:
        parse_cpulist(requested)
    except CpuListError as exc:
        return None, (str(exc), "give a CPU list such as 0-31,64-95, auto (the CPUs of the GPUs' NUMA node) or '' "
                      '(no cpuset)')
    return dict(source='explicit', cpus=requested.strip(), mems=None, origin='lxc_gpu_cpuset'), None


def _device_addresses(variables, gpus, driver, keep):
    """Addresses the gpu_partition device lists send to vfio-pci (address entries and NUMA selectors)."""
    out = {}
    for name in _DEVICE_LISTS:
        for entry in variables.get(name) or []:
            if not isinstance(entry, dict):
                continue
            target = entry.get('driver')
            if entry.get('address'):
                out[entry['address']] = target
            elif entry.get('numa_node') is not None:
                cards = [g['address'] for g in gpus if g['numa_node'] == entry['numa_node']]
                if entry.get('count') is not None:
                    cards = cards[:int(entry['count'])]
                for address in cards:
                    out[address] = target
    return dict((a, d) for a, d in out.items() if d in (driver, keep))


def resolve_proxmox(ctx):
    problems = ctx.get('problems') or Problems(ctx['host'])
    settings, variables = ctx['settings'], ctx.get('variables') or {}
    gpus = _gpus(settings, problems)
    node_cpus, errors = numa_cpus(settings.get('llmops_host_numa_cpus'))
    for where, value, rule, fix in errors:
        problems.add(where, value, rule, fix)
    nvidia, vfio = settings['llmops_host_nvidia_numa_nodes'] or [], settings['llmops_host_vfio_numa_nodes'] or []
    nodes = sorted(set(g['numa_node'] for g in gpus))
    both = sorted(set(nvidia) & set(vfio))
    if both:
        problems.add('llmops_host_vfio_numa_nodes', vfio, 'NUMA node(s) %s are also in llmops_host_nvidia_numa_nodes '
                     '%s: a card cannot stay on nvidia and go to vfio-pci' % (both, nvidia),
                     'keep each node in one list')
    for name, values in (('llmops_host_nvidia_numa_nodes', nvidia), ('llmops_host_vfio_numa_nodes', vfio)):
        empty = sorted(set(values) - set(nodes))
        if gpus and empty:
            problems.add(name, values, 'NUMA node(s) %s hold no card of llmops_host_gpus (nodes with cards: %s)'
                         % (empty, nodes), 'use nodes that hold cards')
    profile = settings['llmops_host_gpu_profile']
    if profile and profile not in (ctx.get('gpu_names') or []):
        close = nearest(profile, ctx.get('gpu_names') or [])
        problems.add('llmops_host_gpu_profile', profile, 'no such hardware profile (%s)' %
                     ', '.join(ctx.get('gpu_names') or []), 'use %s' % close if close else 'add the profile')
    driver = variables.get('gpu_partition_vfio_driver') or 'vfio-pci'
    keep = variables.get('gpu_partition_keep_driver') or 'nvidia'
    target = dict((g['address'], driver) for g in gpus if g['numa_node'] in vfio)
    target.update(dict((g['address'], keep) for g in gpus if g['numa_node'] in nvidia))
    target.update(_device_addresses(variables, gpus, driver, keep))
    vfio_addresses = sorted(a for a, d in target.items() if d == driver)
    nvidia_addresses = sorted(g['address'] for g in gpus if g['address'] not in vfio_addresses)

    containers, claimed = [], {}
    for ct in ctx.get('containers') or []:
        addresses = sorted(set([g['address'] for g in gpus if g['numa_node'] == ct.get('numa_node')]
                               + list(ct.get('addresses') or [])))
        for address in addresses:
            if address in vfio_addresses:
                problems.add('%s: llmops_lxc_numa_node/lxc_gpu_addresses' % ct['host'], address,
                             'the container %s would get %s, which %s binds to %s for the VMs'
                             % (ct['host'], address, ctx['host'], driver),
                             'give the container cards that stay on %s, or move the card out of the vfio list' % keep)
            elif address not in [g['address'] for g in gpus] and gpus:
                problems.add('%s: lxc_gpu_addresses' % ct['host'], address, 'not a card of llmops_host_gpus of %s'
                             % ctx['host'], 'use an address of that list')
            if address in claimed:
                problems.add('%s: llmops_lxc_numa_node' % ct['host'], address, 'also given to %s: two containers '
                             'on one GPU compete for its memory' % claimed[address],
                             'give each container its own cards (another NUMA node or lxc_gpu_addresses)')
            claimed.setdefault(address, ct['host'])
        containers.append(dict(host=ct['host'], ctid=ct.get('ctid'), numa_node=ct.get('numa_node'),
                               addresses=addresses))
    ctids = [c['ctid'] for c in containers if c['ctid'] is not None]
    for ctid in sorted(set(c for c in ctids if ctids.count(c) > 1)):
        problems.add('llmops_lxc_ctid', ctid, 'two containers of %s have VMID %s (%s)' % (
            ctx['host'], ctid, ', '.join(c['host'] for c in containers if c['ctid'] == ctid)), 'give each its own VMID')
    vfio_vms = resolve_vms(settings['llmops_host_vfio_vms'], vfio_addresses,
                           dict((c['ctid'], c['host']) for c in containers if c['ctid'] is not None), problems)
    deployment = dict(schema=SCHEMA, kind='proxmox_host', host=ctx['host'], gpus=gpus, gpu_profile=profile,
                      vfio_vms=vfio_vms,
                      nvidia_numa_nodes=nvidia, vfio_numa_nodes=vfio, vfio_addresses=vfio_addresses,
                      nvidia_addresses=nvidia_addresses, sev_snp=bool(settings['llmops_host_sev_snp']),
                      numa_cpus=dict(('%d' % n, c) for n, c in sorted(node_cpus.items())),
                      nccl_p2p_trusted=settings['llmops_nccl_p2p_trusted'], containers=containers)
    return deployment, problems
