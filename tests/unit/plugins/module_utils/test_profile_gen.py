# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Profiles generated from real config.json files (tests/fixtures/hf_configs): they load as profiles, keep the
architecture facts, mark their guesses, plan, and an architecture in no planner family is refused."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest
import yaml

from ansible_collections.llmops.inference.plugins.module_utils.planner import profile_gen as pg
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import profile_schema
from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan as vp
from ansible_collections.llmops.inference.plugins.module_utils.model import weight_bytes as wb

from collection_paths import ROOT, release

CONFIGS = os.path.join(ROOT, 'tests', 'fixtures', 'hf_configs')
RELEASE = release()
with open(os.path.join(ROOT, 'profiles', 'hardware', 'h200.yml')) as _handle:
    H200 = yaml.safe_load(_handle)


def files(name):
    with open(os.path.join(CONFIGS, name, 'config.json')) as handle:
        return dict(config=json.load(handle))


def repo_of(name):
    return name.replace('__', '/', 1)


# (fixture, family, tp that fits 8x H200 memory for the plan check, weights bytes for quantized checkpoints)
GENERATED = [
    ('meta-llama__Meta-Llama-3.1-8B', 'gqa', 1),
    ('meta-llama__Llama-3.3-70B-Instruct', 'gqa', 2),
    ('Qwen__Qwen3-32B', 'gqa', 1),
    ('zai-org__GLM-4.5-Air', 'gqa', 2),
    ('Qwen__Qwen3-Next-80B-A3B-Thinking', 'hybrid_gdn', 2),
    ('Qwen__Qwen3.5-122B-A10B', 'hybrid_gdn', 4),
    ('deepseek-ai__DeepSeek-V3', 'mla', 8),
    ('openai__gpt-oss-120b', 'hybrid_swa', 1),
]


@pytest.mark.parametrize('name, family, tp', GENERATED)
def test_a_generated_profile_loads_keeps_its_facts_and_plans(name, family, tp):
    notes = {}
    profile, guesses = pg.generate(files(name), RELEASE, repo=repo_of(name), revision='main', tp_size=tp, notes=notes)
    text = pg.to_yaml(profile, guesses, ['test'], notes)
    loaded = yaml.safe_load(text)
    assert loaded == profile
    assert profile_schema.check_model(profile['name'], loaded) == []
    assert text.count('# unverified:') == len(guesses) and ('hf_revision',) in guesses
    facts = vp.sized_facts(loaded['config'], RELEASE)
    assert facts['family'] == family
    spec = loaded['serving']['speculative']
    if facts['quant_method']:
        # No safetensors index in the fixtures: the size is computed from quantization_config and said so.
        computed = wb.checkpoint_bytes(files(name)['config'], facts)
        assert loaded['weights_bytes'] == computed['total']
        assert 'computed from quantization_config' in (notes.get(('weights_bytes',)) or guesses[('weights_bytes',)])
    else:
        assert loaded['weights_bytes'] is None
    result = vp.plan(model_config=loaded['config'], gpu_profile=H200, tp_size=tp, release=RELEASE,
                     speculative_num_draft_tokens=spec['num_draft_tokens'], weights_bytes=loaded['weights_bytes'])
    assert result['family'] == family and result['kv_cache_tokens'] > 0


@pytest.mark.parametrize('name, total, validated', [
    # fp8 block 128x128, validated: the note is a plain comment, not a guess.
    ('deepseek-ai__DeepSeek-V3', 688574839360, True),
    # modelopt NVFP4, never compared with a real checkpoint: a guess.
    ('nvidia__Qwen3.5-397B-A17B-NVFP4', 251135201248, False),
])
def test_the_computed_size_is_recorded_with_what_it_rests_on(name, total, validated):
    notes = {}
    profile, guesses = pg.generate(files(name), RELEASE, repo=repo_of(name), notes=notes)
    text = pg.to_yaml(profile, guesses, ['test'], notes)
    assert profile['weights_bytes'] == total
    comment = text.split('\nweights_bytes:', maxsplit=1)[0].rsplit('\nserved_model_name:', 1)[1]
    assert 'computed from quantization_config' in comment
    assert ('# unverified:' in comment) is not validated
    assert ('validated against' in comment) is validated


def test_a_trimmed_profile_config_is_not_priced_but_its_recorded_size_plans():
    profile, _g = pg.generate(files('nvidia__Qwen3.5-397B-A17B-NVFP4'), RELEASE, repo='nvidia/Qwen3.5-397B-A17B-NVFP4',
                              tp_size=8)
    quant = profile['config']['quantization_config']
    assert 'ignore' not in quant and quant['trimmed_lists'] == {'ignore': 184}
    with pytest.raises(vp.PlanError) as err:
        vp.plan(model_config=profile['config'], gpu_profile=H200, tp_size=8, release=RELEASE)
    assert 'trimmed_lists' in str(err.value) and 'give weights_bytes' in str(err.value)
    result = vp.plan(model_config=profile['config'], gpu_profile=H200, tp_size=8, release=RELEASE,
                     weights_bytes=profile['weights_bytes'])
    assert result['weights_detail']['source'] == 'weights_bytes'


def test_a_short_ignore_list_stays_and_the_profile_config_prices_alone():
    profile, _g = pg.generate(files('moonshotai__Kimi-K2.5'), RELEASE, repo='moonshotai/Kimi-K2.5', tp_size=8)
    quant = profile['config']['text_config']['quantization_config']
    assert len(quant['ignore']) == 4 and 'trimmed_lists' not in quant
    result = vp.plan(model_config=profile['config'], gpu_profile=H200, tp_size=8, release=RELEASE)
    assert result['weights_detail']['source'].startswith('computed from quantization_config: compressed-tensors int4')


def test_an_unknown_quantization_is_a_guess_naming_what_is_priced():
    config = dict(files('Qwen__Qwen3-32B')['config'], quantization_config={'quant_method': 'bitsandbytes'})
    profile, guesses = pg.generate(dict(config=config), RELEASE, repo='a/b')
    assert profile['weights_bytes'] is None
    assert "quant_method 'bitsandbytes'" in guesses[('weights_bytes',)] and 'fp8, mxfp4' in guesses[('weights_bytes',)]


def test_mtp_layers_give_nextn_with_the_release_defaults():
    profile, guesses = pg.generate(files('deepseek-ai__DeepSeek-V3'), RELEASE, repo='deepseek-ai/DeepSeek-V3')
    steps, topk, draft = RELEASE['defaults']['speculative_auto_params']
    assert profile['serving']['speculative'] == dict(algorithm='NEXTN', num_steps=steps, eagle_topk=topk,
                                                     num_draft_tokens=draft)
    assert 'MTP/NEXTN layer' in guesses[('serving', 'speculative')]
    dense, _g = pg.generate(files('Qwen__Qwen3-32B'), RELEASE, repo='Qwen/Qwen3-32B')
    assert dense['serving']['speculative'] == dict(num_draft_tokens=0)


def test_a_commit_is_recorded_and_a_branch_is_not():
    sha = '0123456789abcdef0123456789abcdef01234567'
    profile, guesses = pg.generate(files('Qwen__Qwen3-32B'), RELEASE, repo='Qwen/Qwen3-32B', revision=sha)
    assert profile['hf_revision'] == sha and ('hf_revision',) not in guesses
    profile, guesses = pg.generate(files('Qwen__Qwen3-32B'), RELEASE, repo='Qwen/Qwen3-32B', revision='main')
    assert profile['hf_revision'] is None and 'branch' in guesses[('hf_revision',)]


def test_the_safetensors_index_sizes_the_checkpoint():
    given = dict(files('deepseek-ai__DeepSeek-V3'), index={'metadata': {'total_size': 688586727753}})
    profile, guesses = pg.generate(given, RELEASE, repo='deepseek-ai/DeepSeek-V3')
    assert profile['weights_bytes'] == 688586727753 and ('weights_bytes',) not in guesses


TEMPLATES = os.path.join(ROOT, 'tests', 'fixtures', 'chat_templates')


def template_files(name):
    base = os.path.join(TEMPLATES, name)
    out = {}
    for key, file_name in (('tokenizer_config', 'tokenizer_config.json'), ('config', 'config.json')):
        if os.path.exists(os.path.join(base, file_name)):
            with open(os.path.join(base, file_name)) as handle:
                out[key] = json.load(handle)
    if os.path.exists(os.path.join(base, 'chat_template.jinja')):
        with open(os.path.join(base, 'chat_template.jinja'), 'rb') as handle:
            out['chat_template'] = handle.read().decode('utf-8')
    return out


def test_without_a_template_the_parsers_stay_auto_and_unverified():
    profile, guesses = pg.generate(files('Qwen__Qwen3-32B'), RELEASE, repo='a/b')
    assert profile['serving']['reasoning_parser'] == profile['serving']['tool_call_parser'] == 'auto'
    assert 'no chat template was read' in guesses[('serving', 'reasoning_parser')]


def test_the_template_picks_the_parsers_sglang_auto_would_with_their_source():
    # gpt-oss-20b's real chat_template.jinja with a complete vocabulary (a tokenizer.json of its added tokens).
    got = template_files('openai__gpt-oss-20b')
    tokens = [e['content'] for e in got['tokenizer_config']['added_tokens_decoder'].values()]
    tokenizer = {'model': {'vocab': dict((t, i) for i, t in enumerate(tokens))}}
    notes = {}
    profile, guesses = pg.generate(dict(files('openai__gpt-oss-20b'), tokenizer=tokenizer, **got), RELEASE,
                                   repo='openai/gpt-oss-20b', notes=notes)
    assert profile['serving']['reasoning_parser'] == profile['serving']['tool_call_parser'] == 'gpt-oss'
    assert ('serving', 'reasoning_parser') not in guesses
    note = notes[('serving', 'tool_call_parser')]
    assert 'resolves to gpt-oss: chat template rule gpt_oss (chat_template.jinja)' in note
    assert note.startswith('sglang %s "auto"' % RELEASE['version'])
    text = pg.to_yaml(profile, guesses, ['t'], notes)
    assert '  # sglang %s "auto" resolves to gpt-oss' % RELEASE['version'] in text
    assert yaml.safe_load(text) == profile


def test_an_unread_vocabulary_keeps_auto_and_says_what_the_template_gives():
    got = template_files('deepseek-ai__DeepSeek-R1-Distill-Qwen-32B')
    profile, guesses = pg.generate(got, RELEASE, repo='deepseek-ai/DeepSeek-R1-Distill-Qwen-32B')
    assert profile['serving']['tool_call_parser'] == 'auto'
    why = guesses[('serving', 'tool_call_parser')]
    assert why.startswith('deepseekv31 (chat template rule deepseek_v31), unless the vocabulary tests of rules '
                          'apertus2509, kimi_k2 decide otherwise')
    assert 'tokenizer.json was not read' in why


def test_a_template_no_rule_matches_records_null_sglang_disables_it():
    notes = {}
    profile, guesses = pg.generate(dict(files('Qwen__Qwen3-32B'), tokenizer_config={'chat_template': 'plain'},
                                        tokenizer={'model': {'vocab': {'plain': 0}}}), RELEASE, repo='a/b', notes=notes)
    assert profile['serving']['reasoning_parser'] is None and profile['serving']['tool_call_parser'] is None
    assert 'resolves to none: no rule matched the chat template: SGLang disables the parser' in notes[
        ('serving', 'reasoning_parser')]


def test_a_release_without_detection_rules_keeps_auto():
    release = dict(RELEASE, detection=None)
    profile, guesses = pg.generate(dict(files('Qwen__Qwen3-32B'), tokenizer_config={'chat_template': 'x'}), release,
                                   repo='a/b')
    assert profile['serving']['reasoning_parser'] == 'auto'
    assert 'template detection is not in the release table' in guesses[('serving', 'reasoning_parser')]


def test_quantization_is_left_to_the_flag_renderer():
    # No serving.quantization: the renderer derives --quantization per GPU from the release table.
    profile, _g = pg.generate(files('nvidia__Qwen3.5-122B-A10B-NVFP4'), RELEASE, repo='nvidia/Qwen3.5-122B-A10B-NVFP4')
    assert 'quantization' not in profile['serving']
    assert not hasattr(pg, 'QUANTIZATION_FLAG')


def test_hf_quant_config_fills_a_config_without_quantization():
    # nvidia/DeepSeek-V3.1-NVFP4 keeps its quantization in hf_quant_config.json only.
    base = os.path.join(CONFIGS, 'nvidia__DeepSeek-V3.1-NVFP4')
    with open(os.path.join(base, 'hf_quant_config.json')) as handle:
        hf_quant = json.load(handle)
    notes = {}
    profile, _g = pg.generate(dict(files('nvidia__DeepSeek-V3.1-NVFP4'), hf_quant_config=hf_quant), RELEASE,
                              repo='nvidia/DeepSeek-V3.1-NVFP4', notes=notes, tp_size=8)
    quant = profile['config']['quantization_config']
    assert quant['quant_algo'] == 'NVFP4' and quant['kv_cache_quant_algo'] == 'FP8'
    assert 'from hf_quant_config.json' in notes[('config', 'quantization_config')]


def test_a_quantization_in_no_format_is_noted_above_config():
    config = dict(files('Qwen__Qwen3-32B')['config'], quantization_config={'quant_method': 'bitsandbytes'})
    notes = {}
    pg.generate(dict(config=config), RELEASE, repo='a/b', notes=notes)
    assert 'quantization bitsandbytes is in no format' in notes[('config',)]


def test_bulky_quantization_lists_are_dropped_and_the_rest_is_verbatim():
    original = files('Qwen__Qwen3-235B-A22B-FP8')['config']
    profile, _g = pg.generate(dict(config=original), RELEASE, repo='Qwen/Qwen3-235B-A22B-FP8')
    quant = profile['config']['quantization_config']
    assert 'modules_to_not_convert' not in quant and quant['weight_block_size'] == [128, 128]
    assert quant['trimmed_lists'] == {'modules_to_not_convert': len(original['quantization_config']['modules_to_not_convert'])}
    assert dict((k, v) for k, v in profile['config'].items() if k != 'quantization_config') == dict(
        (k, v) for k, v in original.items() if k != 'quantization_config')


def test_an_architecture_in_no_family_is_refused():
    config = dict(files('Qwen__Qwen3-32B')['config'], architectures=['Gemma3ForCausalLM'])
    with pytest.raises(pg.ProfileError) as err:
        pg.generate(dict(config=config), RELEASE, repo='google/gemma-3-27b-it')
    assert 'Gemma3ForCausalLM is not one the planner sizes' in str(err.value)
    assert 'LlamaForCausalLM' in str(err.value)


def test_names_come_from_the_repository():
    assert pg.slug('Qwen/Qwen3.5-122B-A10B') == 'qwen3.5-122b-a10b'
    with pytest.raises(pg.ProfileError):
        pg.slug('')


@pytest.mark.parametrize('kwargs, fragment', [
    (dict(name='../evil'), "name '../evil': a profile name is lower-case"),
    (dict(name='Qwen/Qwen3-32B'), 'give e.g. qwen3-32b'),
    (dict(tp_size=0), 'tp_size 0: must be a whole number >= 1'),
    (dict(tp_size=-2), 'tp_size -2'),
])
def test_bad_inputs_are_refused_naming_the_value(kwargs, fragment):
    with pytest.raises(pg.ProfileError) as err:
        pg.generate(files('Qwen__Qwen3-32B'), RELEASE, repo='Qwen/Qwen3-32B', **kwargs)
    assert fragment in str(err.value)


# --------------------------------------------------------------------------------------------------------------
# ModelOpt checkpoints whose quantization is only in hf_quant_config.json (issue 26 point 3)
# --------------------------------------------------------------------------------------------------------------

def modelopt_files(name):
    with open(os.path.join(CONFIGS, name, 'hf_quant_config.json')) as handle:
        return dict(files(name), hf_quant_config=json.load(handle))


def llama_70b_fp8_bytes():
    """nvidia/Llama-3.1-70B-Instruct-FP8 by hand, from its config.json (hidden 8192, 80 layers, 64 heads / 8 KV heads
    of 128, intermediate 28672, vocab 128256, untied, bfloat16) and hf_quant_config.json (quant_algo FP8,
    exclude_modules [lm_head]), in the layout SGLang's ModelOptFp8LinearMethod.create_weights loads
    (layers/quantization/modelopt_quant.py:560-609): per Linear an FP8 weight (1 byte a value) plus a float32
    weight_scale and a float32 input_scale; norms, embedding and lm_head stay bfloat16."""
    hidden, layers, kv, inter, vocab = 8192, 80, 8 * 128, 28672, 128256
    linears = [hidden * hidden, kv * hidden, kv * hidden, hidden * hidden, inter * hidden, inter * hidden, hidden * inter]
    per_layer = sum(linears) * 1 + len(linears) * (4 + 4) + 2 * hidden * 2
    return layers * per_layer + hidden * 2 + 2 * vocab * hidden * 2


def test_a_modelopt_fp8_checkpoint_is_priced_fp8_not_bf16():
    # The case: weights_bytes was null and the planner priced the checkpoint at 2 bytes a parameter.
    notes = {}
    profile, guesses = pg.generate(modelopt_files('nvidia__Llama-3.1-70B-Instruct-FP8'), RELEASE,
                                   repo='nvidia/Llama-3.1-70B-Instruct-FP8', notes=notes)
    assert profile['weights_bytes'] == llama_70b_fp8_bytes() == 72656376192
    # No index and no published figure was compared: recorded, and marked unverified.
    assert 'modelopt FP8 per-tensor' in guesses[('weights_bytes',)]
    assert 'No real checkpoint of this format was compared' in guesses[('weights_bytes',)]
    result = vp.plan(model_config=profile['config'], gpu_profile=H200, tp_size=1, release=RELEASE)
    assert result['weights_detail']['source'].startswith('computed from quantization_config: modelopt FP8')
    # 70.6e9 parameters x 2 bytes (BF16, 131.4 GiB) would not load on one H200; FP8 does, with room for a KV pool.
    assert result['weights_detail']['target_gib'] == round(llama_70b_fp8_bytes() / float(1 << 30), 3)
    assert result['kv_cache_tokens'] > 0


def test_a_modelopt_nvfp4_checkpoint_in_hf_quant_config_is_priced():
    # nvidia/Qwen3-32B-NVFP4: quant_algo NVFP4, group_size 16, exclude_modules [lm_head], config.json without
    # quantization_config. NVFP4 by hand (modelopt_quant.py ModelOptFp4LinearMethod.create_weights, :1796-1884):
    # per Linear uint8 weight [out, in/2], FP8 weight_scale [out, in/16], float32 weight_scale_2 and input_scale.
    profile, guesses = pg.generate(modelopt_files('nvidia__Qwen3-32B-NVFP4'), RELEASE, repo='nvidia/Qwen3-32B-NVFP4')
    hidden, layers, q, kv, inter, vocab = 5120, 64, 64 * 128, 8 * 128, 25600, 151936
    shapes = [(q, hidden), (kv, hidden), (kv, hidden), (hidden, q), (inter, hidden), (inter, hidden), (hidden, inter)]
    linear = sum(o * i // 2 + o * i // 16 + 4 + 4 for o, i in shapes)
    norms = 2 * hidden * 2 + 2 * 128 * 2  # input / post-attention norms, q_norm and k_norm (Qwen3) in bfloat16
    expected = layers * (linear + norms) + hidden * 2 + 2 * vocab * hidden * 2
    assert profile['weights_bytes'] == expected
    assert 'modelopt NVFP4' in guesses[('weights_bytes',)]


@pytest.mark.parametrize('quant, method', [
    # configs/model_config.py:1838-1869 _parse_modelopt_quant_config, the quant_algo -> quant_method it returns.
    ({'quant_algo': 'FP8', 'kv_cache_quant_algo': 'FP8', 'exclude_modules': ['lm_head']}, 'modelopt_fp8'),
    ({'quant_algo': 'NVFP4', 'group_size': 16, 'exclude_modules': ['lm_head']}, 'modelopt_fp4'),
    ({'quant_method': 'modelopt', 'quant_algo': 'FP8'}, 'modelopt_fp8'),
    ({'quant_method': 'modelopt', 'quant_algo': 'NVFP4'}, 'modelopt_fp4'),
    ({'quant_algo': 'MXFP8'}, 'mxfp8'),
    ({'quant_algo': 'MIXED_PRECISION', 'quantized_layers': {'a': {'quant_algo': 'NVFP4'}}}, 'modelopt_mixed'),
    ({'quant_algo': 'MIXED_PRECISION', 'quantized_layers': {'a': {'quant_algo': 'W4A8_AWQ'}}}, 'w4afp8'),
    # A nested hf_quant_config.json as the file holds it (unwrap_modelopt_quantization_config, :116-121).
    ({'producer': {'name': 'modelopt'}, 'quantization': {'quant_algo': 'FP8'}}, 'modelopt_fp8'),
    # Not ModelOpt: the quant_method stands.
    ({'quant_method': 'fp8', 'weight_block_size': [128, 128]}, 'fp8'),
    ({'quant_method': 'compressed-tensors'}, 'compressed-tensors'),
])
def test_the_quant_method_is_the_one_sglang_resolves(quant, method):
    from ansible_collections.llmops.inference.plugins.module_utils.model.config import sglang_quant_method
    assert sglang_quant_method(quant) == method


def test_a_quantization_sglang_cannot_name_is_never_priced_as_bf16():
    # A quantization_config with neither a quant_method nor a quant_algo SGLang knows: refused, not 2 bytes a param.
    config = dict(files('Qwen__Qwen3-32B')['config'], quantization_config={'quant_algo': 'W4A8_AWQ'})
    with pytest.raises(vp.PlanError) as err:
        vp.plan(model_config=config, gpu_profile=H200, tp_size=1, release=RELEASE)
    assert 'quantized (quant_method=W4A8_AWQ)' in str(err.value)
    config = dict(files('Qwen__Qwen3-32B')['config'], compression_config={'quant_method': 'compressed-tensors'})
    with pytest.raises(vp.PlanError) as err:
        vp.plan(model_config=config, gpu_profile=H200, tp_size=1, release=RELEASE)
    assert 'quantized (quant_method=compressed-tensors)' in str(err.value)


DRAFTS = sorted(name for name in os.listdir(CONFIGS) if name.startswith('EAGLE3-draft__'))


@pytest.mark.parametrize('name', DRAFTS)
def test_an_eagle3_draft_is_sent_to_its_targets_profile(name):
    # Issue 26: make profile on a draft said "Add it to a family". A draft is served beside its target only
    # (--speculative-draft-model-path), and the planner sizes it from serving.speculative.draft of the target's profile.
    config = files(name)['config']
    with pytest.raises(pg.ProfileError) as err:
        pg.generate(dict(config=config), RELEASE, repo='org/some-eagle3-draft')
    text = str(err.value)
    assert 'is an EAGLE-3 draft checkpoint' in text and 'Add it to a family' not in text
    assert 'serving.speculative.draft' in text and 'algorithm: EAGLE3' in text and 'hf_repo: org/some-eagle3-draft' in text
    # Its sizes as the config states them.
    assert 'draft vocabulary %d' % config['draft_vocab_size'] in text
    assert 'max_position_embeddings %d' % config['max_position_embeddings'] in text
    if config['architectures'] != ['LlamaForCausalLMEagle3']:
        # SafeAILab's training config: architectures LlamaForCausalLM, which SGLang would load as a whole Llama.
        assert 'Its architectures is LlamaForCausalLM' in text and 'architectures: [LlamaForCausalLMEagle3]' in text
