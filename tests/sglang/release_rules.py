# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The release table's quantization rules and parser-detection rules against the installed (pinned) SGLang itself.
Imported by tests/sglang/test_parser.py (runs in the lab SGLang venv); each function returns (name, ok, detail).

Quantization: every `source: file:line` + `quote:` of the rules is text of those lines of the wheel, every method is
one of the release's --quantization choices, and no arch row claims a GPU below the minimum capability SGLang's own
config class states. Parser detection: the rule names, values and order are SGLang's (REASONING_MODE_RULES,
REASONING_PARSER_RULES, TOOL_CALL_PARSER_RULES), every predicate gives SGLang's verdict on every context of a corpus
(the real chat templates of tests/fixtures/chat_templates, the snippets there, and one context per predicate built
from its own literals, each under every toggle the release can detect), the whole detection gives SGLang's parsers on
each fixture and snippet, and the architecture and Python-template fallbacks give what SGLang's functions give.
"""
import json
import os
import types

from collection_paths import ROOT  # test_parser.py puts tests/tools on sys.path

TEMPLATES = os.path.join(ROOT, 'tests', 'fixtures', 'chat_templates')


# --------------------------------------------------------------------------------------------------------------
# Quantization
# --------------------------------------------------------------------------------------------------------------

def _cites(rules):
    yield 'messages.capability', rules['messages']['capability']
    yield 'messages.unknown', rules['messages']['unknown']
    for fmt in rules['formats']:
        yield 'formats.%s' % fmt['name'], fmt
        for index, arch in enumerate(fmt['archs']):
            yield 'formats.%s.archs[%d]' % (fmt['name'], index), arch
    kv = rules.get('kv_cache_auto')
    if kv:
        yield 'kv_cache_auto.rule', kv['rule']
        for method, entry in sorted(kv['methods'].items()):
            yield 'kv_cache_auto.methods.%s' % method, entry


def _lines(srt, source):
    path, _colon, span = source.rpartition(':')
    first, _dash, last = span.partition('-')
    with open(os.path.join(srt, path), encoding='utf-8') as stream:
        lines = stream.read().splitlines()
    return '\n'.join(lines[int(first) - 1:int(last or first)])


def quantization_rules_match_source(release, srt):
    out = []
    rules = release['quantization']
    for where, item in _cites(rules):
        text = _lines(srt, item['source'])
        out.append(('quantization %s cites %s' % (where, item['source']), item['quote'] in text,
                    'quote %r not in those lines: %r' % (item['quote'], text[:300]) if item['quote'] not in text
                    else repr(item['quote'])))
    choices = set(release['choices']['quantization'])
    methods = set(f['method'] for f in rules['formats']) | set(
        a['method'] for f in rules['formats'] for a in f['archs'] if a.get('method')) | set(
        (rules.get('kv_cache_auto') or {}).get('methods') or ())
    out.append(('quantization methods are --quantization choices', methods <= choices,
                'not choices: %s' % sorted(methods - choices) if not methods <= choices else '%d methods' % len(methods)))
    from sglang.srt.layers.quantization import QUANTIZATION_METHODS  # pylint: disable=import-error
    # --kv-cache-dtype auto: a method the rules do not list must have a config class that never sets
    # kv_cache_quant_algo (its cache keeps the model dtype); a listed one must have one that does.
    import inspect
    listed = set((rules.get('kv_cache_auto') or {}).get('methods') or ())
    for method in sorted(methods):
        cls = QUANTIZATION_METHODS.get(method)
        if cls is None:
            continue
        text = ''.join(inspect.getsource(k) for k in cls.__mro__ if k.__module__.startswith('sglang.') and
                       k.__name__ != 'QuantizationConfig')
        has = 'kv_cache_quant_algo' in text
        name = 'quantization kv_cache_auto %s %s' % (method, 'listed' if method in listed else 'not listed')
        detail = '%s %s kv_cache_quant_algo' % (cls.__name__, 'sets' if has else 'never sets')
        out.append((name, has == (method in listed), detail))
    for fmt in rules['formats']:
        for arch in fmt['archs']:
            method = arch.get('method') or fmt['method']
            cls = QUANTIZATION_METHODS.get(method)
            try:
                least = cls.get_min_capability() if cls is not None else None
            except TypeError:  # an instance method (Fp8Config): the quote of the row is the check
                least = None
            if least is None:
                continue
            ok = arch['sm'][0] >= least
            name = 'quantization %s sm_%d+ is within %s\'s minimum %d' % (fmt['name'], arch['sm'][0], method, least)
            out.append((name, ok, cls.__name__))
    return out


# --------------------------------------------------------------------------------------------------------------
# Parser detection
# --------------------------------------------------------------------------------------------------------------

class _Tokenizer(object):
    def __init__(self, vocab):
        self.vocab = vocab

    def get_vocab(self):
        return dict((token, index) for index, token in enumerate(sorted(self.vocab)))


def _literals(cond, kind):
    if not isinstance(cond, dict):
        return []
    out = [cond[kind]] if kind in cond and isinstance(cond[kind], str) else []
    for key in ('all', 'any'):
        for sub in cond.get(key) or []:
            out += _literals(sub, kind)
    if 'not' in cond:
        out += _literals(cond['not'], kind)
    return out


# Text that makes the regular-expression conditions true (one or more per pattern of the rules).
PATTERN_SAMPLES = [
    '/nothink', '/think', "{{ '<tool_call>' + tc.name }}", "{{- \"<tool_call>\" ~ tc.name }}", 'Step-3.5', 'step3p7',
    '<function name="f"><param name="p">', "{{- '<|im_start|>assistant\\n<think>\\n' }}",
    '{% if not enable_thinking is defined %}{% set enable_thinking = false %}{% endif %}',
    '{% if not enable_thinking is defined %}{% set enable_thinking = true %}{% endif %}',
    '{% set enable_thinking = enable_thinking if enable_thinking is defined else true %}',
    'enable_thinking is defined and not enable_thinking', 'enable_thinking is not defined or enable_thinking',
    'namespace(x=1, enable_thinking=true)', '{%- set enable_thinking = enable_thinking | default(true) -%}',
    '{%- set enable_thinking = enable_thinking | default(false) -%}', '{% set thinking = thinking | d(false) %}',
    '{% if not thinking is defined %}{% set thinking = true %}{% endif %}', 'thinking is defined and thinking is false',
    '{{ x | default(true, true) }}',
]


def _corpus(family):
    """(label, template, vocab) contexts: fixtures, snippets, and one per predicate from its own literals."""
    import yaml
    corpus = []
    for name in sorted(os.listdir(TEMPLATES)):
        base = os.path.join(TEMPLATES, name)
        if not os.path.isdir(base):
            continue
        from ansible_collections.llmops.inference.plugins.module_utils.sglang import parser_detect as pd
        tokenizer_config = jinja = None
        if os.path.exists(os.path.join(base, 'tokenizer_config.json')):
            with open(os.path.join(base, 'tokenizer_config.json'), encoding='utf-8') as stream:
                tokenizer_config = json.load(stream)
        if os.path.exists(os.path.join(base, 'chat_template.jinja')):
            with open(os.path.join(base, 'chat_template.jinja'), encoding='utf-8') as stream:
                jinja = stream.read()
        template, _where = pd.template_of(tokenizer_config, jinja)
        vocab, _complete = pd.vocabulary(tokenizer_config)
        corpus.append(('fixture %s' % name, template, vocab))
    with open(os.path.join(TEMPLATES, 'snippets.yml'), encoding='utf-8') as stream:
        for case in yaml.safe_load(stream)['snippets']:
            corpus.append(('snippet %s' % case['id'], case['template'], set(case['vocab'])))
    for name, cond in sorted(family['predicates'].items()):
        texts = _literals(cond, 'text')
        vocab = set(_literals(cond, 'vocab'))
        corpus.append(('predicate %s literals' % name, ' '.join(texts), vocab))
        corpus.append(('predicate %s literals in the vocabulary' % name, ' '.join(texts), vocab | set(texts)))
    for sample in PATTERN_SAMPLES:
        corpus.append(('pattern sample %r' % sample[:40], sample, set()))
    return corpus


def detection_matches_sglang(release):
    from ansible_collections.llmops.inference.plugins.module_utils.sglang import parser_detect as pd
    from sglang.srt.parser import template_detection as td  # pylint: disable=import-error
    family = release['detection']
    if family is None:
        # A release whose detection code was not read (or differs): make profile keeps "auto"; nothing to compare.
        print('SKIP table: no parser-detection family for sglang %s (make profile keeps auto)' % release['version'])
        return []
    out = []
    # The rule tables: names, values and order.
    ours_modes = [(name, pd._toggle(value)) for name, value, dummy in family['reasoning_modes']]  # pylint: disable=protected-access
    theirs_modes = [(r.name, (r.value.toggle_param, r.value.default_enabled, r.value.special_case, r.value.effort_kwarg))
                    for r in td.REASONING_MODE_RULES]
    out.append(('detection reasoning_modes are REASONING_MODE_RULES', ours_modes == theirs_modes,
                'ours %s, sglang %s' % (ours_modes, theirs_modes) if ours_modes != theirs_modes else
                '%d rules' % len(ours_modes)))
    for key, rules in (('reasoning_parser', td.REASONING_PARSER_RULES), ('tool_call_parser', td.TOOL_CALL_PARSER_RULES)):
        ours = [(row[0], row[1]) for row in family[key]]
        theirs = [(r.name, r.value) for r in rules]
        out.append(('detection %s rules are SGLang\'s' % key, ours == theirs,
                    'ours %s, sglang %s' % (ours, theirs) if ours != theirs else '%d rules' % len(ours)))
        names = set(v for dummy, v in ours)
        out.append(('detection %s names are the release\'s choices' % key,
                    names <= set(release['choices'][key]), sorted(names - set(release['choices'][key]))))
    # Every predicate's verdict equals SGLang's on every context, under every toggle the release detects.
    toggles = [(None, False)] + [(pd._toggle(value), pd._toggle(value)[2] == 'always')  # pylint: disable=protected-access
                                 for dummy, value, dummy2 in family['reasoning_modes']]
    pairs = [(rule, row[2]) for key, rules in (('reasoning_parser', td.REASONING_PARSER_RULES),
                                               ('tool_call_parser', td.TOOL_CALL_PARSER_RULES))
             for rule, row in zip(rules, family[key])]
    pairs += [(rule, row[2]) for rule, row in zip(td.REASONING_MODE_RULES, family['reasoning_modes'])]
    mismatches = []
    compared = 0
    for label, template, vocab in _corpus(family):
        for toggle, force in toggles:
            config = td.ReasoningToggleConfig(*toggle) if toggle else None
            theirs_ctx = td.TemplateDetectionContext(template=template, reasoning_config=config,
                                                     force_reasoning=force, vocab=set(vocab))
            ours_ctx = pd._Context(template, set(vocab), True, toggle, force, family['predicates'])  # pylint: disable=protected-access
            for rule, cond in pairs:
                ours = pd.evaluate(cond if isinstance(cond, dict) else {'is': cond}, ours_ctx)
                theirs = bool(rule.predicate(theirs_ctx))
                compared += 1
                if ours is not theirs:
                    mismatches.append('%s / %s / toggle %s: ours %s, sglang %s'
                                      % (label, rule.name, toggle, ours, theirs))
    out.append(('detection predicates give SGLang\'s verdicts', not mismatches,
                '; '.join(mismatches[:5]) if mismatches else '%d verdicts compared' % compared))
    # The whole detection on each template of the corpus.
    wrong = []
    for label, template, vocab in _corpus(family):
        force, config = td.detect_reasoning_pattern(template)
        ctx = td.build_detection_context(template, _Tokenizer(vocab), config, force)
        theirs = (td.match_rules(ctx, td.REASONING_PARSER_RULES, 'r'), td.match_rules(ctx, td.TOOL_CALL_PARSER_RULES,
                                                                                      't'))
        got = pd.detect(family, template, vocab, True)
        ours = (got['reasoning_parser']['value'], got['tool_call_parser']['value'])
        if ours != theirs:
            wrong.append('%s: ours %s, sglang %s' % (label, ours, theirs))
    out.append(('detection gives SGLang\'s parsers on every template', not wrong, '; '.join(wrong[:5]) or 'all'))
    out += _fallbacks_match(family, td, pd)
    return out


def _fallbacks_match(family, td, pd):
    """_architecture_auto_parsers (no template) and the GLM-5.3 Python templates against SGLang's functions."""
    import sglang.srt.utils.hf_transformers_utils as hf_utils  # pylint: disable=import-error
    from sglang.srt.parser import python_chat_template as pct  # pylint: disable=import-error
    out = []
    saved = (hf_utils.get_config, td.resolving_view)
    configs = []
    for spec, model_type, dummy, dummy2 in family['architectures']:
        arch = spec.strip('*') + ('ForCausalLM' if spec.startswith('*') else '')
        configs.append(dict(architectures=[arch], model_type='x'))
        if model_type:
            configs.append(dict(architectures=['SomethingElse'], model_type=model_type))
    configs += [dict(architectures=['Qwen3ForCausalLM'], model_type='qwen3'), dict(architectures=[], model_type='')]
    wrong = []
    try:
        td.resolving_view = lambda server_args: types.SimpleNamespace(
            model_path='m', trust_remote_code=False, revision=None, model_config_parser='auto')
        for config in configs:
            hf_utils.get_config = lambda *a, **k: types.SimpleNamespace(**config)  # pylint: disable=cell-var-from-loop
            theirs = td._architecture_auto_parsers(None, ('reasoning_parser', 'tool_call_parser'))  # pylint: disable=protected-access
            got = pd.detect(family, None, (), True, config)
            ours = dict((k, got[k]['value']) for k in ('reasoning_parser', 'tool_call_parser') if got[k]['value'])
            if ours != theirs:
                wrong.append('%s: ours %s, sglang %s' % (config, ours, theirs))
    finally:
        hf_utils.get_config, td.resolving_view = saved
    out.append(('detection architecture fallback is _architecture_auto_parsers', not wrong,
                '; '.join(wrong[:4]) or '%d configs' % len(configs)))
    wrong = []
    glm53 = '[gMASK]<sop>Reasoning Effort: <tool_call><arg_key><arg_value>'
    for row in family['python_templates']:
        for multimodal in (False, True):
            template = glm53 + ('<|begin_of_image|>' if multimodal else '')
            theirs = pct.resolve_python_chat_template(types.SimpleNamespace(architectures=[row['architecture']]),
                                                      template)
            theirs = (theirs.reasoning_parser, theirs.tool_call_parser) if theirs is not None else None
            got = pd.detect(family, template, (), True, dict(architectures=[row['architecture']]))
            ours = ((got['reasoning_parser']['value'], got['tool_call_parser']['value'])
                    if (got['reasoning_parser']['rule'] or '').startswith('python template') else None)
            if ours != theirs:
                wrong.append('%s multimodal=%s: ours %s, sglang %s' % (row['architecture'], multimodal, ours, theirs))
    out.append(('detection python templates are resolve_python_chat_template', not wrong, '; '.join(wrong) or 'all'))
    return out
