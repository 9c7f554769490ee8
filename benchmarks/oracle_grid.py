#!/usr/bin/env python
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The VRAM planner against SGLang itself, field by field, over a grid of models x TP x GPUs x settings (issue #26).

  PY=$(tests/bench/setup-bench-venv.sh | tail -n 1)
  $PY benchmarks/oracle_grid.py                 # the full grid: a table of the differences, then "N/M cases exact"
  $PY benchmarks/oracle_grid.py --subset        # the fast subset (the cases of tests/fixtures/oracle/reference-<release>.json)
  $PY benchmarks/oracle_grid.py --write-reference   # regenerate tests/fixtures/oracle/reference-<release>.json from SGLang
  $PY benchmarks/oracle_grid.py --check-reference   # exit 1 when SGLang's outputs differ from the committed file

Runs in the lab SGLang venv (the pinned release; no GPU): the oracle is tests/oracle/sglang_oracle.py (SGLang's own
resolution and pool sizing, only the device queries mocked), the planner vram_plan.plan() of this checkout.

Grid: every model profile (profiles/models, with its draft when it names one) and every config under
tests/fixtures/hf_configs (EAGLE-3 drafts attached to their targets, not run alone) x TP 1/2/4/8 where the
attention heads divide (SGLang asserts that when it builds the layers, which needs no pool arithmetic) x every
hardware profile plus generic 24/48/80 GB GPUs x speculative off / NEXTN (models with MTP layers) / EAGLE-3 (models
with a draft) x kv_cache_dtype auto, plus fp8_e4m3 on five GPUs (FP8_GPUS) and one case with a custom
mem_fraction_static (0.8) and context length (32768) on four (CUSTOM_GPUS); and once per model and algorithm the
speculative parameters left to SGLang's own choice ("autospec").

Inputs shared by both sides: the free memory before loading is the planner's model of the GPU (memory.total minus
the profile's startup overhead) and the free memory SGLang measures after loading is the planner's own
(before - weights - its runtime overhead): the weights are not SGLang arithmetic (the oracle lists them under
needs_gpu); everything computed from them is. Compared per case (a field the oracle does not produce is skipped):
the resolved defaults, the per-token cells, the mamba state, the pools (KV tokens within one page) and the verdict
(both start, or both refuse). A case whose architecture the planner refuses as unsupported counts as
"family not planned", not as a difference.
"""

import argparse
import glob
import importlib.metadata
import json
import os
import re
import sys
import tempfile
import time

import yaml

# tests/tools/collection_paths.py: ROOT, the pin, the release table; it puts the checkout's .collections on sys.path.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'tools'))
from collection_paths import PIN, ROOT, release  # noqa: E402  pylint: disable=wrong-import-position
sys.path.insert(0, os.path.join(ROOT, 'tests', 'oracle'))

from ansible_collections.llmops.inference.plugins.module_utils.planner import profile_gen  # noqa: E402
from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan  # noqa: E402
from ansible_collections.llmops.inference.plugins.module_utils.model.config import model_facts  # noqa: E402


def _release_under_test():
    """The installed SGLang's release where this runs in a lab venv (`make parser SGLANG_PIN=x.y.z` checks any
    supported release), else the pin."""
    try:
        return importlib.metadata.version('sglang')
    except importlib.metadata.PackageNotFoundError:
        return PIN


def reference_path(version):
    """The committed oracle outputs of one release (each supported release has its own)."""
    return os.path.join(ROOT, 'tests', 'fixtures', 'oracle', 'reference-%s.json' % version)


VERSION = _release_under_test()
REFERENCE = reference_path(VERSION)
FIXTURES = os.path.join(ROOT, 'tests', 'fixtures', 'hf_configs')
TPS = (1, 2, 4, 8)
GENERIC_GPUS = (('24gb', 24576, '8.9', None), ('48gb', 49152, '8.9', None), ('80gb', 81920, '9.0', None))
CUSTOM = dict(mem_fraction=0.8, context=32768)
# kv_cache_dtype fp8_e4m3 and the custom settings on these GPUs only (the whole product is ~5000 cases, ~13 CPU
# minutes; each GPU generation and size class keeps both).
FP8_GPUS = ('h100-80gb', 'b200', 'rtx-pro-6000-blackwell-server', 'l40s', '24gb')
CUSTOM_GPUS = ('h200', 'b200', 'l40s', '24gb')
# Drafts whose SOURCE.md names no "Pair with target" line.
DRAFT_TARGETS = {'EAGLE3-draft__SafeAILab-EAGLE__traineagle3-llama3.1-8B': 'meta-llama__Meta-Llama-3.1-8B'}
# The subset run by make test (tests/sglang/run-parser-tests.sh and tests/unit): one case per planner family and
# path, on a few GPUs (ids of the grid).
SUBSET = (
    'fixture:Qwen__Qwen3-32B|tp1|h100-80gb|off|auto|default',
    'fixture:Qwen__Qwen3-32B+EAGLE3-draft__SpecForge__qwen3-32b-eagle3|tp2|h200|eagle3|auto|default',
    'fixture:Qwen__Qwen3-32B|tp4|24gb|off|auto|custom',
    'fixture:meta-llama__Llama-3.3-70B-Instruct|tp1|l40s|off|auto|default',
    'fixture:meta-llama__Llama-2-7b-chat-hf|tp1|24gb|off|auto|custom',
    'fixture:Qwen__Qwen3-30B-A3B-FP8|tp1|rtx-pro-6000-blackwell-server|off|auto|default',
    'fixture:Qwen__Qwen3.5-35B-A3B|tp2|h100-80gb|nextn|auto|default',
    'fixture:Qwen__Qwen3.5-122B-A10B|tp4|rtx-pro-6000-blackwell-server|off|auto|default',
    'fixture:Qwen__Qwen3.5-122B-A10B|tp4|b200|nextn|fp8_e4m3|default',
    'fixture:Qwen__Qwen3-Next-80B-A3B-Thinking|tp2|h200|off|auto|custom',
    'fixture:deepseek-ai__DeepSeek-V3|tp8|h200|nextn|auto|default',
    'fixture:deepseek-ai__DeepSeek-V3|tp8|b200|off|fp8_e4m3|default',
    'fixture:deepseek-ai__DeepSeek-V3.2|tp8|h200|off|auto|default',
    'fixture:deepseek-ai__DeepSeek-V3.2|tp8|b200|nextn|auto|default',
    'fixture:openai__gpt-oss-120b|tp1|h100-80gb|off|auto|default',
    'fixture:openai__gpt-oss-20b|tp2|b200|off|auto|custom',
    'fixture:XiaomiMiMo__MiMo-V2-Flash|tp4|h200|off|auto|default',
    'fixture:zai-org__GLM-4.5-Air|tp2|h200|nextn|auto|default',
    'profile:qwen3.5-397b-a17b-nvfp4|tp4|b200|nextn|auto|default',
    'profile:kimi-k2.5|tp8|h200|off|auto|default',
    # The differences the grid found and the planner now follows (docs/dev/oracle.md).
    'fixture:XiaomiMiMo__MiMo-V2-Flash|tp2|b200|off|auto|default',
    'fixture:meta-llama__Llama-2-7b-chat-hf|tp1|b200|off|auto|default',
    'fixture:openai__gpt-oss-120b+EAGLE3-draft__SpecForge__gpt-oss-120B-eagle3|tp1|h200|eagle3|auto|default',
    'fixture:Qwen__Qwen3.5-35B-A3B|tp8|h200|nextn|auto|autospec',
    'fixture:deepseek-ai__DeepSeek-V3|tp8|h200|nextn|auto|autospec',
)


def load_yaml(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


def gpus():
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, 'profiles', 'hardware', '*.yml'))):
        prof = load_yaml(path)
        out.append((prof['name'], prof['memory_total_mib'], str(prof['compute_capability']), prof))
    for name, mib, cc, _none in GENERIC_GPUS:
        out.append((name, mib, cc, dict(name=name, memory_total_mib=mib, compute_capability=cc)))
    return out


def _pair(source_md):
    with open(source_md) as handle:
        text = handle.read()
    match = re.search(r'[Pp]air with target:?\s+`?([A-Za-z0-9_.\-]+?)`?[\s.,;(]', text)
    return match.group(1) if match else None


def models(tmp):
    """[(key, config dir, config dict, draft dir or None, draft config or None, weights_bytes)]."""
    out = []
    drafts = {}
    for path in sorted(glob.glob(os.path.join(FIXTURES, '*', 'config.json'))):
        name = os.path.basename(os.path.dirname(path))
        with open(path) as handle:
            config = json.load(handle)
        quant_path = os.path.join(os.path.dirname(path), 'hf_quant_config.json')
        if os.path.exists(quant_path):
            # The planner gets the config as make profile builds it: a ModelOpt export's quantization kept in
            # hf_quant_config.json joins it (profile_gen; SGLang reads that file beside config.json).
            with open(quant_path) as handle:
                config = profile_gen.with_hf_quant_config(config, json.load(handle), {})
        archs = config.get('architectures') or []
        if any('Eagle3' in a or 'EAGLE3' in a.upper() for a in archs):
            source = os.path.join(os.path.dirname(path), 'SOURCE.md')
            target = DRAFT_TARGETS.get(name) or (_pair(source) if os.path.exists(source) else None)
            if target:
                drafts.setdefault(target, []).append((os.path.dirname(path), config, name))
            continue
        out.append(['fixture:' + name, os.path.dirname(path), config, None, None, None])
    with_drafts = []
    for row in out:
        name = row[0].split(':', 1)[1]
        for ddir, dconfig, dname in drafts.get(name, ()):
            with_drafts.append([row[0] + '+' + dname] + row[1:3] + [ddir, dconfig, None])
    for path in sorted(glob.glob(os.path.join(ROOT, 'profiles', 'models', '*.yml'))):
        prof = load_yaml(path)
        config = prof.get('config') or {}
        cdir = os.path.join(tmp, 'profile-' + prof['name'])
        os.makedirs(cdir, exist_ok=True)
        with open(os.path.join(cdir, 'config.json'), 'w') as handle:
            json.dump(config, handle)
        draft = ((prof.get('serving') or {}).get('speculative') or {}).get('draft')
        ddir = dconfig = None
        if draft and draft.get('config'):
            dconfig = draft['config']
            ddir = os.path.join(tmp, 'profile-' + prof['name'] + '-draft')
            os.makedirs(ddir, exist_ok=True)
            with open(os.path.join(ddir, 'config.json'), 'w') as handle:
                json.dump(dconfig, handle)
        out.append(['profile:' + prof['name'], cdir, config, ddir, dconfig, prof.get('weights_bytes')])
    return [tuple(r) for r in out + with_drafts]


def _text(config):
    return config.get('text_config') or config


def valid_tps(config):
    text = _text(config)
    heads = text.get('num_attention_heads')
    kv_heads = text.get('num_key_value_heads')
    out = []
    for tp in TPS:
        if heads and heads % tp:
            continue
        # The KV-head split SGLang asserts when it builds the attention layers (models/llama.py:185-193, the
        # Llama-derived classes, Phi-3 included): kv >= tp needs kv % tp == 0, else tp % kv == 0.
        if kv_heads and (kv_heads % tp if kv_heads >= tp else tp % kv_heads):
            continue
        out.append(tp)
    return out


def cases(rel, tmp):
    out = []
    for key, cdir, config, ddir, dconfig, weights in models(tmp):
        try:
            facts = model_facts(config, rel['architectures'])
        except Exception:  # pylint: disable=broad-except
            facts = None
        mtp = bool(facts and facts.get('mtp_layers'))
        specs = ['eagle3'] if ddir else (['off', 'nextn'] if mtp else ['off'])
        for tp in valid_tps(config):
            for gname, mib, cc, gprof in gpus():
                variants = [(spec, 'auto', 'default') for spec in specs]
                if gname in FP8_GPUS:
                    variants.extend((spec, 'fp8_e4m3', 'default') for spec in specs)
                if gname in CUSTOM_GPUS:
                    variants.append((specs[0], 'auto', 'custom'))
                # SGLang's own choice of steps / topk / draft tokens (the collection renders them explicitly), once
                # per model and speculative algorithm.
                if tp == valid_tps(config)[-1] and gname == 'h200':
                    variants.extend((spec, 'auto', 'autospec') for spec in specs if spec != 'off')
                for spec, kv, custom in variants:
                    out.append(dict(id='%s|tp%d|%s|%s|%s|%s' % (key, tp, gname, spec, kv, custom), key=key,
                                    config_dir=cdir, config=config, draft_dir=ddir, draft_config=dconfig,
                                    weights_bytes=weights, tp=tp, gpu=gname, gpu_mem_mib=mib, cc=cc, gpu_profile=gprof,
                                    spec=spec, kv_dtype=kv, custom=custom == 'custom',
                                    rendered_spec=custom != 'autospec'))
    return out


# --------------------------------------------------------------------------------------------------------------
# The planner side
# --------------------------------------------------------------------------------------------------------------

def planner_inputs(rel, case):
    inputs = dict(model_config=case['config'], gpu_profile=case['gpu_profile'], gpu_memory_mib=case['gpu_mem_mib'],
                  tp_size=case['tp'], release=rel, kv_cache_dtype=case['kv_dtype'], weights_bytes=case['weights_bytes'],
                  model_path_name=case['config_dir'])
    if case['spec'] == 'nextn':
        inputs['speculative_algorithm'] = 'NEXTN'
    elif case['spec'] == 'eagle3':
        inputs['speculative_algorithm'] = 'EAGLE3'
        inputs['draft_model_config'] = case['draft_config']
    if case['custom']:
        inputs['mem_fraction_static'] = CUSTOM['mem_fraction']
        inputs['context_length'] = CUSTOM['context']
    return inputs


def run_planner(rel, case, shared=None):
    """(plan or None, refusal or None, free before, free after as SGLang measures it).

    ``shared``: (free before, free after) to plan with instead of the planner's own model of the weights (the
    committed reference's inputs: the comparison then does not depend on the weights model)."""
    inputs = planner_inputs(rel, case)
    if shared is not None:
        pre, after = shared
        if pre is None or after is None:
            return run_planner(rel, case)
        inputs.update(free_memory_before_load_gib=pre, free_memory_after_load_gib=after, runtime_overhead_gib=0.0)
        try:
            return vram_plan.plan(**inputs), None, pre, after
        except vram_plan.PlanError as exc:
            return None, dict(kind=exc.kind, message=str(exc)), pre, after
    startup = (case['gpu_profile'] or {}).get('startup_overhead_gib', vram_plan.DEFAULT_STARTUP_OVERHEAD_GIB)
    pre = round(case['gpu_mem_mib'] / 1024.0 - startup, 6)
    try:
        result = vram_plan.plan(**inputs)
    except vram_plan.PlanError as exc:
        details = exc.details or {}
        return None, dict(kind=exc.kind, message=str(exc)), details.get('free_before_load_gib', pre), \
            details.get('free_after_load_gib')
    sizing = result['sizing_inputs_gib']
    return result, None, sizing['free_before_load'], sizing['free_at_pool_sizing']


# --------------------------------------------------------------------------------------------------------------
# The comparison
# --------------------------------------------------------------------------------------------------------------

REMOTE_CODE = 'but Transformers does not recognize this architecture'
TORCH_KV = {'torch.bfloat16': 'bfloat16', 'torch.float16': 'float16', 'torch.float8_e4m3fn': 'fp8_e4m3',
            'torch.float8_e5m2': 'fp8_e5m2', 'torch.float32': 'float32'}


def oracle_fields(res):
    """The oracle's values under the planner's names (None: SGLang produced none for the case)."""
    srv, cells, state, pools, model = (res.get(k) or {} for k in ('server', 'cells', 'state', 'pools', 'model'))
    frac = srv.get('mem_fraction_static')
    out = dict(
        mem_fraction_static=round(frac, 4) if frac is not None else None,
        chunked_prefill_size=srv.get('chunked_prefill_size'),
        cuda_graph_max_bs=srv.get('cuda_graph_max_bs'),
        page_size=srv.get('page_size'),
        context_length=srv.get('context_length') or model.get('context_len'),
        kv_cache_dtype=TORCH_KV.get(cells.get('kv_cache_dtype'), cells.get('kv_cache_dtype')),
        mamba_strategy=srv.get('mamba_scheduler_strategy'),
        num_steps=srv.get('speculative_num_steps') or 0,
        eagle_topk=srv.get('speculative_eagle_topk') or 0,
        num_draft_tokens=srv.get('speculative_num_draft_tokens') or 0,
        kv_bytes_per_token=cells.get('kv_bytes_per_token'),
        kv_bytes_per_token_draft_in_budget=cells.get('kv_bytes_per_token_draft'),
        mamba_bytes_per_slot=state.get('mamba_bytes_per_slot'),
        mamba_slots_per_request=state.get('mamba_slots_per_request'),
        mamba_cache_slots=pools.get('max_mamba_cache_size'),
        kv_cache_tokens=pools.get('max_total_num_tokens'),
        swa_kv_cache_tokens=pools.get('swa_max_total_num_tokens'),
        max_running_requests=pools.get('max_running_requests'),
    )
    if model.get('is_hybrid_mamba'):
        out['disable_overlap_schedule'] = srv.get('disable_overlap_schedule')
    return out


def planner_fields(plan):
    spec = plan['speculative']
    out = dict(
        mem_fraction_static=round(plan['mem_fraction_static'], 4),
        chunked_prefill_size=plan['chunked_prefill_size'], cuda_graph_max_bs=plan['cuda_graph_max_bs'],
        page_size=plan['page_size'], context_length=plan['context_length'], kv_cache_dtype=plan['kv_cache_dtype'],
        mamba_strategy=plan['mamba_strategy'], num_steps=spec['num_steps'] or 0, eagle_topk=spec['eagle_topk'] or 0,
        num_draft_tokens=spec['num_draft_tokens'] or 0,
        kv_bytes_per_token=plan['kv_bytes_per_token'],
        kv_bytes_per_token_draft_in_budget=plan['kv_bytes_per_token_draft_in_budget'],
        mamba_bytes_per_slot=plan['mamba_bytes_per_slot'] or None,
        mamba_slots_per_request=plan['mamba_slots_per_request'],
        mamba_cache_slots=plan['mamba_cache_slots'],
        kv_cache_tokens=plan['kv_cache_tokens'], swa_kv_cache_tokens=plan['swa_kv_cache_tokens'],
        max_running_requests=plan['max_running_requests'],
        disable_overlap_schedule=plan['disable_overlap_schedule'],
    )
    return out


def _equal(field, mine, theirs, page):
    if field in ('kv_cache_tokens', 'swa_kv_cache_tokens'):
        return mine is not None and theirs is not None and abs(mine - theirs) <= page
    if isinstance(mine, float) or isinstance(theirs, float):
        return mine is not None and theirs is not None and abs(float(mine) - float(theirs)) < 1e-6 * max(1.0, abs(theirs))
    return mine == theirs


def compare(plan, plan_refusal, res):
    """dict(verdict, diffs [(field, planner, oracle)], kind)."""
    refused = res.get('refused')
    if refused and refused.get('stage') == 'harness':
        return dict(kind='harness', diffs=[('harness', None, refused['message'][:300])])
    if refused and REMOTE_CODE in refused.get('message', ''):
        # The config's model_type needs the checkpoint's own Python code (--trust-remote-code and the files beside
        # config.json), which a fixture of config.json alone cannot give SGLang: no verdict either way.
        return dict(kind='config needs remote code', diffs=[])
    if plan_refusal is not None and plan_refusal['kind'] == 'architecture':
        return dict(kind='family not planned', diffs=[])
    if plan_refusal is not None or refused:
        if plan_refusal is not None and refused:
            return dict(kind='both refuse', diffs=[])
        if plan_refusal is not None:
            return dict(kind='planner refuses', diffs=[('verdict', 'refused: ' + plan_refusal['message'][:200],
                                                        'starts')])
        return dict(kind='sglang refuses', diffs=[('verdict', 'starts', 'refused (%s): %s' % (
            refused['stage'], refused['message'][:200]))])
    theirs = oracle_fields(res)
    mine = planner_fields(plan)
    page = theirs.get('page_size') or 1
    diffs = []
    for field, value in sorted(theirs.items()):
        if value is None and field not in ('mamba_strategy',):
            if mine.get(field) is not None and field in ('mamba_bytes_per_slot', 'mamba_cache_slots',
                                                         'swa_kv_cache_tokens'):
                diffs.append((field, mine.get(field), None))
            continue
        if not _equal(field, mine.get(field), value, page):
            diffs.append((field, mine.get(field), value))
    return dict(kind='exact' if not diffs else 'differs', diffs=diffs)


# --------------------------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------------------------

def oracle_case(case, pre, after, plan=None):
    """The oracle's inputs. A speculative case passes --speculative-num-steps / -eagle-topk / -num-draft-tokens as
    the collection renders them (module_utils/sglang/flags.py renders all three, the planner's resolution of the unset
    profile), and a hybrid model the mamba strategy it renders; an "autospec" case leaves both to SGLang's own
    choice (on SM100 SGLang's Qwen3.5 override reads the strategy before resolving it: page 1 unset, 64 rendered)."""
    out = dict(id=case['id'], config=case['config_dir'], draft=case['draft_dir'], tp=case['tp'],
               gpu_mem_mib=case['gpu_mem_mib'], free_before_load_gib=pre, free_after_load_gib=after,
               spec=case['spec'], kv_dtype=case['kv_dtype'],
               mem_fraction=CUSTOM['mem_fraction'] if case['custom'] else None,
               context=CUSTOM['context'] if case['custom'] else None, cc=case['cc'])
    spec = (plan or {}).get('speculative') or {}
    if case['spec'] != 'off' and case['rendered_spec'] and spec.get('enabled'):
        out.update(spec_steps=spec['num_steps'], spec_topk=spec['eagle_topk'], spec_draft_tokens=spec['num_draft_tokens'])
    # sglang_flags renders the mamba strategy the plan resolved (always explicit with the radix cache on).
    if case['rendered_spec'] and (plan or {}).get('mamba_strategy'):
        out['mamba_strategy'] = plan['mamba_strategy']
    return out


def load_reference():
    with open(REFERENCE) as handle:
        return json.load(handle)


def reference_inputs(reference):
    """{case id: the oracle's inputs} of the committed reference."""
    return dict((c['id'], c['oracle']['case']) for c in reference['cases'])


SHARED_KEYS = ('free_before_load_gib', 'free_after_load_gib', 'spec_steps', 'spec_topk', 'spec_draft_tokens',
               'mamba_strategy')


def run(selected, rel, verbose=False, shared=None):
    import sglang_oracle  # pylint: disable=import-error
    rows = []
    for case in selected:
        given = (shared or {}).get(case['id'])
        plan, refusal, pre, after = run_planner(
            rel, case, (given['free_before_load_gib'], given['free_after_load_gib']) if given else None)
        inputs = oracle_case(case, pre, after, plan)
        if given:
            inputs.update((k, given.get(k)) for k in SHARED_KEYS)
        try:
            res = sglang_oracle.run_case(inputs)
        except Exception as exc:  # pylint: disable=broad-except
            # A config the harness cannot drive SGLang with (a new family's code path): listed, never a crash.
            res = dict(case=inputs, refused=dict(stage='harness', type=type(exc).__name__, message=str(exc)))
        cmp_ = compare(plan, refusal, res)
        rows.append(dict(case=case, plan=plan, refusal=refusal, oracle=res, cmp=cmp_))
        if verbose:
            print('%-90s %s' % (case['id'], cmp_['kind']), file=sys.stderr)
        elif len(rows) % 250 == 0:
            print('... %d/%d cases' % (len(rows), len(selected)), file=sys.stderr)
    return rows


NOT_COUNTED = ('family not planned', 'config needs remote code')


def summarize(rows, out=sys.stdout, limit=None):
    kinds = {}
    fields = {}
    for row in rows:
        kinds[row['cmp']['kind']] = kinds.get(row['cmp']['kind'], 0) + 1
        for field, _mine, _theirs in row['cmp']['diffs']:
            fields[field] = fields.get(field, 0) + 1
    planned = [r for r in rows if r['cmp']['kind'] not in NOT_COUNTED]
    exact = [r for r in planned if r['cmp']['kind'] in ('exact', 'both refuse')]
    print('| case | field | planner | SGLang |', file=out)
    print('|---|---|---|---|', file=out)
    shown = 0
    for row in rows:
        for field, mine, theirs in row['cmp']['diffs']:
            if limit is not None and shown >= limit:
                break
            print('| %s | %s | %s | %s |' % (row['case']['id'], field, mine, theirs), file=out)
            shown += 1
    print('', file=out)
    print('outcomes: %s' % ', '.join('%s %d' % kv for kv in sorted(kinds.items())), file=out)
    print('differences by field: %s' % (', '.join('%s %d' % kv for kv in sorted(fields.items())) or 'none'),
          file=out)
    print('%d/%d cases exact (%.1f %%; %d of them refused by both; not counted: %d family not planned, %d config '
          'needs remote code)' % (len(exact), len(planned), 100.0 * len(exact) / max(1, len(planned)),
                                  kinds.get('both refuse', 0), kinds.get('family not planned', 0),
                                  kinds.get('config needs remote code', 0)), file=out)
    return len(exact), len(planned)


def reference_record(rows):
    """What the committed reference holds: SGLang's outputs and the shared inputs of each subset case."""
    out = []
    for row in rows:
        res = dict(row['oracle'])
        res.pop('seconds', None)
        case = dict(res.get('case') or {})
        for key in ('config', 'draft'):
            if case.get(key):
                case[key] = os.path.relpath(case[key], ROOT) if case[key].startswith(ROOT) else \
                    '<profile>/' + os.path.basename(case[key])
        res['case'] = case
        out.append(dict(id=row['case']['id'], oracle=res))
    return dict(generated_by='benchmarks/oracle_grid.py --write-reference (never edit by hand)',
                sglang_version=rows[0]['oracle'].get('sglang_version') if rows else None, cases=out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--subset', action='store_true', help='only the make-test subset')
    parser.add_argument('--write-reference', action='store_true', help='write %s from SGLang' % REFERENCE)
    parser.add_argument('--check-reference', action='store_true', help='exit 1 when SGLang differs from it')
    parser.add_argument('--match', help='only cases whose id contains this')
    parser.add_argument('--limit', type=int, default=200, help='table rows shown (default 200)')
    parser.add_argument('--json', help='write every row (case, plan fields, oracle, comparison) here')
    parser.add_argument('-v', '--verbose', action='store_true')
    args = parser.parse_args(argv)
    start = time.time()
    rel = release(VERSION)
    with tempfile.TemporaryDirectory(prefix='oracle-grid-') as tmp:
        everything = cases(rel, tmp)
        selected = everything
        if args.subset or args.write_reference or args.check_reference:
            wanted = set(SUBSET)
            selected = [c for c in everything if c['id'] in wanted]
            missing = wanted - set(c['id'] for c in selected)
            if missing:
                print('subset ids not in the grid: %s' % ', '.join(sorted(missing)), file=sys.stderr)
                return 2
            selected.sort(key=lambda c: SUBSET.index(c['id']))
        if args.match:
            selected = [c for c in selected if args.match in c['id']]
        shared = reference_inputs(load_reference()) if args.check_reference else None
        rows = run(selected, rel, args.verbose, shared)
        if args.write_reference or args.check_reference:
            record = reference_record(rows)
            text = json.dumps(record, indent=1, sort_keys=True) + '\n'
            if args.write_reference:
                os.makedirs(os.path.dirname(REFERENCE), exist_ok=True)
                with open(REFERENCE, 'w') as handle:
                    handle.write(text)
                print('wrote %s (%d cases, %.1f s)' % (os.path.relpath(REFERENCE, ROOT), len(rows), time.time() - start))
                return 0
            with open(REFERENCE) as handle:
                committed = handle.read()
            if committed != text:
                old = dict((c['id'], c['oracle']) for c in json.loads(committed)['cases'])
                for case in record['cases']:
                    if old.get(case['id']) != case['oracle']:
                        print('oracle reference: %s differs from the committed %s' % (
                            case['id'], os.path.relpath(REFERENCE, ROOT)), file=sys.stderr)
                print('FAIL: SGLang\'s outputs differ from %s; if the change is intended (a new pin or a new case), '
                      'regenerate it with benchmarks/oracle_grid.py --write-reference'
                      % os.path.relpath(REFERENCE, ROOT), file=sys.stderr)
                return 1
            print('oracle reference: %d cases, SGLang agrees with %s (%.1f s)' % (
                len(rows), os.path.relpath(REFERENCE, ROOT), time.time() - start))
            return 0
        if args.json:
            with open(args.json, 'w') as handle:
                json.dump([dict(id=r['case']['id'], cmp=r['cmp'], plan=planner_fields(r['plan']) if r['plan'] else None,
                                refusal=r['refusal'], oracle=oracle_fields(r['oracle']),
                                oracle_refused=r['oracle'].get('refused')) for r in rows], handle, indent=1,
                          default=str)
        exact, total = summarize(rows, limit=args.limit)
    print('grid: %d cases in %.1f s' % (len(rows), time.time() - start))
    return 0 if total and exact >= 0.98 * total else 1


if __name__ == '__main__':
    sys.exit(main())
