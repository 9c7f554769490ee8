# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan's "what else fits on this host" table over the committed model profiles.

Where the expected values come from (docs/dev/test-oracles.md):
- the smallest size of each profile on 4 x RTX PRO 6000 (97887 MiB, the hardware profile) is written out below and
  argued by hand: the next size down cannot load the weights, which are the profile's weights_bytes or, where that is
  null, the model card's parameter total at 2 B (BF16);
- one row (qwen3-32b at TP 1) is derived end to end by hand from its config.json and the pinned SGLang's rules, so
  the table's KV tokens, request limit and headroom are checked against numbers that did not come from the planner;
- every other row's KV tokens are checked as a pass-through: the table must report what plan() reports at that size
  (a contract, not a derivation).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import yaml

from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import fits as df
from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan as vp

from collection_paths import PROFILES, ROOT, release

GIB = float(1 << 30)


def load(*parts):
    with open(os.path.join(PROFILES, *parts)) as handle:
        return yaml.safe_load(handle)


RELEASE = release()
MODELS = dict((n[:-4], load('models', n)) for n in os.listdir(os.path.join(PROFILES, 'models')) if n.endswith('.yml'))
RTX = load('hardware', 'rtx-pro-6000-blackwell-server.yml')
H200 = load('hardware', 'h200.yml')

# Free before loading on the example host, from the hardware profile's own figures (memory.total less its measured
# startup_overhead_gib): 97887 / 1024 - 1.4 = 94.19 GiB.
RTX_FREE_GIB = RTX['memory_total_mib'] / 1024.0 - RTX['startup_overhead_gib']

# Parameter totals the model cards publish, for the profiles whose weights_bytes is null (priced at 2 B a parameter):
# GLM-4.5-Air "106B total parameters"; Llama-3.3-70B-Instruct 70.6B (the Hub's safetensors count); Qwen3-32B
# "Number of Parameters: 32.8B" (the EAGLE-3 pair's target too); Qwen3.5-122B-A10B 122B total.
CARD_PARAMS = {'glm-4.5-air': 106e9, 'llama-3.3-70b-instruct': 70.6e9, 'qwen3-32b': 32.8e9, 'qwen3-32b-eagle3': 32.8e9,
               'qwen3.5-122b-a10b': 122e9}

# The expected smallest TP on 4 GPUs (None: at no size up to 4). Why, in GiB of weights per GPU against 94.19 free:
#   deepseek-v3       688.6 GB / 4 = 160.4      kimi-k2.5  595.1 GB / 4 = 138.6   -> cannot load at 4
#   glm-4.5-air       212 GB / 2 = 98.7         -> 4          llama-3.3-70b  141.2 GB / 1 = 131.5   -> 2
#   qwen3.5-122b      244 GB / 2 = 113.6        -> 4          qwen3.5-397b-nvfp4  251.1 GB / 2 = 116.9   -> 4
#   gpt-oss-120b 65.2 GB = 60.8, qwen3-32b(-eagle3) 65.6 GB = 61.1 at TP 1   -> 1
# At the expected size the weights load (below 94.19); that the KV cache and the headroom fit there too is the
# planner's verdict (checked as a contract below, and derived by hand for qwen3-32b).
EXPECTED_TP = {'deepseek-v3': None, 'kimi-k2.5': None, 'glm-4.5-air': 4, 'llama-3.3-70b-instruct': 2,
               'qwen3.5-122b-a10b': 4, 'qwen3.5-397b-a17b-nvfp4': 4, 'gpt-oss-120b': 1, 'qwen3-32b': 1,
               'qwen3-32b-eagle3': 1}


def weights_gib(name, tp):
    model = MODELS[name]
    total = model.get('weights_bytes') or CARD_PARAMS[name] * 2
    return total / float(tp) / GIB


def spec_inputs(spec):
    """The planner's speculative inputs of a profile as the deploy passes them (an EAGLE-3 profile names its draft)."""
    return dict(speculative_num_draft_tokens=spec.get('num_draft_tokens'), speculative_num_steps=spec.get('num_steps'),
                speculative_eagle_topk=spec.get('eagle_topk'), speculative_algorithm=spec.get('algorithm'),
                draft_model_config=(spec.get('draft') or {}).get('config'))


def test_the_hand_argument_for_each_expected_size_holds():
    """The arithmetic the EXPECTED_TP comments state, checked with the profile and card figures alone."""
    assert round(RTX_FREE_GIB, 2) == 94.19
    for name, tp in EXPECTED_TP.items():
        if tp is None:
            assert weights_gib(name, 4) > RTX_FREE_GIB, name
            continue
        if tp > 1:
            assert weights_gib(name, tp // 2) > RTX_FREE_GIB, name
        assert weights_gib(name, tp) < RTX_FREE_GIB, name


def test_every_committed_profile_gets_its_smallest_fitting_size():
    rows = df.table(MODELS, RTX, RELEASE, 4, current='qwen3.5-122b-a10b')
    assert [r['profile'] for r in rows] == sorted(MODELS)
    by_name = dict((r['profile'], r) for r in rows)
    # The hand-argued sizes; a profile added later has no expected row yet and is checked by the contract below only.
    for name, tp in EXPECTED_TP.items():
        assert by_name[name]['tp'] == tp, (name, by_name[name])
    for row in rows:
        model = MODELS[row['profile']]
        spec = model['serving'].get('speculative') or {}
        if row['tp'] is None:
            # Too big for the example host (4 x 96 GB): the note says why, and the profile's own size fits on H200.
            assert row['note'].startswith('does not fit on 4 GPU(s): cannot load'), row
            assert model['serving']['tp_size'] == 8
            assert vp.plan(model_config=model['config'], weights_bytes=model.get('weights_bytes'), gpu_profile=H200,
                           tp_size=8, release=RELEASE, speculative_num_draft_tokens=spec.get('num_draft_tokens', 0))['fits']
            continue
        # Contract: the row states plan() at the row's size.
        fitting = vp.plan(model_config=model['config'], weights_bytes=model.get('weights_bytes'), gpu_profile=RTX,
                          tp_size=row['tp'], release=RELEASE, **spec_inputs(spec))
        assert fitting['fits'] and fitting['kv_cache_tokens'] == row['kv_tokens']
        assert fitting['max_running_requests'] == row['max_running_requests']
        if row['tp'] > 1:
            # The next size down does not fit (or cannot be planned).
            try:
                smaller = vp.plan(model_config=model['config'], weights_bytes=model.get('weights_bytes'),
                                  gpu_profile=RTX, tp_size=row['tp'] // 2, release=RELEASE, **spec_inputs(spec))
                assert not smaller['fits']
            except vp.PlanError:
                pass
    assert [r['current'] for r in rows].count(True) == 1 and by_name['qwen3.5-122b-a10b']['current']


def qwen3_32b_row_by_hand():
    """Qwen3-32B at TP 1 on one RTX PRO 6000, every step from its config.json, the hardware profile and the pinned
    SGLang source (paths under sglang/srt/), nothing from the planner."""
    with open(os.path.join(ROOT, 'tests', 'fixtures', 'hf_configs', 'Qwen__Qwen3-32B', 'config.json')) as handle:
        cfg = json.load(handle)
    vocab, h, layers = cfg['vocab_size'], cfg['hidden_size'], cfg['num_hidden_layers']
    heads, kv_heads, head_dim, inter = (cfg['num_attention_heads'], cfg['num_key_value_heads'], cfg['head_dim'],
                                        cfg['intermediate_size'])
    assert (vocab, h, layers, heads, kv_heads, head_dim, inter) == (151936, 5120, 64, 64, 8, 128, 25600)
    assert cfg['tie_word_embeddings'] is False and cfg['max_position_embeddings'] == 40960
    # Parameters: embedding + untied lm_head; per layer q, k, v, o, gate/up/down, two RMSNorms and q_norm / k_norm;
    # the final norm. 32,762,123,264 (the card says 32.8B). bf16: 2 B each.
    layer = h * heads * head_dim + 2 * h * kv_heads * head_dim + heads * head_dim * h + 3 * h * inter + 2 * h + 2 * head_dim
    params = 2 * vocab * h + layers * layer + h
    assert params == 32762123264
    weights = params * 2 / GIB
    # mem_fraction_static (arg_groups/memory_hook.py): 97887 MiB is in the "< 160 GiB" band (:146-159): chunked
    # prefill 8192, decode max_bs 256 at TP < 4. reserved = 512 + 8192 x 1.5 + TP 1 / 8 x 1024 (:309-313) +
    # reserve_for_graph_mb (:357-399: max_bs x 2, + 8 MiB per prefill graph size, cuda_graph_hook.py:480-497: 58 sizes
    # up to 8192) = 13904 MiB (above the 10 GiB floor of :315); frac = round((97887 - 13904) / 97887, 3) = 0.858.
    sizes = (list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32)) + list(range(576, 1025, 64))
             + list(range(1280, 4097, 256)) + list(range(4608, 8193, 512)))
    reserved = 512 + 8192 * 1.5 + 1 / 8.0 * 1024 + 256 * 2 + len(sizes) * 8
    assert (len(sizes), reserved) == (58, 13904)
    gpu_mib = RTX['memory_total_mib']
    frac = round((gpu_mib - reserved) / float(gpu_mib), 3)
    assert frac == 0.858
    # The pool budget (mem_cache/kv_cache_configurator.py:2992-3007): free after loading less the runtime slack
    # pre_load x (1 - frac). Free after loading = free before (RTX_FREE_GIB) - weights, less the planner's stated
    # allowance for what SGLang allocates between "Load weight end" and pool sizing (0.05 GiB, docs/plan.md).
    after = RTX_FREE_GIB - weights
    available = after - 0.05
    rest = available - RTX_FREE_GIB * (1 - frac)
    # One token: 64 layers x 8 KV heads x 128 x (K + V) x 2 B; page 1.
    cell = layers * kv_heads * head_dim * 2 * 2
    tokens = int(rest * GIB) // cell
    # resolve_max_num_reqs (kv_cache_configurator.py:3118-3130): max(min(tokens / context x 512, 4096), 2048), at most
    # tokens // 2.
    running = min(max(min(int(tokens / 40960.0 * 512), 4096), 2048), tokens // 2)
    # Headroom: what stays free after the pools: K and V of (tokens + page) rows, and req_to_token, int32
    # (running + 1) x (context + 4) (mem_cache/memory_pool.py:402-408, allocation_sizing.py:96-116).
    pools = ((tokens + 1) * cell + (running + 1) * (40960 + 4) * 4) / GIB
    headroom = available - pools
    return dict(tokens=tokens, running=running, headroom=round(headroom, 2))


def test_one_row_matches_a_derivation_by_hand():
    expected = qwen3_32b_row_by_hand()
    assert expected == dict(tokens=80868, running=2048, headroom=13.06)
    row = [r for r in df.table(MODELS, RTX, RELEASE, 4) if r['profile'] == 'qwen3-32b'][0]
    assert (row['tp'], row['kv_tokens'], row['max_running_requests'], row['headroom_gib']) == (
        1, expected['tokens'], expected['running'], expected['headroom'])


def test_a_profile_that_fits_nowhere_says_why_and_an_unknown_architecture_is_named():
    big = dict(MODELS['qwen3.5-122b-a10b'])
    unknown = dict(MODELS['qwen3-32b'], config=dict(MODELS['qwen3-32b']['config'], architectures=['Gemma3ForCausalLM']))
    rows = df.table({'big': big, 'unknown': unknown}, RTX, RELEASE, 1)
    assert rows[0]['tp'] is None and rows[0]['note'].startswith('does not fit on 1 GPU(s)')
    assert rows[1]['tp'] is None and 'Gemma3ForCausalLM is not one the planner sizes' in rows[1]['note']
    text = '\n'.join(df.markdown(rows, 'RTX PRO 6000', 1))
    assert '| big | - | - | - | - | does not fit on 1 GPU(s)' in text
