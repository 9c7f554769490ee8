# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The playbook runs of runme.sh (json callback), case by case: what each node's modules returned."""

import json
import os
import re
import sys


def results(path):
    """[(task name, host, result)] in order."""
    with open(path) as handle:
        text = handle.read()
    data = json.loads(text[text.index('{'):])
    out = []
    for play in data['plays']:
        for task in play['tasks']:
            for host, result in task['hosts'].items():
                out.append((task['task']['name'], host, result))
    return out


def flat(text):
    return re.sub(r'\s+', ' ', text or '')


def good(path, rendezvous, if_a, if_b):
    runs = results(path)
    probes = dict((h, r) for n, h, r in runs if n == 'Wait for the probe of this node')
    assert set(probes) == {'tp-node-a', 'tp-node-b'}, probes.keys()
    for host, probe in probes.items():
        assert probe['ok'] and all(c['ok'] for c in probe['connect']), probe
        assert probe['seconds'] < 20, probe['seconds']
    head = [entry['port'] for entry in probes['tp-node-a']['listen']]
    assert int(rendezvous.rsplit(':', 1)[1]) in head, head
    reached = [c for c in probes['tp-node-b']['connect'] if c['port'] == int(rendezvous.rsplit(':', 1)[1])]
    assert reached and reached[0]['address'] == rendezvous.rsplit(':', 1)[0], probes['tp-node-b']['connect']
    nccl = dict((h, r) for n, h, r in runs if n == 'Wait for the all-reduce of this node')
    started = dict((h, r) for n, h, r in runs if n.startswith('Start the all-reduce across the nodes'))
    for host, ifname in (('tp-node-a', if_a), ('tp-node-b', if_b)):
        result = nccl[host]
        assert result.get('verdict') == 'nodes_ok', result.get('reason') or result.get('msg')
        assert result['nodes']['dist_init_addr'] == rendezvous and result['nodes']['backend'] == 'gloo', result['nodes']
        assert result['nodes']['world'] == 2, result['nodes']
        args = started[host]['invocation']['module_args'] if 'invocation' in started[host] else None
        if args:
            assert args['environment']['GLOO_SOCKET_IFNAME'] == ifname, args['environment']
        print('%s: %s' % (host, result['reason']))
    gate = [r for n, h, r in runs if n == 'Refuse the group unless every node all-reduced correctly']
    assert len(gate) == 2 and not any(r.get('failed') for r in gate), gate


def refused(path, *texts):
    runs = results(path)
    failed = [(n, h, r) for n, h, r in runs if r.get('failed')]
    assert failed, 'nothing failed'
    name, host, result = failed[0]
    msg = flat(result.get('msg'))
    for text in texts:
        assert text in msg, (text, msg)
    assert 'nothing was changed on any host' in msg and 'Fix: ' in msg, msg
    print('%s: %s' % (host, msg))
    return runs


def main(case, path, *args):
    if case == 'good':
        good(path, *args)
    elif case == 'unreachable':
        host, port = args[0].rsplit(':', 1)
        runs = refused(path, 'tp-node-b (rank 1): cannot reach tp-node-a at %s:%s, the rendezvous (--dist-init-addr)'
                       % (host, port), 'Fix: open TCP %s' % port)
        probe = [r for n, h, r in runs if n == 'Wait for the probe of this node' and h == 'tp-node-b'][0]
        # Bounded: the probe gave up at its deadline (20 s), not at a TCP timeout of minutes.
        assert probe['seconds'] <= 25, probe['seconds']
    elif case == 'mismatch':
        # The head runs the lab venv of the pin: args[0] is the collection root (tests/tools/collection_paths.py).
        sys.path.insert(0, os.path.join(args[0], 'tests', 'tools'))
        from collection_paths import PIN  # pylint: disable=import-outside-toplevel
        refused(path, 'tp-node-b (rank 1): SGLang missing in', 'the head tp-node-a has %s' % PIN)
    else:
        raise SystemExit('unknown case %s' % case)
    return 0


if __name__ == '__main__':
    sys.exit(main(*sys.argv[1:]))
