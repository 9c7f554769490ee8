# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The layouts one host can serve a model with, each sized by the VRAM planner (make compare, issue #30).

PRIVATE to the collection. Pure, stdlib only. A layout is TP per replica x replicas behind the gateway
(replicas x TP <= GPUs) x speculative decoding (off; MTP where the model has MTP layers; EAGLE-3 where the profile
has a draft checkpoint) x KV cache dtype (auto, fp8_e4m3) x context length (the model's and the traffic's need).
Each distinct (TP, speculative, KV dtype, context) is planned once by vram_plan.plan(), fed as
plugin_utils/deployment/fits.py feeds it a model profile; its capacity (KV tokens, max running requests, mamba slots,
what binds) is the plan's own.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan
from ansible_collections.llmops.inference.plugins.module_utils.compare import perf

KV_DTYPES = ('auto', 'fp8_e4m3')
GIB = 1 << 30


def spec_options(model, facts):
    """[(name, plan kwargs, accept length or None)]: off always; mtp with the profile's NEXTN settings (SGLang's auto
    choice otherwise) where the model has MTP layers; eagle3 where the profile has a draft checkpoint."""
    spec = (model.get('serving') or {}).get('speculative') or {}
    draft = spec.get('draft')
    accept = spec.get('expected_accept_length')
    out = [('off', dict(speculative_num_draft_tokens=0), None)]
    if facts and facts.get('mtp_layers', 0) > 0:
        own = draft is None and spec.get('num_draft_tokens')
        out.append(('mtp', dict(speculative_algorithm=spec.get('algorithm') or 'NEXTN' if own else 'NEXTN',
                                speculative_num_steps=spec.get('num_steps') if own else None,
                                speculative_eagle_topk=spec.get('eagle_topk') if own else None,
                                speculative_num_draft_tokens=spec.get('num_draft_tokens') if own else None),
                    accept if own else None))
    if draft:
        out.append(('eagle3', dict(speculative_algorithm=spec.get('algorithm') or 'EAGLE3',
                                   speculative_num_steps=spec.get('num_steps'), speculative_eagle_topk=spec.get('eagle_topk'),
                                   speculative_num_draft_tokens=spec.get('num_draft_tokens'),
                                   draft_model_config=draft.get('config')), accept))
    return out


def contexts(facts, isl, osl):
    """The model's context (None: the plan's default, the model maximum) and the traffic's need (ISL + OSL rounded up
    to 4096) when that is shorter."""
    need = int(-(-(int(isl) + int(osl)) // 4096) * 4096)
    out = [None]
    if facts and facts.get('context') and need < facts['context']:
        out.append(need)
    return out


def plan_one(model, gpu, release, facts, tp, spec_kwargs, kv_dtype, context, gpus):
    """vram_plan.plan() of one layout: (result, None) or (None, why not)."""
    kwargs = dict(model_config=model.get('config'), weights_bytes=model.get('weights_bytes'), gpu_profile=gpu,
                  tp_size=tp, release=release, kv_cache_dtype=kv_dtype, context_length=context, model_facts=facts,
                  max_tp=gpus)
    kwargs.update(spec_kwargs)
    try:
        return vram_plan.plan(**kwargs), None
    except vram_plan.PlanError as exc:
        return None, str(exc)


def capacity(result):
    return dict(kv_tokens=result['kv_cache_tokens'], max_running=result['max_running_requests'],
                mamba_slots=result['mamba_cache_slots'], bound_by=result['max_running_requests_bound_by'],
                headroom_gib=result['headroom_gib'], verdict=result['verdict'], context=result['context_length'],
                kv_dtype=result['kv_cache_dtype'])


def enumerate_layouts(model, gpu, release, gpus, isl, osl):
    """Every layout: dict(name, tp, replicas, gpus, spec, kv_dtype, context, fits, why (not), capacity, cost,
    plan_inputs)."""
    facts = vram_plan.model_facts_once(model.get('config'), release)
    out = []
    for tp in vram_plan.tp_sizes(gpus):
        for spec_name, spec_kwargs, accept in spec_options(model, facts):
            for kv_dtype in KV_DTYPES:
                for context in contexts(facts, isl, osl):
                    result, why = plan_one(model, gpu, release, facts, tp, spec_kwargs, kv_dtype, context, gpus)
                    base = dict(tp=tp, spec=spec_name, kv_dtype=kv_dtype, context=context, accept_profile=accept,
                                spec_kwargs=spec_kwargs, result=result, why=why, capacity=None, cost=None)
                    if result is not None:
                        base['capacity'] = capacity(result)
                        base['context'] = result['context_length']
                        if not result['fits']:
                            base['why'] = '%s (headroom %.1f GiB)' % (result['verdict'], result['headroom_gib'])
                        else:
                            base['cost'] = cost(facts, result, accept)
                    for replicas in range(1, gpus // tp + 1):
                        row = dict(base, replicas=replicas, gpus=tp * replicas)
                        row['fits'] = result is not None and bool(result['fits']) and row['cost'] is not None
                        row['name'] = layout_name(row)
                        out.append(row)
    return out


def cost(facts, result, accept):
    draft = (result['speculative'] or {}).get('draft')
    draft_bytes = draft['weights_at_sizing_gib'] * GIB * result['tp_size'] if draft else None
    try:
        return perf.costs(facts, result, accept, draft_bytes)
    except perf.PerfError:
        return None


def layout_name(row):
    ctx = row['context']
    ctx_text = 'model-max' if ctx is None else '%dk' % (ctx // 1024) if ctx % 1024 == 0 else str(ctx)
    replicas = '%dx ' % row['replicas'] if row['replicas'] > 1 else ''
    spec = {'off': 'no-spec', 'mtp': 'MTP', 'eagle3': 'EAGLE-3'}[row['spec']]
    kv = 'fp8' if row['kv_dtype'] == 'fp8_e4m3' else 'auto'
    return '%sTP%d %s kv=%s ctx=%s' % (replicas, row['tp'], spec, kv, ctx_text)
