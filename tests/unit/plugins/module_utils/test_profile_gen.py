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

from ansible_collections.llmops.inference.plugins.module_utils import profile_gen as pg
from ansible_collections.llmops.inference.plugins.module_utils import profile_schema
from ansible_collections.llmops.inference.plugins.module_utils import sglang_release as sr
from ansible_collections.llmops.inference.plugins.module_utils import vram_plan as vp
from ansible_collections.llmops.inference.plugins.module_utils import weight_bytes as wb

ROOT = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..')
CONFIGS = os.path.join(ROOT, 'tests', 'fixtures', 'hf_configs')
with open(os.path.join(ROOT, 'profiles', 'sglang_releases.yml')) as _handle:
    TABLE = sr.load_table(yaml.safe_load(_handle))
with open(os.path.join(ROOT, 'profiles', 'sglang.yml')) as _handle:
    RELEASE = sr.release(TABLE, str(yaml.safe_load(_handle)['version']))
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


def test_parsers_are_the_releases_auto_and_the_template_is_read():
    template = {'chat_template': '{% if tools %}<tool_call>{% endif %}<think>'}
    profile, guesses = pg.generate(dict(files('Qwen__Qwen3-32B'), tokenizer_config=template), RELEASE, repo='a/b')
    assert 'auto' in RELEASE['choices']['reasoning_parser'] and 'auto' in RELEASE['choices']['tool_call_parser']
    assert profile['serving']['reasoning_parser'] == profile['serving']['tool_call_parser'] == 'auto'
    assert ('serving', 'reasoning_parser') not in guesses and ('serving', 'tool_call_parser') not in guesses
    _p, guesses = pg.generate(dict(files('Qwen__Qwen3-32B'), tokenizer_config={'chat_template': 'plain'}),
                              RELEASE, repo='a/b')
    assert 'no <think>' in guesses[('serving', 'reasoning_parser')]


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
