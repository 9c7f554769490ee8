# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the pure OpenAI answer checks (answers shaped like SGLang's and llama.cpp's real ones)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.bench import openai_checks as oc

TOOL = {'type': 'function', 'function': {'name': 'get_weather', 'description': 'Get the weather.', 'parameters': {
    'type': 'object', 'required': ['city'],
    'properties': {'city': {'type': 'string'}, 'unit': {'type': 'string', 'enum': ['celsius', 'fahrenheit']}}}}}


def answer(content=None, reasoning=None, tool_calls=None, finish='stop', usage=True):
    message = {'role': 'assistant', 'content': content}
    if reasoning is not None:
        message['reasoning_content'] = reasoning
    if tool_calls is not None:
        message['tool_calls'] = tool_calls
    out = {'id': 'x', 'object': 'chat.completion', 'choices': [{'index': 0, 'message': message, 'finish_reason': finish}]}
    if usage:
        out['usage'] = {'prompt_tokens': 10, 'completion_tokens': 5, 'total_tokens': 15}
    return out


def call(name='get_weather', arguments='{"city": "Paris"}'):
    return {'id': 'call_1', 'type': 'function', 'function': {'name': name, 'arguments': arguments}}


# ---- schema subset ----

@pytest.mark.parametrize('value, schema, errors', [
    ({'city': 'Paris'}, TOOL['function']['parameters'], 0),
    ({'city': 'Paris', 'unit': 'kelvin'}, TOOL['function']['parameters'], 1),
    ({'unit': 'celsius'}, TOOL['function']['parameters'], 1),
    ({'city': 3}, TOOL['function']['parameters'], 1),
    ([1, 2, 'x'], {'type': 'array', 'items': {'type': 'integer'}}, 1),
    (True, {'type': 'integer'}, 1),
    (2.5, {'type': ['integer', 'null']}, 1),
    (None, {'type': ['integer', 'null']}, 0),
    ({'a': 1, 'b': 2}, {'type': 'object', 'properties': {'a': {}}, 'additionalProperties': False}, 1),
    (5, {'type': 'number', 'minimum': 1, 'maximum': 3}, 1),
    ('', {'type': 'string', 'minLength': 1}, 1),
    ({'x': 1}, {'type': 'object', 'unknownKeyword': 7}, 0),
])
def test_validate_schema(value, schema, errors):
    assert len(oc.validate_schema(value, schema)) == errors


def test_schema_errors_name_the_path():
    errors = oc.validate_schema({'loc': {'city': 1}}, {'type': 'object', 'properties': {
        'loc': {'type': 'object', 'properties': {'city': {'type': 'string'}}}}})
    assert errors == ['$.loc.city: 1 is not of type string']


# ---- chat ----

def test_chat_ok():
    res = oc.check_chat(answer('Hello!'))
    assert res['status'] == oc.OK and 'finish_reason stop' in res['message']


def test_chat_reasoning_only_cut_by_length_is_ok_with_advice():
    res = oc.check_chat(answer('', reasoning='thinking...', finish='length'))
    assert res['status'] == oc.OK and 'max_tokens' in res['message']


@pytest.mark.parametrize('ans, words', [
    (answer(''), 'empty'),
    (answer('hi', finish='tool_calls'), 'finish_reason'),
    ({'error': {'message': 'model not found', 'code': 404}}, 'model not found'),
    ({'choices': []}, 'no choices'),
    ('<html>', 'not a JSON object'),
])
def test_chat_failures(ans, words):
    res = oc.check_chat(ans)
    assert res['status'] == oc.FAILED and words in res['message']
    assert res['answer']  # the server's answer is shown


# ---- thinking ----

def test_thinking_split_ok():
    res = oc.check_thinking(answer('42', reasoning='17 + 25 = 42'), required=True)
    assert res['status'] == oc.OK


def test_thinking_unsupported_when_not_required():
    res = oc.check_thinking(answer('42'), required=False)
    assert res['status'] == oc.UNSUPPORTED
    assert 'no reasoning_content' in res['message'] and '42' in res['answer']


def test_thinking_missing_fails_when_required():
    assert oc.check_thinking(answer('42'), required=True)['status'] == oc.FAILED


def test_thinking_inside_content_is_reported_as_no_parser():
    res = oc.check_thinking(answer('<think>hmm</think>42'), required=True)
    assert res['status'] == oc.FAILED and '--reasoning-parser' in res['message']


def test_thinking_tags_left_in_content():
    res = oc.check_thinking(answer('</think>42', reasoning='hmm'), required=True)
    assert res['status'] == oc.FAILED


def test_thinking_reasoning_field_alias():
    ans = answer('42')
    ans['choices'][0]['message']['reasoning'] = 'vLLM style'
    assert oc.check_thinking(ans, required=True)['status'] == oc.OK


def test_no_thinking():
    assert oc.check_no_thinking(answer('42'))['status'] == oc.OK
    assert oc.check_no_thinking(answer('<think>\n\n</think>\n\n42'))['status'] == oc.OK
    assert oc.check_no_thinking(answer('42', reasoning='still thinking'))['status'] == oc.FAILED
    assert oc.check_no_thinking(answer('<think>I think</think>42'))['status'] == oc.FAILED
    assert oc.check_no_thinking(answer(''))['status'] == oc.FAILED


# ---- tools ----

def test_tool_call_ok():
    res = oc.check_tool_call(answer('', tool_calls=[call()], finish='tool_calls'), [TOOL], {'city': 'paris'})
    assert res['status'] == oc.OK
    assert res['calls'] == [{'name': 'get_weather', 'arguments': {'city': 'Paris'}}]


@pytest.mark.parametrize('ans, words', [
    (answer('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'), '--tool-call-parser'),
    (answer('', reasoning='<tool_call>{"name": "get_weather"}'), 'reasoning_content'),
    (answer('It is sunny.'), 'no tool_calls'),
    (answer('', tool_calls=[call(arguments='{"city": "Paris"')], finish='tool_calls'), 'not valid JSON'),
    (answer('', tool_calls=[call(arguments='["Paris"]')], finish='tool_calls'), 'not a JSON object'),
    (answer('', tool_calls=[call(arguments='{"town": "Paris"}')], finish='tool_calls'), 'required property "city"'),
    (answer('', tool_calls=[call(name='get_time')], finish='tool_calls'), 'not among the tools'),
    (answer('', tool_calls=[call()], finish='stop'), 'expected "tool_calls"'),
    (answer('', tool_calls=[call(arguments='{"city": "London"}')], finish='tool_calls'), 'expected "Paris"'),
])
def test_tool_call_failures(ans, words):
    res = oc.check_tool_call(ans, [TOOL], {'city': 'Paris'})
    assert res['status'] == oc.FAILED
    assert words in res['message'], res['message']


def test_tool_arguments_as_object_are_accepted():
    ans = answer('', tool_calls=[{'type': 'function', 'function': {'name': 'get_weather', 'arguments': {'city': 'Paris'}}}],
                 finish='tool_calls')
    assert oc.check_tool_call(ans, [TOOL])['status'] == oc.OK


# ---- models ----

def test_models():
    data = {'object': 'list', 'data': [{'id': 'qwen3.5-122b', 'owned_by': 'sglang'}]}
    assert oc.check_models(data, 'qwen3.5-122b')['status'] == oc.OK
    res = oc.check_models(data, 'other')
    assert res['status'] == oc.FAILED and 'qwen3.5-122b' in res['message']
    assert oc.check_models(data, None)['models'] == ['qwen3.5-122b']
    assert oc.check_models({'error': 'x'}, 'a')['status'] == oc.FAILED


# ---- streaming ----

def sse(chunks, done=True):
    lines = [(0.01 * i, 'data: %s\n' % json.dumps(c)) for i, c in enumerate(chunks, 1)]
    lines.insert(0, (0.0, ': ping\n'))
    if done:
        lines.append((1.0, 'data: [DONE]\n'))
    return lines


def delta(text=None, reasoning=None, finish=None):
    d = {}
    if text is not None:
        d['content'] = text
    if reasoning is not None:
        d['reasoning_content'] = reasoning
    return {'choices': [{'index': 0, 'delta': d, 'finish_reason': finish}]}


def test_stream_ok_records_first_token():
    summary = oc.summarize_stream(oc.parse_sse(sse([delta(''), delta(reasoning='hm'), delta('Hel'), delta('lo', finish='stop')])))
    assert summary['first_token_s'] == 0.02 and summary['content'] == 'Hello' and summary['reasoning'] == 'hm'
    res = oc.check_stream(summary)
    assert res['status'] == oc.OK and res['ttft_ms'] == 20.0


@pytest.mark.parametrize('lines, words', [
    (sse([delta('Hello', finish='stop')]), 'one chunk'),
    (sse([delta('a'), delta('b', finish='stop')], done=False), '[DONE]'),
    (sse([delta('a'), delta('b')]), 'finish_reason'),
    (sse([]), 'no SSE data chunks'),
    ([(0.1, 'data: {not json\n')], 'not JSON'),
    (sse([{'error': {'message': 'boom'}}]), 'boom'),
])
def test_stream_failures(lines, words):
    res = oc.check_stream(oc.summarize_stream(oc.parse_sse(lines)))
    assert res['status'] == oc.FAILED and words in res['message'], res['message']


def test_excerpt_cuts_long_answers():
    text = oc.excerpt({'a': 'x' * 5000}, limit=100)
    assert len(text) < 160 and 'more characters' in text
