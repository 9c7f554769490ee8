# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""make plan's pictures (plugins/plugin_utils/views/plan_pictures.py): the memory bars of plans the real resolver and
planner made, the topology of a split the real gpu_partition planning made on the sysfs fixtures.

The browser check of the committed samples is in the sglang_benchmark integration target (Chromium is there), their
freshness in tests/unit/test_plan_console.py (it runs make plan anyway)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os
import re
import sys
from xml.etree import ElementTree

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.llmops.inference.plugins.filter.plan_memory_html import FilterModule as MemoryFilter
from ansible_collections.llmops.inference.plugins.filter.plan_topology_html import FilterModule as TopologyFilter
from ansible_collections.llmops.inference.plugins.module_utils.host import gpu_partition as gp
from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan as vp
from ansible_collections.llmops.inference.plugins.module_utils.host.pci_sysfs import PciSysfs
from ansible_collections.llmops.inference.plugins.plugin_utils.views import plan_pictures as pp
from collection_paths import ROOT, release

# The resolver harness of the deployment tests (the seed inventory as bad_inputs.yml builds it).
sys.path.insert(0, os.path.join(ROOT, 'tests', 'unit', 'plugins', 'module_utils'))
from test_deployment import resolve  # noqa: E402  pylint: disable=wrong-import-position

memory_filter = MemoryFilter().filters()['plan_memory_html']
topology_filter = TopologyFilter().filters()['plan_topology_html']
ORDER = [key for key, _label, _colour in pp.SEGMENTS]
ONE = dict(llmops_tp_size=1, llmops_gpu_indices=[0])

# Deployments the resolver makes from the seed inventory with these overrides: hybrid GDN + MTP (RTX PRO 6000, H200,
# a calibrated start, a fraction that leaves less than SGLang's activation reserve), EAGLE-3, sliding window, dense
# MTP, NVFP4, and a plan that does not fit.
RESOLVED = {
    'seed-122b-rtx': {},
    '122b-h200': dict(llmops_gpu_profile='h200'),
    '122b-calibrated': dict(llmops_plan_free_memory_before_load_gib=94.0, llmops_plan_free_memory_after_load_gib=35.0),
    '122b-fraction-0.9': dict(llmops_mem_fraction_static=0.9),
    'qwen3-32b-eagle3': dict(ONE, llmops_model_profile='qwen3-32b-eagle3'),
    'gpt-oss-120b': dict(ONE, llmops_model_profile='gpt-oss-120b'),
    'glm-4.5-air': dict(llmops_model_profile='glm-4.5-air'),
    '397b-nvfp4': dict(llmops_model_profile='qwen3.5-397b-a17b-nvfp4'),
    'does-not-fit': dict(ONE, llmops_model_profile='qwen3-32b', llmops_plan_must_fit=False,
                         llmops_mem_fraction_static=0.97),
}


def profile(kind, name):
    with open(os.path.join(ROOT, 'profiles', kind, name + '.yml')) as handle:
        return yaml.safe_load(handle)


def planned(case):
    """Plans outside the seed inventory's reach, from the planner itself: MLA on 8 B200s, and the 0.5.11 rules (the
    MTP draft loads after the pools are sized)."""
    if case == 'deepseek-v3-b200-tp8':
        return vp.plan(model_config=profile('models', 'deepseek-v3')['config'], gpu_profile=profile('hardware', 'b200'),
                       tp_size=8, release=release())
    return vp.plan(model_config=profile('models', 'qwen3.5-122b-a10b')['config'], tp_size=4, release=release('0.5.11'),
                   gpu_profile=profile('hardware', 'rtx-pro-6000-blackwell-server'), speculative_num_draft_tokens=4,
                   speculative_num_steps=3)


def plans():
    out = [(case, resolve(overrides=overrides)['plan']) for case, overrides in RESOLVED.items()]
    return out + [(case, planned(case)) for case in ('deepseek-v3-b200-tp8', '122b-0.5.11-draft-after-sizing')]


@pytest.fixture(scope='module')
def all_plans():
    return plans()


@pytest.fixture(scope='module')
def seed():
    return resolve()


def by_key(segments):
    return dict((part['key'], part['gib']) for part in segments)


def test_the_bars_add_up_to_the_gpu_memory(all_plans):
    """Every part is a figure the plan published; together they are the GPU's memory (the plan rounds each to 0.001
    or 0.01 GiB), and the two headroom parts are the plan's headroom."""
    assert {case for case, _plan in all_plans} >= set(RESOLVED)
    for case, plan in all_plans:
        segments = pp.memory_segments(plan)
        keys = [part['key'] for part in segments]
        assert 'unaccounted' not in keys, (case, segments)
        assert keys == sorted(keys, key=ORDER.index), case
        total = plan['gpu_memory_mib'] / 1024.0
        assert sum(part['gib'] for part in segments) == pytest.approx(total, abs=0.01), (case, segments)
        parts = by_key(segments)
        assert parts.get('activations', 0) + parts.get('graphs', 0) == pytest.approx(max(plan['headroom_gib'], 0), abs=1e-3)
        assert parts.get('activations', 0) == pytest.approx(min(plan['sglang_runtime_reserve_gib'],
                                                                max(plan['headroom_gib'], 0)), abs=1e-3), case
        assert all(part['gib'] > 0 for part in segments), case


def test_the_families_draw_their_own_pools(all_plans):
    plans_by_case = dict(all_plans)
    hybrid, dense, mla = (by_key(pp.memory_segments(plans_by_case[case]))
                          for case in ('seed-122b-rtx', 'qwen3-32b-eagle3', 'deepseek-v3-b200-tp8'))
    assert {'state', 'spec_state', 'kv', 'draft_kv'} <= set(hybrid)
    assert 'state' not in dense and 'draft_kv' in dense and 'state' not in mla and 'kv' in mla
    # Below SGLang's activation reserve the headroom is all reserve: nothing left for the graphs to be drawn.
    tight = by_key(pp.memory_segments(plans_by_case['122b-fraction-0.9']))
    assert 'graphs' not in tight and tight['activations'] == plans_by_case['122b-fraction-0.9']['headroom_gib']


def test_a_pool_the_picture_does_not_know_is_drawn_as_not_accounted(seed):
    """The check can fail: a plan whose parts miss the GPU's memory (here its mamba pool taken out, as if the planner
    had moved it to a key this picture does not read) gets a "not accounted" part and a warning, not a short bar."""
    deployment = copy.deepcopy(seed)
    lost = deployment['plan']['mamba_pool_gib']
    deployment['plan']['mamba_pool_gib'] = 0.0
    segments = pp.memory_segments(deployment['plan'])
    assert segments[-1]['key'] == 'unaccounted' and segments[-1]['gib'] == pytest.approx(lost, abs=0.01)
    assert 'do not add up to the GPU' in pp.memory_html('ct-t', deployment)


def bars(page):
    """{GPU label: [fill colours, bottom first]} and the SVG element, parsed as XML (it must be well-formed)."""
    svg = ElementTree.fromstring(re.search(r'<svg\b.*?</svg>', page, re.S).group(0))
    ns = '{http://www.w3.org/2000/svg}'
    out = {}
    for rect in svg.iter(ns + 'rect'):
        title = rect.find(ns + 'title')
        if title is not None and title.text.startswith('GPU '):
            out.setdefault(title.text.split(':')[0], []).append((rect.get('fill'), float(rect.get('height'))))
    return out, svg


def test_one_bar_per_gpu_in_segment_order_with_the_verdict(seed):
    page = memory_filter(seed)
    found, _svg = bars(page)
    segments = pp.memory_segments(seed['plan'])
    assert sorted(found) == ['GPU %d' % i for i in seed['gpus']['indices']]
    for label, rects in found.items():
        assert [fill for fill, _h in rects] == [part['colour'] for part in segments], label
        # Heights in proportion to the GiB: the weights part is as many times the KV part as the plan says.
        heights = dict(zip([part['key'] for part in segments], [h for _f, h in rects]))
        ratio = by_key(segments)['weights'] / by_key(segments)['kv']
        assert heights['weights'] / heights['kv'] == pytest.approx(ratio, rel=0.02)
    assert '<strong>%s</strong>' % seed['plan']['verdict'] in page
    assert 'GPU memory %.2f GiB' % (seed['plan']['gpu_memory_mib'] / 1024.0) in page
    assert 'headroom %.2f GiB' % seed['plan']['headroom_gib'] in page
    for part in segments:
        assert '%.2f GiB  %s' % (part['gib'], pp.esc(part['label'])) in page, part
    assert '<script' not in page and not re.search(r'(src|href)=["\']?(https?:)?//', page)
    assert memory_filter(seed) == page  # no timestamp: the same deployment, the same bytes


def test_html_escapes_names(seed):
    deployment = copy.deepcopy(seed)
    deployment['plan']['title'] = 'ct <script>alert("x")</script> & co'
    deployment['gpus']['display_name'] = 'GPU "<b>"'
    page = memory_filter(deployment, host='<ct&1>')
    assert '<script' not in page and '<b>' not in page
    assert 'ct &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co' in page and '&lt;ct&amp;1&gt;' in page
    bars(page)  # still well-formed


def test_a_refused_host_has_no_picture(seed):
    with pytest.raises(AnsibleFilterError, match='no plan to draw'):
        memory_filter(dict(seed, refusal='ct-t: 1 problem'))
    with pytest.raises(AnsibleFilterError, match='not list'):
        memory_filter([])


# ---- topology ------------------------------------------------------------------------------------------------------

SEED_ENTRIES = [{'numa_node': 1, 'driver': 'vfio-pci'}, {'numa_node': 0, 'driver': 'nvidia'}]
NUMA0 = ['0000:01:00.0', '0000:21:00.0', '0000:41:00.0', '0000:61:00.0']


def split_of(root, entries, vendor=('10de:2bb5',)):
    """gpu_partition_plan as the module returns it in check mode, from the module's own planning functions."""
    topology = gp.snapshot(PciSysfs(root))
    vendors = set(vendor) if vendor else None
    targets, _notes = gp.resolve_targets(topology, gp.normalize_entries(entries), vendors)
    return dict(plan=gp.plan_partition(topology, targets, 'vfio-pci', 'nvidia', vendors, {}, 'driverctl'),
                gpus=gp.final_map(topology, targets, 'vfio-pci', vendors), iommu_enabled=topology['iommu_enabled'],
                persistence='driverctl')


def proxmox(containers, vfio, vms=()):
    return dict(kind='proxmox_host', host='pve1', gpu_profile='rtx-pro-6000-blackwell-server', sev_snp=True,
                containers=containers, vfio_addresses=vfio, nvidia_numa_nodes=[0], vfio_numa_nodes=[1],
                vfio_vms=list(vms))


def table_rows(page):
    return dict((m.group(1), m.group(0)) for m in re.finditer(r'<tr><td><code>([0-9a-f:.]+)</code>.*?</tr>', page))


def test_every_gpu_of_the_split_with_its_driver_destination_and_group(sysfs_roots):
    split = split_of(sysfs_roots['seed_pve_8x_rtx6000_presplit'], SEED_ENTRIES)
    vfio = [c['address'] for c in split['gpus'] if c['address'] not in NUMA0]
    # Three of the four vfio cards are VM 200's hostpci0..2; the fourth is named by no VM.
    vm = dict(vmid=200, hostpci=[dict(address=a, slot=i) for i, a in enumerate(vfio[:3])])
    page = topology_filter(proxmox([dict(host='sglang-ct', ctid=101, numa_node=0, addresses=NUMA0)], vfio, [vm]), split,
                           source='fixture seed_pve_8x_rtx6000_presplit')
    rows = table_rows(page)
    assert sorted(rows) == sorted(c['address'] for c in split['gpus']) and len(rows) == 8
    svg = ElementTree.fromstring(re.search(r'<svg\b.*?</svg>', page, re.S).group(0))
    texts = [t.text for t in svg.iter('{http://www.w3.org/2000/svg}text')]
    for card in split['gpus']:
        row, address = rows[card['address']], card['address']
        assert '<td class="n">%d</td><td class="n">%d</td>' % (card['numa_node'], card['iommu_group']) in row
        assert ('%s [%s]' % (address, card['pci_id'])) in texts
        moves = address not in NUMA0
        driver = 'nvidia -&gt; vfio-pci' if moves else 'nvidia (stays)'
        destination = ('CT 101 (sglang-ct)' if not moves else 'VM 200 (hostpci%d)' % vfio.index(address)
                       if address in vfio[:3] else 'VMs (vfio-pci)')
        assert driver in row and '<td>%s</td>' % destination in row, row
        assert 'IOMMU group %d: %s' % (card['iommu_group'], driver.replace('-&gt;', '->')) in texts
        # The other function of the card (its audio), and not the primary one again.
        assert '<td>.1 snd_hda_intel%s</td>' % (' -&gt; vfio-pci' if moves else '') in row, row
    assert 'NUMA node 0 (4 GPUs)' in texts and 'NUMA node 1 (4 GPUs)' in texts
    assert 'CT 101 (sglang-ct): 4 GPUs' in texts and 'VM 200: 3 GPUs' in texts and 'VMs (vfio-pci): 1 GPU' in texts
    assert 'VM 200 hostpci0' in texts
    assert '<code>fixture seed_pve_8x_rtx6000_presplit</code>' in page and 'SEV-SNP' in page


def test_a_card_the_split_cannot_move_is_marked(sysfs_roots):
    split = split_of(sysfs_roots['shared_group'], [{'address': '0000:03:00.0', 'driver': 'vfio-pci'}], vendor=None)
    page = topology_filter(proxmox([], ['0000:03:00.0']), split)
    error = split['plan'][0]['errors'][0]
    assert 'IOMMU group 14 of 0000:03:00.0 also holds' in error
    assert 'cannot move: see the table' in page and '<td class="warn">%s</td>' % pp.esc(error) in table_rows(page)['0000:03:00.0']


def test_topology_escapes_names_and_refuses_a_missing_split(sysfs_roots):
    split = split_of(sysfs_roots['seed_pve_8x_rtx6000_presplit'], SEED_ENTRIES)
    page = topology_filter(proxmox([dict(host='<i>ct</i>', ctid='1"0', numa_node=0, addresses=NUMA0)], []), split,
                           source='<root>', host='pve&1')
    assert '<i>' not in page and '&lt;i&gt;ct&lt;/i&gt;' in page and 'CT 1&quot;0' in page and 'pve&amp;1' in page
    ElementTree.fromstring(re.search(r'<svg\b.*?</svg>', page, re.S).group(0))
    with pytest.raises(AnsibleFilterError, match='gpu_partition_plan'):
        topology_filter(proxmox([], []), None)
