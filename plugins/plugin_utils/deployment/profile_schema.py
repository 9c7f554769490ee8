# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Schemas of the profiles (models/, hardware/, sglang.yml): unknown keys refused with the nearest known key.

PRIVATE to the collection. Pure functions over parsed YAML. A typo in a profile must not silently drop a flag
(``tool_call_parsr`` would lose --tool-call-parser) or turn MTP off, so every key of a profile is known here. The
``config`` block of a model profile is shaped like the checkpoint's config.json and may carry any key a
config.json has, but a key one edit away from a key the planner reads, while that key is absent, is a typo.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.common.choosing import nearest

# key -> (types, required, nested schema or None)
_NUM = (int, float)
# An EAGLE-3 draft checkpoint (--speculative-draft-model-path): its repository, revision and config.json facts.
DRAFT = {
    'hf_repo': ((str,), True, None),
    'hf_revision': ((str, type(None)), False, None),
    'config': ((dict,), True, None),
}
SPECULATIVE = {
    # NEXTN when absent (SGLang's built-in MTP); a profile with num_draft_tokens: 0 has MTP off and needs none.
    'algorithm': ((str,), False, None),
    'num_steps': ((int,), False, None),
    'eagle_topk': ((int,), False, None),
    # Required unless algorithm is given: then absent steps / topk / draft tokens are SGLang's auto choice for the
    # target architecture (release defaults speculative_auto_params[_by_arch]).
    'num_draft_tokens': ((int,), False, None),
    'expected_accept_length': (_NUM, False, None),
    'draft': ((dict,), False, DRAFT),
}
SERVING = {
    'tp_size': ((int,), True, None),
    'reasoning_parser': ((str, type(None)), False, None),
    'tool_call_parser': ((str, type(None)), False, None),
    'quantization': ((str, type(None)), False, None),
    'extra_args': ((list,), False, None),
    'speculative': ((dict, type(None)), False, SPECULATIVE),
}
MODEL = {
    'name': ((str,), True, None),
    # null: the repository is not known; llmops_model_repo_id must then name it (the resolver says so).
    'hf_repo': ((str, type(None)), True, None),
    'hf_revision': ((str, type(None)), False, None),
    'served_model_name': ((str, type(None)), False, None),
    'weights_bytes': ((int, type(None)), False, None),
    'serving': ((dict,), True, SERVING),
    'config': ((dict,), True, None),
}
HARDWARE = {
    'name': ((str,), True, None),
    'display_name': ((str,), False, None),
    'pci_id': ((str,), False, None),
    'memory_total_mib': ((int,), True, None),
    'memory_bandwidth_gbs': (_NUM, False, None),
    'compute_capability': ((str,), True, None),
    'sm_count': ((int,), False, None),
    'nvlink': ((bool,), False, None),
    'nvlink_bandwidth_gbs': (_NUM, False, None),
    'startup_overhead_gib': (_NUM, False, None),
    # Read only by make compare (plugins/module_utils/compare/perf.py): dense tensor throughput and the interconnect.
    'bf16_dense_tflops': (_NUM, False, None),
    'fp8_dense_tflops': (_NUM, False, None),
    'pcie_gen': ((int,), False, None),
    'pcie_bandwidth_gbs': (_NUM, False, None),
    'allreduce_latency_us': (_NUM, False, None),
}
PIN = {
    'version': ((str,), True, None),
    'packages': ((dict,), True, None),
    'python': ((str,), False, None),
}

# config.json keys the planner and the flag rules read (module_utils/model/config.py); a near miss of one of these is a typo.
CONFIG_KEYS = (
    'architectures', 'model_type', 'text_config', 'vision_config', 'hidden_size', 'num_hidden_layers',
    'num_attention_heads', 'num_key_value_heads', 'head_dim', 'v_head_dim', 'full_attention_interval', 'layer_types',
    'attn_output_gate', 'linear_num_key_heads', 'linear_num_value_heads', 'linear_key_head_dim',
    'linear_value_head_dim', 'linear_conv_kernel_dim', 'num_experts', 'num_experts_per_tok', 'moe_intermediate_size',
    'shared_expert_intermediate_size', 'intermediate_size', 'vocab_size', 'tie_word_embeddings',
    'max_position_embeddings', 'mamba_ssm_dtype', 'dtype', 'torch_dtype', 'quantization_config',
    'mtp_num_hidden_layers', 'num_nextn_predict_layers', 'partial_rotary_factor', 'rope_parameters', 'rope_theta',
    # MoE naming of DeepSeek / Kimi / GLM-4.5 and Mixtral / gpt-oss, and MLA.
    'n_routed_experts', 'n_shared_experts', 'first_k_dense_replace', 'num_local_experts', 'experts_per_token',
    'kv_lora_rank', 'qk_rope_head_dim', 'qk_nope_head_dim', 'q_lora_rank',
    # SGLang's context length (get_context_length), DeepSeek DSA and EAGLE-3 drafts.
    'max_sequence_length', 'seq_length', 'max_seq_len', 'model_max_length', 'rope_scaling', 'index_topk',
    'index_head_dim', 'index_kpool', 'learnable_sink', 'draft_vocab_size', 'target_hidden_size', 'eagle_config',
    'num_aux_hidden_states',
)
CONFIG_REQUIRED = ('hidden_size', 'num_hidden_layers', 'num_attention_heads', 'max_position_embeddings')


def _type_names(types):
    names = []
    for kind in types:
        names.append({str: 'a string', int: 'an integer', float: 'a number', bool: 'true/false', list: 'a list',
                      dict: 'a mapping', type(None): 'null'}[kind])
    return ' or '.join(names)


def check_keys(data, schema, where, out):
    """Append (key path, value, rule, fix) tuples for unknown, missing and mistyped keys."""
    if not isinstance(data, dict):
        out.append((where, data, 'must be a mapping', 'fix the YAML of the profile'))
        return
    for key, value in data.items():
        if key not in schema:
            close = nearest(key, schema)
            out.append(('%s.%s' % (where, key), value, 'unknown key (known: %s)' % ', '.join(sorted(schema)),
                        'rename it to %r' % close if close else 'remove it'))
            continue
        types, dummy, nested = schema[key]
        if isinstance(value, bool) and bool not in types:
            ok = False
        else:
            ok = isinstance(value, types)
        if not ok:
            out.append(('%s.%s' % (where, key), value, 'must be %s' % _type_names(types), 'correct the profile'))
            continue
        if nested is not None and isinstance(value, dict):
            check_keys(value, nested, '%s.%s' % (where, key), out)
    for key, (dummy, required, dummy2) in sorted(schema.items()):
        if required and key not in data:
            out.append(('%s.%s' % (where, key), None, 'is required', 'add it to the profile'))


def check_config(config, where, out):
    """The config.json-shaped block: the planner's facts present, near misses of its keys refused."""
    if not isinstance(config, dict):
        return
    archs = config.get('architectures') or (config.get('text_config') or {}).get('architectures')
    if not archs or not isinstance(archs, list):
        out.append(('%s.architectures' % where, archs, 'must list the checkpoint architecture(s) of config.json',
                    'copy architectures from the checkpoint\'s config.json'))
    scopes = [(config, where)]
    if isinstance(config.get('text_config'), dict):
        scopes.append((config['text_config'], where + '.text_config'))
    for scope, path in scopes:
        for key in scope:
            if key in CONFIG_KEYS:
                continue
            close = nearest(key, CONFIG_KEYS, cutoff=0.85)
            if close and close not in scope:
                out.append(('%s.%s' % (path, key), scope[key], 'unknown config key, one edit away from %r which '
                            'the planner reads' % close, 'rename it to %r' % close))
    text = config.get('text_config') if isinstance(config.get('text_config'), dict) else config
    for key in CONFIG_REQUIRED:
        if text.get(key) is None and config.get(key) is None:
            out.append(('%s.%s' % (where, key), None, 'is required by the VRAM planner',
                        "copy it from the checkpoint's config.json"))


def check_model(name, data):
    out = []
    check_keys(data, MODEL, 'models/%s.yml' % name, out)
    if isinstance(data, dict):
        if isinstance(data.get('name'), str) and data['name'] != name:
            out.append(('models/%s.yml.name' % name, data['name'], 'must equal the file name %r' % name,
                        'set name: %s' % name))
        check_config(data.get('config'), 'models/%s.yml.config' % name, out)
        spec = (data.get('serving') or {}).get('speculative') if isinstance(data.get('serving'), dict) else None
        if isinstance(spec, dict):
            where = 'models/%s.yml.serving.speculative' % name
            if spec.get('num_draft_tokens') is None and not spec.get('algorithm'):
                out.append((where + '.num_draft_tokens', None, 'is required unless algorithm is given (0 turns '
                            'speculative decoding off)', 'add num_draft_tokens (e.g. 0), or algorithm for SGLang\'s '
                            'auto steps/topk/draft tokens'))
            if isinstance(spec.get('draft'), dict):
                check_config(spec['draft'].get('config'), where + '.draft.config', out)
    return out


def check_hardware(name, data):
    out = []
    check_keys(data, HARDWARE, 'hardware/%s.yml' % name, out)
    if isinstance(data, dict) and isinstance(data.get('name'), str) and data['name'] != name:
        out.append(('hardware/%s.yml.name' % name, data['name'], 'must equal the file name %r' % name,
                    'set name: %s' % name))
    return out


def check_pin(data):
    out = []
    check_keys(data, PIN, 'sglang.yml', out)
    return out
