# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The VRAM plan and the SGLang command line of one deployment, each computed once, refusals mapped to variables.

PRIVATE to the collection. ``plan_inputs`` turns the resolved settings into the planner's inputs, ``run_plan`` calls vram_plan once and turns
a PlanError into a refusal naming the variable to change, ``render`` calls sglang_flags.render once with the
plan's values and turns its pre-checks into refusals (SGLang's own wording, or the collection's own refusals).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan
from ansible_collections.llmops.inference.plugins.module_utils.sglang import flags as sglang_flags
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.problems import NOVALUE
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.spec import BY_NAME

# Planner refusal kind -> the variable the operator most likely has to change.
_PLAN_VARIABLE = {
    'tp': 'llmops_tp_size', 'weights': 'llmops_tp_size', 'mtp': 'llmops_speculative_num_draft_tokens',
    'sglang': 'llmops_model_profile', 'input': 'llmops_model_profile',
}
# Pre-checks that are this collection's own refusals, not SGLang's start-up validations (SGLang would hang or
# misbehave instead of refusing).
_COLLECTION_CHECKS = ('nccl_broken', 'gpu_count', 'mtp_layers', 'dp_attention', 'draft_path', 'node_rank')
# The fix for a planner refusal that names a setting, when the planner gives none.
_PLAN_FIX = {
    'llmops_context_length': 'lower llmops_context_length to at most the model maximum the message names (or null)',
    'llmops_mem_fraction_static': 'set llmops_mem_fraction_static as the message says, or null for SGLang\'s heuristic',
    'llmops_max_running_requests': 'lower llmops_max_running_requests, or null to take what the pools hold',
}
# Words of a planner refusal -> the variable it is about (first match wins).
_NEEDLES = (('overlap', 'llmops_disable_overlap_schedule'), ('context_length', 'llmops_context_length'),
            ('mem_fraction_static', 'llmops_mem_fraction_static'), ('mamba_ssm_dtype', 'llmops_mamba_ssm_dtype'),
            ('kv_cache_dtype', 'llmops_kv_cache_dtype'), ('page_size', 'llmops_page_size'),
            ('speculative_num_steps', 'llmops_speculative_num_steps'),
            ('max_running_requests', 'llmops_max_running_requests'))
# Flag pre-check name -> variable.
_CHECK_VARIABLE = {
    'mtp_layers': 'llmops_speculative_num_draft_tokens', 'spec_radix_mamba': 'llmops_mamba_strategy',
    'mamba_no_buffer_overlap': 'llmops_disable_overlap_schedule', 'mamba_no_buffer_page': 'llmops_page_size',
    'mamba_no_buffer_backend': 'llmops_attention_backend', 'mamba_extra_buffer_arch': 'llmops_mamba_strategy',
    'mamba_track_interval': 'llmops_speculative_num_draft_tokens', 'mamba_page_size': 'llmops_page_size',
    'mamba_extra_buffer_radix': 'llmops_mamba_strategy', 'gpu_count': 'llmops_gpu_indices',
    'nccl_broken': 'deployment_p2p_verdict', 'tp_nnodes': 'llmops_tp_size', 'node_rank': 'llmops_tp_size',
    'served_model_name': 'llmops_served_model_name', 'chunked_prefill_page': 'llmops_chunked_prefill_size',
    'context_length': 'llmops_context_length', 'trtllm_topk': 'llmops_attention_backend',
    'spec_v2_topk': 'llmops_speculative_num_steps', 'pp_spec': 'llmops_speculative_num_draft_tokens',
    'fa3_blackwell': 'llmops_attention_backend', 'gdn_blackwell_backend': 'llmops_attention_backend',
    'parser': 'llmops_extra_args',
    # The checkpoint's quantization cannot run on the GPU profile's architecture (release quantization rules).
    'quantization_arch': 'llmops_gpu_profile',
    # ... or on no GPU at all with this release (a GPTQ checkpoint Marlin cannot take).
    'quantization_unsupported': 'llmops_model_profile',
    'draft_context_length': 'llmops_context_length',
    'dp_attention': 'llmops_dp_size', 'draft_path': 'llmops_model_profile',
}


def plan_inputs(ctx, settings, model, gpu, release, tp, draft, steps, model_path=None, facts=None):
    serving = model.get('serving') or {}
    spec = serving.get('speculative') or {}
    max_tp = None
    pve = ctx.get('lxc_vars')
    if pve is not None and pve.get('llmops_host_gpus'):
        max_tp = len(pve['llmops_host_gpus'])
    elif settings['llmops_gpu_indices']:
        max_tp = len(settings['llmops_gpu_indices'])
    return dict(
        release=release, model_config=model.get('config'), weights_bytes=model.get('weights_bytes'), gpu_profile=gpu,
        tp_size=tp, mem_fraction_static=settings['llmops_mem_fraction_static'],
        context_length=settings['llmops_context_length'],
        # The operator's value or none: unset, SGLang picks its own (its estimate from the KV pool, capped by the
        # pools; 48 under speculative decoding) and the plan reports that value and what binds it.
        max_running_requests=settings['llmops_max_running_requests'],
        speculative_num_draft_tokens=draft, speculative_num_steps=steps if draft else None,
        speculative_eagle_topk=settings.get('_speculative_eagle_topk'),
        speculative_algorithm=settings.get('_speculative_algorithm'),
        draft_model_config=settings.get('_draft_model_config'),
        dp_size=settings['llmops_dp_size'], enable_dp_attention=settings['llmops_enable_dp_attention'],
        max_mamba_cache_size=settings['llmops_max_mamba_cache_size'],
        mamba_full_memory_ratio=settings['llmops_mamba_full_memory_ratio'],
        attention_backend=settings['llmops_attention_backend'], environment=settings['llmops_environment'],
        mamba_ssm_dtype=None if settings['llmops_mamba_ssm_dtype'] == 'auto' else settings['llmops_mamba_ssm_dtype'],
        kv_cache_dtype=settings['llmops_kv_cache_dtype'], page_size=settings['llmops_page_size'],
        radix_cache=settings['llmops_radix_cache'], mamba_strategy=settings['llmops_mamba_strategy'],
        disable_overlap_schedule=settings['llmops_disable_overlap_schedule'],
        chunked_prefill_size=settings['llmops_chunked_prefill_size'],
        free_memory_before_load_gib=settings['llmops_plan_free_memory_before_load_gib'],
        free_memory_after_load_gib=settings['llmops_plan_free_memory_after_load_gib'],
        concurrency=settings['llmops_plan_concurrency'], min_headroom_gib=settings['llmops_plan_min_headroom_gib'],
        mtp_accept_length=spec.get('expected_accept_length'), max_tp=max_tp,
        # The rendered --model-path: SGLang keys a few defaults on its name (a 'llama-2' path caps the prefill graphs).
        model_path_name=model_path,
        # model_config.model_facts() of the profile's config, computed once per resolution (render() gets the same).
        model_facts=facts)


def run_plan(ctx, settings, inputs, problems):
    try:
        return vram_plan.plan_with_recommendations(**inputs), None
    except vram_plan.PlanError as exc:
        name = _PLAN_VARIABLE.get(exc.kind, 'llmops_model_profile')
        text, planner_fix = split_fix(str(exc))
        # A refusal that names its variable (PlanError details) wins over the needles in its text.
        named = (getattr(exc, 'details', None) or {}).get('variable')
        for needle, candidate in () if named else _NEEDLES:
            if needle in text and exc.kind in ('sglang', 'input', 'weights'):
                name = candidate
                break
        name = named or name
        value = settings.get(name, NOVALUE) if name in settings else NOVALUE
        if exc.kind == 'weights' and 'Raise --mem-fraction-static' in text:
            fix = ('raise llmops_mem_fraction_static above the value the message gives, or use a larger llmops_tp_size; '
                   'run make plan for the numbers')
        elif exc.kind == 'weights':
            fix = 'use a larger llmops_tp_size or a smaller (quantized) checkpoint; run make plan for the numbers'
        elif exc.kind == 'mtp':
            fix = 'set llmops_speculative_num_draft_tokens: 0 (MTP off) or use a checkpoint with its MTP head'
        elif exc.kind == 'tp':
            fix = 'use a tensor-parallel size that divides the heads the message names'
        else:
            fix = 'change the setting the message names'
        if planner_fix:
            fix = llmops_names(planner_fix)
        elif name in _PLAN_FIX:
            fix = _PLAN_FIX[name]
        if value is None:
            value = inputs.get('tp_size') if name == 'llmops_tp_size' else NOVALUE
        problems.add(name, value,
                     'SGLang %s would refuse to start (its memory planner, %s): %s'
                     % (inputs['release']['version'], exc.kind, text), fix, kind='plan_' + exc.kind)
        return None, dict(kind=exc.kind, msg=str(exc), details=getattr(exc, 'details', {}))


def render(ctx, settings, model, gpu, release, plan, tp, draft, steps, model_facts, host_facts, indices, problems,
           facts=None):
    group = ctx.get('tp_group')
    server = dict(
        model_path=model_facts['path'], served_model_name=model_facts['served_model_name'],
        # A node of rank >= 1 serves no clients, only SGLang's health stub: on loopback (docs/multinode.md).
        host=settings['llmops_http_host'] if not group or group['is_head'] else '127.0.0.1',
        port=settings['llmops_http_port'], tp_size=tp,
        speculative_num_draft_tokens=draft, speculative_num_steps=steps if draft else None,
        speculative_eagle_topk=settings.get('_speculative_eagle_topk'),
        speculative_draft_model_path=settings.get('_draft_model_path'),
        dp_size=settings['llmops_dp_size'], enable_dp_attention=settings['llmops_enable_dp_attention'],
        max_mamba_cache_size=settings['llmops_max_mamba_cache_size'],
        mamba_full_memory_ratio=settings['llmops_mamba_full_memory_ratio'],
        radix_cache=settings['llmops_radix_cache'], mamba_strategy=settings['llmops_mamba_strategy'],
        disable_overlap_schedule=settings['llmops_disable_overlap_schedule'], page_size=settings['llmops_page_size'],
        chunked_prefill_size=settings['llmops_chunked_prefill_size'],
        # The plan's value: an explicit request the pools cannot hold is capped by SGLang, so the unit states the cap.
        max_running_requests=None,
        mem_fraction_static=settings['llmops_mem_fraction_static'], context_length=settings['llmops_context_length'],
        kv_cache_dtype=settings['llmops_kv_cache_dtype'], mamba_ssm_dtype=settings['llmops_mamba_ssm_dtype'],
        attention_backend=settings['llmops_attention_backend'], watchdog_timeout=settings['llmops_watchdog_timeout'],
        enable_metrics=settings['llmops_enable_metrics'], nccl_p2p_disable=settings['llmops_nccl_p2p_disable'],
        extra_args=settings['llmops_extra_args'], extra_env=settings['llmops_environment'],
        reasoning_parser=settings['llmops_reasoning_parser'], tool_call_parser=settings['llmops_tool_call_parser'])
    host = dict(gpu_indices=indices, compute_capability=gpu.get('compute_capability'),
                gpu_name=settings['llmops_gpu_profile'], p2p_verdict=ctx.get('p2p_verdict') or None,
                p2p_trusted=host_facts['nccl_p2p_trusted'],
                sev_snp=host_facts['sev_snp'], nnodes=group['nnodes'] if group else 1)
    if group:
        # The launcher's group link (sglang-launch takes it out of SGLang's environment).
        host.update(node_rank=group['node_rank'], dist_init_addr=group['dist_init_addr'],
                    dist_timeout=group['dist_timeout'],
                    node_env=dict(group['env'], LLMOPS_TP_GROUP_LINK=_compact_json(group['link'])))
    plan_values = dict((key, plan.get(key)) for key in ('mem_fraction_static', 'context_length', 'chunked_prefill_size')
                       if plan and plan.get(key) is not None)
    if plan and plan.get('max_running_requests_bound_by'):
        # What binds SGLang's own choice (the renderer warns only where the speculative reset to 48 is the bound).
        plan_values['max_running_requests_bound_by'] = plan['max_running_requests_bound_by']
    if plan and settings['llmops_max_running_requests'] is not None and plan.get('max_running_requests_total'):
        # Only an operator's value is rendered, as the plan caps it; the command line states the total and SGLang
        # gives each DP worker total // dp (kv_cache_configurator.py:3128). Unset, SGLang's own choice stands.
        plan_values['max_running_requests'] = plan['max_running_requests_total']
    try:
        result = sglang_flags.render(release, model, plan_values, host, server, facts=facts)
    except sglang_flags.FlagError as exc:
        name = flag_variable(str(exc))
        problems.add(name, NOVALUE, 'the command line cannot be rendered: %s' % exc,
                     'correct %s as the message says' % name, kind='flags')
        return None
    for check in result['preflight']:
        name = _CHECK_VARIABLE.get(check['check'], 'llmops_model_profile')
        if check['check'] in _COLLECTION_CHECKS:
            rule = 'refused before the start [%s]: %s' % (check['check'], check['message'])
        else:
            rule = 'SGLang %s would refuse to start [%s]: "%s"' % (
                release['version'], check['check'], check['message'])
        problems.add(name, settings.get(name, NOVALUE) if name in settings else NOVALUE, rule, check['fix'],
                     kind='preflight')
    return result


def split_fix(text):
    """(message, fix) of a planner message ending in '(fix: ...)'."""
    match = re.search(r'\s*\(fix: (.*)\)\.?\s*$', text)
    if not match:
        return text, None
    return text[:match.start()].rstrip(), match.group(1)


def llmops_names(text):
    """A fix in the operator's words: bare setting names (page_size: 64) become their llmops_* variables."""
    names = sorted((n[len('llmops_'):] for n in BY_NAME), key=len, reverse=True)
    return re.sub(r'(?<![A-Za-z0-9_-])(%s)(?=\s*:)' % '|'.join(re.escape(n) for n in names), r'llmops_\1', text)


def flag_variable(message):
    for needle, name in (('extra argument', 'llmops_extra_args'), ('--api-key', 'llmops_extra_args'),
                         ('mamba strategy', 'llmops_mamba_strategy'), ('CUDA_VISIBLE_DEVICES', 'llmops_gpu_indices'),
                         ('duplicate GPU', 'llmops_gpu_indices'), ('mem_fraction_static', 'llmops_mem_fraction_static'),
                         ('model_path', 'llmops_model_path')):
        if needle in message:
            return name
    return 'llmops_model_profile'


def _compact_json(value):
    return json.dumps(value, sort_keys=True, separators=(',', ':'))
