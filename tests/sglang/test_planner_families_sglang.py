#!/usr/bin/env python
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner's architecture facts against the installed SGLang's own ModelConfig, for every real config fixture
(tests/fixtures/hf_configs/*/config.json), and the release table's list of served architectures against the
installed model registry (issue #26 point 4).

Run with the python of the lab SGLang venv (tests/bench/setup-bench-venv.sh; no GPU needed), e.g. from
tests/sglang/run-parser-tests.sh:
  $PY tests/sglang/test_planner_families_sglang.py
Prints one line per check and a closing "N passed, N failed"; exit 1 on any failure.

Per config (SGLang's ModelConfig(<dir>, trust_remote_code=False), nothing re-implemented):
- a config the planner sizes: its family agrees with SGLang's pool choice (is_hybrid_swa -> hybrid_swa; attention
  arch MLA -> mla), and per attention-TP size 1, 2, 4, 8 the KV heads per rank (get_num_kv_heads /
  get_swa_num_kv_heads), head_dim, v_head_dim, swa_head_dim, swa_v_head_dim, the full and sliding-window layer ids,
  the derived context length and whether the model is served as multimodal are SGLang's;
- a config the planner refuses as an architecture: SGLang serves it (it is in the registry), and the refusal says
  "though that release serves it".
"""
import glob
import importlib.metadata
import json
import logging
import os
import sys
import warnings

# tests/tools/collection_paths.py: ROOT, the pin, the release table; it puts the checkout's .collections on sys.path.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tools'))
from collection_paths import ROOT, release  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan as vp  # noqa: E402

TPS = (1, 2, 4, 8)
# Fixture configs ModelConfig cannot read without a GPU build or the model repository's code, with the words of its
# error (anything else it raises on a config the planner sizes fails).
CPU_UNREADABLE = {
    'XiaomiMiMo__MiMo-7B-Base': 'model type `mimo` but Transformers does not recognize this architecture',
    'openai__gpt-oss-120b': 'Unknown quantization method: mxfp4',
    'openai__gpt-oss-20b': 'Unknown quantization method: mxfp4',
}
# Configs an older supported release cannot read without the repository's own code (on a GPU too): 0.5.18 serves
# MiMoV2FlashForCausalLM but registers no config class for model type mimo_v2_flash (0.5.22 does), so it needs
# --trust-remote-code there.
RELEASE_UNREADABLE = {
    ('0.5.18', 'XiaomiMiMo__MiMo-V2-Flash'): 'model type `mimo_v2_flash` but Transformers does not recognize',
}


def sglang_facts(path):
    from sglang.srt.configs.model_config import AttentionArch, ModelConfig
    m = ModelConfig(path, trust_remote_code=False)
    mla = m.attention_arch == AttentionArch.MLA
    return dict(
        arch=m.hf_config.architectures[0], mla=mla, hybrid_swa=bool(m.is_hybrid_swa),
        kv_heads=None if mla else [m.get_num_kv_heads(tp) for tp in TPS],
        swa_kv_heads=[m.get_swa_num_kv_heads(tp) for tp in TPS] if m.is_hybrid_swa else None,
        head_dim=None if mla else m.head_dim, v_head_dim=None if mla else m.v_head_dim,
        swa_head_dim=m.swa_head_dim if m.is_hybrid_swa else None,
        swa_v_head_dim=m.swa_v_head_dim if m.is_hybrid_swa else None,
        full_ids=list(m.full_attention_layer_ids) if m.is_hybrid_swa else None,
        swa_ids=list(m.swa_attention_layer_ids) if m.is_hybrid_swa else None,
        context=m.context_len, multimodal=bool(m.is_multimodal))


def planner_facts(facts):
    mla = facts['attention'] == 'mla'
    swa = facts['family'] == 'hybrid_swa'
    return dict(
        arch=facts['arch'], mla=mla, hybrid_swa=swa,
        kv_heads=None if mla else [vp.kv_heads_per_rank(facts, tp) for tp in TPS],
        swa_kv_heads=[max(1, facts['swa_kv_heads'] // tp) for tp in TPS] if swa else None,
        head_dim=None if mla else facts['head_dim'], v_head_dim=None if mla else facts['v_head_dim'],
        swa_head_dim=facts['swa_head_dim'] if swa else None, swa_v_head_dim=facts['swa_v_head_dim'] if swa else None,
        full_ids=list(facts['full_layer_ids']) if swa else None, swa_ids=list(facts['swa_layer_ids']) if swa else None,
        context=facts['context'], multimodal=bool(facts['multimodal']))


def check_config(rel, path, served):
    with open(os.path.join(path, 'config.json')) as handle:
        config = json.load(handle)
    name = os.path.basename(path)
    arch = (config.get('architectures') or ['unknown'])[0]
    try:
        facts = vp.sized_facts(config, rel)
    except vp.PlanError as exc:
        if exc.kind != 'architecture':
            return [(name, True, 'planner refuses (%s): %s' % (exc.kind, str(exc)[:80]))]
        ok = arch in served and 'though that release serves it' in str(exc)
        return [(name, ok, 'served, not sized: %s' % str(exc)[:100])]
    # The EAGLE-3 draft configs are LlamaForCausalLM-shaped; ModelConfig reads them like their base class.
    try:
        real = sglang_facts(path)
    except Exception as exc:  # pylint: disable=broad-except
        # Configs whose HF config class needs its repository's own code (auto_map, absent here: MiMo-7B) or a
        # quantization the CPU build's registry lacks (mxfp4: gpt-oss) cannot be read on this CPU: listed, not
        # failed, and only for configs outside the families this file was written for.
        known = CPU_UNREADABLE.get(name) or RELEASE_UNREADABLE.get((rel['version'], name))
        ok = known is not None and known in str(exc)
        return [(name, ok, '%s ModelConfig cannot read it on this CPU: %s: %s'
                 % ('skip:' if ok else 'SGLang', type(exc).__name__, str(exc)[:160]))]
    mine = planner_facts(facts)
    out = []
    for key in sorted(real):
        out.append(('%s %s' % (name, key), real[key] == mine[key],
                    'sglang %s, planner %s' % (real[key], mine[key]) if real[key] != mine[key] else str(real[key])[:60]))
    return out


def main():
    logging.disable(logging.WARNING)
    warnings.simplefilter('ignore')
    rel = release(importlib.metadata.version('sglang'))  # the release under test (make parser SGLANG_PIN=)
    from sglang.srt.models.registry import ModelRegistry
    registry = set(ModelRegistry.get_supported_archs())
    table = rel['architectures']['served']
    results = [('served architectures = the installed model registry', table == registry,
                'only in the table: %s; only in the registry: %s'
                % (sorted(table - registry), sorted(registry - table)) if table != registry
                else '%d names' % len(registry))]
    for family in ('gqa', 'mla', 'hybrid_swa', 'hybrid_gdn'):
        missing = sorted(set(rel['architectures'][family]) - registry)
        results.append(('every %s architecture is served' % family, not missing, 'not served: %s' % missing))
    only = sys.argv[1:]
    for path in sorted(glob.glob(os.path.join(ROOT, 'tests', 'fixtures', 'hf_configs', '*'))):
        if not os.path.isfile(os.path.join(path, 'config.json')):
            continue
        if only and os.path.basename(path) not in only:
            continue
        results.extend(check_config(rel, path, registry))
    failed = 0
    for name, ok, detail in results:
        failed += 0 if ok else 1
        print('%s %s: %s' % ('ok  ' if ok else 'FAIL', name, detail))
    print('%d passed, %d failed' % (len(results) - failed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
