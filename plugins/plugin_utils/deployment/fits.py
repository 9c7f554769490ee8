# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What else fits on this host: every committed model profile at its smallest tensor-parallel size that fits.

PRIVATE to the collection. Pure. The resolver calls ``table()`` once per server (not per variant) with the model
profiles it loaded once, the server's GPU profile and release, and how many GPUs the host can give; the plan report
appends ``markdown()``. Each profile is planned with its own serving settings (MTP as the profile has it) and SGLang's
defaults for everything else; a profile that fits nowhere says why at the largest size tried.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan


def table(models, gpu, release, max_gpus, current=None):
    """One row per model profile: profile, family, tp (None: fits at no size), kv_tokens, max_running_requests,
    headroom_gib, current (the server's own profile), note."""
    rows = []
    for name in sorted(models):
        model = models[name]
        spec = (model.get('serving') or {}).get('speculative') or {}
        row = dict(profile=name, family=None, tp=None, kv_tokens=None, max_running_requests=None, headroom_gib=None,
                   current=name == current, note=None)
        last = None
        # The profile's architecture facts once, for every size tried.
        facts = vram_plan.model_facts_once(model.get('config'), release)
        for tp in vram_plan.tp_sizes(max_gpus):
            try:
                result = vram_plan.plan(
                    model_config=model.get('config'), weights_bytes=model.get('weights_bytes'), gpu_profile=gpu,
                    tp_size=tp, release=release, speculative_num_draft_tokens=spec.get('num_draft_tokens'),
                    speculative_num_steps=spec.get('num_steps'), speculative_eagle_topk=spec.get('eagle_topk'),
                    speculative_algorithm=spec.get('algorithm'),
                    draft_model_config=(spec.get('draft') or {}).get('config'), model_facts=facts)
            except vram_plan.PlanError as exc:
                last = str(exc)
                if exc.kind == 'architecture':
                    break
                continue
            row['family'] = result['family']
            if result['fits']:
                row.update(tp=tp, kv_tokens=result['kv_cache_tokens'],
                           max_running_requests=result['max_running_requests'], headroom_gib=result['headroom_gib'])
                break
            last = '%s at TP%d' % (result['verdict'], tp)
        if row['tp'] is None:
            row['note'] = 'does not fit on %d GPU(s): %s' % (max_gpus, (last or 'no size tried')[:200])
        rows.append(row)
    return rows


def markdown(rows, gpu_name, max_gpus):
    """The "What else fits" section of plan.md."""
    out = ['', '## What else fits on this host (%d x %s)' % (max_gpus, gpu_name), '',
           'Each committed profile in profiles/models/ at its smallest tensor-parallel size that fits, with its own '
           'MTP setting and SGLang defaults otherwise (computed, not measured).', '',
           '| profile | family | smallest TP | KV tokens | max running requests | headroom GiB |', '|---|---|---|---|---|---|']
    for row in rows:
        name = row['profile'] + (' (this server)' if row['current'] else '')
        if row['tp'] is None:
            out.append('| %s | %s | - | - | - | %s |' % (name, row['family'] or '-', row['note'].replace('|', '/')))
        else:
            out.append('| %s | %s | %d | %s | %d | %.1f |' % (name, row['family'], row['tp'],
                                                              '{:,}'.format(row['kv_tokens']),
                                                              row['max_running_requests'], row['headroom_gib']))
    return out
