# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner's KV-cache families against real SGLang start-up logs (tests/fixtures/sglang_logs/cases.yml).

Each case is a log from a public issue or PR and the real config.json of its model. The per-token bytes the planner
derives from the config (MHA/GQA heads per attention-TP rank, MLA latent width, hybrid-GDN full layers only, the
sliding-window split) must give the K/V/KV sizes SGLang logged for the token count it logged, to the two decimals the
log prints; where the log also states the memory before and after loading and mem_fraction_static, the token count
itself must follow from the budget rule, within what those rounded figures allow. The error of every data point is
printed (pytest -s).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

import pytest
import yaml

from ansible_collections.llmops.inference.plugins.module_utils import model_config as mc
from ansible_collections.llmops.inference.plugins.module_utils import sglang_release as sr
from ansible_collections.llmops.inference.plugins.module_utils import vram_plan as vp

ROOT = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..')
FIXTURES = os.path.join(ROOT, 'tests', 'fixtures')
GIB = float(1 << 30)
# The log prints sizes with two decimals ("K size: 27.13 GB", GB meaning GiB): half a unit of the last digit.
ROUNDING_GIB = 0.005

with open(os.path.join(ROOT, 'profiles', 'sglang_releases.yml')) as _handle:
    TABLE = sr.load_table(yaml.safe_load(_handle))
with open(os.path.join(ROOT, 'profiles', 'sglang.yml')) as _handle:
    RELEASE = sr.release(TABLE, str(yaml.safe_load(_handle)['version']))
with open(os.path.join(FIXTURES, 'sglang_logs', 'cases.yml')) as _handle:
    CASES = yaml.safe_load(_handle)


def config(name):
    with open(os.path.join(FIXTURES, 'hf_configs', name, 'config.json')) as handle:
        return json.load(handle)


def log_text(name):
    with open(os.path.join(FIXTURES, 'sglang_logs', name)) as handle:
        return handle.read()


def kv_lines(text):
    """Every 'KV Cache is allocated' line: dicts of tokens (None in the old format), k, v, kv (GiB)."""
    out = []
    for line in text.splitlines():
        if 'KV Cache is allocated' not in line:
            continue
        entry = dict(tokens=None, k=None, v=None, kv=None)
        for key, pattern in (('tokens', r'#tokens: (\d+)'), ('k', r'K size: ([\d.]+) GB'),
                             ('v', r'V size: ([\d.]+) GB'), ('kv', r'(?<![KV] )KV size: ([\d.]+) GB')):
            match = re.search(pattern, line)
            if match:
                entry[key] = int(match.group(1)) if key == 'tokens' else float(match.group(1))
        out.append(entry)
    if out and out[-1]['tokens'] is None:
        match = re.search(r'max_total_num_tokens=(\d+)', text)
        out[-1]['tokens'] = int(match.group(1)) if match else None
    return out


def first_float(pattern, text):
    match = re.search(pattern, text)
    return float(match.group(1)) if match else None


def case_id(case):
    return case['log'].split('/')[-1][:-3]


def facts_of(case):
    return vp.sized_facts(config(case['config']), RELEASE)


@pytest.mark.parametrize('case', CASES, ids=case_id)
def test_logged_pool_sizes_follow_from_the_config(case):
    facts = facts_of(case)
    per_layer, split = vp.kv_layer_bytes(facts, case['attn_tp'], case['kv_bytes'])
    lines = kv_lines(log_text(case['log']))
    assert lines, 'no "KV Cache is allocated" line in %s' % case['log']
    # The full-attention pool is the last KV line (a hybrid SWA pool logs its SWA pool first).
    full = lines[-1]
    rows = full['tokens'] + 1  # the allocation is size + page_size rows (page 1 in every case here)
    if split:
        predicted = rows * per_layer / 2 * facts['n_full'] / GIB
        logged = [full['k'], full['v']]
    else:
        predicted = rows * per_layer * facts['n_full'] / GIB
        logged = [full['kv']]
    for value in logged:
        print('%s (%s): predicted %.4f GiB, logged %.2f' % (case_id(case), facts['family'], predicted, value))
        assert abs(predicted - value) <= ROUNDING_GIB + 1e-9, (case['log'], predicted, value)


def test_the_sliding_window_pool_is_the_ratio_of_the_full_pool():
    case = [c for c in CASES if c['log'].startswith('sliding_window/')][0]
    text = log_text(case['log'])
    facts = facts_of(case)
    ratio = RELEASE['planner']['swa_full_tokens_ratio']
    full_tokens = int(re.search(r'full_layer_tokens=(\d+)', text).group(1))
    swa_tokens = int(re.search(r'swa_layer_tokens=(\d+)', text).group(1))
    assert int(full_tokens * ratio) == swa_tokens
    swa = kv_lines(text)[0]
    per_layer, _split = vp.kv_layer_bytes(facts, case['attn_tp'], case['kv_bytes'])
    predicted = (swa['tokens'] + 1) * per_layer / 2 * facts['n_swa'] / GIB
    assert (facts['n_full'], facts['n_swa']) == (18, 18)
    assert abs(predicted - swa['k']) <= ROUNDING_GIB and abs(predicted - swa['v']) <= ROUNDING_GIB


@pytest.mark.parametrize('case', [c for c in CASES if c.get('budget')], ids=case_id)
def test_the_token_count_follows_from_the_budget(case):
    text = log_text(case['log'])
    before = first_float(r'Load weight begin\. avail mem=([\d.]+) GB', text)
    after = first_float(r'Load weight end\..*?avail mem=([\d.]+) GB', text)
    frac = first_float(r'mem_fraction_static=([\d.]+)', text)
    assert None not in (before, after, frac), case['log']
    # The planner itself, calibrated with the log's own memory figures (nothing else of the log is an input).
    result = vp.plan(model_config=config(case['config']), gpu_memory_mib=81559, tp_size=case['attn_tp'],
                     release=RELEASE, mem_fraction_static=frac, free_memory_before_load_gib=before,
                     free_memory_after_load_gib=after, runtime_overhead_gib=0.0, context_length=8192)
    cell = result['kv_bytes_per_token']
    predicted = result['kv_cache_tokens']
    logged = kv_lines(text)[-1]['tokens']
    # Each avail-mem figure is rounded to 0.005 GiB: that bounds the budget, and so the tokens.
    bound = (ROUNDING_GIB + ROUNDING_GIB * (1 - frac)) * GIB / cell
    print('%s: predicted %d tokens, logged %d (%.3f %%, bound %d)'
          % (case_id(case), predicted, logged, 100.0 * (predicted - logged) / logged, bound))
    assert abs(predicted - logged) <= bound


@pytest.mark.parametrize('name, family', [
    ('meta-llama__Meta-Llama-3.1-8B', 'gqa'), ('Qwen__Qwen3-32B', 'gqa'), ('Qwen__Qwen3-235B-A22B-FP8', 'gqa'),
    ('zai-org__GLM-4.5-Air', 'gqa'), ('deepseek-ai__DeepSeek-V3', 'mla'), ('moonshotai__Kimi-K2-Instruct', 'mla'),
    ('moonshotai__Kimi-K2.5', 'mla'), ('openai__gpt-oss-120b', 'hybrid_swa'),
    ('Qwen__Qwen3-Next-80B-A3B-Thinking', 'hybrid_gdn'), ('Qwen__Qwen3.5-122B-A10B', 'hybrid_gdn'),
])
def test_each_fixture_config_lands_in_its_family(name, family):
    assert facts_of(dict(config=name))['family'] == family


def test_an_architecture_in_no_family_is_refused_with_the_supported_list():
    cfg = dict(config('meta-llama__Meta-Llama-3.1-8B'), architectures=['Gemma3ForCausalLM'])
    with pytest.raises(vp.PlanError) as err:
        vp.sized_facts(cfg, RELEASE)
    text = str(err.value)
    assert err.value.kind == 'architecture'
    assert 'Gemma3ForCausalLM is not one the planner sizes' in text and 'DeepseekV3ForCausalLM' in text
    assert 'GptOssForCausalLM' in text and 'Qwen3_5MoeForConditionalGeneration' in text


def test_mla_keeps_the_whole_latent_on_every_rank():
    facts = facts_of(dict(config='deepseek-ai__DeepSeek-V3'))
    one, _split = vp.kv_layer_bytes(facts, 1, 2)
    eight, split = vp.kv_layer_bytes(facts, 8, 2)
    assert one == eight == (512 + 64) * 2 and not split
    assert vp.kv_cell_bytes(facts, 8, 2, 0)[0] == 576 * 2 * 61


def test_gqa_heads_split_over_tp_and_replicated_beyond_it():
    facts = facts_of(dict(config='Qwen__Qwen3-235B-A22B-FP8'))  # 4 KV heads of 128
    assert [vp.kv_layer_bytes(facts, tp, 2)[0] for tp in (1, 2, 4, 8)] == [4 * 256 * 2, 2 * 256 * 2, 256 * 2, 256 * 2]


def test_moe_dense_prefix_and_expert_names_are_read():
    ds = facts_of(dict(config='deepseek-ai__DeepSeek-V3'))
    assert (ds['experts'], ds['top_k'], ds['moe_inter'], ds['shared_inter'], ds['dense_layers']) == (256, 8, 2048, 2048, 3)
    oss = facts_of(dict(config='openai__gpt-oss-120b'))
    assert (oss['experts'], oss['top_k'], oss['moe_inter'], oss['dense_layers']) == (128, 4, 2880, 0)


def test_nextn_layers_count_only_when_positive():
    cfg = config('zai-org__GLM-4.5-Air')
    assert facts_of(dict(config='zai-org__GLM-4.5-Air'))['nextn_in_config'] == bool(cfg.get('num_nextn_predict_layers'))
    zero = dict(cfg, num_nextn_predict_layers=0)
    assert mc.model_facts(zero, RELEASE['architectures'])['nextn_in_config'] is False


# Parameter counts from the config alone against the totals the model cards publish, to the precision they publish
# (Qwen3-32B card: "Number of Parameters: 32.8B"; Qwen3-235B-A22B: 235B total, 22B activated; DeepSeek-V3: 671B
# total, 37B activated per token (the 14B MTP module apart); gpt-oss-120b: 117B total, 5.1B active; Llama 3.1 8B:
# 8.03B).
@pytest.mark.parametrize('name, total_b, total_digits, active_b, active_digits', [
    ('Qwen__Qwen3-32B', 32.8, 1, None, None),
    ('Qwen__Qwen3-235B-A22B-FP8', 235, 0, 22, 0),
    ('deepseek-ai__DeepSeek-V3', 671, 0, 37, 0),
    ('openai__gpt-oss-120b', 117, 0, 5.1, 1),
    ('meta-llama__Meta-Llama-3.1-8B', 8.03, 2, None, None),
])
def test_parameter_counts_match_the_model_cards(name, total_b, total_digits, active_b, active_digits):
    counts = vp.param_counts(facts_of(dict(config=name)))
    assert round(counts['language'] / 1e9, total_digits) == total_b
    if active_b is not None:
        assert round(counts['active'] / 1e9, active_digits) == active_b
