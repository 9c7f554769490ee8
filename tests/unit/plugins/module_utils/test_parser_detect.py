# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pinned release's chat-template parser detection, as data, on real chat templates (tests/fixtures/
chat_templates): the verdicts below are the ones SGLang 0.5.23's own parser/template_detection.py gives for the same
inputs, which tests/sglang/test_parser.py re-checks against the installed wheel rule by rule."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os

import pytest
import yaml

from ansible_collections.llmops.inference.plugins.module_utils.sglang import parser_detect as pd
from ansible_collections.llmops.inference.plugins.module_utils.sglang import release as sr

from collection_paths import PIN, ROOT, release, release_table_data

TEMPLATES = os.path.join(ROOT, 'tests', 'fixtures', 'chat_templates')
TABLE = release_table_data()
RELEASE = release()
RULES = RELEASE['detection']


def fixture(name):
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


def detect(name, complete=True):
    files = fixture(name)
    template, _where = pd.template_of(files.get('tokenizer_config'), files.get('chat_template'))
    vocab, _complete = pd.vocabulary(files.get('tokenizer_config'))
    return pd.detect(RULES, template, vocab, complete, files.get('config'))


def test_every_parser_name_of_the_rules_is_one_of_the_releases_choices():
    for key in ('reasoning_parser', 'tool_call_parser'):
        named = set(row[1] for row in RULES[key])
        named |= set(row[2 if key == 'reasoning_parser' else 3] for row in RULES['architectures'])
        named |= set(row['reasoning' if key == 'reasoning_parser' else 'tool'] for row in RULES['python_templates'])
        assert named <= set(RELEASE['choices'][key]), sorted(named - set(RELEASE['choices'][key]))


def test_gpt_oss_template_is_gpt_oss_for_both_parsers():
    got = detect('openai__gpt-oss-20b')
    assert (got['reasoning_parser']['value'], got['tool_call_parser']['value']) == ('gpt-oss', 'gpt-oss')
    assert got['toggle_rule'] == 'gpt_oss_channel_markers'
    assert got['reasoning_parser']['certain']


def test_deepseek_r1_distill_template_takes_the_r1_and_v31_rules():
    # SGLang's own verdict for this template: deepseek-r1 from the </think> in it, and deepseekv31 for the tool
    # calls (the <｜tool▁calls▁begin｜> / <｜tool▁sep｜> markers), not the deepseekv3 a hand list would pick.
    got = detect('deepseek-ai__DeepSeek-R1-Distill-Qwen-32B')
    assert got['reasoning_parser']['value'] == 'deepseek-r1'
    assert got['reasoning_parser']['rule'] == 'deepseek_r1_think_tags'
    assert got['tool_call_parser']['value'] == 'deepseekv31'
    assert got['toggle_rule'] is None


def test_an_incomplete_vocabulary_leaves_the_verdict_uncertain_and_names_the_rules():
    got = detect('deepseek-ai__DeepSeek-R1-Distill-Qwen-32B', complete=False)
    reasoning = got['reasoning_parser']
    assert reasoning['value'] == 'deepseek-r1' and not reasoning['certain']
    # apertus2509 / kimi_k2 test one token each; the think-tag rule excludes LFM2's tool-call tokens.
    assert reasoning['undecided'] == ['apertus2509', 'kimi_k2', 'hunyuan', 'deepseek_r1_think_tags']
    # With the token present the earlier rule wins.
    got = pd.detect(RULES, '<think></think>', {'<|tool_calls_section_begin|>'}, False)
    assert got['reasoning_parser']['value'] == 'kimi_k2' and got['reasoning_parser']['certain'] is False


with open(os.path.join(TEMPLATES, 'snippets.yml')) as _handle:
    SNIPPETS = yaml.safe_load(_handle)['snippets']


@pytest.mark.parametrize('case', SNIPPETS, ids=[c['id'] for c in SNIPPETS])
def test_rules_on_template_snippets(case):
    got = pd.detect(RULES, case['template'], set(case['vocab']), True)
    want = case['expect']
    assert (got['reasoning_parser']['value'], got['tool_call_parser']['value'], got['toggle_rule']) == (
        want['reasoning'], want['tool'], want['toggle'])


def test_toggle_default_follows_the_boolean_mode():
    assert pd._toggle_default('x | default(true, true)', 'x', True) is False  # pylint: disable=protected-access
    assert pd._toggle_default('x|d(false)', 'x', False) is True  # pylint: disable=protected-access
    assert pd._toggle_default('ns.x | default(false)', 'x', False) is False  # pylint: disable=protected-access


def test_no_template_falls_back_to_the_architecture():
    got = pd.detect(RULES, None, (), False, {'architectures': ['DeepseekV3ForCausalLM'], 'model_type': 'kimi_k2'})
    assert (got['reasoning_parser']['value'], got['tool_call_parser']['value']) == ('deepseek-v3', 'deepseekv32')
    got = pd.detect(RULES, None, (), False, {'architectures': ['Qwen3ForCausalLM']})
    assert got['reasoning_parser']['value'] is None and got['reasoning_parser']['certain']


def test_a_glm53_template_is_replaced_by_the_python_template():
    template = '[gMASK]<sop>Reasoning Effort: <tool_call><arg_key><arg_value>'
    got = pd.detect(RULES, template, (), True, {'architectures': ['GlmMoeDsaForCausalLM']})
    assert got['tool_call_parser']['rule'].startswith('python template')
    assert (got['reasoning_parser']['value'], got['tool_call_parser']['value']) == ('glm45', 'glm47')


def test_a_response_template_makes_an_unmatched_parser_uncertain():
    got = pd.detect(RULES, '{{ messages }}', (), True, None, {'thinking': {}})
    assert got['reasoning_parser']['value'] is None and not got['reasoning_parser']['certain']


def test_template_file_wins_and_named_templates_use_default():
    assert pd.template_of({'chat_template': 'a'}, 'b') == ('b', 'chat_template.jinja')
    assert pd.template_of({'chat_template': [{'name': 'tool_use', 'template': 't'}, {'name': 'default',
                                                                                     'template': 'd'}]}) == (
        'd', 'tokenizer_config.json')
    assert pd.template_of({}) == (None, None)


def test_the_vocabulary_is_complete_only_with_tokenizer_json():
    tokens, complete = pd.vocabulary({'added_tokens_decoder': {'5': {'content': '<x>'}}})
    assert tokens == {'<x>'} and not complete
    tokens, complete = pd.vocabulary({}, {'model': {'vocab': {'a': 0, 'Ġb': 1}}, 'added_tokens': [{'content': '<y>'}]})
    assert tokens == {'a', 'Ġb', '<y>'} and complete


@pytest.mark.parametrize('edit, fragment', [
    (lambda r: r['predicates'].update(bad={'txt': 'x'}), 'unknown condition txt'),
    (lambda r: r['predicates'].update(bad={'text': 'x', 'vocab': 'y'}), 'exactly one condition'),
    (lambda r: r['predicates'].update(bad={'pattern': '(unclosed'}), 'does not compile'),
    (lambda r: r['predicates'].update(bad={'is': 'no_such_predicate'}), 'names no predicate'),
    (lambda r: r['reasoning_parser'].append(['x', 'x', 'no_such_predicate']), 'is not defined under predicates'),
    (lambda r: r['predicates'].update(bad={'text': 'x', 'flags': ['DOTALL']}), 'flags go with pattern only'),
])
def test_malformed_detection_rules_are_refused(edit, fragment):
    table = copy.deepcopy(TABLE)
    edit(table['parser_detection'][table['releases'][PIN]['detection']])
    with pytest.raises(sr.ReleaseError) as err:
        sr.load_table(table)
    assert fragment in str(err.value)
