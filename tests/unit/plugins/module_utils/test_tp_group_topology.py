# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The TP group's picture and plan.md section (tp_group_topology) for a small hand-made group, every line worked
out by hand: box widths, the GPU/TP columns, the link between the boxes, the table, and what an unset value shows."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy


from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import tp_group_topology as topo

GROUP = {
    'name': 'tp_lab', 'nnodes': 2, 'node_rank': 1, 'role': 'follower', 'head': 'a', 'head_address': '10.0.0.1',
    'dist_init_addr': '10.0.0.1:20000', 'dist_init_port': 20000, 'dist_timeout': 600, 'port_block': [20000, 20001],
    'ifname': 'eth1', 'ib_hca': '', 'env': {'NCCL_SOCKET_IFNAME': 'eth1', 'GLOO_SOCKET_IFNAME': 'eth1'},
    'gpus_per_node': 4,
    'ranks': [
        {'host': 'a', 'node_rank': 0, 'address': '10.0.0.1', 'ifname': 'eth1', 'gpu_indices': [], 'tp_ranks': [0, 3]},
        {'host': 'b', 'node_rank': 1, 'address': '10.0.0.2', 'ifname': 'eth1', 'gpu_indices': [8, 9, 10, 11],
         'tp_ranks': [4, 7]},
    ],
}
ARGS = ('0.0.0.0', 30000, 'sglang.service', 'H200')


def test_the_picture_line_by_line():
    lines = topo.picture(GROUP, *ARGS)
    # the widest body line is b's health stub (71 characters): boxes are 71 + 4 = 75 wide, the link hangs at 75 // 2
    stub = 'sglang.service, health stub 127.0.0.1:30000 (always 200: never trusted)'
    assert len(stub) == 71
    boxes = [line for line in lines[1:] if line.startswith(('+', '|'))]
    assert set(len(line) for line in boxes) == {75}, lines
    assert lines[0] == 'clients / gateway --HTTP 0.0.0.0:30000--> a'
    assert lines[1] == '+-- a: rank 0, head ' + '-' * 54 + '+'
    body_a = [line[2:-2].rstrip() for line in lines[2:6]]
    assert body_a == ['10.0.0.1 on eth1, rendezvous tcp://10.0.0.1:20000 (TCPStore)',
                      'GPU  0 1 2 3   (4x H200)',  # no gpu_indices: all gpus_per_node of the node
                      'TP   0 1 2 3',
                      'sglang.service, HTTP 0.0.0.0:30000 for clients and the gateway']
    assert lines[6] == '+' + '-' * 36 + '+' + '-' * 36 + '+'
    assert lines[7] == ' ' * 37 + '|  NCCL + gloo over eth1 (InfiniBand off)'
    assert lines[7].index('|') == lines[6].index('+', 1)  # the link leaves from the joint of the box below
    assert lines[8] == '+-- b: rank 1 ' + '-' * 60 + '+'
    body_b = [line[2:-2].rstrip() for line in lines[9:13]]
    assert body_b == ['10.0.0.2 on eth1, joins tcp://10.0.0.1:20000',
                      'GPU  8 9 10 11   (4x H200)',  # each column as wide as its widest cell
                      'TP   4 5  6  7',
                      stub]
    assert lines[13] == '+' + '-' * 73 + '+' and len(lines) == 14


def test_unset_values_are_drawn_not_guessed():
    group = copy.deepcopy(GROUP)
    group.update(ib_hca='mlx5_0,mlx5_1', gpus_per_node=None)
    group['ranks'][1].update(ifname=None, tp_ranks=None, gpu_indices=[0, 1])
    lines = topo.picture(group, *ARGS)
    assert ' ' * 37 + '|  NCCL + gloo over eth1/unset (InfiniBand: mlx5_0,mlx5_1)' in lines
    b = lines[lines.index(next(line for line in lines if line.startswith('+-- b'))):]
    assert b[2][2:-2].rstrip() == 'GPU  0 1   (?x H200)' and b[3][2:-2].rstrip() == 'TP   ? ?'
    # a's GPUs without gpus_per_node and indices: none drawn
    assert lines[3][2:-2].rstrip() == 'GPU     (?x H200)'


def test_the_plan_md_section():
    md = topo.markdown(GROUP, *ARGS).splitlines()
    assert md[1] == '## Tensor-parallel group tp_lab: TP8 over 2 nodes'
    assert md[3] == ('One SGLang server across the hosts of the inventory group `tp_lab` (`--nnodes 2`, '
                     '`--dist-init-addr 10.0.0.1:20000`, `--dist-timeout 600`). This file is rank 1\'s (follower). '
                     'Only the head serves HTTP; the nodes start, fail and restart as one group, and the decode '
                     'roofline above ignores the link between the nodes.')
    start, end = md.index('```text'), md.index('```', md.index('```text') + 1)
    assert md[start + 1:end] == topo.picture(GROUP, *ARGS)
    assert md[end + 2:end + 6] == ['| node | rank | address | interface | GPUs | TP ranks | serves |',
                                   '|---|---|---|---|---|---|---|',
                                   '| a | 0 | 10.0.0.1 | eth1 | all (4) | 0-3 | HTTP 0.0.0.0:30000 |',
                                   '| b | 1 | 10.0.0.2 | eth1 | 8,9,10,11 | 4-7 | health stub only |']
    assert md[end + 7] == ('Rendezvous ports on the head: 20000, 20001. Environment of this node: '
                           'GLOO_SOCKET_IFNAME=eth1, NCCL_SOCKET_IFNAME=eth1.')


def test_the_plan_md_of_an_unsized_group():
    group = copy.deepcopy(GROUP)
    group.update(gpus_per_node=None)
    group['ranks'][0].update(tp_ranks=None, ifname='')
    md = topo.markdown(group, *ARGS)
    assert '## Tensor-parallel group tp_lab: TP? over 2 nodes' in md
    assert '| a | 0 | 10.0.0.1 | unset | all (?) | ? | HTTP 0.0.0.0:30000 |' in md


def test_a_node_without_an_interface_says_unset_in_its_box():
    group = copy.deepcopy(GROUP)
    group['ranks'][1]['ifname'] = None
    lines = topo.picture(group, *ARGS)
    b = lines[lines.index(next(line for line in lines if line.startswith('+-- b'))):]
    assert b[1][2:-2].rstrip() == '10.0.0.2 on unset, joins tcp://10.0.0.1:20000'
