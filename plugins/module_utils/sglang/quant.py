# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A checkpoint's quantization on one GPU architecture, from the release table's quantization rules.

PRIVATE to the collection. Pure, stdlib only. The rules are data (``quantization_rules`` of
profiles/sglang_releases.yml, one family per set of releases that share that code); ``check_rules`` validates a
family, ``resolve`` answers for one checkpoint config and one compute capability: which format it is, what SGLang
resolves it to, the flags the command line must carry there, what SGLang then picks by itself, and - when no row
covers the GPU - the refusal SGLang would give, in its own words, with the model, the GPU and the fix.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_STRING = (type(u''), str)
# The keys a format's match may test (quantization_config keys), and the ones compared by substring.
MATCH_KEYS = ('quant_method', 'quant_algo', 'format', 'bits', 'sym', 'group_size', 'desc_act', 'zero_point')
CONTAINS_KEYS = ('quant_algo_contains',)
FORMAT_KEYS = ('name', 'what', 'match', 'method', 'source', 'quote', 'kv_cache', 'below', 'refused_method', 'archs')
ARCH_KEYS = ('sm', 'render', 'defaults', 'method', 'note', 'source', 'quote')
FAMILY_KEYS = ('source', 'messages', 'formats', 'kv_cache_auto')
# How a method's quantization config class derives kv_cache_quant_algo from the checkpoint (kv_cache_auto.methods):
#   modelopt_fp4  ModelOptFp4Config.from_config: kv_cache_scheme dict (float, 8 bits: FP8; else auto), string
#                 (FP8/FLOAT8: FP8; FP4/FLOAT4/NVFP4: NVFP4; else auto), else kv_cache_quant_algo (or auto)
#   modelopt_fp8  ModelOptFp8Config.from_config: kv_cache_scheme dict (float, 8 bits: FP8; else none), else
#                 kv_cache_quant_algo
#   key           the kv_cache_quant_algo key as it stands (Fp8Config)
#   compressed_tensors  CompressedTensorsConfig.kv_cache_quant_algo: FP8 for a static symmetric per-tensor 8-bit float
#                 kv_cache_scheme, else none
#   (profile_gen unwraps a nested hf_quant_config.json into this flat form, whose kv_cache_quant_algo key the ModelOpt
#   classes read as their nested branch does.)
KV_READERS = ('modelopt_fp4', 'modelopt_fp8', 'key', 'compressed_tensors')
MESSAGE_KEYS = ('text', 'source', 'quote')
_SOURCE_RE = re.compile(r'^[A-Za-z0-9_./-]+\.py:\d+(-\d+)?$')


class QuantRulesError(ValueError):
    """The quantization rules of the release table are malformed."""


def _fail(where, text):
    raise QuantRulesError('%s: %s' % (where, text))


def _keys(where, mapping, allowed, required):
    if not isinstance(mapping, dict):
        _fail(where, 'must be a mapping, got %s' % type(mapping).__name__)
    for key in mapping:
        if key not in allowed:
            _fail(where, 'unknown key %s; known keys: %s' % (key, ', '.join(allowed)))
    missing = [key for key in required if key not in mapping]
    if missing:
        _fail(where, 'lacks %s' % ', '.join(missing))


def _cited(where, mapping):
    if not isinstance(mapping.get('source'), _STRING) or not _SOURCE_RE.match(mapping['source']):
        _fail(where, 'source must be "path/file.py:LINE" or ":FROM-TO" under python/sglang/srt/, got %r'
              % (mapping.get('source'),))
    if not isinstance(mapping.get('quote'), _STRING) or not mapping['quote']:
        _fail(where, 'quote must be the text of the cited lines that states the fact')


def _flag_map(where, value):
    if value is None:
        return
    if not isinstance(value, dict) or not all(isinstance(k, _STRING) and k.startswith('--') and
                                              isinstance(v, _STRING) and v for k, v in value.items()):
        _fail(where, 'must map --flag to a value, got %r' % (value,))


def _check_kv_cache_auto(where, kv):
    _keys(where, kv, ('rule', 'methods'), ('rule', 'methods'))
    _keys(where + '.rule', kv['rule'], ('source', 'quote'), ('source', 'quote'))
    _cited(where + '.rule', kv['rule'])
    if not isinstance(kv['methods'], dict) or not kv['methods']:
        _fail(where + '.methods', 'must map SGLang quantization methods to {reads, source, quote}')
    for method, entry in kv['methods'].items():
        _keys('%s.methods.%s' % (where, method), entry, ('reads', 'source', 'quote'), ('reads', 'source', 'quote'))
        _cited('%s.methods.%s' % (where, method), entry)
        if entry['reads'] not in KV_READERS:
            _fail('%s.methods.%s.reads' % (where, method), 'must be one of %s, got %r'
                  % (', '.join(KV_READERS), entry['reads']))


def check_rules(family, where='quantization_rules'):
    """Validate one quantization-rules family; raises QuantRulesError naming the key."""
    _keys(where, family, FAMILY_KEYS, ('source', 'messages', 'formats'))
    if 'kv_cache_auto' in family:
        _check_kv_cache_auto(where + '.kv_cache_auto', family['kv_cache_auto'])
    messages = family['messages']
    _keys(where + '.messages', messages, ('capability', 'unknown', 'scheme'), ('capability', 'unknown'))
    for name, message in messages.items():
        _keys('%s.messages.%s' % (where, name), message, MESSAGE_KEYS, MESSAGE_KEYS)
        _cited('%s.messages.%s' % (where, name), message)
    if not isinstance(family['formats'], list) or not family['formats']:
        _fail(where + '.formats', 'must be a non-empty list')
    names = set()
    for index, fmt in enumerate(family['formats']):
        at = '%s.formats[%d]' % (where, index)
        _keys(at, fmt, FORMAT_KEYS, ('name', 'what', 'match', 'method', 'source', 'quote', 'below', 'archs'))
        if fmt['name'] in names:
            _fail(at, 'duplicate name %s' % fmt['name'])
        names.add(fmt['name'])
        _cited(at, fmt)
        if fmt['below'] not in messages:
            _fail(at, 'below must be one of %s, got %r' % (', '.join(sorted(messages)), fmt['below']))
        if not isinstance(fmt['match'], list) or not fmt['match']:
            _fail(at + '.match', 'must be a non-empty list of alternatives')
        for alt_index, alt in enumerate(fmt['match']):
            _keys('%s.match[%d]' % (at, alt_index), alt, MATCH_KEYS + CONTAINS_KEYS, ())
            for key, values in alt.items():
                if not isinstance(values, list) or not values:
                    _fail('%s.match[%d].%s' % (at, alt_index, key), 'must be a non-empty list of values')
        if not isinstance(fmt['archs'], list):
            _fail(at + '.archs', 'must be a list (empty: no GPU runs it)')
        for arch_index, arch in enumerate(fmt['archs']):
            aat = '%s.archs[%d]' % (at, arch_index)
            _keys(aat, arch, ARCH_KEYS, ('sm', 'source', 'quote'))
            _cited(aat, arch)
            low_high = arch['sm']
            if (not isinstance(low_high, list) or len(low_high) != 2 or not isinstance(low_high[0], int) or
                    not (low_high[1] is None or (isinstance(low_high[1], int) and low_high[1] > low_high[0]))):
                _fail(aat + '.sm', 'must be [from, to) compute capabilities (sm_90 = 90), to null for no bound, '
                      'got %r' % (low_high,))
            _flag_map(aat + '.render', arch.get('render'))
            _flag_map(aat + '.defaults', arch.get('defaults'))
    return family


def quant_config(config):
    """The checkpoint's quantization_config (top level, else text_config's, else compression_config), or None."""
    config = config or {}
    for scope in (config, config.get('text_config') if isinstance(config.get('text_config'), dict) else None):
        if scope:
            for key in ('quantization_config', 'compression_config'):
                if isinstance(scope.get(key), dict) and scope[key]:
                    return scope[key]
    return None


def _norm(key, value):
    if key == 'quant_method' and isinstance(value, _STRING):
        return value.lower()
    return value


def _matches(alt, cfg):
    for key, values in alt.items():
        if key in CONTAINS_KEYS:
            have = cfg.get(key[:-len('_contains')])
            if not isinstance(have, _STRING) or not any(v.upper() in have.upper() for v in values):
                return False
            continue
        have = _norm(key, cfg.get(key))
        # bool vs int: YAML true must not match 1 (and 1 must not match true).
        if not any(have == _norm(key, v) and isinstance(have, bool) == isinstance(v, bool) for v in values):
            return False
    return True


def match_format(family, cfg):
    """The first format of the family whose match holds for the quantization_config ``cfg`` (None: none)."""
    for fmt in family['formats']:
        if any(_matches(alt, cfg) for alt in fmt['match']):
            return fmt
    return None


def _read_kv_algo(reads, cfg):
    """kv_cache_quant_algo as the config class of ``reads`` (KV_READERS) derives it from quantization_config."""
    scheme = cfg.get('kv_cache_scheme')
    if reads == 'compressed_tensors':
        ok = (isinstance(scheme, dict) and scheme.get('type') == 'float' and scheme.get('num_bits') == 8 and
              scheme.get('strategy') == 'tensor' and scheme.get('symmetric', True) and not scheme.get('dynamic', False))
        return 'FP8' if ok else None
    if reads == 'key':
        return cfg.get('kv_cache_quant_algo')
    if isinstance(scheme, dict):
        if scheme.get('type') == 'float' and scheme.get('num_bits') == 8:
            return 'FP8'
        return 'auto' if reads == 'modelopt_fp4' else None
    if reads == 'modelopt_fp4':
        if isinstance(scheme, _STRING):
            name = scheme.strip().upper()
            return 'FP8' if name in ('FP8', 'FLOAT8') else ('NVFP4' if name in ('FP4', 'FLOAT4', 'NVFP4') else 'auto')
        return cfg.get('kv_cache_quant_algo') or 'auto'
    return cfg.get('kv_cache_quant_algo')


def kv_cache_auto(family, config):
    """What --kv-cache-dtype auto becomes for this checkpoint: dict(fp8 (bool), algo, how).

    mem_cache/kv_cache_dtype.py:49-57 gives an fp8_e4m3 cache when the loaded quantization config's
    kv_cache_quant_algo is "FP8" (any case), else the model dtype; each method's config class derives that value from
    quantization_config its own way (the family's kv_cache_auto.methods, KV_READERS). A method the family does not
    list has no kv_cache_quant_algo. Without rules (a release whose quantization code was not read), or for a
    checkpoint no format matches, the planner reads the kv_cache_quant_algo key as it stands.
    """
    cfg = quant_config(config)
    if cfg is None:
        return dict(fp8=False, algo=None, how='no quantization_config: the cache keeps the model dtype')
    kv = (family or {}).get('kv_cache_auto')
    fmt = match_format(family, cfg) if family else None
    if kv is None or fmt is None:
        algo = cfg.get('kv_cache_quant_algo')
        how = 'kv_cache_quant_algo %s (%s)' % (algo, 'no quantization rules for this release' if kv is None or not family
                                               else 'a format outside the release\'s quantization rules')
    else:
        entry = kv['methods'].get(fmt['method'])
        if entry is None:
            algo = None
            how = '%s has no kv_cache_quant_algo: the cache keeps the model dtype' % fmt['method']
        else:
            algo = _read_kv_algo(entry['reads'], cfg)
            how = '%s derives kv_cache_quant_algo %s from the checkpoint\'s quantization_config (%s)' % (
                fmt['method'], algo if algo else 'None', entry['source'])
    fp8 = isinstance(algo, _STRING) and algo.upper() == 'FP8'
    return dict(fp8=fp8, algo=algo, how=how)


def sm_of(compute_capability):
    """'12.0' -> 120, '9.0' -> 90, 'sm_89' -> 89, '8.9' -> 89; None when unknown or malformed."""
    text = str(compute_capability or '').strip().lower()
    text = text[3:] if text.startswith('sm_') else text
    match = re.match(r'^(\d+)\.(\d)$', text)
    if match:
        return int(match.group(1)) * 10 + int(match.group(2))
    if re.match(r'^\d{2,3}$', text):
        return int(text)
    return None


def _arch_row(fmt, sm):
    for arch in fmt['archs']:
        low, high = arch['sm']
        if sm >= low and (high is None or sm < high):
            return arch
    return None


def _sm_text(sm):
    return 'sm_%d (compute capability %d.%d)' % (sm, sm // 10, sm % 10)


def resolve(family, config, compute_capability=None, model=None, gpu=None):
    """What the checkpoint's quantization means for the command line on this GPU.

    family:   a quantization-rules family (sglang_release.release(...)['quantization'])
    config:   the model profile's config (config.json shaped)
    model, gpu: names for the messages (the model profile, the GPU profile)

    Returns dict(quantized, format, what, method, render (--flag -> value), defaults (--flag -> value), notes,
    refusal (None or dict(check, message, fix))). A checkpoint without quantization_config gives quantized False
    and nothing else; one no format matches renders nothing and says so (SGLang detects it from the checkpoint).
    An unknown compute capability renders the flags no row needs to know it for and notes that the architecture
    was not checked.
    """
    out = dict(quantized=False, format=None, what=None, method=None, render={}, defaults={}, notes=[], refusal=None)
    cfg = quant_config(config)
    if cfg is None:
        return out
    out['quantized'] = True
    method = cfg.get('quant_method') or cfg.get('quant_algo') or 'unnamed'
    fmt = match_format(family, cfg)
    if fmt is None:
        out['notes'].append('quantization %s is not in the release table\'s quantization rules: rendered no '
                            '--quantization (SGLang detects it from the checkpoint) and its GPU support is unchecked'
                            % method)
        return out
    out.update(format=fmt['name'], what=fmt['what'], method=fmt['method'])
    if fmt.get('kv_cache'):
        out['notes'].append('%s: %s' % (fmt['name'], fmt['kv_cache']))
    sm = sm_of(compute_capability)
    if sm is None:
        out['notes'].append('%s (%s): the GPU\'s compute capability is unknown, so its support was not checked'
                            % (fmt['name'], fmt['method']))
        return out
    arch = _arch_row(fmt, sm)
    if arch is None:
        out['refusal'] = _refusal(family, fmt, sm, model, gpu)
        return out
    if arch.get('method'):
        out['method'] = arch['method']
    out['render'] = dict(arch.get('render') or {})
    out['defaults'] = dict(arch.get('defaults') or {})
    if arch.get('note'):
        out['notes'].append('%s on %s: %s' % (fmt['name'], 'sm_%d' % sm, ' '.join(arch['note'].split())))
    return out


def _refusal(family, fmt, sm, model, gpu):
    runs = fmt['archs']
    refused = fmt.get('refused_method') or fmt['method']
    least = min(a['sm'][0] for a in runs) if runs else None
    template = family['messages'][fmt['below']]['text']
    message = (template.replace('{method}', refused).replace('{min}', str(least if least is not None else '-'))
               .replace('{sm}', str(sm)))
    where = '%s: its checkpoint is %s, %s (SGLang method %s); %s is %s' % (
        'model %s' % model if model else 'the model', fmt['name'], fmt['what'], fmt['method'],
        'GPU %s' % gpu if gpu else 'the GPU', _sm_text(sm))
    if least is None:
        fix = ('%s. No GPU runs this checkpoint with this SGLang release: use a checkpoint in another quantization '
               '(e.g. a Marlin-compatible GPTQ: 4 or 8 bits, sym true, group size -1/32/64/128, or BF16/FP8).' % where)
    else:
        ranges = ', '.join('sm_%d%s' % (a['sm'][0], '+' if a['sm'][1] is None else '-sm_%d' % (a['sm'][1] - 1))
                           for a in runs)
        fix = ('%s; this quantization needs %s. Use a GPU profile (llmops_gpu_profile) of that architecture, or a '
               'checkpoint in a quantization this GPU runs (e.g. BF16 or one whose rows in profiles/sglang_releases.yml '
               'quantization_rules cover sm_%d).' % (where, ranges, sm))
    return dict(check='quantization_arch' if runs else 'quantization_unsupported', message=message, fix=fix)
