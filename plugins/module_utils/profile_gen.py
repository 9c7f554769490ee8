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

from ansible_collections.llmops.inference.plugins.module_utils.vram_plan import PlanError, sized_facts
from ansible_collections.llmops.inference.plugins.module_utils.weight_bytes import WeightBytesError, checkpoint_bytes

COMMIT_RE = re.compile(r'^[0-9a-f]{40}$')
NAME_RE = re.compile(r'^[a-z0-9][a-z0-9._-]*$')
# quantization_config keys that only list module names (up to hundreds of entries). A list longer than BULKY is
# dropped from the profile and its length recorded under trimmed_lists (weight_bytes then refuses to price the copy:
# make profile records the computed weights_bytes from the full list instead); a short one stays verbatim.
_BULKY_QUANT_KEYS = ('modules_to_not_convert', 'ignore', 'ignored_layers', 'exclude_modules')
BULKY = 16
# quant_method -> the --quantization SGLang needs on the command line (None: SGLang reads the checkpoint's
# quantization_config itself). modelopt_fp4 is the one the seed's NVFP4 service passed explicitly.
QUANTIZATION_FLAG = {'modelopt_fp4': 'modelopt_fp4', 'modelopt': 'modelopt_fp4'}


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


def _template_text(tokenizer_config):
    template = (tokenizer_config or {}).get('chat_template')
    if isinstance(template, list):  # [{name, template}, ...]
        template = ' '.join(str(t.get('template', '')) for t in template if isinstance(t, dict))
    return template if isinstance(template, str) else None


def _parsers(release, tokenizer_config, guesses):
    """reasoning / tool-call parser: 'auto' where the release accepts it (the pinned SGLang then detects both from
    the checkpoint's chat template at start, srt/parser/template_detection.py), with what the chat template shows;
    None where the release has no auto."""
    out = {}
    template = _template_text(tokenizer_config)
    for key, marks in (('reasoning_parser', ('<think>',)), ('tool_call_parser', ('<tool_call>', 'tools'))):
        choices = (release.get('choices') or {}).get(key) or []
        if 'auto' not in choices:
            out[key] = None
            guesses[('serving', key)] = ('sglang %s has no "auto" %s: name one of its choices by hand'
                                         % (release['version'], key))
            continue
        out[key] = 'auto'
        if template is None:
            guesses[('serving', key)] = ('no chat template was read: SGLang resolves "auto" from the checkpoint\'s '
                                         'template at start, or disables the parser when it finds none')
        elif not any(mark in template for mark in marks):
            guesses[('serving', key)] = ('the chat template shows no %s: SGLang will likely disable this parser'
                                         % ' / '.join(marks))
    return out


def _speculative(release, facts, guesses):
    if facts['mtp_layers'] > 0:
        steps, topk, draft = release['defaults']['speculative_auto_params']
        guesses[('serving', 'speculative')] = ('the config names %d MTP/NEXTN layer(s); steps/topk/draft are SGLang\'s '
                                               'auto choice (%d/%d/%d), not measured for this model'
                                               % (facts['mtp_layers'], steps, topk, draft))
        return dict(algorithm='NEXTN', num_steps=steps, eagle_topk=topk, num_draft_tokens=draft)
    return dict(num_draft_tokens=0)


def generate(files, release, repo=None, revision=None, name=None, tp_size=None, notes=None):
    """(profile dict, guesses: {(section, key) or (key,): why}) from the checkpoint's parsed JSON files.

    files:    dict with config (required: config.json), and optionally index (model.safetensors.index.json),
              generation_config, tokenizer_config
    release:  sglang_release.release() of the pin (architecture families, parser choices, speculative defaults)
    repo / revision: the Hub repository and the commit the files came from (a branch is not a revision lock)
    tp_size:  the tensor-parallel size to record (the planner then checks it); default: 1, marked unverified
    notes:    a dict to fill with {key path: comment} for facts that are not guesses (to_yaml writes them), e.g. a
              weights_bytes computed from quantization_config in a validated format
    """
    config = files.get('config')
    if not isinstance(config, dict) or not config:
        raise ProfileError('config.json is missing or not a JSON object')
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
        guesses[('serving', 'tp_size')] = 'not given: 1; plan other sizes with make plan -e llmops_tp_size=N'
    serving.update(_parsers(release, files.get('tokenizer_config'), guesses))
    flag = QUANTIZATION_FLAG.get(str(facts['quant_method'] or ''))
    if flag:
        serving['quantization'] = flag
    serving['speculative'] = _speculative(release, facts, guesses)
    profile = dict(name=name, hf_repo=repo, hf_revision=revision, served_model_name=name, weights_bytes=weights,
                   serving=serving, config=trimmed_config(config))
    if notes is not None:
        notes.update(weight_notes)
    return profile, guesses


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
