# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The nodes of a TP group checked against each other before any of them changes. Pure, stdlib only.

``check_facts`` compares what tp_node_info read on every node with the head's (the NVIDIA kernel module, the SGLang,
torch and NCCL the nodes will run, the Python the virtualenvs come from), and each node with the group's rendered
settings (its GPUs, its interface and address, the head's rendezvous ports); ``probe_plan`` says which ports each
node listens on and connects to for tp_port_probe, and ``check_probe`` turns the probe's results into refusals that
name the pair of nodes and the port. A refusal: dict(node, rank, check, message, fix).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_IP = re.compile(r'^[0-9.]+$|:')


def _silent(problems, item, group, stage, what):
    """A node that did not report a stage of the group preflight: the group starts as one, so it is refused."""
    _problem(problems, item, stage, 'did not report %s' % what,
             'run the deploy for every node of TP group %s together' % group['name'])


def _problem(out, item, check, message, fix):
    out.append(dict(node=item['host'], rank=item['node_rank'], check=check, message=message, fix=fix))


def _will_run(facts, install, lock_nccl):
    """(sglang, torch, nccl) a node will run: what the virtualenv has, or after the install, its Python's lock."""
    venv = facts.get('venv') or {}
    if install:
        return None, None, (lock_nccl or {}).get(facts.get('python'))
    return venv.get('sglang'), venv.get('torch'), venv.get('nccl')


def check_facts(group, facts, pin, install=True, lock_nccl=None, check_gpus=True, revisions=None):
    """Refusals and warnings of the whole group (each node's tp_node_info result in facts[host], None when it did not
    report). pin: the SGLang version of the deployment; lock_nccl: {python X.Y: 'nvidia-nccl-cuNN X' of that
    Python's lock}; revisions: {host: (repo_id, model revision)} of each node's llmops_deployment (after the
    preflight resolved branches to commits)."""
    problems, warnings = [], []
    ranks = group['ranks']
    head = ranks[0]
    missing = [r for r in ranks if not facts.get(r['host'])]
    for item in missing:
        _silent(problems, item, group, 'reported', 'its facts (unreachable, failed earlier, or not in this run: --limit)')
    if missing:
        return problems, warnings
    ref = facts[head['host']]
    ref_run = _will_run(ref, install, lock_nccl)
    revisions = revisions or {}
    for item in ranks:
        node = facts[item['host']]
        if node.get('driver') != ref.get('driver'):
            _problem(problems, item, 'driver', 'NVIDIA kernel module %s, the head %s has %s: every node of TP group %s '
                     'must load the same driver (NCCL and the CUDA runtime of one SGLang install talk to all of them)'
                     % (node.get('driver') or 'not loaded', head['host'], ref.get('driver') or 'none', group['name']),
                     'install driver %s on %s (or upgrade every node to one version)'
                     % (ref.get('driver'), item['host']))
        if install and node.get('python') != ref.get('python'):
            _problem(problems, item, 'python', 'makes the SGLang virtualenv from Python %s, the head %s from %s: the '
                     'nodes would install from different locks (NCCL %s vs %s)' % (
                         node.get('python'), head['host'], ref.get('python'),
                         (lock_nccl or {}).get(node.get('python')) or 'not locked',
                         (lock_nccl or {}).get(ref.get('python')) or 'not locked'),
                     'give every node the same sglang_server_python (a Python %s)' % ref.get('python'))
        run = _will_run(node, install, lock_nccl)
        for index, what in ((0, 'SGLang'), (1, 'torch'), (2, 'NCCL')):
            if not install and run[index] != ref_run[index]:
                _problem(problems, item, 'versions', '%s %s in %s, the head %s has %s' % (
                    what, run[index] or 'missing', (node.get('venv') or {}).get('path'), head['host'],
                    ref_run[index] or 'missing'), 'install the same SGLang lock on every node (sglang_server_install: '
                    'true installs it from profiles/locks)')
        if not install and run[0] is not None and run[0] != pin:
            _problem(problems, item, 'versions', 'SGLang %s in its virtualenv, the deployment pins %s' % (run[0], pin),
                     'install SGLang %s (sglang_server_install: true)' % pin)
        if revisions.get(item['host']) != revisions.get(head['host']):
            _problem(problems, item, 'model', 'serves %s@%s, the head %s %s@%s: every node loads its shard of the '
                     'same checkpoint' % (revisions.get(item['host'], ('?', '?')) + (head['host'],)
                                          + revisions.get(head['host'], ('?', '?'))),
                     'give every node of %s the same model revision (its entries in the lock file, or '
                     'llmops_model_revision: <commit> in the group_vars)' % group['name'])
        _check_node(group, item, node, problems, check_gpus)
    _check_ports(group, head, facts[head['host']], problems, warnings)
    return problems, warnings


def _check_node(group, item, node, problems, check_gpus):
    per_node = group.get('gpus_per_node')
    count = node.get('gpu_count')
    if check_gpus and per_node and count is not None:
        if count < per_node:
            _problem(problems, item, 'gpus', 'nvidia-smi lists %d GPU(s), its share of TP%d over %d nodes is %d'
                     % (count, per_node * group['nnodes'], group['nnodes'], per_node),
                     'give %s %d GPUs, or lower llmops_tp_size' % (item['host'], per_node))
        elif item['gpu_indices'] and max(item['gpu_indices']) >= count:
            _problem(problems, item, 'gpus', 'llmops_gpu_indices %s, but nvidia-smi lists only %d GPU(s)'
                     % (item['gpu_indices'], count), 'list indices below %d' % count)
    seen = []
    for name in (item['ifname'] or '').split(','):
        info = (node.get('interfaces') or {}).get(name) or {}
        if not info.get('exists'):
            _problem(problems, item, 'interface', 'has no interface %s (llmops_nccl_socket_ifname): NCCL and gloo '
                     'would fail with "no socket interface found" / "Unable to find address for: %s"' % (name, name),
                     'set llmops_nccl_socket_ifname of %s to its inter-node interface (ip -br addr)' % item['host'])
            continue
        if not info.get('up'):
            _problem(problems, item, 'interface', 'interface %s is down' % name, 'bring %s up (ip link set %s up)'
                     % (name, name))
        seen += info.get('addresses') or []
    if seen and _IP.search(item['address']) and item['address'] not in seen:
        _problem(problems, item, 'address', 'llmops_node_address %s is not an address of %s (it has %s)'
                 % (item['address'], item['ifname'], ', '.join(seen)),
                 'set llmops_node_address of %s to one of %s' % (item['host'], ', '.join(seen)))


def _check_ports(group, head, node, problems, warnings):
    block = group['port_block']
    busy = [p for p in block if p in (node.get('listening') or [])]
    if busy and not node.get('unit_active'):
        _problem(problems, head, 'ports', 'something listens on the rendezvous port%s %s of the head, and it is not '
                 'the group\'s own service: SGLang would fail with "The server socket has failed to listen ... address '
                 'already in use"' % ('s' if len(busy) > 1 else '', ', '.join(str(p) for p in busy)),
                 'stop what listens there (ss -ltnp "sport = :%d"), or choose another llmops_dist_init_port' % busy[0])
    low_high = node.get('ephemeral_range')
    if low_high and any(low_high[0] <= p <= low_high[1] for p in block):
        warnings.append('%s: the rendezvous port%s %s lie%s in the head\'s ephemeral range %d-%d '
                        '(net.ipv4.ip_local_port_range): an outgoing connection may hold one when the group starts; '
                        'prefer an llmops_dist_init_port below %d' % (
                            head['host'], 's' if len(block) > 1 else '', ', '.join(str(p) for p in block),
                            '' if len(block) > 1 else 's', low_high[0], low_high[1], low_high[0]))


def probe_plan(group, facts):
    """{host: dict(address, listen, connect, expect)}: the head's rendezvous ports (unless its running group holds
    them) and one ephemeral-range port per node, each reached from every other node."""
    ports = {}
    for item in group['ranks']:
        node = facts.get(item['host']) or {}
        listen = list(node.get('probe_ports') or [])[:1]
        if item['node_rank'] == 0 and not node.get('unit_active'):
            listen = list(group['port_block']) + listen
        ports[item['host']] = listen
    plan = {}
    for item in group['ranks']:
        others = [r for r in group['ranks'] if r['host'] != item['host']]
        plan[item['host']] = dict(
            address=item['address'], listen=ports[item['host']],
            connect=[dict(host=r['host'], address=r['address'], port=p) for r in others for p in ports[r['host']]],
            expect=dict((str(p), [r['host'] for r in others]) for p in ports[item['host']]))
    return plan


def check_probe(group, results):
    """Refusals of the probe results ({host: tp_port_probe result, or None}): per failed connection the pair and the
    port, per listener that could not bind the node and the port."""
    problems = []
    by_host = dict((r['host'], r) for r in group['ranks'])
    block = set(group['port_block'])
    for item in group['ranks']:
        result = results.get(item['host'])
        if not result:
            _silent(problems, item, group, 'probe', 'its TCP probe')
            continue
        for entry in result.get('listen') or []:
            if not entry.get('bound'):
                why = 'cannot listen on %s:%d: %s' % (item['address'], entry['port'], entry.get('error'))
                fix = 'free port %d on %s, or check that %s is its address' % (entry['port'], item['host'],
                                                                               item['address'])
                _problem(problems, item, 'probe', why, fix)
        for entry in result.get('connect') or []:
            if entry.get('ok'):
                continue
            what = 'the rendezvous (--dist-init-addr)' if entry['port'] in block and \
                by_host.get(entry['host'], {}).get('node_rank') == 0 else 'a port of its ephemeral range (NCCL/gloo)'
            _problem(problems, item, 'probe', 'cannot reach %s at %s:%d, %s: %s after %s attempt(s)' % (
                entry['host'], entry['address'], entry['port'], what, entry.get('error'), entry.get('attempts')),
                'open TCP %d and the ephemeral port range of %s to %s (firewall, security group, route), and check '
                'llmops_node_address of %s' % (entry['port'], entry['host'], item['host'], entry['host']))
    return problems


def check_model(group, results):
    """Refusals of the models the nodes downloaded and verified ({host: hf_model_result or None}): every node must
    hold the head's commit, with the same files and bytes, before any of them starts."""
    problems = []
    head = group['ranks'][0]
    ref = results.get(head['host']) or {}
    for item in group['ranks']:
        got = results.get(item['host'])
        if not got:
            _silent(problems, item, group, 'model', 'a verified model (hf_model_result)')
            continue
        mine = (got.get('repo_id'), got.get('revision'), got.get('files'), got.get('bytes'))
        theirs = (ref.get('repo_id'), ref.get('revision'), ref.get('files'), ref.get('bytes'))
        if mine != theirs:
            _problem(problems, item, 'model', 'verified %s@%s (%s files, %s bytes) in %s, the head %s verified '
                     '%s@%s (%s files, %s bytes)' % (mine[:2] + mine[2:] + (got.get('path'), head['host']) + theirs),
                     'give every node the same model revision and let hf_model verify it again')
    return problems


def check_nodes(group, results):
    """Refusals of the multi-node all-reduce (gpu_p2p_check with nnodes, {host: result or None}): every node's verdict
    must be nodes_ok; a broken node is named with its reason (and the failure catalogue's signature)."""
    problems = []
    for item in group['ranks']:
        got = results.get(item['host'])
        if not got or not got.get('verdict'):
            _silent(problems, item, group, 'nccl', 'the all-reduce across the nodes%s'
                    % (': %s' % got.get('msg') if got and got.get('msg') else ''))
        elif got['verdict'] != 'nodes_ok':
            diagnosis = got.get('diagnosis') or {}
            _problem(problems, item, 'nccl', got.get('reason') or got['verdict'],
                     diagnosis.get('fix') or 'read the evidence of gpu_p2p_check on %s (NCCL_DEBUG=INFO lines)'
                     % item['host'])
    return problems


def message(group, host, problems, stage):
    """The refusal text of one node's run: every problem of the group, numbered, each naming its node."""
    lines = ['%s: TP group %s (%s): %d problem%s, nothing was changed on any host:' % (
        host, group['name'], stage, len(problems), '' if len(problems) == 1 else 's')]
    for index, item in enumerate(problems, 1):
        lines.append('%d. %s (rank %d): %s. Fix: %s.'
                     % (index, item['node'], item['rank'], item['message'].rstrip('.'), item['fix'].rstrip('.')))
    return '\n'.join(lines)
