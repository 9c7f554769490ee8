# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The pictures of make plan: memory per GPU of an SGLang server (plan.html) and the GPU topology of a Proxmox host
(topology.html), each one self-contained HTML page with inline SVG (no script, no external asset, no timestamp: the
same inputs give the same bytes, so CI can diff them).

Controller only (the filters llmops.inference.plan_memory_html / plan_topology_html; playbooks/plan.yml and
plan_gpu_split.yml). Every figure is one the resolver or the split plan published: ``llmops_deployment.plan`` for the
memory, the Proxmox host's ``llmops_deployment`` and the gpu_partition role's ``gpu_partition_plan`` for the
topology. The pictures only stack them (a sum of published pools, the GPU's memory less the free memory before
loading); nothing is planned here, and a stack that does not add up to the GPU's memory is drawn as "not accounted".
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmops.inference.plugins.module_utils.planner.vram_report import headline

MIB_PER_GIB = 1024.0
# A stack is the GPU's memory when its parts (each rounded by the planner to 0.001 or 0.01 GiB) add up to it within this.
SUM_TOLERANCE_GIB = 0.05

# (key, legend label, colour), bottom of the bar first. The colours are the test's anchors (tests/bench/).
SEGMENTS = (
    ('startup', 'CUDA context and start-up (GPU memory - free before loading)', '#7f7f7f'),
    ('weights', 'weights', '#1f77b4'),
    ('state', 'mamba / linear-attention state pool', '#9467bd'),
    ('spec_state', 'speculative verify states', '#c5b0d5'),
    ('kv', 'KV cache', '#2ca02c'),
    ('draft_kv', 'draft KV cache (MTP / EAGLE-3)', '#98df8a'),
    ('other', 'other reserved (req_to_token, multimodal, runtime overhead)', '#8c564b'),
    ('activations', "headroom: SGLang's activation reserve (its estimate)", '#ff7f0e'),
    ('graphs', 'headroom: CUDA graphs, NCCL buffers and free', '#ffd39b'),
    ('unaccounted', 'not accounted by this picture (the parts do not add up)', '#d62728'),
)
COLOURS = dict((key, colour) for key, _label, colour in SEGMENTS)
LABELS = dict((key, label) for key, label, _colour in SEGMENTS)

DRIVER_COLOURS = {'nvidia': '#76b900', 'vfio-pci': '#9467bd'}
OTHER_DRIVER_COLOUR = '#bbbbbb'
DESTINATION_COLOURS = ('#1f77b4', '#17becf', '#e377c2', '#8c564b', '#bcbd22')
VM_COLOURS = ('#9467bd', '#c5b0d5', '#7b4173', '#a55194')

CSS = """
body{font-family:-apple-system,'Segoe UI',Roboto,'DejaVu Sans',Arial,sans-serif;margin:24px;color:#222;background:#fafafa}
h1{font-size:22px;margin:0 0 8px}h2{font-size:17px;margin:28px 0 10px;border-bottom:1px solid #ddd;padding-bottom:4px}
.meta{font-size:13px;color:#444;line-height:1.6;max-width:1100px}.meta code{background:#eee;padding:0 3px}
table{border-collapse:collapse;font-size:13px;background:#fff}th,td{border:1px solid #ddd;padding:4px 8px;text-align:left}
th{background:#f0f0f0}td.n{text-align:right;font-variant-numeric:tabular-nums}
svg{border:1px solid #ddd;background:#fff}.swatch{display:inline-block;width:12px;height:12px;margin-right:6px}
.warn{color:#c62828;font-weight:bold}.note{font-size:12px;color:#666;max-width:1100px}
"""


class PictureError(ValueError):
    """The input cannot be drawn (no plan, not a dict); the message names what is missing."""


def esc(value):
    text = '' if value is None else str(value)
    return (text.replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;').replace('"', '&quot;')
            .replace("'", '&#39;'))


def gib(value):
    return '%.2f' % value


def _number(plan, key):
    value = plan.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def page(title, body):
    return '\n'.join(['<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">',
                      '<meta name="viewport" content="width=device-width, initial-scale=1">',
                      '<title>%s</title>' % esc(title), '<style>%s</style></head><body>' % CSS.strip()]
                     + body + ['</body></html>', ''])


# ---- memory per GPU ------------------------------------------------------------------------------------------------

def memory_segments(plan):
    """The stack of one GPU, bottom first: dict(key, label, colour, gib, detail) for every part above zero.

    Sums the pools the plan published; the last part, "not accounted", appears only when they miss the GPU's memory
    by more than SUM_TOLERANCE_GIB (a pool the plan gained and this picture does not know yet)."""
    if not isinstance(plan, dict) or not plan.get('gpu_memory_mib'):
        raise PictureError('plan_pictures: no plan with gpu_memory_mib to draw (a refused host has no picture)')
    total = plan['gpu_memory_mib'] / MIB_PER_GIB
    weights = plan.get('weights_detail') or {}
    freed = float(weights.get('draft_freed_after_gib') or 0.0)
    headroom = _number(plan, 'headroom_gib')
    reserve = min(max(headroom, 0.0), _number(plan, 'sglang_runtime_reserve_gib'))
    parts = [
        ('startup', total - _number(plan, 'free_before_load_gib'),
         'GPU memory %s GiB - free before loading %s GiB (%s)' % (
             gib(total), gib(_number(plan, 'free_before_load_gib')), plan.get('free_memory_source') or '?')),
        ('weights', _number(plan, 'weights_gib_per_gpu') - freed, _weights_detail(plan, weights, freed)),
        ('state', _number(plan, 'mamba_pool_gib'), 'mamba_pool_gib: %s slots' % plan.get('mamba_cache_slots')),
        ('spec_state', _number(plan, 'spec_state_gib'), 'spec_state_gib'),
        ('kv', _number(plan, 'k_size_gib') + _number(plan, 'v_size_gib') + _number(plan, 'swa_kv_gib'),
         'K %s + V %s + sliding window %s GiB: %s tokens' % (
             gib(_number(plan, 'k_size_gib')), gib(_number(plan, 'v_size_gib')), gib(_number(plan, 'swa_kv_gib')),
             '{:,}'.format(plan.get('kv_cache_tokens') or 0))),
        ('draft_kv', _number(plan, 'draft_kv_gib'), 'draft_kv_gib'),
        ('other', _number(plan, 'req_to_token_gib') + _number(plan, 'mm_reserve_gib')
         + _number(plan, 'runtime_overhead_gib'),
         'req_to_token %s + multimodal reserve %s + runtime overhead %s GiB' % (
             gib(_number(plan, 'req_to_token_gib')), gib(_number(plan, 'mm_reserve_gib')),
             gib(_number(plan, 'runtime_overhead_gib')))),
        ('activations', reserve, 'sglang_runtime_reserve_gib %s of the headroom %s GiB' % (
            gib(_number(plan, 'sglang_runtime_reserve_gib')), gib(headroom))),
        ('graphs', max(headroom, 0.0) - reserve, 'headroom_gib %s - the activation reserve' % gib(headroom)),
    ]
    out = [dict(key=key, label=LABELS[key], colour=COLOURS[key], gib=round(value, 3), detail=detail)
           for key, value, detail in parts if round(value, 3) > 0]
    missing = total - sum(part['gib'] for part in out)
    if abs(missing) > SUM_TOLERANCE_GIB:
        out.append(dict(key='unaccounted', label=LABELS['unaccounted'], colour=COLOURS['unaccounted'],
                        gib=round(missing, 3), detail='GPU memory %s GiB - the parts above' % gib(total)))
    return out


def _weights_detail(plan, weights, freed):
    text = 'weights_gib_per_gpu %s (%s)' % (gib(_number(plan, 'weights_gib_per_gpu')), weights.get('source') or '?')
    if freed:
        text += ', less the %s GiB the %s draft frees after the pools are sized (its own embedding and lm_head)' % (
            gib(freed), weights.get('draft_class') or 'MTP')
    return text


def bar_svg(title, labels, segments, total):
    """One stacked bar per label (each GPU), the same segments in each, the GPU's memory as the axis' top."""
    stacked = sum(part['gib'] for part in segments if part['gib'] > 0)
    top_gib = max(total, stacked)
    left, top, plot_h, bar_w, gap = 64, 44, 360, 56, 30
    legend_x = left + len(labels) * (bar_w + gap) + 44
    width, height = legend_x + 470, top + plot_h + 56

    def y_at(value):
        return top + plot_h - plot_h * value / top_gib

    out = ['<svg xmlns="http://www.w3.org/2000/svg" role="img" width="%d" height="%d" viewBox="0 0 %d %d">'
           % (width, height, width, height), '<title>%s</title>' % esc(title),
           '<text x="%d" y="22" font-size="14" font-weight="bold" fill="#222">%s</text>' % (left, esc(title))]
    step = 10 if top_gib <= 120 else 20 if top_gib <= 240 else 50
    for k in range(0, int(top_gib // step) + 1):
        y = y_at(k * step)
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eeeeee"/>' % (left, y, legend_x - 44, y))
        out.append('<text x="%d" y="%.1f" font-size="11" text-anchor="end" fill="#555">%d</text>' % (left - 6, y + 4, k * step))
    out.append('<text x="16" y="%d" font-size="11" fill="#555" transform="rotate(-90 16 %d)" text-anchor="middle">GiB'
               '</text>' % (top + plot_h // 2, top + plot_h // 2))
    for i, label in enumerate(labels):
        x = left + 10 + i * (bar_w + gap)
        out += _bar(x, bar_w, segments, y_at, label)
        out.append('<text x="%.1f" y="%d" font-size="11" text-anchor="middle" fill="#333">%s</text>'
                   % (x + bar_w / 2.0, top + plot_h + 16, esc(label)))
    y_total = y_at(total)
    out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#222" stroke-dasharray="5 3"/>'
               % (left, y_total, legend_x - 44, y_total))
    out.append('<text x="%d" y="%.1f" font-size="11" fill="#222">GPU memory %s GiB</text>' % (left + 4, y_total - 5, gib(total)))
    out += _headroom_bracket(left + 10 + len(labels) * (bar_w + gap) - gap + 6, segments, y_at)
    out += _legend(legend_x, top, segments)
    out.append('</svg>')
    return '\n'.join(out)


def _bar(x, bar_w, segments, y_at, label):
    out, base = [], 0.0
    for part in segments:
        if part['gib'] <= 0:
            continue
        y0, y1 = y_at(base + part['gib']), y_at(base)
        out.append('<rect x="%.1f" y="%.1f" width="%d" height="%.1f" fill="%s" stroke="#ffffff" stroke-width="0.5">'
                   '<title>%s: %s %s GiB (%s)</title></rect>'
                   % (x, y0, bar_w, max(y1 - y0, 0.5), part['colour'], esc(label), esc(part['label']),
                      gib(part['gib']), esc(part['detail'])))
        if y1 - y0 >= 13:
            dark = part['colour'] in ('#ffd39b', '#c5b0d5', '#98df8a')
            out.append('<text x="%.1f" y="%.1f" font-size="10" text-anchor="middle" fill="%s">%s</text>'
                       % (x + bar_w / 2.0, (y0 + y1) / 2.0 + 3.5, '#222' if dark else '#ffffff', gib(part['gib'])))
        base += part['gib']
    return out


def _headroom_bracket(x, segments, y_at):
    """A bracket beside the last bar over the two headroom parts, labelled with the plan's headroom."""
    below = sum(p['gib'] for p in segments if p['key'] not in ('activations', 'graphs', 'unaccounted'))
    room = sum(p['gib'] for p in segments if p['key'] in ('activations', 'graphs'))
    if room <= 0:
        return []
    y0, y1 = y_at(below + room), y_at(below)
    mid = (y0 + y1) / 2.0
    return ['<path d="M%d %.1f h6 V%.1f h-6" fill="none" stroke="#222"/>' % (x, y0 + 1, y1 - 1),
            '<text x="%d" y="%.1f" font-size="11" fill="#222" text-anchor="middle" transform="rotate(-90 %d %.1f)">'
            'headroom %s GiB</text>' % (x + 22, mid, x + 22, mid, gib(room))]


def _legend(x, top, segments):
    out = ['<text x="%d" y="%d" font-size="12" font-weight="bold" fill="#222">per GPU, top of the bar first</text>'
           % (x, top + 4)]
    for i, part in enumerate(reversed(segments)):
        y = top + 22 + i * 20
        out.append('<rect x="%d" y="%d" width="14" height="14" fill="%s"/>' % (x, y - 11, part['colour']))
        out.append('<text x="%d" y="%d" font-size="11" fill="#333">%s GiB  %s</text>'
                   % (x + 20, y, gib(part['gib']), esc(part['label'])))
    return out


def memory_html(host, deployment):
    """plan.html of an SGLang server: the verdict headline, one stacked bar per GPU, the table of the parts."""
    if not isinstance(deployment, dict):
        raise PictureError('plan_pictures: %s: llmops_deployment is not a dict' % host)
    plan = deployment.get('plan')
    if deployment.get('refusal') or not isinstance(plan, dict):
        raise PictureError('plan_pictures: %s has no plan to draw (refused: %s)' % (host, bool(deployment.get('refusal'))))
    segments = memory_segments(plan)
    gpus = deployment.get('gpus') or {}
    total = plan['gpu_memory_mib'] / MIB_PER_GIB
    indices = gpus.get('indices') or list(range(int(gpus.get('count') or plan.get('tp_size') or 1)))
    labels = ['GPU %s' % index for index in indices]
    name = gpus.get('display_name') or gpus.get('profile') or '?'
    svg = bar_svg('%s: memory per GPU, %d x %s (%s MiB)' % (host, len(labels), name, '{:,}'.format(plan['gpu_memory_mib'])),
                  labels, segments, total)
    body = ['<h1>%s</h1>' % esc(plan.get('title') or host), '<p class="meta">%s</p>' % _inline(headline(plan)),
            '<p class="note">Computed from SGLang %s\'s own memory-planning rules by make plan; not measured on a GPU. '
            'Every GPU of a TP group holds the same plan. The headroom is what the static pools leave free: SGLang\'s '
            'activation reserve estimate, then CUDA graphs, NCCL buffers and what stays free (the planner does not size '
            'the CUDA graphs).</p>' % esc(plan.get('sglang_version') or '?'),
            '<figure style="margin:0">%s</figure>' % svg, '<h2>Per GPU (GiB)</h2>',
            '<table><tr><th>part</th><th>GiB</th><th>from the plan</th></tr>']
    for part in reversed(segments):
        body.append('<tr><td><span class="swatch" style="background:%s"></span>%s</td><td class="n">%s</td><td>%s</td>'
                    '</tr>' % (part['colour'], esc(part['label']), gib(part['gib']), esc(part['detail'])))
    body.append('<tr><th>GPU memory</th><th class="n">%s</th><th>%s MiB (%s)</th></tr></table>'
                % (gib(total), '{:,}'.format(plan['gpu_memory_mib']), esc(gpus.get('profile') or '?')))
    if any(part['key'] == 'unaccounted' for part in segments):
        body.append('<p class="warn">The plan\'s parts do not add up to the GPU\'s memory: the picture is out of date '
                    'with the planner (plugins/plugin_utils/views/plan_pictures.py).</p>')
    return page(plan.get('title') or host, body)


def _inline(markdown):
    """The headline's Markdown (**bold**, *italic*) as HTML, escaped first."""
    text = esc(markdown)
    text = re.sub(r'\*\*(.+?)\*\*', r'<strong>\1</strong>', text)
    return re.sub(r'\*(.+?)\*', r'<em>\1</em>', text)


# ---- topology of a Proxmox host ------------------------------------------------------------------------------------

def _destinations(deployment):
    """address -> (destination, detail, colour): the containers and the VMs (hostpci slots) of the Proxmox host's
    deployment."""
    out = {}
    for i, container in enumerate(deployment.get('containers') or []):
        text = 'CT %s (%s)' % (container.get('ctid'), container.get('host'))
        for address in container.get('addresses') or []:
            out[address] = (text, None, DESTINATION_COLOURS[i % len(DESTINATION_COLOURS)])
    for i, vm in enumerate(deployment.get('vfio_vms') or []):
        for slot in vm.get('hostpci') or []:
            out[slot.get('address')] = ('VM %s' % vm.get('vmid'), 'hostpci%s' % slot.get('slot'),
                                        VM_COLOURS[i % len(VM_COLOURS)])
    return out


def _destination(address, target, known, vfio):
    if address in known:
        return known[address]
    if target == 'vfio-pci' or address in vfio:
        return 'VMs (vfio-pci)', None, VM_COLOURS[0]
    if target == 'nvidia':
        return 'host (nvidia, no container)', None, OTHER_DRIVER_COLOUR
    return 'not in the split', None, OTHER_DRIVER_COLOUR


def _functions(card, entry):
    """'.1 snd_hda_intel -> vfio-pci' for every function besides the primary one."""
    wants = dict((f.get('address'), f.get('want_driver')) for f in (entry or {}).get('functions') or [])
    out = []
    for function in card.get('functions') or []:
        address = function.get('address') or ''
        if address == card.get('address'):
            continue
        now, want = function.get('driver') or 'unbound', wants.get(address)
        out.append('.%s %s%s' % (address.rsplit('.', 1)[-1], now, ' -> %s' % want if want and want != now else ''))
    return out


def topology_rows(deployment, split):
    """One row per card of the split plan (gpu_partition_plan: its ``gpus``, every card of the vendor:device, and
    its ``plan``, the cards an entry names), sorted by address, with the destination the resolver gave each."""
    if not isinstance(deployment, dict) or not isinstance(split, dict):
        raise PictureError('plan_pictures: the topology needs the Proxmox host\'s llmops_deployment and '
                           'gpu_partition_plan (dicts), got %s and %s' % (type(deployment).__name__, type(split).__name__))
    entries = dict((e.get('address'), e) for e in split.get('plan') or [])
    cards = dict((c.get('address'), c) for c in split.get('gpus') or [])
    known, vfio = _destinations(deployment), set(deployment.get('vfio_addresses') or [])
    rows = []
    for address in sorted(set(cards) | set(entries)):
        card, entry = cards.get(address) or entries[address], entries.get(address) or {}
        target = entry.get('target') or card.get('target')
        now = card.get('driver') if address in cards else ((entry.get('functions') or [{}])[0].get('driver'))
        destination, detail, colour = _destination(address, target, known, vfio)
        numa = card.get('numa_node', entry.get('numa_node'))
        rows.append(dict(address=address, pci_id=card.get('pci_id') or entry.get('pci_id'),
                         numa_node=-1 if numa is None else numa, iommu_group=card.get('iommu_group', entry.get('iommu_group')),
                         driver=now or 'unbound', target=target, action=entry.get('action') or 'none',
                         device_node=card.get('device_node') or ('/dev/nvidia%s' % entry['device_minor']
                                                                 if entry.get('device_minor') is not None else None),
                         functions=_functions(card, entry), destination=destination, destination_detail=detail,
                         destination_colour=colour,
                         errors=list(entry.get('errors') or []), source=entry.get('source')))
    return rows


def _driver_text(row):
    if not row['target']:
        return '%s (no entry names it)' % row['driver']
    if row['target'] == row['driver']:
        return '%s (stays)' % row['driver']
    return '%s -> %s' % (row['driver'], row['target'])


def topology_svg(title, rows):
    """NUMA nodes as columns, a card per GPU: address, IOMMU group, driver now -> after the split, destination."""
    nodes = sorted(set(row['numa_node'] for row in rows))
    col_w, card_h, gap, top = 430, 70, 12, 64
    per_node = dict((node, [row for row in rows if row['numa_node'] == node]) for node in nodes)
    tallest = max([len(v) for v in per_node.values()] or [0])
    width = 24 + max(len(nodes), 1) * (col_w + 20)
    height = top + tallest * (card_h + gap) + 84
    out = ['<svg xmlns="http://www.w3.org/2000/svg" role="img" width="%d" height="%d" viewBox="0 0 %d %d">'
           % (width, height, width, height), '<title>%s</title>' % esc(title),
           '<text x="24" y="24" font-size="14" font-weight="bold" fill="#222">%s</text>' % esc(title)]
    for i, node in enumerate(nodes):
        x = 24 + i * (col_w + 20)
        out.append('<rect x="%d" y="%d" width="%d" height="%d" rx="6" fill="#f4f4f4" stroke="#cccccc"/>'
                   % (x - 8, top - 26, col_w + 16, len(per_node[node]) * (card_h + gap) + 34))
        out.append('<text x="%d" y="%d" font-size="13" font-weight="bold" fill="#333">%s (%s)</text>'
                   % (x, top - 8, 'NUMA node %s' % node if node >= 0 else 'NUMA node unknown', _gpus(len(per_node[node]))))
        for j, row in enumerate(per_node[node]):
            out += _card(x, top + j * (card_h + gap), col_w, card_h, row)
    out += _topology_legend(24, height - 44, width, rows)
    out.append('</svg>')
    return '\n'.join(out)


def _card(x, y, width, height, row):
    colour = DRIVER_COLOURS.get(row['target'] or row['driver'], OTHER_DRIVER_COLOUR)
    border = '#d62728' if row['errors'] else '#999999'
    pill_w = 130
    lines = ['%s [%s]' % (row['address'], row['pci_id'] or '?'),
             'IOMMU group %s: %s' % ('off' if row['iommu_group'] is None else row['iommu_group'], _driver_text(row)),
             ', '.join([row['device_node'] or 'no /dev/nvidia node'] + ['+ ' + f for f in row['functions']])]
    out = ['<rect x="%d" y="%d" width="%d" height="%d" rx="4" fill="#ffffff" stroke="%s"%s><title>%s</title></rect>'
           % (x, y, width, height, border, ' stroke-width="2"' if row['errors'] else '',
              esc('; '.join(lines + row['errors']))),
           '<rect x="%d" y="%d" width="10" height="%d" rx="2" fill="%s"/>' % (x, y, height, colour)]
    for k, line in enumerate(lines):
        out.append('<text x="%d" y="%d" font-size="%d"%s fill="#222">%s</text>'
                   % (x + 18, y + 18 + k * 18, 12 if k == 0 else 11, ' font-weight="bold"' if k == 0 else '', esc(line)))
    out.append('<rect x="%d" y="%d" width="%d" height="22" rx="11" fill="%s"/>'
               % (x + width - pill_w - 8, y + 8, pill_w, row['destination_colour']))
    pill = row['destination'] + (' ' + row['destination_detail'] if row['destination_detail'] else '')
    out.append('<text x="%d" y="%d" font-size="11" text-anchor="middle" fill="#ffffff">%s</text>'
               % (x + width - pill_w / 2 - 8, y + 23, esc(pill)))
    if row['errors']:
        out.append('<text x="%d" y="%d" font-size="11" fill="#d62728">cannot move: see the table</text>'
                   % (x + width - pill_w - 8, y + height - 10))
    return out


def _topology_legend(x, y, width, rows):
    """The driver colours and every destination with its GPU count, wrapped to the picture's width."""
    seen = []
    for row in rows:
        if (row['destination'], row['destination_colour']) not in seen:
            seen.append((row['destination'], row['destination_colour']))
    items = [('nvidia (after the split)', DRIVER_COLOURS['nvidia']),
             ('vfio-pci (after the split)', DRIVER_COLOURS['vfio-pci'])]
    items += [('%s: %s' % (text, _gpus(sum(1 for r in rows if r['destination'] == text))), colour) for text, colour in seen]
    out, left = [], x
    for text, colour in items:
        if x > left and x + 34 + 7 * len(text) > width:
            x, y = left, y + 20
        out.append('<rect x="%d" y="%d" width="14" height="14" fill="%s"/>' % (x, y - 11, colour))
        out.append('<text x="%d" y="%d" font-size="11" fill="#333">%s</text>' % (x + 20, y, esc(text)))
        x += 34 + 7 * len(text)
    return out


def topology_html(host, deployment, split, source=None):
    """topology.html of a Proxmox host: its GPUs by NUMA node and PCI address, driver now and after the split, IOMMU
    group, and where each goes (the container that gets it, the VM and its hostpci slot, or the VMs through vfio-pci)."""
    rows = topology_rows(deployment, split)
    title = '%s: GPU topology and split' % host
    facts = ['%s (%s)' % (_gpus(len(rows)), esc(deployment.get('gpu_profile') or '?')),
             'IOMMU %s' % ('on' if split.get('iommu_enabled') else 'off'),
             'persistence %s' % esc(split.get('persistence') or '?')]
    if deployment.get('sev_snp'):
        facts.append('SEV-SNP: GPU peer-to-peer DMA is not trusted (NCCL_P2P_DISABLE=1 in the containers)')
    body = ['<h1>%s</h1>' % esc(title), '<p class="meta">%s<br>nvidia (containers): NUMA node %s; vfio-pci (VMs): '
            'NUMA node %s. Planned offline by make plan against %s; nothing was read from the host.</p>' % (
                ', '.join(facts), esc(_nodes(deployment.get('nvidia_numa_nodes'))),
                esc(_nodes(deployment.get('vfio_numa_nodes'))), '<code>%s</code>' % esc(source) if source else 'its sysfs tree'),
            '<figure style="margin:0">%s</figure>' % topology_svg(title, rows), '<h2>GPUs by PCI address</h2>',
            '<table><tr><th>address</th><th>PCI id</th><th>NUMA</th><th>IOMMU group</th><th>driver: now -&gt; after</th>'
            '<th>other functions</th><th>/dev node</th><th>destination</th><th>decided by</th><th>problems</th></tr>']
    for row in rows:
        body.append('<tr><td><code>%s</code></td><td>%s</td><td class="n">%s</td><td class="n">%s</td><td>'
                    '<span class="swatch" style="background:%s"></span>%s</td><td>%s</td><td>%s</td><td>%s</td>'
                    '<td>%s</td><td class="warn">%s</td></tr>' % (
                        esc(row['address']), esc(row['pci_id']), row['numa_node'],
                        'off' if row['iommu_group'] is None else row['iommu_group'],
                        DRIVER_COLOURS.get(row['target'] or row['driver'], OTHER_DRIVER_COLOUR), esc(_driver_text(row)),
                        esc(', '.join(row['functions'])), esc(row['device_node'] or '-'),
                        esc(row['destination'] + (' (%s)' % row['destination_detail'] if row['destination_detail'] else '')),
                        esc(row['source'] or '-'), esc('; '.join(row['errors']))))
    body.append('</table>')
    return page(title, body)


def _nodes(nodes):
    return ', '.join(str(node) for node in nodes or []) or 'none'


def _gpus(count):
    return '%d GPU%s' % (count, '' if count == 1 else 's')
