# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The kernel's CPU list format and the cpuset a set of GPUs implies, on local_cpulist strings as sysfs prints them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.host.cpulist import (
    CpuListError,
    format_cpulist,
    gpu_cpuset,
    parse_cpulist,
    intersect_cpulists,
    union_cpulists,
)

# local_cpulist as read from sysfs (trailing newline included): the captured H200 VM (tests/fixtures/captured/
# host_facts_h200x2.json), the seed's two sockets in NPS1 with SMT (siblings in the upper half), a dual-socket
# Xeon with 28 cores per socket and HT.
H200_VM = '0-31\n'
SEED_NODE0 = '0-63,128-191\n'
SEED_NODE1 = '64-127,192-255\n'
XEON_NODE1 = '28-55,84-111\n'


@pytest.mark.parametrize('text, intervals', [
    (H200_VM, [(0, 31)]),
    (SEED_NODE0, [(0, 63), (128, 191)]),
    ('0-3,8\n', [(0, 3), (8, 8)]),
    ('8,0-3', [(0, 3), (8, 8)]),
    ('0-10,5-7,11', [(0, 11)]),
    ('', []),
    ('\n', []),
])
def test_parse(text, intervals):
    assert parse_cpulist(text) == intervals


@pytest.mark.parametrize('text, bad', [
    ('0-3,', "'' is neither a number"),
    ('0-3, 8', "' 8' is neither a number"),
    ('3-1', 'runs backwards'),
    ('auto', "'auto' is neither"),
    ('0-15:2/4', "'0-15:2/4' is neither"),
    ('0-3\n,8', "'0-3\\n' is neither"),
    ('-1', "'-1' is neither"),
    ('0-70000', 'above 65535'),
])
def test_parse_refuses(text, bad):
    with pytest.raises(CpuListError) as caught:
        parse_cpulist(text)
    assert bad in str(caught.value)


def test_parse_refuses_a_non_string():
    with pytest.raises(CpuListError):
        parse_cpulist(7)


def test_format_as_the_kernel_prints():
    assert format_cpulist([(0, 3), (8, 8)]) == '0-3,8'
    assert format_cpulist([(1, 1), (2, 2), (3, 3)]) == '1-3'
    assert format_cpulist([(0, 0), (2, 2), (4, 4)]) == '0,2,4'
    assert format_cpulist([]) == ''
    assert format_cpulist(parse_cpulist(SEED_NODE0)) == SEED_NODE0.strip()


def test_union():
    assert union_cpulists(['0-3,8', '4-7']) == '0-8'
    assert union_cpulists([SEED_NODE0, SEED_NODE0]) == '0-63,128-191'
    assert union_cpulists([SEED_NODE0, SEED_NODE1]) == '0-255'
    assert union_cpulists([H200_VM, XEON_NODE1]) == '0-55,84-111'
    assert union_cpulists([]) == ''


def gpu(name, numa, cpulist):
    return {'name': name, 'numa_node': numa, 'local_cpulist': cpulist}


def test_gpu_cpuset_of_the_seed_numa0_gpus():
    gpus = [gpu('0000:%02x:00.0' % bus, 0, SEED_NODE0.strip()) for bus in (0x01, 0x21, 0x41, 0x61)]
    assert gpu_cpuset(gpus) == {'cpus': '0-63,128-191', 'mems': '0', 'problems': []}


def test_gpu_cpuset_across_nodes():
    gpus = [gpu('0000:61:00.0', 0, SEED_NODE0), gpu('0000:81:00.0', 1, SEED_NODE1)]
    assert gpu_cpuset(gpus) == {'cpus': '0-255', 'mems': '0-1', 'problems': []}


@pytest.mark.parametrize('bad, problem', [
    (gpu('0000:00:07.0', -1, H200_VM), '0000:00:07.0 has no NUMA node (numa_node -1'),
    (gpu('0000:00:07.0', None, H200_VM), '0000:00:07.0 has no NUMA node (numa_node unreadable'),
    (gpu('0000:00:07.0', 0, None), '0000:00:07.0 has no readable local_cpulist'),
    (gpu('0000:00:07.0', 0, '\n'), '0000:00:07.0 has an empty local_cpulist'),
    (gpu('0000:00:07.0', 0, 'ff,ffffffff'), "0000:00:07.0: local_cpulist 'ff,ffffffff' is not a CPU list"),
])
def test_gpu_cpuset_needs_every_gpu(bad, problem):
    result = gpu_cpuset([gpu('0000:00:06.0', 0, H200_VM), bad])
    assert result['cpus'] is None and result['mems'] is None
    assert len(result['problems']) == 1 and result['problems'][0].startswith(problem)


def test_gpu_cpuset_without_gpus():
    assert gpu_cpuset([]) == {'cpus': None, 'mems': None, 'problems': ['no GPU to take the CPUs from']}


def test_intersect_cpulists():
    assert intersect_cpulists('0-127', '64-255') == '64-127'
    assert intersect_cpulists('0-63,128-191', '64-127,192-255') == ''
    assert intersect_cpulists('0-3,8-11', '2-9') == '2-3,8-9'
