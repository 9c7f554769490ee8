# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One model across hosts: the tensor-parallel group a server is a node of, resolved on the controller.

PRIVATE to the collection. Pure functions. A TP group is an inventory group (its name in ``llmops_tp_group``) whose
hosts, all of ``sglang_servers``, run one SGLang server together (``--nnodes`` = their number); each node's rank is
``llmops_node_rank`` (never the inventory order), the head (rank 0) is the only node that serves HTTP, and its
``llmops_node_address`` with ``llmops_dist_init_port`` is ``--dist-init-addr``. ``read()`` finds the group from
the host's and its peers' variables (the deployment_info action's ``vars_of``) and refuses, naming the node, what
SGLang would not start with or would start wrongly: missing or repeated ranks, a node whose serving settings differ
from the head's, a missing interface or address. ``finish()`` adds what needs the resolved TP size: the GPUs and TP
ranks of each node, the rendezvous port block, the environment of the inter-node network.

What the pinned SGLang release does with these (its source, srt/):
  - entrypoints/engine.py:2045-2075 ``_calculate_rank_ranges``: node r runs TP ranks [r*k, (r+1)*k), k = tp / nnodes.
  - distributed/bootstrap.py:233-249 ``_resolve_dist_init_method``: with --dist-init-addr every rank rendezvouses at
    tcp://<addr> (torch's TCPStore, served by global rank 0 on the head; the node's own nccl_port is not used).
  - server_args.py:820-848 ``PortArgs.init_new``: with DP attention the head also binds port+1 .. port+6 (ZMQ).
  - entrypoints/engine.py:1234-1290: a node of rank >= 1 runs no tokenizer or HTTP server, only a dummy health server
    on --host/--port whose /health always answers 200, and ignores SIGTERM until rank 0's ShutdownReq arrives.
  - arg_groups/validation_hook.py:179: tp_size x pp_size must be divisible by nnodes (sglang_flags pre-check).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import inputs as deployment_inputs
from ansible_collections.llmops.inference.plugins.module_utils.common.choosing import nearest
from ansible_collections.llmops.inference.plugins.module_utils.sglang.flags import gpus_per_node
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.problems import NOVALUE, Problems
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.spec import VARIABLES

# Settings that may differ between the nodes of a group: where the node is and what its own GPUs and links are.
# Every other server setting must be the head's (the nodes run one server; SGLang does not compare them).
PER_NODE = (
    'llmops_node_rank', 'llmops_node_address', 'llmops_nccl_socket_ifname', 'llmops_gpu_indices',
    'llmops_nccl_p2p_disable', 'llmops_host_sev_snp', 'llmops_nccl_p2p_trusted',
    'llmops_lxc_host', 'llmops_lxc_ctid', 'llmops_lxc_numa_node',
    'llmops_record_dir', 'llmops_model_lock_file', 'llmops_plan_output_dir', 'llmops_play_hosts',
    'llmops_deploy_check_driver', 'llmops_deploy_check_gpus', 'llmops_deploy_p2p_check', 'llmops_p2p_recheck',
    # The head binds it for clients; the other nodes bind their health stub to 127.0.0.1. The gateway connects to
    # the head only.
    'llmops_http_host', 'llmops_gateway_worker_address',
)
# Environment the group's settings render; llmops_environment must not set them a second time.
NETWORK_ENV = ('NCCL_SOCKET_IFNAME', 'GLOO_SOCKET_IFNAME', 'NCCL_IB_DISABLE', 'NCCL_IB_HCA')
# Set only in a group (the others have defaults that mean nothing on a single node).
_GROUP_ONLY = ('llmops_node_rank', 'llmops_node_address', 'llmops_nccl_socket_ifname', 'llmops_nccl_ib_hca')
# server_args.py:835 NUM_DERIVED_PORTS (6) after the rendezvous port itself, with DP attention only.
DP_DERIVED_PORTS = 6
# The group link of the sglang_server role's launcher listens on every node one port below the rendezvous port.
LINK_PORT_OFFSET = -1
# Seconds the launcher gives SGLang between SIGTERM and SIGKILL when the group goes down (or the node is stopped).
LINK_STOP_GRACE = 10
_IFNAME = re.compile(r'^[A-Za-z0-9_.@-]{1,15}(,[A-Za-z0-9_.@-]{1,15})*$')
_HOSTNAME = re.compile(r'^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}'
                       r'[A-Za-z0-9])?)*$')
_IPV4 = re.compile(r'^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$')


def _is_ipv6(text):
    if ':' not in text or not re.match(r'^[0-9A-Fa-f:.]+$', text) or text.count('::') > 1:
        return False
    parts = text.split(':')
    return 3 <= len(parts) <= 8 or ('::' in text and len(parts) <= 9)


def address_problem(value):
    """Why an address cannot be a node address (None when it can): an IP literal or a host name, never a wildcard."""
    text = str(value)
    if text in ('0.0.0.0', '::', '', 'localhost') or text.startswith('127.') or text == '::1':
        return 'a wildcard or loopback address cannot be reached from the other nodes'
    if _IPV4.match(text) or _is_ipv6(text):
        return None
    if re.match(r'^[\d.]+$', text) or not _HOSTNAME.match(text):
        return 'not an IPv4/IPv6 address or a host name'
    return None


def host_port(address, port):
    """address:port as SGLang's NetworkAddress.parse reads it ([v6]:port for IPv6)."""
    return '[%s]:%d' % (address, port) if ':' in str(address) else '%s:%d' % (address, port)


def port_block(port, dp_attention):
    """The head's rendezvous ports: the TCPStore's, plus SGLang's ZMQ ports with DP attention (server_args.py:838-848:
    port_base = port + 1, or port - 7 when that would pass 65535)."""
    if not dp_attention:
        return [port]
    base = port - DP_DERIVED_PORTS - 1 if port + DP_DERIVED_PORTS > 65535 else port + 1
    return sorted(set([port] + list(range(base, base + DP_DERIVED_PORTS))))


def _settings_of(request, name):
    """The coerced llmops_* settings of another host, its own deployment_overrides applied (its own problems are its
    own resolution's)."""
    variables = request['vars_of'](name)
    overrides = variables.get('deployment_overrides')
    values, dummy = deployment_inputs.read(variables, overrides if isinstance(overrides, dict) else {}, Problems(name), 'server')
    return values


def _members(request, settings, problems, name):
    """The hosts of the group, or None when it cannot be formed."""
    groups = request.get('groups') or {}
    host = request['host']
    if name not in groups:
        close = nearest(name, [g for g in groups if g not in ('all', 'ungrouped')])
        problems.add('llmops_tp_group', name, 'no inventory group of that name: a TP group is the inventory group of '
                     'its nodes', 'put the nodes in a group %s (and set llmops_tp_group in its group_vars)%s'
                     % (name, ', or use %s' % close if close else ''))
        return None
    members = list(groups[name])
    if host not in members:
        rule = '%s is not a host of the inventory group %s (%s)' % (host, name, ', '.join(members) or 'empty')
        fix = 'add %s to the group %s, or set llmops_tp_group to the group it is in' % (host, name)
        problems.add('llmops_tp_group', name, rule, fix)
        return None
    servers = groups.get('sglang_servers') or []
    outside = [m for m in members if m not in servers]
    if outside:
        problems.add('llmops_tp_group', name, 'every node of a TP group is an SGLang server, but %s %s not in '
                     'sglang_servers' % (', '.join(outside), 'is' if len(outside) == 1 else 'are'),
                     'make %s a child group of sglang_servers (or add the hosts there)' % name)
        return None
    if len(members) < 2:
        problems.add('llmops_tp_group', name, 'the group has one node (%s): a TP group spans at least 2 hosts'
                     % host, 'add the other nodes to %s, or remove llmops_tp_group for a single-node server' % name)
        return None
    return members


def _check_ranks(host, name, ranked, problems):
    """ranked: {member: rank or None}. Each rank 0..n-1 exactly once; the refusal names the nodes."""
    n = len(ranked)
    mine = ranked[host]
    if mine is None:
        problems.add('llmops_node_rank', NOVALUE, 'is required on every node of TP group %s (the node rank never '
                     'comes from the inventory order)' % name, 'set llmops_node_rank: <0..%d> in the host_vars of %s '
                     '(0 is the head, which serves HTTP)' % (n - 1, host))
        return False
    if not 0 <= mine < n:
        problems.add('llmops_node_rank', mine, 'TP group %s has %d nodes, so the ranks are 0..%d' % (name, n, n - 1),
                     'give each of %s one of 0..%d' % (', '.join(sorted(ranked)), n - 1))
        return False
    same = sorted(m for m, r in ranked.items() if r == mine and m != host)
    if same:
        problems.add('llmops_node_rank', mine, 'rank %d of TP group %s is also given to %s' % (mine, name,
                     ', '.join(same)), 'give every node of %s its own rank 0..%d' % (name, n - 1))
        return False
    missing = sorted(set(range(n)) - set(r for r in ranked.values() if r is not None))
    if missing:
        unranked = sorted(m for m, r in ranked.items() if r is None or not 0 <= r < n)
        problems.add('llmops_tp_group', name, 'rank%s %s of the %d nodes %s not given%s' % (
            's' if len(missing) > 1 else '', ', '.join(str(r) for r in missing), n,
            'are' if len(missing) > 1 else 'is',
            ' (%s has none or an invalid one)' % ', '.join(unranked) if unranked else ''),
            'give every node of %s its own llmops_node_rank 0..%d' % (name, n - 1))
        return False
    return True


def _check_same(host, head, mine, theirs, name, problems, compared):
    for key in compared:
        if mine.get(key) != theirs.get(key):
            problems.add(key, mine.get(key) if mine.get(key) is not None else NOVALUE,
                         'differs within TP group %s: the head %s (rank 0) has %s, and every node runs the same server '
                         '(SGLang does not compare them: the nodes would plan and shard differently)'
                         % (name, head, 'null' if theirs.get(key) is None else repr(theirs.get(key))),
                         'set %s once in the group_vars of %s (and remove what overrides it on %s)' % (key, name, host))


def read(request, settings, problems):
    """The TP group of the host (None for a single-node server), with refusals in problems.

    Returns dict(name, members, nnodes, node_rank, head, is_head, ranks (sorted
    by rank: host, node_rank, address, ifname, gpu_indices, settings), dist_init_addr, ...) or None.
    """
    name = settings['llmops_tp_group']
    host = request['host']
    if not name:
        for key in _GROUP_ONLY:
            if settings.get(key) is not None:
                problems.add(key, settings[key], 'is set but llmops_tp_group is not (only a node of a multi-node TP '
                             'group has it)', 'set llmops_tp_group to the inventory group of the nodes, or remove %s'
                             % key)
        return None
    members = _members(request, settings, problems, name)
    if members is None:
        return None
    node_settings = dict((m, settings if m == host else _settings_of(request, m)) for m in members)
    other = sorted(m for m in members if node_settings[m]['llmops_tp_group'] != name)
    if other:
        problems.add('llmops_tp_group', name, '%s of the group %s name%s another TP group (%s): a host is a node '
                     'of one group' % (', '.join(other), name, 's' if len(other) == 1 else '',
                                       ', '.join(repr(node_settings[m]['llmops_tp_group']) for m in other)),
                     'set llmops_tp_group: %s in the group_vars of %s and nowhere else' % (name, name))
        return None
    ranked = dict((m, node_settings[m]['llmops_node_rank']) for m in members)
    if not _check_ranks(host, name, ranked, problems):
        return None
    by_rank = sorted(members, key=lambda m: ranked[m])
    head = by_rank[0]
    ok = _check_node(host, name, settings, members, node_settings, ranked, problems)
    if host != head:
        compared = [v['name'] for v in VARIABLES if v['scope'] in ('server', 'any') and not v['plan_only']
                    and not v['secret'] and v['name'] not in PER_NODE]
        before = len(problems)
        _check_same(host, head, settings, node_settings[head], name, problems, compared)
        ok = ok and len(problems) == before
    if not ok:
        return None
    return _group(host, name, settings, members, node_settings, ranked, by_rank)


def _check_node(host, name, settings, members, node_settings, ranked, problems):
    """This node's own settings of the group: its address and interface, no network environment of its own, no
    variants. False when one is refused."""
    ok = True
    for key, rule in (('llmops_node_address', 'the address of this node on the inter-node network'),
                      ('llmops_nccl_socket_ifname', 'the interface of that network (NCCL_SOCKET_IFNAME and '
                                                    'GLOO_SOCKET_IFNAME)')):
        if not settings[key]:
            problems.add(key, NOVALUE, 'is required on every node of TP group %s: %s' % (name, rule),
                         'set %s in the host_vars of %s' % (key, host))
            ok = False
    address = settings['llmops_node_address']
    why = address_problem(address) if address else None
    if why:
        problems.add('llmops_node_address', address, why, 'give the address of %s on the network of '
                     'llmops_nccl_socket_ifname, e.g. 10.10.0.%d' % (host, ranked[host] + 1))
        ok = False
    twins = sorted(m for m in members if m != host and address and node_settings[m]['llmops_node_address'] == address)
    if twins:
        problems.add('llmops_node_address', address, 'is also the address of %s: every node of TP group %s is '
                     'a host of its own' % (', '.join(twins), name), 'give each node its own address')
        ok = False
    ifname = settings['llmops_nccl_socket_ifname']
    if ifname and not _IFNAME.match(ifname):
        problems.add('llmops_nccl_socket_ifname', ifname, 'must be an interface name (or names, comma-separated): gloo '
                     "reads GLOO_SOCKET_IFNAME literally, so NCCL's ^prefix and =exact forms do not work for it",
                     'give the interface as `ip link` names it, e.g. ens5f0')
        ok = False
    env = settings['llmops_environment'] or {}
    for key in NETWORK_ENV:
        if key in env:
            problems.add('llmops_environment.%s' % key, env[key], 'a TP group renders %s from llmops_nccl_socket_ifname '
                         'and llmops_nccl_ib_hca' % key, 'remove it from llmops_environment and set %s' % (
                             'llmops_nccl_ib_hca' if 'IB' in key else 'llmops_nccl_socket_ifname'))
            ok = False
    if settings['llmops_variants']:
        problems.add('llmops_variants', [v.get('name') if isinstance(v, dict) else v for v in settings['llmops_variants']],
                     'A/B variants restart the service of one host, but a node of TP group %s cannot restart alone'
                     % name, 'remove llmops_variants from the nodes of %s (benchmark variants as separate deploys)'
                     % name)
        ok = False
    return ok


def _group(host, name, settings, members, node_settings, ranked, by_rank):
    """The group as this node sees it (read's result), from the checked settings of its nodes."""
    head = by_rank[0]
    ranks = [dict(host=m, node_rank=ranked[m], address=node_settings[m]['llmops_node_address'],
                  ifname=node_settings[m]['llmops_nccl_socket_ifname'],
                  gpu_indices=list(node_settings[m]['llmops_gpu_indices'] or []),
                  lxc_host=node_settings[m]['llmops_lxc_host']) for m in by_rank]
    port = node_settings[head]['llmops_dist_init_port']
    return dict(name=name, nnodes=len(members), node_rank=ranked[host], head=head, is_head=host == head,
                role='head' if host == head else 'follower', ranks=ranks,
                head_address=node_settings[head]['llmops_node_address'], dist_init_port=port,
                dist_init_addr=host_port(node_settings[head]['llmops_node_address'], port),
                dist_timeout=settings['llmops_dist_timeout'], ifname=settings['llmops_nccl_socket_ifname'],
                ib_hca=settings['llmops_nccl_ib_hca'],
                head_http_host=node_settings[head]['llmops_http_host'])


def environment(group):
    """The inter-node network environment of this node: interface for NCCL and gloo, InfiniBand on or off."""
    env = {'NCCL_SOCKET_IFNAME': group['ifname'], 'GLOO_SOCKET_IFNAME': group['ifname']}
    if group['ib_hca']:
        env['NCCL_IB_HCA'] = group['ib_hca']
    else:
        env['NCCL_IB_DISABLE'] = '1'
    return env


def link(group, formed_when):
    """The launcher's group link of this node (sglang-launch, LLMOPS_TP_GROUP_LINK): where it listens, the other nodes'
    link ports, the release's log lines that say the rendezvous is done, the stop grace."""
    mine = next(r for r in group['ranks'] if r['node_rank'] == group['node_rank'])
    return dict(host=mine['host'], listen=host_port(mine['address'], group['link_port']),
                peers=[dict(host=r['host'], address=r['address'], port=group['link_port'])
                       for r in group['ranks'] if r['host'] != mine['host']],
                formed_when=[m for m in formed_when if m], stop_grace=LINK_STOP_GRACE)


def finish(group, tp, dp_attention, http_port, problems, formed_when=()):
    """What needs the resolved TP size: GPUs and TP ranks per node, the port block, the group link; refusals in
    problems. formed_when: the release's log lines after the rendezvous (profiles/sglang_releases.yml parallel_end)."""
    nnodes = group['nnodes']
    per_node = gpus_per_node(tp, nnodes)  # None: sglang_flags refuses tp_nnodes
    group['gpus_per_node'] = per_node
    for item in group['ranks']:
        item['tp_ranks'] = ([item['node_rank'] * per_node, (item['node_rank'] + 1) * per_node - 1]
                            if per_node else None)
    block = port_block(group['dist_init_port'], dp_attention)
    group['port_block'] = block
    if group['is_head'] and http_port in block:
        problems.add('llmops_dist_init_port', group['dist_init_port'], 'the head binds the rendezvous port%s %s, and '
                     'llmops_http_port %d is one of them' % ('s' if len(block) > 1 else '', _ports_text(block),
                                                             http_port),
                     'choose an llmops_dist_init_port outside %d..%d (e.g. 20000)' % (
                         http_port - len(block), http_port))
    group['link_port'] = group['dist_init_port'] + LINK_PORT_OFFSET
    if group['link_port'] < 1 or group['link_port'] == http_port or group['link_port'] in block:
        problems.add('llmops_dist_init_port', group['dist_init_port'], 'the group link of the launcher listens on '
                     'llmops_dist_init_port - 1 = %d on every node, which is %s' % (
                         group['link_port'], 'not a port' if group['link_port'] < 1 else 'taken by SGLang'),
                     'choose another llmops_dist_init_port (e.g. 20000)')
    group['link'] = link(group, formed_when)
    group['env'] = environment(group)
    return group


def _ports_text(block):
    return '%d-%d' % (block[0], block[-1]) if len(block) > 1 else str(block[0])


def public(group):
    """The group as llmops_deployment.tp_group publishes it (docs/multinode.md)."""
    if not group:
        return None
    keys = ('name', 'nnodes', 'node_rank', 'role', 'head', 'head_address', 'dist_init_addr', 'dist_init_port',
            'dist_timeout', 'port_block', 'link_port', 'link', 'ifname', 'ib_hca', 'env', 'gpus_per_node', 'ranks')
    return dict((k, group.get(k)) for k in keys)
