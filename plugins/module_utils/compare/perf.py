# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Step times of one SGLang replica from the hardware profile and the VRAM plan (make compare, issue #30).

PRIVATE to the collection. Pure, stdlib only. A forward over T tokens of S sequences at context C takes
max(memory time, compute time) + all-reduce time:

- memory: the weights it reads (vram_plan.forward_weight_bytes: non-expert active weights plus the distinct experts
  of T independently routed tokens, the same count vram_plan.roofline() uses for the MTP verify), S x C KV bytes
  per token of one rank (the plan's kv_bytes_per_token_target) and S x the linear-attention state (read + write),
  over memory_bandwidth_gbs of one rank;
- compute: 2 x active parameters x T plus 4 x heads x head_dim x full-attention layers x C x T FLOPs over the rank's
  dense BF16 (FP8 for checkpoints under 1.5 bytes/param) tensor throughput;
- all-reduce: 2 per layer (attention and MLP outputs), each latency + 2 (tp-1)/tp x T x hidden x 2 bytes over the
  link (NVLink one direction where the profile has it, else PCIe).

A decode cycle without speculative decoding is one forward of B tokens; with MTP / EAGLE-3 it is the verify forward
over B x draft tokens plus num_steps draft forwards of B tokens, and yields accept_length tokens per request.
Prefill of ISL tokens is one forward over ISL tokens at mean context ISL / 2. These are rooflines: compare/calibrate.py
scales them by efficiency factors fitted to measured points.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan

HARDWARE_KEYS = ('memory_bandwidth_gbs', 'bf16_dense_tflops', 'fp8_dense_tflops', 'allreduce_latency_us')


class PerfError(Exception):
    """The profiles lack a fact the step model needs."""


def hardware(profile):
    """The rates of one GPU: bytes/s of memory, FLOP/s (bf16, fp8), the all-reduce link bytes/s and latency (s)."""
    missing = [key for key in HARDWARE_KEYS if not profile.get(key)]
    if not profile.get('nvlink') and not profile.get('pcie_bandwidth_gbs'):
        missing.append('pcie_bandwidth_gbs')
    if profile.get('nvlink') and not profile.get('nvlink_bandwidth_gbs'):
        missing.append('nvlink_bandwidth_gbs')
    if missing:
        raise PerfError('profiles/hardware/%s.yml lacks %s (make compare needs them)' % (profile.get('name'), ', '.join(missing)))
    link = profile['nvlink_bandwidth_gbs'] / 2.0 if profile.get('nvlink') else float(profile['pcie_bandwidth_gbs'])
    return dict(name=profile['name'], bandwidth=profile['memory_bandwidth_gbs'] * 1e9,
                bf16=profile['bf16_dense_tflops'] * 1e12, fp8=profile['fp8_dense_tflops'] * 1e12,
                link=link * 1e9, latency=profile['allreduce_latency_us'] * 1e-6,
                link_name='NVLink' if profile.get('nvlink') else 'PCIe %s' % profile.get('pcie_gen', '?'))


def costs(facts, result, accept_length=None, draft_step_bytes=None):
    """What the step model reads of one plan: ``facts`` (vram_plan.model_facts_once) and ``result`` (vram_plan.plan).
    ``draft_step_bytes``: bytes an EAGLE-3 draft step reads (all ranks); None prices the MTP head."""
    counts = vram_plan.param_counts(facts)
    bpp = result['weights_detail']['bytes_per_param']
    if not bpp:
        raise PerfError('the plan has no bytes per parameter (weights calibrated only): cannot price the step')
    slot = vram_plan.mamba_slot_bytes(facts, result['attn_tp_size'], result['mamba_ssm_dtype'] or 'float32')
    spec = result['speculative']
    draft_tokens = spec['num_draft_tokens'] if spec['enabled'] else 0
    accept = 1.0
    if draft_tokens:
        accept = min(float(accept_length or vram_plan.DEFAULT_ACCEPT_LENGTH), float(draft_tokens))
    return dict(facts=facts, counts=counts, bpp=bpp, tp=result['tp_size'], cell=result['kv_bytes_per_token_target'],
                state=2.0 * slot['ssm'], steps=spec['num_steps'] if draft_tokens else 0, draft_tokens=draft_tokens,
                accept=accept, draft_step_bytes=draft_step_bytes)


def allreduce_time(cost, hw, tokens, layers=None):
    """Seconds of the 2 all-reduces per layer of one forward over ``tokens`` tokens (0 at tp 1)."""
    tp = cost['tp']
    if tp <= 1:
        return 0.0
    facts = cost['facts']
    count = 2 * (facts['layers'] if layers is None else layers)
    size = tokens * facts['hidden'] * 2.0
    return count * (hw['latency'] + 2.0 * (tp - 1) / tp * size / hw['link'])


def _flops_rate(cost, hw):
    return hw['fp8'] if cost['bpp'] < 1.5 else hw['bf16']


def forward_time(cost, hw, tokens, seqs, context):
    """Seconds of one forward over ``tokens`` tokens of ``seqs`` sequences that each read ``context`` KV tokens."""
    facts, tp = cost['facts'], cost['tp']
    weights = vram_plan.forward_weight_bytes(facts, cost['counts'], cost['bpp'], tokens) / tp
    memory = (weights + seqs * context * cost['cell'] + seqs * cost['state']) / hw['bandwidth']
    flops = 2.0 * cost['counts']['active'] * tokens + 4.0 * facts['heads'] * facts['head_dim'] * facts['n_full'] * context * tokens
    compute = flops / tp / _flops_rate(cost, hw)
    return max(memory, compute) + allreduce_time(cost, hw, tokens)


def draft_time(cost, hw, batch):
    """Seconds of one draft step of ``batch`` sequences: the MTP head (its layers with the distinct experts of the
    batch, embedding row and lm_head), or the EAGLE-3 checkpoint's bytes per step."""
    facts, counts, tp, bpp = cost['facts'], cost['counts'], cost['tp'], cost['bpp']
    if cost['draft_step_bytes']:
        weights = cost['draft_step_bytes']
        layers = 1
    else:
        layers = max(facts['mtp_layers'], 1)
        weights = counts['mtp_active'] * bpp
        if facts['experts']:
            extra = vram_plan.distinct_experts(facts, batch) - facts['top_k']
            weights += layers * extra * counts['expert'] * bpp
    flops = 2.0 * counts['mtp_active'] * batch
    return max(weights / tp / hw['bandwidth'], flops / tp / _flops_rate(cost, hw)) + allreduce_time(cost, hw, batch, layers)


def decode_cycle(cost, hw, batch, context):
    """Roofline seconds of one decode cycle of ``batch`` requests (each yields cost['accept'] tokens)."""
    batch = max(float(batch), 1.0)
    if not cost['draft_tokens']:
        return forward_time(cost, hw, batch, batch, context)
    verify = forward_time(cost, hw, batch * cost['draft_tokens'], batch, context)
    return verify + cost['steps'] * draft_time(cost, hw, batch)


def layer_passes(cost):
    """Layer passes of one decode cycle: the target's layers, plus each draft step's layers (the MTP head's, one for
    an EAGLE-3 draft). A fixed cost per layer pass (launches, synchronisation) is what calibration fits as t_layer."""
    facts = cost['facts']
    draft_layers = 1 if cost['draft_step_bytes'] else max(facts['mtp_layers'], 1)
    return facts['layers'] + cost['steps'] * draft_layers


def prefill_time(cost, hw, isl):
    """Roofline seconds of the prefill of one ``isl``-token prompt (mean context isl / 2)."""
    return forward_time(cost, hw, float(isl), 1, isl / 2.0)
