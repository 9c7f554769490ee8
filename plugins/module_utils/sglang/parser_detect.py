# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What --reasoning-parser auto / --tool-call-parser auto resolve to, from the checkpoint's chat template.

PRIVATE to the collection. Pure, stdlib only. The rules are data (``parser_detection`` of
profiles/sglang_releases.yml, mirroring parser/template_detection.py of the release); ``check_rules`` validates a
family and ``detect`` evaluates it the way SGLang's resolve_auto_parsers does at start: the reasoning toggle from
the template, then the first matching rule per parser (None: SGLang disables that parser).

The vocabulary: SGLang asks the loaded tokenizer (its whole vocabulary). The profile generator knows the tokens of
tokenizer.json when it was read, else only the added tokens of tokenizer_config.json; a vocabulary test that fails
on an incomplete vocabulary is "unknown", and a verdict that rests on an unknown test is returned with
``certain: False`` and the rules that made it so.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_STRING = (type(u''), str)
_FLAGS = {'DOTALL': re.DOTALL, 'IGNORECASE': re.IGNORECASE}
_TOGGLE_FIELDS = ('toggle_param', 'default_enabled', 'special_case', 'effort_kwarg')
CONDITION_KEYS = ('text', 'vocab', 'pattern', 'flags', 'vocab_pattern', 'reasoning', 'reasoning_has',
                  'force_reasoning', 'toggle_default', 'all', 'any', 'not', 'is')
FAMILY_KEYS = ('source', 'predicates', 'reasoning_modes', 'reasoning_parser', 'tool_call_parser', 'architectures',
               'python_templates')
UNKNOWN = None  # the third truth value


class DetectRulesError(ValueError):
    """The parser-detection rules of the release table are malformed."""


# --------------------------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------------------------

def _fail(where, text):
    raise DetectRulesError('%s: %s' % (where, text))


def _check_toggle(where, value):
    if not isinstance(value, dict) or any(k not in _TOGGLE_FIELDS for k in value):
        _fail(where, 'must be a mapping of %s' % ', '.join(_TOGGLE_FIELDS))


def _check_condition(where, cond, predicates):
    if not isinstance(cond, dict) or not cond:
        _fail(where, 'must be a condition mapping (%s)' % ', '.join(CONDITION_KEYS))
    for key in cond:
        if key not in CONDITION_KEYS:
            _fail(where, 'unknown condition %s; known: %s' % (key, ', '.join(CONDITION_KEYS)))
    kinds = [k for k in cond if k != 'flags']
    if len(kinds) != 1:
        _fail(where, 'must hold exactly one condition, got %s' % ', '.join(sorted(kinds)))
    kind = kinds[0]
    value = cond[kind]
    if 'flags' in cond and (kind != 'pattern' or not all(f in _FLAGS for f in cond['flags'])):
        _fail(where, 'flags go with pattern only and must be among %s' % ', '.join(sorted(_FLAGS)))
    if kind in ('text', 'vocab') and not (isinstance(value, _STRING) and value):
        _fail(where, '%s must be a non-empty string' % kind)
    elif kind in ('pattern', 'vocab_pattern'):
        try:
            re.compile(value, sum(_FLAGS[f] for f in cond.get('flags', [])))
        except (re.error, TypeError) as exc:
            _fail(where, '%s %r does not compile: %s' % (kind, value, exc))
    elif kind in ('reasoning', 'reasoning_has'):
        _check_toggle(where + '.' + kind, value)
    elif kind == 'force_reasoning' and not isinstance(value, bool):
        _fail(where, 'force_reasoning must be true or false')
    elif kind == 'toggle_default' and not (isinstance(value, dict) and sorted(value) == ['default', 'param'] and
                                           isinstance(value['default'], bool)):
        _fail(where, 'toggle_default must be {param: name, default: true|false}')
    elif kind in ('all', 'any'):
        if not isinstance(value, list) or not value:
            _fail(where, '%s must be a non-empty list of conditions' % kind)
        for index, sub in enumerate(value):
            _check_condition('%s.%s[%d]' % (where, kind, index), sub, predicates)
    elif kind == 'not':
        _check_condition(where + '.not', value, predicates)
    elif kind == 'is' and value not in predicates:
        _fail(where, 'is: %r names no predicate' % (value,))


def check_rules(family, where='parser_detection'):
    """Validate one parser-detection family; raises DetectRulesError naming the key."""
    if not isinstance(family, dict):
        _fail(where, 'must be a mapping')
    for key in family:
        if key not in FAMILY_KEYS:
            _fail(where, 'unknown key %s; known keys: %s' % (key, ', '.join(FAMILY_KEYS)))
    missing = [k for k in FAMILY_KEYS if k not in family]
    if missing:
        _fail(where, 'lacks %s' % ', '.join(missing))
    predicates = family['predicates']
    if not isinstance(predicates, dict) or not predicates:
        _fail(where + '.predicates', 'must be a non-empty mapping')
    for name, cond in predicates.items():
        _check_condition('%s.predicates.%s' % (where, name), cond, predicates)
    for index, row in enumerate(family['reasoning_modes'] or []):
        at = '%s.reasoning_modes[%d]' % (where, index)
        if not isinstance(row, list) or len(row) != 3:
            _fail(at, 'must be [rule name, toggle config, condition]')
        _check_toggle(at, row[1])
        _check_condition(at, row[2], predicates)
    for key in ('reasoning_parser', 'tool_call_parser'):
        for index, row in enumerate(family[key] or []):
            at = '%s.%s[%d]' % (where, key, index)
            if not isinstance(row, list) or len(row) != 3 or not all(isinstance(v, _STRING) for v in row):
                _fail(at, 'must be [rule name, parser, predicate name]')
            if row[2] not in predicates:
                _fail(at, 'predicate %r is not defined under predicates' % row[2])
    for index, row in enumerate(family['architectures'] or []):
        if not isinstance(row, list) or len(row) != 4:
            _fail('%s.architectures[%d]' % (where, index), 'must be [architecture or *substring*, model_type or '
                  'null, reasoning parser, tool parser]')
    for index, row in enumerate(family['python_templates'] or []):
        if not isinstance(row, dict) or sorted(row) != ['architecture', 'multimodal', 'reasoning', 'tool']:
            _fail('%s.python_templates[%d]' % (where, index), 'must be {architecture, multimodal, reasoning, tool}')
    return family


# --------------------------------------------------------------------------------------------------------------
# Evaluation (three-valued: True, False, UNKNOWN when an incomplete vocabulary decides)
# --------------------------------------------------------------------------------------------------------------

def _toggle(value):
    value = value or {}
    return tuple(value.get(k) for k in _TOGGLE_FIELDS)


def _toggle_default(template, param, default):
    """``param | default(<bool>)`` (or ``d``) with working-toggle semantics, as _has_toggle_default_assignment.

    SGLang walks the Jinja AST; this reads the text, so a commented-out or string-quoted assignment also counts
    (tests/sglang/test_parser.py compares both on real templates).
    """
    bool_re = r'(true|false|True|False)'
    pattern = (r'(?<![\w.])%s\s*\|\s*(?:default|d)\s*\(\s*%s\s*(?:,\s*(?:boolean\s*=\s*)?%s\s*)?\)'
               % (re.escape(param), bool_re, bool_re))
    for match in re.finditer(pattern, template):
        value = match.group(1).lower() == 'true'
        boolean = (match.group(2) or 'false').lower() == 'true'
        if boolean and value:
            continue  # default(true, true): not a working toggle
        if value is default:
            return True
    return False


class _Context(object):
    def __init__(self, template, vocab, vocab_complete, toggle, force, predicates):
        self.template = template
        self.vocab = vocab
        self.vocab_complete = vocab_complete
        self.toggle = toggle
        self.force = force
        self.predicates = predicates

    def vocab_has(self, token):
        if token in self.vocab:
            return True
        return False if self.vocab_complete else UNKNOWN

    def vocab_search(self, pattern):
        compiled = re.compile(pattern)
        if any(compiled.search(tok) for tok in self.vocab):
            return True
        return False if self.vocab_complete else UNKNOWN


def _all(values):
    if any(v is False for v in values):
        return False
    return UNKNOWN if any(v is UNKNOWN for v in values) else True


def _any(values):
    if any(v is True for v in values):
        return True
    return UNKNOWN if any(v is UNKNOWN for v in values) else False


def evaluate(cond, ctx):
    """True, False or UNKNOWN for one condition."""
    if 'text' in cond:
        return cond['text'] in ctx.template
    if 'vocab' in cond:
        return ctx.vocab_has(cond['vocab'])
    if 'pattern' in cond:
        flags = sum(_FLAGS[f] for f in cond.get('flags', []))
        return re.search(cond['pattern'], ctx.template, flags) is not None
    if 'vocab_pattern' in cond:
        return ctx.vocab_search(cond['vocab_pattern'])
    if 'reasoning' in cond:
        return ctx.toggle is not None and ctx.toggle == _toggle(cond['reasoning'])
    if 'reasoning_has' in cond:
        if ctx.toggle is None:
            return False
        want = cond['reasoning_has']
        return all(ctx.toggle[_TOGGLE_FIELDS.index(k)] == v for k, v in want.items())
    if 'force_reasoning' in cond:
        return ctx.force == cond['force_reasoning']
    if 'toggle_default' in cond:
        return _toggle_default(ctx.template, cond['toggle_default']['param'], cond['toggle_default']['default'])
    if 'all' in cond:
        return _all([evaluate(c, ctx) for c in cond['all']])
    if 'any' in cond:
        return _any([evaluate(c, ctx) for c in cond['any']])
    if 'not' in cond:
        value = evaluate(cond['not'], ctx)
        return UNKNOWN if value is UNKNOWN else not value
    return evaluate(ctx.predicates[cond['is']], ctx)


def reasoning_mode(family, template):
    """(force_reasoning, toggle tuple or None, rule name or None) as detect_reasoning_pattern (no vocabulary)."""
    ctx = _Context(template, set(), True, None, False, family['predicates'])
    for name, value, cond in family['reasoning_modes']:
        if evaluate(cond, ctx) is True:
            toggle = _toggle(value)
            return toggle[2] == 'always', toggle, name
    return False, None, None


def _first(rows, ctx, assumed):
    """(parser, rule, certain, undecided rules) of the first rule that holds when the known tokens are taken as the
    whole vocabulary (``assumed``); undecided lists the rules up to it that the known tokens cannot decide (``ctx``
    with the vocabulary as it is), so ``certain`` means the same rule wins whatever else the vocabulary holds."""
    undecided = []
    for name, parser, predicate in rows:
        if evaluate({'is': predicate}, ctx) is UNKNOWN:
            undecided.append(name)
        if evaluate({'is': predicate}, assumed) is True:
            return parser, name, not undecided, undecided
    return None, None, not undecided, undecided


def _arch_parsers(family, config):
    architectures = (config or {}).get('architectures') or []
    arch = architectures[0] if architectures else ''
    model_type = (config or {}).get('model_type') or ''
    for spec, mtype, reasoning, tool in family['architectures'] or []:
        if spec.startswith('*') and spec.endswith('*'):
            hit = spec.strip('*') in arch
        else:
            hit = arch == spec
        if hit or (mtype is not None and model_type == mtype):
            return reasoning, tool, spec
    return None


def detect(family, template, vocab=(), vocab_complete=False, config=None, response_template=None):
    """Both parsers as the release's ``auto`` resolves them at start.

    template: the chat template text SGLang would use (chat_template.jinja, else tokenizer_config's), or None
    vocab:    the tokens known (tokenizer.json's vocabulary and added tokens, or tokenizer_config's added tokens)
    vocab_complete: True when ``vocab`` is the tokenizer's whole vocabulary (tokenizer.json was read)
    config:   config.json (architecture-based detection when there is no template; the GLM-5.3 Python templates)
    response_template: tokenizer_config.json's response_template; SGLang may resolve a parser no rule matched to
              "response_template" from it (its validation is not mirrored: such a verdict is not certain)

    Returns dict(reasoning_parser, tool_call_parser, each dict(value (None: SGLang disables the parser), rule,
    certain, undecided (rules an incomplete vocabulary left open), how), plus toggle_rule.
    """
    out = {}
    if template is None:
        by_arch = _arch_parsers(family, config)
        for index, key in enumerate(('reasoning_parser', 'tool_call_parser')):
            if by_arch:
                out[key] = dict(value=by_arch[index], rule='architecture %s' % by_arch[2], certain=True, undecided=[],
                                how='no chat template: SGLang resolves auto from the architecture')
            else:
                out[key] = dict(value=None, rule=None, certain=True, undecided=[],
                                how='no chat template and no architecture rule: SGLang disables the parser')
        out['toggle_rule'] = None
    else:
        force, toggle, toggle_rule = reasoning_mode(family, template)
        ctx = _Context(template, set(vocab or ()), bool(vocab_complete), toggle, force, family['predicates'])
        assumed = _Context(template, ctx.vocab, True, toggle, force, family['predicates'])
        python = _python_template(family, template, config, ctx)
        for key in ('reasoning_parser', 'tool_call_parser'):
            if python:
                out[key] = dict(value=python[key], rule='python template for %s' % python['architecture'],
                                certain=True, undecided=[],
                                how='the GLM-5.3 Python chat template replaces the Jinja one and declares it')
                continue
            value, rule, certain, undecided = _first(family[key], ctx, assumed)
            out[key] = dict(value=value, rule=rule, certain=certain, undecided=undecided,
                            how=('chat template rule %s' % rule) if value else
                            'no rule matched the chat template: SGLang disables the parser')
        out['toggle_rule'] = toggle_rule
    if isinstance(response_template, dict):
        for key in ('reasoning_parser', 'tool_call_parser'):
            if out[key]['value'] is None:
                out[key].update(certain=False, undecided=out[key]['undecided'] + ['response_template'],
                                how='no rule matched; SGLang may resolve it to "response_template" from '
                                'tokenizer_config.json')
    return out


def _python_template(family, template, config, ctx):
    if 'glm53' not in family['predicates'] or evaluate({'is': 'glm53'}, ctx) is not True:
        return None
    architectures = (config or {}).get('architectures') or []
    arch = architectures[0] if architectures else ''
    multimodal = '<|begin_of_image|>' in template
    for row in family['python_templates'] or []:
        if row['architecture'] == arch and bool(row['multimodal']) == multimodal:
            return dict(reasoning_parser=row['reasoning'], tool_call_parser=row['tool'], architecture=arch)
    return None


def template_of(tokenizer_config=None, jinja=None):
    """(template text or None, where): chat_template.jinja wins over tokenizer_config.json's chat_template (as the
    tokenizer loads them); a list of named templates gives the one named "default"."""
    if isinstance(jinja, _STRING) and jinja:
        return jinja, 'chat_template.jinja'
    template = (tokenizer_config or {}).get('chat_template')
    if isinstance(template, list):
        named = dict((t.get('name'), t.get('template')) for t in template if isinstance(t, dict))
        template = named.get('default')
    if isinstance(template, _STRING) and template:
        return template, 'tokenizer_config.json'
    return None, None


def vocabulary(tokenizer_config=None, tokenizer=None):
    """(set of tokens, complete): tokenizer.json's model vocabulary and added tokens when it was read (complete),
    plus the added tokens of tokenizer_config.json."""
    tokens = set()
    for entry in ((tokenizer_config or {}).get('added_tokens_decoder') or {}).values():
        if isinstance(entry, dict) and isinstance(entry.get('content'), _STRING):
            tokens.add(entry['content'])
    complete = False
    if isinstance(tokenizer, dict):
        vocab = (tokenizer.get('model') or {}).get('vocab')
        if isinstance(vocab, dict):
            tokens.update(k for k in vocab if isinstance(k, _STRING))
            complete = True
        elif isinstance(vocab, list):  # Unigram: [[piece, score], ...]
            tokens.update(p[0] for p in vocab if isinstance(p, list) and p and isinstance(p[0], _STRING))
            complete = True
        for entry in tokenizer.get('added_tokens') or []:
            if isinstance(entry, dict) and isinstance(entry.get('content'), _STRING):
                tokens.add(entry['content'])
    return tokens, complete
