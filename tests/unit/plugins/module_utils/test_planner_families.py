# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner's KV-cache families against real SGLang start-up logs (tests/fixtures/sglang_logs/cases.yml).

Each case is a log from a public issue, PR, repository or the SGLang docs build, and the real config.json of its model.
Every number below is read from the log itself; the planner (vram_plan, sglang_layout) must reproduce it:

- pool sizes: the per-token bytes of the planner's own cell functions (vram_plan.kv_layer_bytes / swa_layer_bytes /
  kv_cell_bytes with sglang_layout.dsa_layout) times the rows SGLang allocates (#tokens + page) must give the K/V/KV
  sizes SGLang logged, to the two decimals it prints (bound: half a unit of the last digit);
- the sliding-window pool holds swa_full_tokens_ratio x the full pool (exact);
- the token count: where the log states the memory before and after loading and mem_fraction_static,
  vram_plan.plan() calibrated with exactly those figures must give the logged count. Bound: each avail-mem figure is
  rounded to 0.005 GiB, and SGLang allocates a little between "Load weight end" and pool sizing that no log line
  shows; the planner's own allowance for it is DEFAULT_RUNTIME_OVERHEAD_GIB. The logged count must lie between plan()
  with that allowance and plan() without it, widened by the rounding;
- speculative decoding: the draft worker's pool has the target's token count, and plan() asked for the speculative
  settings the log's server_args print (algorithm, steps, top-k, draft tokens; an EAGLE-3 draft checkpoint's
  config.json as the profile's serving.speculative.draft.config) must report that draft pool per token.

A log that needs a planner feature main does not have is a strict xfail naming the feature, so it fails loudly once the
feature lands. A log of an older release whose figure the pinned release would not reproduce is a version difference:
it is checked against the pinned formula under the older release's layout, and the pinned default is a strict xfail
with both numbers in its reason. The error of every data point is printed (pytest -s); docs/plan.md tabulates them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

import pytest
import yaml

from ansible_collections.llmops.inference.plugins.module_utils.model import config as mc
from ansible_collections.llmops.inference.plugins.module_utils.sglang import layout as sl
from ansible_collections.llmops.inference.plugins.module_utils.planner import spec_draft as sdr
from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan as vp

from collection_paths import ROOT, release

FIXTURES = os.path.join(ROOT, 'tests', 'fixtures')
GIB = float(1 << 30)
# The log prints sizes with two decimals ("K size: 27.13 GB", GB meaning GiB): half a unit of the last digit.
ROUNDING_GIB = 0.005

RELEASE = release()
with open(os.path.join(FIXTURES, 'sglang_logs', 'cases.yml')) as _handle:
    CASES = yaml.safe_load(_handle)


def config(name):
    with open(os.path.join(FIXTURES, 'hf_configs', name, 'config.json')) as handle:
        return json.load(handle)


def log_text(case):
    """The fenced blocks under the file's "## Log line(s)" heading (or only block `block` of them)."""
    with open(os.path.join(FIXTURES, 'sglang_logs', case['log'])) as handle:
        text = handle.read()
    section = text[text.index('\n## Log line'):]
    blocks = re.findall(r'^```[a-z]*\n(.*?)^```', section, re.S | re.M)
    if 'block' in case:
        blocks = [blocks[case['block']]]
    return '\n'.join(blocks)


def kv_lines(text):
    """The distinct 'KV Cache is allocated' lines in order of first appearance: dicts of tokens (None in the old
    format), k, v, kv (GiB). Every TP rank prints the same line; one of each is kept."""
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
        if entry not in out:
            out.append(entry)
    return out


def pools(case):
    """Role -> logged pool (full, swa, draft), per the case's `pools` list."""
    text = log_text(case)
    lines = kv_lines(text)
    roles = case.get('pools', ['full'])
    assert len(lines) == len(roles), '%s: %d distinct KV lines, pools lists %s' % (case['log'], len(lines), roles)
    out = dict(zip(roles, lines))
    if 'full' in out and out['full']['tokens'] is None:
        # Old format: the pool size is the summary's max_total_num_tokens.
        out['full'] = dict(out['full'], tokens=int(re.search(r'max_total_num_tokens=(\d+)', text).group(1)))
    return out


def first_float(pattern, text):
    match = re.search(pattern, text)
    return float(match.group(1)) if match else None


def header(case):
    """The whole log file: its header quotes the printed server_args (the log blocks hold the log lines only)."""
    with open(os.path.join(FIXTURES, 'sglang_logs', case['log'])) as handle:
        return handle.read()


def case_id(case):
    return case['log'].split('/')[-1][:-3]


def marked(cases, key='xfail'):
    """Cases as pytest params; a case that needs a missing planner feature is a strict xfail naming it."""
    out = []
    for case in cases:
        reason = case.get('xfail') or (case.get(key) if key != 'xfail' else None)
        marks = [pytest.mark.xfail(strict=True, reason=reason, raises=(vp.PlanError, AssertionError))] if reason else []
        out.append(pytest.param(case, id=case_id(case), marks=marks))
    return out


def facts_of(case):
    return vp.sized_facts(config(case['config']), RELEASE)


def kv_dtype(case):
    return 'fp8_e4m3' if case['kv_bytes'] == 1 else 'bfloat16'


def dsa_of(case, facts, backends='logged'):
    """sglang_layout.dsa_layout of a DSA case: under the DSA backends the log's server_args print (or, for a version
    difference, the case's dsa_backends), or (backends=None) the pinned release's defaults on the case's GPU."""
    if backends == 'logged':
        text = header(case)
        backends = [re.search(r"[nd]sa_%s_backend='(\w+)'" % side, text) for side in ('prefill', 'decode')]
        backends = [m.group(1) for m in backends] if all(backends) else None
        if backends is None or case.get('version_difference'):
            backends = case['dsa_backends']
    return sl.dsa_layout(RELEASE, facts, kv_dtype(case), case.get('compute_capability'), backends=backends)


def predicted_gib(facts, case, tokens, role, dsa=None):
    """(K, V) or (KV, None) GiB of a pool of `tokens` by the planner's per-token rules; role full, swa or draft."""
    rows = tokens + case.get('page', 1)
    tp, kv_bytes = case['attn_tp'], case['kv_bytes']
    if facts['attention'] == 'mla':
        # The planner's MLA cell: the latent of every layer (DSA: plus the index keys of every indexer layer).
        cell, _draft = vp.kv_cell_bytes(facts, tp, kv_bytes, 0, dsa=dsa)
        assert role != 'draft' or dsa is None, 'no DSA draft pool is among the cases'
        return rows * (cell if role != 'draft' else vp.kv_layer_bytes(facts, tp, kv_bytes)[0]) / GIB, None
    if role == 'swa':
        # HybridSWAPoolConfigurator: the sliding-window layers at their own geometry (vram_plan.swa_layer_bytes).
        heads = max(1, facts['swa_kv_heads'] // tp)
        k_dim, v_dim, layers = facts['swa_head_dim'], facts['swa_v_head_dim'], facts['n_swa']
        assert vp.swa_layer_bytes(facts, tp, kv_bytes) == heads * (k_dim + v_dim) * kv_bytes
    else:
        heads = vp.kv_heads_per_rank(facts, tp)
        k_dim, v_dim, layers = facts['head_dim'], facts['v_head_dim'], facts['n_full'] if role == 'full' else 1
        assert vp.kv_layer_bytes(facts, tp, kv_bytes)[0] == heads * (k_dim + v_dim) * kv_bytes
    return rows * heads * k_dim * layers * kv_bytes / GIB, rows * heads * v_dim * layers * kv_bytes / GIB


def check_pool(case, facts, logged, role, dsa=None, label=''):
    predicted = predicted_gib(facts, case, logged['tokens'], role, dsa)
    if predicted[1] is None:
        pairs = [(predicted[0], logged['kv'], 'KV')]
    else:
        pairs = [(predicted[0], logged['k'], 'K'), (predicted[1], logged['v'], 'V')]
    for value, seen, name in pairs:
        print('%s %s pool %s (%s%s): predicted %.4f GiB, logged %.2f (%+.2f %%)'
              % (case_id(case), role, name, facts['family'], label, value, seen, 100.0 * (value - seen) / seen))
        assert abs(value - seen) <= ROUNDING_GIB + 1e-9, (case['log'], role, value, seen)


@pytest.mark.parametrize('case', marked(CASES))
def test_logged_pool_sizes_follow_from_the_config(case):
    facts = facts_of(case)
    logged = pools(case)
    checked = [role for role in ('full', 'swa') if role in logged]
    assert checked, 'no target pool line in %s' % case['log']
    dsa = dsa_of(case, facts) if facts['dsa'] else None
    if dsa is not None:
        # The layout the run stored: its DSA backends, as the log prints them (or the case states for a version
        # difference), through the pinned release's rule.
        assert dsa['kv_cache_dtype'] == kv_dtype(case)
    for role in checked:
        check_pool(case, facts, logged[role], role, dsa, ', DSA latent %d B' % dsa['latent_dim'] if dsa else '')


DSA_CASES = [c for c in CASES if 'dsa_backends' in c or 'nsa_prefill_backend' in header(c)]


@pytest.mark.parametrize('case', [pytest.param(c, id=case_id(c)) for c in DSA_CASES])
def test_dsa_backends_of_a_case_are_the_logged_ones_unless_it_states_a_version_difference(case):
    text = header(case)
    if case.get('version_difference'):
        assert 'dsa_prefill_backend' not in text and 'nsa_prefill_backend' not in text, case['log']
    else:
        assert 'dsa_backends' not in case or all("_backend='%s'" % b in text for b in case['dsa_backends'])


@pytest.mark.parametrize('case', [pytest.param(c, id=case_id(c), marks=pytest.mark.xfail(
    strict=True, raises=AssertionError, reason=c['version_difference'])) for c in CASES if c.get('version_difference')])
def test_the_pinned_release_default_reproduces_the_log(case):
    """A version difference: the pinned release's own default layout on the log's GPU, against the logged pool."""
    facts = facts_of(case)
    dsa = dsa_of(case, facts, backends=None)
    for role in [r for r in ('full', 'swa') if r in pools(case)]:
        check_pool(case, facts, pools(case)[role], role, dsa, ', pinned default latent %d B' % dsa['latent_dim'])


@pytest.mark.parametrize('case', marked([c for c in CASES if 'Use sliding window memory pool' in log_text(c)]))
def test_the_sliding_window_pool_is_the_ratio_of_the_full_pool(case):
    text = log_text(case)
    ratio = RELEASE['planner']['swa_full_tokens_ratio']
    page = case.get('page', 1)
    full_tokens = int(re.search(r'full_layer_tokens=(\d+)', text).group(1))
    swa_tokens = int(re.search(r'swa_layer_tokens=(\d+)', text).group(1))
    # vram_plan: swa_tokens = int(tokens * swa_ratio) // page_size * page_size
    assert int(full_tokens * ratio) // page * page == swa_tokens
    facts = facts_of(case)
    assert facts['family'] == 'hybrid_swa'
    assert pools(case)['swa']['tokens'] == swa_tokens


def budget_inputs(case):
    text = log_text(case)
    before = first_float(r'Load weight begin\. avail mem=([\d.]+) GB', text)
    after = first_float(r'Load weight end\..*?avail mem=([\d.]+) GB', text)
    frac = first_float(r'mem_fraction_static=([\d.]+)', header(case))
    assert None not in (before, after, frac), case['log']
    return before, after, frac


def planned(case, overhead, **extra):
    """vram_plan.plan() calibrated with the log's own memory figures (nothing else of the log is an input). The GPU size
    only feeds the default mem_fraction_static heuristic, which the logged fraction replaces."""
    before, after, frac = budget_inputs(case)
    return vp.plan(model_config=config(case['config']), gpu_memory_mib=int((before + 1) * 1024),
                   tp_size=case['attn_tp'], release=RELEASE, mem_fraction_static=frac,
                   free_memory_before_load_gib=before, free_memory_after_load_gib=after,
                   runtime_overhead_gib=overhead, context_length=4096,
                   kv_cache_dtype='fp8_e4m3' if case['kv_bytes'] == 1 else 'auto', **extra)


@pytest.mark.parametrize('case', marked([c for c in CASES if c.get('budget')]))
def test_the_token_count_follows_from_the_budget(case):
    _before, _after, frac = budget_inputs(case)
    without = planned(case, 0.0)
    allowed = planned(case, vp.DEFAULT_RUNTIME_OVERHEAD_GIB)
    cell = without['kv_bytes_per_token']
    logged = pools(case)['full']['tokens']
    # Each avail-mem figure is rounded to 0.005 GiB: that bounds the budget, and so the tokens.
    bound = (ROUNDING_GIB + ROUNDING_GIB * (1 - frac)) * GIB / cell
    print('%s: logged %d tokens; plan() without the unlogged allowance %d (%+.3f %%), with %.2f GiB %d (%+.3f %%); '
          'rounding bound %d tokens'
          % (case_id(case), logged, without['kv_cache_tokens'], 100.0 * (without['kv_cache_tokens'] - logged) / logged,
             vp.DEFAULT_RUNTIME_OVERHEAD_GIB, allowed['kv_cache_tokens'],
             100.0 * (allowed['kv_cache_tokens'] - logged) / logged, bound))
    assert allowed['kv_cache_tokens'] - bound <= logged <= without['kv_cache_tokens'] + bound


SPEC_CASES = [c for c in CASES if 'draft' in c.get('pools', [])]


@pytest.mark.parametrize('case', marked(SPEC_CASES))
def test_the_draft_pool_has_the_target_token_count_and_the_drafts_geometry(case):
    logged = pools(case)
    facts = facts_of(case)
    # kv_cache_configurator.py:470-474: the draft pool holds the target's token count (same rows)...
    assert logged['draft']['tokens'] == logged['full']['tokens'], (case['log'], logged)
    if not case.get('draft_config'):
        # ...of one full-attention layer of the target's per-layer KV: a path-less MTP head
        # (num_nextn_predict_layers 1), or an EAGLE draft with the target's geometry.
        check_pool(case, facts, logged['draft'], 'draft')
        return
    # ...an EAGLE-3 draft checkpoint: its own KV heads and layers (spec_draft.draft_kv_layer_bytes / draft_layers).
    draft = sdr.draft_facts(config(case['draft_config']), RELEASE)
    rows = logged['draft']['tokens'] + case.get('page', 1)
    per_token = sdr.draft_layers(draft) * sdr.draft_kv_layer_bytes(draft, case['attn_tp'], case['kv_bytes'])
    heads = max(1, draft['kv_heads'] // case['attn_tp'])
    for value, seen, dim in ((rows * per_token * draft['head_dim'] / (draft['head_dim'] + draft['v_head_dim']),
                              logged['draft']['k'], 'K'),
                             (rows * per_token * draft['v_head_dim'] / (draft['head_dim'] + draft['v_head_dim']),
                              logged['draft']['v'], 'V')):
        value /= GIB
        print('%s draft pool %s (%s, %d layer(s) x %d KV heads): predicted %.4f GiB, logged %.2f (%+.2f %%)'
              % (case_id(case), dim, draft['arch'], sdr.draft_layers(draft), heads, value, seen,
                 100.0 * (value - seen) / seen))
        assert abs(value - seen) <= ROUNDING_GIB + 1e-9, (case['log'], dim, value, seen)


def spec_settings(case):
    """plan() inputs of the speculative settings the log's printed server_args state."""
    text = header(case)
    algorithm = re.search(r"speculative_algorithm='(\w+)'", text).group(1)
    out = dict(speculative_algorithm=algorithm)
    for key in ('speculative_num_steps', 'speculative_eagle_topk', 'speculative_num_draft_tokens'):
        out[key] = int(re.search(r'%s=(\d+)' % key, text).group(1))
    if case.get('draft_config'):
        out['draft_model_config'] = config(case['draft_config'])
        # The logged server started, so SGLang accepted its context for the logged draft; the stand-in config keeps
        # its training framework's max_position_embeddings (2048), which the planner would refuse as SGLang does
        # (spec_draft.check_draft_context): allow it as SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN does.
        out['environment'] = {'SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN': '1'}
    return out


@pytest.mark.parametrize('case', marked(SPEC_CASES, key='xfail_spec'))
def test_plan_reports_the_logged_draft_pool(case):
    result = planned(case, vp.DEFAULT_RUNTIME_OVERHEAD_GIB, **spec_settings(case))
    draft = pools(case)['draft']
    logged_rows = draft['tokens'] + case.get('page', 1)
    logged_bytes = ((draft['k'] + draft['v']) if draft['kv'] is None else draft['kv']) * GIB / logged_rows
    rows = result['kv_cache_tokens'] + result['page_size']
    # draft_kv_gib is rounded to three decimals.
    planned_bytes = result['draft_kv_gib'] * GIB / rows
    # Both sides are per-token figures of two-decimal (log) / three-decimal (plan) GiB sizes.
    bound = 2 * ROUNDING_GIB * GIB / logged_rows + 0.0005 * GIB / rows
    exact = (result['speculative']['draft'] or {}).get('kv_bytes_per_token')
    print('%s draft (%s): plan() %.0f B/token%s, log %.0f B/token (%+.2f %%; bound %.0f B)'
          % (case_id(case), result['speculative']['algorithm'], planned_bytes,
             ' (draft kv_bytes_per_token %d)' % exact if exact else '', logged_bytes,
             100.0 * (planned_bytes - logged_bytes) / logged_bytes, bound))
    assert abs(planned_bytes - logged_bytes) <= bound


@pytest.mark.parametrize('name, family', [
    ('meta-llama__Meta-Llama-3.1-8B', 'gqa'), ('Qwen__Qwen3-32B', 'gqa'), ('Qwen__Qwen3-235B-A22B-FP8', 'gqa'),
    ('zai-org__GLM-4.5-Air', 'gqa'), ('deepseek-ai__DeepSeek-V3', 'mla'), ('moonshotai__Kimi-K2-Instruct', 'mla'),
    ('moonshotai__Kimi-K2.5', 'mla'), ('openai__gpt-oss-120b', 'hybrid_swa'),
    ('Qwen__Qwen3-Next-80B-A3B-Thinking', 'hybrid_gdn'), ('Qwen__Qwen3.5-122B-A10B', 'hybrid_gdn'),
    ('Qwen__Qwen3-30B-A3B', 'gqa'), ('Qwen__Qwen3-30B-A3B-FP8', 'gqa'), ('meta-llama__Llama-2-7b-chat-hf', 'gqa'),
    ('XiaomiMiMo__MiMo-7B-Base', 'gqa'), ('XiaomiMiMo__MiMo-V2-Flash', 'hybrid_swa'), ('zai-org__GLM-5-FP8', 'mla'),
    ('deepseek-ai__DeepSeek-V3.2', 'mla'),
])
def test_each_fixture_config_lands_in_its_family(name, family):
    assert facts_of(dict(config=name))['family'] == family


def test_an_architecture_in_no_family_is_refused_with_the_supported_list():
    # Gemma3ForCausalLM is in the pinned release's model registry (profiles/sglang_releases.yml architectures.served,
    # checked against the installed registry by tests/sglang/test_planner_families_sglang.py) but in no family.
    cfg = dict(config('meta-llama__Meta-Llama-3.1-8B'), architectures=['Gemma3ForCausalLM'])
    with pytest.raises(vp.PlanError) as err:
        vp.sized_facts(cfg, RELEASE)
    text = str(err.value)
    assert err.value.kind == 'architecture'
    assert 'Gemma3ForCausalLM is not one the planner sizes for sglang %s, though that release serves it' % RELEASE['version'] in text
    assert 'DeepseekV3ForCausalLM' in text
    assert 'GptOssForCausalLM' in text and 'Qwen3_5MoeForConditionalGeneration' in text


def test_mimo_v2_flash_sliding_window_layers_keep_their_own_geometry():
    # configs/model_config.py:2721-2730 hybrid_layer_pattern (1 = sliding window); :1357-1365, :1713-1717 the SWA
    # heads and dims; pool_configurator.py:704-716 prices full and SWA layers each at its own size.
    cfg = config('XiaomiMiMo__MiMo-V2-Flash')
    facts = facts_of(dict(config='XiaomiMiMo__MiMo-V2-Flash'))
    assert (facts['n_full'], facts['n_swa']) == (cfg['hybrid_layer_pattern'].count(0), cfg['hybrid_layer_pattern'].count(1))
    assert vp.kv_layer_bytes(facts, 4, 2)[0] == 1 * (192 + 128) * 2
    assert vp.swa_layer_bytes(facts, 4, 2) == 2 * (192 + 128) * 2
    cell, _draft = vp.kv_cell_bytes(facts, 4, 2, 0, swa_ratio=0.8)
    assert cell == 9 * 640 + 0.8 * 39 * 1280
    # gpt-oss names no SWA geometry of its own: both pools use the full layers' (unchanged by the rule): by hand from
    # its config, 8 KV heads x (64 + 64) x 2 B at TP 1 in either pool.
    oss_config = config('openai__gpt-oss-120b')
    assert (oss_config['num_key_value_heads'], oss_config['head_dim']) == (8, 64)
    oss = facts_of(dict(config='openai__gpt-oss-120b'))
    assert vp.swa_layer_bytes(oss, 1, 2) == vp.kv_layer_bytes(oss, 1, 2)[0] == 8 * (64 + 64) * 2


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
# 8.03B; MiMo-V2-Flash (github.com/XiaomiMiMo/MiMo-V2-Flash README): 309B total, 15B active, the separately published
# 3-layer MTP (0.33B per block) not in the fixture config and not counted).
@pytest.mark.parametrize('name, total_b, total_digits, active_b, active_digits', [
    ('Qwen__Qwen3-32B', 32.8, 1, None, None),
    ('Qwen__Qwen3-235B-A22B-FP8', 235, 0, 22, 0),
    ('deepseek-ai__DeepSeek-V3', 671, 0, 37, 0),
    ('openai__gpt-oss-120b', 117, 0, 5.1, 1),
    ('meta-llama__Meta-Llama-3.1-8B', 8.03, 2, None, None),
    ('XiaomiMiMo__MiMo-V2-Flash', 309, 0, 15, 0),
])
def test_parameter_counts_match_the_model_cards(name, total_b, total_digits, active_b, active_digits):
    counts = vp.param_counts(facts_of(dict(config=name)))
    assert round(counts['language'] / 1e9, total_digits) == total_b
    if active_b is not None:
        assert round(counts['active'] / 1e9, active_digits) == active_b
