# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure checks of answers from an OpenAI-compatible server (SGLang, llama.cpp, vLLM...): no I/O here.

Every check returns a result dict ``{name, status, message, answer}``. ``status`` is one of
  ok           the feature works;
  failed       the feature is broken (the message says how, ``answer`` shows what the server sent);
  unsupported  the server or model does not provide the feature at all (e.g. a model that cannot think) - the
               caller decides whether that fails the run;
  skipped      the check did not run (set by the caller).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

OK = 'ok'
FAILED = 'failed'
UNSUPPORTED = 'unsupported'
SKIPPED = 'skipped'

THINK_TAGS = ('<think>', '</think>')
ANSWER_LIMIT = 1500


def excerpt(obj, limit=ANSWER_LIMIT):
    """The server's answer as compact JSON (or text), cut to ``limit`` characters."""
    if obj is None:
        return ''
    if isinstance(obj, (dict, list)):
        try:
            text = json.dumps(obj, sort_keys=False, ensure_ascii=False, separators=(',', ':'))
        except (TypeError, ValueError):
            text = repr(obj)
    else:
        text = obj if isinstance(obj, str) else repr(obj)
    if len(text) > limit:
        return text[:limit] + '... (%d more characters)' % (len(text) - limit)
    return text


def result(name, status, message, answer=None, **extra):
    out = dict(name=name, status=status, message=message, answer=excerpt(answer))
    out.update(extra)
    return out


# ---- JSON schema subset (what tool parameter schemas use) ----------------------------------------------------------

_TYPES = {
    'string': lambda v: isinstance(v, str),
    'integer': lambda v: isinstance(v, int) and not isinstance(v, bool),
    'number': lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    'boolean': lambda v: isinstance(v, bool),
    'object': lambda v: isinstance(v, dict),
    'array': lambda v: isinstance(v, list),
    'null': lambda v: v is None,
}


def validate_schema(value, schema, path='$'):
    """Errors (list of strings) of ``value`` against a JSON-schema subset: type (one or a list), enum, const,
    properties, required, additionalProperties (bool or schema), items, minItems/maxItems, minimum/maximum,
    minLength/maxLength. Unknown keywords are ignored (a lenient check, never a false failure)."""
    errors = []
    if not isinstance(schema, dict):
        return errors
    types = schema.get('type')
    if types is not None:
        names = types if isinstance(types, list) else [types]
        known = [t for t in names if t in _TYPES]
        if known and not any(_TYPES[t](value) for t in known):
            errors.append('%s: %s is not of type %s' % (path, excerpt(value, 80), ' or '.join(known)))
            return errors
    if 'enum' in schema and value not in schema['enum']:
        errors.append('%s: %s is not one of %s' % (path, excerpt(value, 80), excerpt(schema['enum'], 200)))
    if 'const' in schema and value != schema['const']:
        errors.append('%s: %s is not %s' % (path, excerpt(value, 80), excerpt(schema['const'], 80)))
    if isinstance(value, dict):
        props = schema.get('properties') or {}
        for key in schema.get('required') or []:
            if key not in value:
                errors.append('%s: required property "%s" is missing' % (path, key))
        extra = schema.get('additionalProperties', True)
        for key, item in value.items():
            if key in props:
                errors.extend(validate_schema(item, props[key], '%s.%s' % (path, key)))
            elif extra is False:
                errors.append('%s: property "%s" is not allowed' % (path, key))
            elif isinstance(extra, dict):
                errors.extend(validate_schema(item, extra, '%s.%s' % (path, key)))
    if isinstance(value, list):
        if 'minItems' in schema and len(value) < schema['minItems']:
            errors.append('%s: fewer than %d items' % (path, schema['minItems']))
        if 'maxItems' in schema and len(value) > schema['maxItems']:
            errors.append('%s: more than %d items' % (path, schema['maxItems']))
        if isinstance(schema.get('items'), dict):
            for index, item in enumerate(value):
                errors.extend(validate_schema(item, schema['items'], '%s[%d]' % (path, index)))
    if _TYPES['number'](value):
        if 'minimum' in schema and value < schema['minimum']:
            errors.append('%s: %s is below the minimum %s' % (path, value, schema['minimum']))
        if 'maximum' in schema and value > schema['maximum']:
            errors.append('%s: %s is above the maximum %s' % (path, value, schema['maximum']))
    if isinstance(value, str):
        if 'minLength' in schema and len(value) < schema['minLength']:
            errors.append('%s: shorter than %d characters' % (path, schema['minLength']))
        if 'maxLength' in schema and len(value) > schema['maxLength']:
            errors.append('%s: longer than %d characters' % (path, schema['maxLength']))
    return errors


# ---- Chat answers --------------------------------------------------------------------------------------------------

def first_choice(answer):
    """(choice, message, error): the first choice of a chat completion, or why there is none."""
    if not isinstance(answer, dict):
        return None, None, 'the answer is not a JSON object'
    if 'error' in answer and 'choices' not in answer:
        return None, None, 'the server answered with an error: %s' % excerpt(answer['error'], 300)
    choices = answer.get('choices')
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None, None, 'the answer has no choices'
    message = choices[0].get('message')
    if not isinstance(message, dict):
        return choices[0], None, 'choices[0] has no message'
    return choices[0], message, None


def reasoning_of(message):
    """Reasoning text of a message: SGLang/llama.cpp/vLLM use reasoning_content, some servers reasoning."""
    value = message.get('reasoning_content')
    if not value:
        value = message.get('reasoning')
    return value if isinstance(value, str) else ''


def has_think_tags(text):
    return any(tag in (text or '') for tag in THINK_TAGS)


def check_models(answer, model):
    """/v1/models must list the served model name."""
    name = 'models'
    data = answer.get('data') if isinstance(answer, dict) else None
    if not isinstance(data, list):
        return result(name, FAILED, '/v1/models did not return a "data" list', answer)
    ids = [entry.get('id') for entry in data if isinstance(entry, dict)]
    if not model:
        if ids:
            return result(name, OK, '/v1/models lists %s' % ', '.join(str(i) for i in ids), answer, models=ids)
        return result(name, FAILED, '/v1/models lists no model', answer, models=ids)
    if model in ids:
        return result(name, OK, '/v1/models lists the served name "%s"' % model, answer, models=ids)
    return result(name, FAILED, 'served name "%s" is not in /v1/models (%s)' % (model, ', '.join(str(i) for i in ids) or 'empty'),
                  answer, models=ids)


def check_chat(answer):
    """A plain chat completion: an assistant message with text, a normal finish reason."""
    name = 'chat'
    choice, message, error = first_choice(answer)
    if error:
        return result(name, FAILED, error, answer)
    content = message.get('content')
    if content is not None and not isinstance(content, str):
        return result(name, FAILED, 'message.content is %s, not a string' % type(content).__name__, answer)
    text = (content or '') or reasoning_of(message)
    if not text.strip():
        return result(name, FAILED, 'the answer is empty (finish_reason %s)' % choice.get('finish_reason'), answer)
    finish = choice.get('finish_reason')
    if finish not in ('stop', 'length'):
        return result(name, FAILED, 'finish_reason is %r, expected "stop" (or "length")' % finish, answer)
    usage = answer.get('usage') or {}
    note = '' if usage.get('completion_tokens') else ' (no usage.completion_tokens in the answer)'
    if finish == 'length' and not (content or '').strip():
        return result(name, OK, 'max_tokens ended the answer while reasoning; raise the smoke max_tokens to see content'
                      + note, answer)
    return result(name, OK, 'assistant answered %d characters (finish_reason %s)%s' % (len(content or text), finish, note),
                  answer)


def check_thinking(answer, required):
    """Thinking on: the reasoning arrives in reasoning_content, separate from content (a reasoning parser ran)."""
    name = 'thinking'
    choice, message, error = first_choice(answer)
    if error:
        return result(name, FAILED, error, answer)
    content = message.get('content') or ''
    reasoning = reasoning_of(message)
    missing = FAILED if required else UNSUPPORTED
    if reasoning.strip():
        if has_think_tags(content):
            return result(name, FAILED, 'reasoning_content is set but content still holds <think> tags', answer)
        if not content.strip():
            if choice.get('finish_reason') == 'length':
                return result(name, OK, 'reasoning_content %d characters; max_tokens ended the answer before any content'
                              % len(reasoning), answer)
            return result(name, FAILED, 'reasoning_content %d characters but no content after it (finish_reason %s)'
                          % (len(reasoning), choice.get('finish_reason')), answer)
        return result(name, OK, 'reasoning_content %d characters, content %d characters' % (len(reasoning), len(content)),
                      answer)
    if has_think_tags(content):
        return result(name, missing, 'the reasoning is inside content (<think> tags): the server splits no reasoning '
                      '(SGLang: --reasoning-parser)', answer)
    return result(name, missing, 'no reasoning_content in the answer: the model did not think or the server has no '
                  'reasoning parser', answer)


def check_no_thinking(answer):
    """Thinking off (chat_template_kwargs enable_thinking false): an answer without reasoning."""
    name = 'no_thinking'
    choice, message, error = first_choice(answer)
    if error:
        return result(name, FAILED, error, answer)
    content = message.get('content') or ''
    reasoning = reasoning_of(message)
    if reasoning.strip():
        return result(name, FAILED, 'reasoning_content (%d characters) although enable_thinking was false' % len(reasoning),
                      answer)
    stripped = content.replace('<think>', '').replace('</think>', '').strip()
    if has_think_tags(content) and content.split('</think>')[0].replace('<think>', '').strip():
        return result(name, FAILED, 'content holds a non-empty <think> block although enable_thinking was false', answer)
    if not stripped:
        return result(name, FAILED, 'the answer is empty (finish_reason %s)' % choice.get('finish_reason'), answer)
    return result(name, OK, 'answer without reasoning, %d characters' % len(stripped), answer)


def _tool_schemas(tools):
    schemas = {}
    for tool in tools or []:
        function = tool.get('function') if isinstance(tool, dict) else None
        if isinstance(function, dict) and function.get('name'):
            schemas[function['name']] = function.get('parameters') or {}
    return schemas


def _matches(actual, expected):
    if isinstance(expected, str) and isinstance(actual, str):
        return expected.strip().lower() in actual.strip().lower()
    return actual == expected


def check_tool_call(answer, tools, expected_arguments=None):
    """A tool call: tool_calls parsed by the server, arguments valid JSON for the tool's schema,
    finish_reason tool_calls. ``expected_arguments`` (optional) are values the model should have extracted."""
    name = 'tools'
    choice, message, error = first_choice(answer)
    if error:
        return result(name, FAILED, error, answer)
    calls = message.get('tool_calls')
    content = message.get('content') or ''
    reasoning = reasoning_of(message)
    if not calls:
        if '<tool_call>' in content or '<function=' in content:
            why = 'the model wrote a tool call into content but the server did not parse it (SGLang: --tool-call-parser)'
        elif '<tool_call>' in reasoning or '<function=' in reasoning:
            why = 'the tool call landed in reasoning_content (unclosed </think>; see sglang PR #26172)'
        else:
            why = 'no tool_calls in the answer (finish_reason %s)' % choice.get('finish_reason')
        return result(name, FAILED, why, answer)
    if not isinstance(calls, list):
        return result(name, FAILED, 'tool_calls is not a list', answer)
    schemas = _tool_schemas(tools)
    problems = []
    parsed = []
    for index, call in enumerate(calls):
        function = call.get('function') if isinstance(call, dict) else None
        if not isinstance(function, dict):
            problems.append('tool_calls[%d] has no function' % index)
            continue
        fname = function.get('name')
        if fname not in schemas:
            problems.append('tool_calls[%d] calls "%s", which is not among the tools given (%s)'
                            % (index, fname, ', '.join(sorted(schemas))))
            continue
        raw = function.get('arguments')
        if isinstance(raw, dict):
            args = raw  # some servers send an object; OpenAI sends a JSON string
        else:
            try:
                args = json.loads(raw if isinstance(raw, str) else '')
            except ValueError as exc:
                problems.append('tool_calls[%d] arguments are not valid JSON (%s): %s' % (index, exc, excerpt(raw, 200)))
                continue
        if not isinstance(args, dict):
            problems.append('tool_calls[%d] arguments are %s, not a JSON object' % (index, type(args).__name__))
            continue
        problems.extend('tool_calls[%d] arguments %s' % (index, e) for e in validate_schema(args, schemas[fname]))
        parsed.append(dict(name=fname, arguments=args))
    if not problems and expected_arguments and parsed:
        args = parsed[0]['arguments']
        for key, want in expected_arguments.items():
            if not _matches(args.get(key), want):
                problems.append('argument "%s" is %s, expected %s' % (key, excerpt(json.dumps(args.get(key)), 80),
                                                                      excerpt(json.dumps(want), 80)))
    finish = choice.get('finish_reason')
    if finish != 'tool_calls':
        problems.append('finish_reason is %r, expected "tool_calls"' % finish)
    if problems:
        return result(name, FAILED, '; '.join(problems), answer, calls=parsed)
    shown = ', '.join('%s(%s)' % (c['name'], excerpt(c['arguments'], 120)) for c in parsed)
    return result(name, OK, '%d tool call(s): %s' % (len(parsed), shown), answer, calls=parsed)


# ---- Streaming (server-sent events) --------------------------------------------------------------------------------

def parse_sse(lines):
    """Events of an SSE body. ``lines`` are (seconds since the request, line) pairs; returns a list of
    (seconds, payload) where payload is the decoded JSON object, the string '[DONE]', or ('invalid', text)."""
    events = []
    for when, line in lines:
        if isinstance(line, bytes):
            line = line.decode('utf-8', 'replace')
        line = line.rstrip('\r\n')
        if not line.startswith('data:'):
            continue  # comments (": ping"), event:/id:/retry: fields, blank separators
        data = line[5:].strip()
        if data == '[DONE]':
            events.append((when, '[DONE]'))
            continue
        try:
            events.append((when, json.loads(data)))
        except ValueError:
            events.append((when, ('invalid', data)))
    return events


def summarize_stream(events):
    """What a client saw: chunk count, first-token time (first content, reasoning or tool-call delta), text."""
    summary = dict(chunks=0, done=False, first_token_s=None, last_token_s=None, content='', reasoning='',
                   finish_reason=None, invalid=[], errors=[], token_chunks=0)
    for when, payload in events:
        if payload == '[DONE]':
            summary['done'] = True
            continue
        if isinstance(payload, tuple):
            summary['invalid'].append(payload[1][:200])
            continue
        summary['chunks'] += 1
        if 'error' in payload and not payload.get('choices'):
            summary['errors'].append(excerpt(payload['error'], 300))
            continue
        for choice in payload.get('choices') or []:
            delta = choice.get('delta') or {}
            piece = (delta.get('content') or '') + (delta.get('reasoning_content') or delta.get('reasoning') or '')
            if piece or delta.get('tool_calls'):
                summary['token_chunks'] += 1
                if summary['first_token_s'] is None:
                    summary['first_token_s'] = when
                summary['last_token_s'] = when
            summary['content'] += delta.get('content') or ''
            summary['reasoning'] += delta.get('reasoning_content') or delta.get('reasoning') or ''
            if choice.get('finish_reason'):
                summary['finish_reason'] = choice['finish_reason']
    return summary


def check_stream(summary, status=200):
    """Streaming works: SSE chunks arrive one by one, a first token, a finish reason and [DONE]."""
    name = 'stream'
    shown = dict((k, summary[k]) for k in ('chunks', 'token_chunks', 'done', 'finish_reason', 'content', 'reasoning'))
    ttft_ms = round(summary['first_token_s'] * 1000.0, 1) if summary['first_token_s'] is not None else None
    if status != 200:
        return result(name, FAILED, 'HTTP %s for a streaming request' % status, shown)
    if summary['errors']:
        return result(name, FAILED, 'the stream carried an error: %s' % summary['errors'][0], shown)
    if summary['invalid']:
        return result(name, FAILED, 'a data: line is not JSON: %s' % summary['invalid'][0], shown)
    if not summary['chunks']:
        return result(name, FAILED, 'no SSE data chunks arrived', shown)
    if ttft_ms is None:
        return result(name, FAILED, 'no chunk carried a token (%d chunks)' % summary['chunks'], shown)
    problems = []
    if not summary['done']:
        problems.append('the stream did not end with data: [DONE]')
    if not summary['finish_reason']:
        problems.append('no chunk carried a finish_reason')
    if problems:
        return result(name, FAILED, '; '.join(problems), shown, ttft_ms=ttft_ms)
    note = '' if summary['token_chunks'] > 1 else ' (the whole answer came in one chunk: nothing is streamed token by token)'
    status = OK if summary['token_chunks'] > 1 else FAILED
    return result(name, status, '%d chunks, first token after %.1f ms, finish_reason %s%s'
                  % (summary['chunks'], ttft_ms, summary['finish_reason'], note), shown, ttft_ms=ttft_ms)


def summary_line(results):
    """One line per check for the controller: 'chat: ok - ...'."""
    return ['%s: %s - %s' % (r['name'], r['status'], r['message']) for r in results]
