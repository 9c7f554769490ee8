# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A model profile (profiles/models/<name>.yml) from a checkpoint's own JSON files.

PRIVATE to the collection. Pure, stdlib only. ``generate(files, release, ...)`` takes the parsed config.json (and,
when the checkpoint has them, model.safetensors.index.json, generation_config.json and tokenizer_config.json) and
returns the profile as a dict plus the list of what it had to guess; ``to_yaml(profile, guesses, header)`` writes it
with every guess as a ``# unverified:`` comment above its key. The planner family decides what is kept: an
architecture in no family of the release table is refused (ProfileError) with the supported list.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
import textwrap

from ansible_collections.llmops.inference.plugins.module_utils.sglang import parser_detect
from ansible_collections.llmops.inference.plugins.module_utils.sglang.quant import match_format, quant_config
from ansible_collections.llmops.inference.plugins.module_utils.planner.vram_plan import PlanError, sized_facts
from ansible_collections.llmops.inference.plugins.module_utils.model.weight_bytes import WeightBytesError, checkpoint_bytes

COMMIT_RE = re.compile(r'^[0-9a-f]{40}$')
NAME_RE = re.compile(r'^[a-z0-9][a-z0-9._-]*$')
# quantization_config keys that only list module names (up to hundreds of entries). A list longer than BULKY is
# dropped from the profile and its length recorded under trimmed_lists (weight_bytes then refuses to price the copy:
# make profile records the computed weights_bytes from the full list instead); a short one stays verbatim.
_BULKY_QUANT_KEYS = ('modules_to_not_convert', 'ignore', 'ignored_layers', 'exclude_modules')
BULKY = 16


class ProfileError(ValueError):
    """The files cannot make a profile (not a config, an unsupported architecture)."""


def slug(repo):
    """profile / served name from a repo id: its last part, lower case, [a-z0-9._-] only."""
    name = (repo or '').rstrip('/').split('/')[-1].lower()
    name = re.sub(r'[^a-z0-9._-]+', '-', name).strip('-.')
    if not name:
        raise ProfileError('cannot derive a profile name from %r: give name' % repo)
    return name


def trimmed_config(config):
    """config.json without the bulky module lists of quantization_config, their lengths under trimmed_lists
    (everything else verbatim)."""
    out = json.loads(json.dumps(config))
    for scope in (out, out.get('text_config') if isinstance(out.get('text_config'), dict) else None):
        if scope and isinstance(scope.get('quantization_config'), dict):
            quant = scope['quantization_config']
            trimmed = dict((key, len(quant[key])) for key in _BULKY_QUANT_KEYS
                           if isinstance(quant.get(key), list) and len(quant[key]) > BULKY)
            for key in trimmed:
                del quant[key]
            if trimmed:
                quant['trimmed_lists'] = trimmed
    return out


def _parsers(release, files, config, guesses, notes):
    """reasoning / tool-call parser as the release's ``auto`` resolves them at start (its template-detection rules,
    the release table's ``detection`` family, evaluated by parser_detect), recorded with where they came from. Kept
    as ``auto`` (marked unverified) when no tokenizer_config.json was read, when an incomplete vocabulary leaves a
    rule open, when the release's detection was never read, or when the name is not one of the release's choices.
    A template no rule matches gives null: SGLang disables that parser, and null renders no flag."""
    out = {}
    detection = release.get('detection')
    tokenizer_config = files.get('tokenizer_config')
    read = tokenizer_config is not None or files.get('chat_template') is not None
    template, where = parser_detect.template_of(tokenizer_config, files.get('chat_template'))
    vocab, complete = parser_detect.vocabulary(tokenizer_config, files.get('tokenizer'))
    found = parser_detect.detect(detection, template, vocab, complete, config,
                                 (tokenizer_config or {}).get('response_template')) if detection and read else None
    for key in ('reasoning_parser', 'tool_call_parser'):
        choices = (release.get('choices') or {}).get(key) or []
        has_auto = 'auto' in choices
        fallback = 'auto' if has_auto else None
        if not has_auto:
            fallback_why = 'sglang %s has no "auto" %s: name one of its choices by hand' % (release['version'], key)
        if found is None:
            out[key] = fallback
            guesses[('serving', key)] = fallback_why if not has_auto else (
                'no chat template was read: SGLang resolves "auto" from the checkpoint\'s template at start, or '
                'disables the parser when it finds none' if not read else
                'sglang %s\'s template detection is not in the release table (detection:): SGLang resolves "auto" '
                'at start' % release['version'])
            continue
        verdict = found[key]
        value = verdict['value']
        if value is not None and choices and value not in choices:
            out[key] = fallback
            guesses[('serving', key)] = ('the chat template gives %s (rule %s), which is not one of the %s choices '
                                         'of sglang %s' % (value, verdict['rule'], key, release['version']))
        elif not verdict['certain']:
            out[key] = fallback
            guesses[('serving', key)] = (
                '%s (%s), unless the vocabulary tests of rules %s decide otherwise: tokenizer.json was not read, so '
                'the vocabulary is incomplete; "auto" lets SGLang decide with the whole vocabulary'
                % (value or 'no parser', verdict['how'], ', '.join(verdict['undecided'])))
        else:
            out[key] = value
            notes[('serving', key)] = ('sglang %s "auto" resolves to %s: %s (%s)' % (
                release['version'], value if value else 'none', verdict['how'],
                where or 'tokenizer_config.json has no chat template'))
    return out


def with_hf_quant_config(config, hf_quant_config, notes):
    """config.json with the quantization of hf_quant_config.json when config.json declares none (older ModelOpt
    exports; SGLang reads that file then, configs/model_config.py _parse_quant_hf_config), unwrapped as SGLang's
    unwrap_modelopt_quantization_config does."""
    if not isinstance(hf_quant_config, dict) or quant_config(config) is not None:
        return config
    quantization = hf_quant_config.get('quantization', hf_quant_config)
    if isinstance(quantization, dict) and isinstance(quantization.get('quantization'), dict):
        quantization = quantization['quantization']
    if not isinstance(quantization, dict) or not quantization:
        return config
    out = dict(config)
    out['quantization_config'] = dict(quantization)
    notes[('config', 'quantization_config')] = ('from hf_quant_config.json (config.json declares no quantization; '
                                                'SGLang reads that file then)')
    return out


def _quantization_note(release, config, notes):
    """A note above config: when the checkpoint's quantization is in no format of the release's rules."""
    rules = release.get('quantization')
    cfg = quant_config(config)
    if rules and cfg is not None and match_format(rules, cfg) is None:
        notes[('config',)] = ('quantization %s is in no format of the release\'s quantization rules: the command '
                              'line gets no --quantization and its GPU support is unchecked'
                              % (cfg.get('quant_method') or cfg.get('quant_algo')))


def _speculative(release, facts, guesses, notes):
    """NEXTN with the release's auto steps/topk/draft tokens only for a checkpoint with MTP layers: the config names
    them (mtp_num_hidden_layers, or num_nextn_predict_layers of the text config, as model_config.model_facts reads
    them) and the release loads a draft class for its architecture (architectures.mtp_draft; the planner refuses MTP
    on any other). Else off: a config that names MTP layers the release cannot serve says so (MiniMax-M2's
    num_mtp_modules is neither key: SGLang skips those weights, models/minimax_m2.py)."""
    drafts = (release.get('architectures') or {}).get('mtp_draft') or {}
    if facts['mtp_layers'] > 0 and facts['arch'] not in drafts:
        notes[('serving', 'speculative')] = (
            'the config names %d MTP/NEXTN layer(s), but sglang %s loads no MTP draft for %s (it has one for %s only, '
            'profiles/sglang_releases.yml architectures.mtp_draft): speculative decoding off'
            % (facts['mtp_layers'], release.get('version', '?'), facts['arch'], ', '.join(sorted(drafts)) or 'none'))
    elif facts['mtp_layers'] > 0:
        steps, topk, draft = release['defaults']['speculative_auto_params']
        guesses[('serving', 'speculative')] = ('the config names %d MTP/NEXTN layer(s); steps/topk/draft are SGLang\'s '
                                               'auto choice (%d/%d/%d), not measured for this model'
                                               % (facts['mtp_layers'], steps, topk, draft))
        return dict(algorithm='NEXTN', num_steps=steps, eagle_topk=topk, num_draft_tokens=draft)
    return dict(num_draft_tokens=0)


def generate(files, release, repo=None, revision=None, name=None, tp_size=None, notes=None):
    """(profile dict, guesses: {(section, key) or (key,): why}) from the checkpoint's parsed JSON files.

    files:    dict with config (required: config.json), and optionally index (model.safetensors.index.json),
              generation_config, tokenizer_config, tokenizer (tokenizer.json: the vocabulary the parser detection
              tests), chat_template (the text of chat_template.jinja), hf_quant_config (hf_quant_config.json)
    release:  sglang_release.release() of the pin (architecture families, parser choices, speculative defaults)
    repo / revision: the Hub repository and the commit the files came from (a branch is not a revision lock)
    tp_size:  the tensor-parallel size to record (the planner then checks it); default: 1, marked unverified
    notes:    a dict filled with {key path: comment} for facts that are not guesses (to_yaml writes them): where a
              parser came from, a weights_bytes computed from quantization_config
    """
    config = files.get('config')
    if not isinstance(config, dict) or not config:
        raise ProfileError('config.json is missing or not a JSON object')
    notes = {} if notes is None else notes
    config = with_hf_quant_config(config, files.get('hf_quant_config'), notes)
    _refuse_a_draft(config, release, repo, revision)
    try:
        # The planner's own acceptance: a profile is written only for what it can plan.
        facts = sized_facts(config, release)
    except PlanError as exc:
        raise ProfileError(str(exc))
    guesses = {}
    name = name or slug(repo)
    if not NAME_RE.match(name):
        raise ProfileError('name %r: a profile name is lower-case letters, digits, ".", "_" and "-" (it names the file '
                           'profiles/models/<name>.yml); give e.g. %s' % (name, slug(name) if name.strip('/') else 'qwen3-32b'))
    if tp_size is not None and (isinstance(tp_size, bool) or not isinstance(tp_size, int) or tp_size < 1):
        raise ProfileError('tp_size %r: must be a whole number >= 1 (the tensor-parallel size to record); leave it '
                           'unset to record 1' % (tp_size,))
    if revision is not None and not COMMIT_RE.match(str(revision)):
        guesses[('hf_revision',)] = ('%r is a branch or tag, not a commit: the deploy locks it to a commit on first '
                                     'use (the revision lock)' % revision)
        revision = None
    elif revision is None:
        guesses[('hf_revision',)] = 'no commit given: the deploy locks the branch to a commit on first use'
    weights, weight_notes = _weights(files, config, facts, guesses)
    serving = dict(tp_size=tp_size or 1)
    if not tp_size:
        guesses[('serving', 'tp_size')] = ('not given: 1; plan other sizes with make plan MODEL=%s TP=2 (any size: '
                                           'TP=<n>)' % name)
    # --quantization is not recorded: the flag renderer derives it per GPU architecture from the release table.
    serving.update(_parsers(release, files, config, guesses, notes))
    _quantization_note(release, config, notes)
    serving['speculative'] = _speculative(release, facts, guesses, notes)
    profile = dict(name=name, hf_repo=repo, hf_revision=revision, served_model_name=name, weights_bytes=weights,
                   serving=serving, config=trimmed_config(config))
    notes.update(weight_notes)
    return profile, guesses


def _refuse_a_draft(config, release, repo, revision):
    """An EAGLE-3 draft checkpoint (architectures LlamaForCausalLMEagle3, or a training config with draft_vocab_size)
    gets no profile of its own: SGLang serves it only beside its target (--speculative-draft-model-path), and the
    planner sizes it there (serving.speculative.draft of the target's profile). ProfileError saying how."""
    text = config.get('text_config') if isinstance(config.get('text_config'), dict) else config
    arch = (config.get('architectures') or text.get('architectures') or ['unknown'])[0]
    drafts = list((release.get('architectures') or {}).get('eagle3_draft') or ())
    if arch not in drafts and text.get('draft_vocab_size') is None:
        return
    facts = []
    for key, label in (('num_hidden_layers', 'layer(s)'), ('draft_vocab_size', 'draft vocabulary'),
                       ('hidden_size', 'hidden'), ('target_hidden_size', 'target hidden'),
                       ('max_position_embeddings', 'max_position_embeddings')):
        if text.get(key) is not None:
            facts.append('%s %s' % (text[key], label) if key == 'num_hidden_layers' else '%s %s' % (label, text[key]))
    wrong = ''
    if arch not in drafts:
        wrong = (' Its architectures is %s (a training framework\'s config): SGLang %s builds the draft from '
                 'architectures[0] (models/llama_eagle3.py EntryClass %s), so use the published draft\'s config.json, '
                 'or set architectures: [%s] in the copy.'
                 % (arch, release.get('version', '?'), ', '.join(drafts), drafts[0] if drafts else 'LlamaForCausalLMEagle3'))
    raise ProfileError(
        '%s is an EAGLE-3 draft checkpoint (%s), not a model to serve alone: SGLang runs it beside its target '
        '(--speculative-algorithm EAGLE3 --speculative-draft-model-path), so make profile writes no profile for it.%s '
        'Attach it to the target\'s profile (make profile the target, then edit profiles/models/<target>.yml) under '
        'serving.speculative.draft, as profiles/models/qwen3-32b-eagle3.yml does:\n'
        '  serving:\n'
        '    speculative:\n'
        '      algorithm: EAGLE3\n'
        '      draft:\n'
        '        hf_repo: %s\n'
        '        hf_revision: %s\n'
        '        config:   # this config.json, key for key\n'
        '          architectures: [%s]\n'
        '          ...\n'
        'make plan then counts the draft\'s weights and its KV layer with the target\'s, and refuses a serving context '
        'above the draft\'s max_position_embeddings.'
        % (arch, ', '.join(facts) or 'no size keys', wrong, repo or '<org>/<draft repository>',
           revision if revision and COMMIT_RE.match(str(revision)) else 'null   # pin the commit you verified',
           arch if arch in drafts else (drafts[0] if drafts else 'LlamaForCausalLMEagle3')))


def _weights(files, config, facts, guesses):
    """(weights_bytes, notes): the index's total_size; else, for a quantized config, the size weight_bytes
    computes from its quantization_config (a note says so, a guess when the format was never validated)."""
    notes = {}
    index = files.get('index') or {}
    total = (index.get('metadata') or {}).get('total_size') if isinstance(index, dict) else None
    if total is not None:
        return int(total), notes
    if not facts['quant_method']:
        guesses[('weights_bytes',)] = 'no safetensors index was read: the planner counts parameters x dtype'
        return None, notes
    try:
        computed = checkpoint_bytes(config, facts)
    except WeightBytesError as exc:
        guesses[('weights_bytes',)] = ('quantized (%s), no model.safetensors.index.json was read and the size cannot '
                                       'be computed (%s): set the checkpoint size in bytes' % (facts['quant_method'], exc))
        return None, notes
    text = ('computed from quantization_config (no safetensors index was read): %s, %.1f GiB' % (
        computed['format'], computed['total'] / float(1 << 30)))
    if computed['validated']:
        notes[('weights_bytes',)] = '%s. The format was validated against %s.' % (text, computed['validated'])
    else:
        guesses[('weights_bytes',)] = '%s. No real checkpoint of this format was compared.' % text
    return computed['total'], notes


# --------------------------------------------------------------------------------------------------------------
# YAML out (block style, comments for the guesses; no PyYAML needed)
# --------------------------------------------------------------------------------------------------------------

# Comment lines are wrapped to this width (yamllint's limit in this repository is 160).
WIDTH = 118
_PLAIN = re.compile(r'^[A-Za-z_][A-Za-z0-9_./-]*$')
_RESERVED = ('true', 'false', 'null', 'yes', 'no', 'on', 'off', '~')


def _scalar(value):
    if value is None:
        return 'null'
    if value is True or value is False:
        return 'true' if value else 'false'
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value)
        if text in ('inf', '-inf', 'nan'):
            return {'inf': '.inf', '-inf': '-.inf', 'nan': '.nan'}[text]
        mantissa, _e, exponent = text.partition('e')
        if exponent and '.' not in mantissa:
            # YAML 1.1 (PyYAML, Ansible) reads 1e-05 as a string: it needs 1.0e-05.
            text = '%s.0e%s' % (mantissa, exponent)
        return text
    text = str(value)
    if _PLAIN.match(text) and text.lower() not in _RESERVED:
        return text
    return json.dumps(text)


def _emit(value, indent, lines, path, guesses, notes=None):
    pad = '  ' * indent
    notes = notes or {}
    if isinstance(value, dict):
        for key in value:
            for text in (notes.get(path + (key,)), guesses.get(path + (key,)) and 'unverified: %s' % guesses[path + (key,)]):
                if text:
                    lines.extend(textwrap.wrap(text, WIDTH - len(pad), initial_indent=pad + '# ',
                                               subsequent_indent=pad + '#   ', break_on_hyphens=False))
            item = value[key]
            if isinstance(item, dict) and item:
                lines.append('%s%s:' % (pad, _scalar(key)))
                _emit(item, indent + 1, lines, path + (key,), guesses, notes)
            elif isinstance(item, list) and item and any(isinstance(i, (dict, list)) for i in item):
                lines.append('%s%s:' % (pad, _scalar(key)))
                for entry in item:
                    lines.append('%s  - %s' % (pad, json.dumps(entry, sort_keys=True)))
            elif isinstance(item, list):
                # A flow list wrapped at WIDTH (layer_types of a 60-layer model), continued under its first item.
                head = '%s%s: [' % (pad, _scalar(key))
                text = head + ', '.join(_scalar(i) for i in item) + ']'
                lines.extend(textwrap.wrap(text, WIDTH, subsequent_indent=' ' * len(head), break_long_words=False,
                                           break_on_hyphens=False) if len(text) > WIDTH else [text])
            elif isinstance(item, dict):
                lines.append('%s%s: {}' % (pad, _scalar(key)))
            else:
                lines.append('%s%s: %s' % (pad, _scalar(key), _scalar(item)))


def to_yaml(profile, guesses, header, notes=None):
    """The profile as YAML text: the header comment lines, then the keys, each note and guess above its key."""
    lines = ['---']
    for line in header:
        lines.extend(textwrap.wrap(line, WIDTH, initial_indent='# ', subsequent_indent='#   ',
                                   break_on_hyphens=False) or ['#'])
    _emit(profile, 0, lines, (), guesses, notes)
    return '\n'.join(lines) + '\n'
