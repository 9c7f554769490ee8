# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""make plan of inventories/multinode (runme.sh case 1): each node's unit states its rank, the head's rendezvous, its
bind address, the inter-node environment and its launcher's group link to the other node; the two units differ in
nothing else; plan.md has the topology."""

import json
import os
import re
import shlex
import sys

UNIT = 'files/etc/systemd/system/sglang-deepseek-v3.service'


def unit(plan, host):
    with open(os.path.join(plan, host, UNIT)) as handle:
        text = handle.read()
    start = re.search(r'^ExecStart=(.*)$', text, re.M).group(1)
    argv = shlex.split(start.split(' -- ', 1)[1])
    env = dict(shlex.split(line)[0].split('=', 1) for line in re.findall(r'^Environment=(.*)$', text, re.M))
    return argv, env


def flag(argv, name):
    return argv[argv.index(name) + 1]


def main(plan):
    nodes = {}
    for host, rank, bind in (('gpu-node-a', '0', '0.0.0.0'), ('gpu-node-b', '1', '127.0.0.1')):
        argv, env = unit(plan, host)
        got = [flag(argv, f) for f in ('--tp-size', '--nnodes', '--node-rank', '--dist-init-addr', '--dist-timeout',
                                       '--host', '--port')]
        want = ['16', '2', rank, '10.10.0.1:20000', '600', bind, '30000']
        assert got == want, (host, got, want)
        for key, value in (('NCCL_SOCKET_IFNAME', 'ens5f0'), ('GLOO_SOCKET_IFNAME', 'ens5f0'), ('NCCL_IB_DISABLE', '1'),
                           ('CUDA_VISIBLE_DEVICES', '0,1,2,3,4,5,6,7')):
            assert env.get(key) == value, (host, key, env)
        link = json.loads(env.pop('LLMOPS_TP_GROUP_LINK'))
        other = 'gpu-node-b' if host == 'gpu-node-a' else 'gpu-node-a'
        assert link['host'] == host and [p['host'] for p in link['peers']] == [other], link
        nodes[host] = ([a for i, a in enumerate(argv) if a not in ('--node-rank', '--host')
                        and argv[i - 1] not in ('--node-rank', '--host')], env)
        with open(os.path.join(plan, host, 'plan.md')) as handle:
            md = handle.read()
        assert '## Tensor-parallel group tp_deepseek: TP16 over 2 nodes' in md and 'This file is rank %s' % rank in md
    assert nodes['gpu-node-a'] == nodes['gpu-node-b'], 'the two units describe different servers'
    print('make plan: 2 nodes, one server (units equal but for --node-rank and --host), topology in plan.md')


if __name__ == '__main__':
    main(sys.argv[1])
