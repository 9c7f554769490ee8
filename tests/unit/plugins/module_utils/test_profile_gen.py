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
    profile, guesses = pg.generate(files(name), RELEASE, repo=repo_of(name), revision='main', tp_size=tp)
    text = pg.to_yaml(profile, guesses, ['test'])
    loaded = yaml.safe_load(text)
    assert loaded == profile
    assert profile_schema.check_model(profile['name'], loaded) == []
    assert text.count('# unverified:') == len(guesses) and ('hf_revision',) in guesses
    facts = vp.sized_facts(loaded['config'], RELEASE)
    assert facts['family'] == family
    spec = loaded['serving']['speculative']
    weights = None
    if facts['quant_method']:
        # No safetensors index in the fixtures: a quantized profile says so, and the planner needs the size.
        assert ('weights_bytes',) in guesses and 'quantized' in guesses[('weights_bytes',)]
        with pytest.raises(vp.PlanError):
            vp.plan(model_config=loaded['config'], gpu_profile=H200, tp_size=tp, release=RELEASE,
                    speculative_num_draft_tokens=spec['num_draft_tokens'])
        weights = int(vp.param_counts(facts)['language'])  # ~1 byte per parameter: fp8 / mxfp4 with scales
    result = vp.plan(model_config=loaded['config'], gpu_profile=H200, tp_size=tp, release=RELEASE,
                     speculative_num_draft_tokens=spec['num_draft_tokens'], weights_bytes=weights)
    assert result['family'] == family and result['kv_cache_tokens'] > 0


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
