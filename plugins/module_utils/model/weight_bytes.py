# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checkpoint bytes of a quantized model from its config: quantization_config x the tensor layout (model_tensors).

PRIVATE to the collection. Pure, stdlib only. ``checkpoint_bytes(config, facts)`` prices every tensor of
model_tensors.checkpoint() in the format the config's quantization_config names, and returns the total (what a
safetensors index calls metadata.total_size) split into the parts the planner places per rank. Each format follows
what the pinned SGLang loader allocates for it (srt/layers/quantization/, file named per format below) and which
modules the producer's ignore list leaves in the model dtype, matched the way SGLang matches that list:

  fp8 + weight_block_size [b0, b1]   fp8.py: FP8 weight + float32 weight_scale_inv [ceil(out/b0), ceil(in/b1)] per
                                     quantized Linear; modules_to_not_convert / ignored_layers by dotted path
  mxfp4 (gpt-oss)                    mxfp4.py: only FusedMoE experts; uint8 blocks (2 values a byte) + one uint8
                                     E8M0 scale per 32 values
  modelopt / modelopt_fp4, NVFP4     modelopt_quant.py: uint8 weight (2 values a byte), FP8 weight_scale per
                                     group_size (16), float32 weight_scale_2 and input_scale per Linear; the ignore /
                                     exclude_modules globs
  modelopt_fp8 (quant_algo FP8)      modelopt_quant.py: FP8 weight + float32 weight_scale and input_scale per Linear
                                     (per-tensor, static); the same globs. A ModelOpt config without quant_method
                                     (hf_quant_config.json) is priced by the method SGLang resolves from quant_algo
                                     (model_config.sglang_quant_method)
  compressed-tensors, int weights    compressed_tensors_wNa16.py: int32 weight_packed [out, in*bits/32], weight_scale
                                     [out, in/group] in the model dtype, int32 weight_shape [2], weight_zero_point
                                     when asymmetric, weight_g_idx with activation ordering; ``re:`` ignore regexes
  gptq, awq                          gptq.py / awq.py: int32 qweight, int32 qzeros, fp16 scales (+ int32 g_idx for
                                     GPTQ); never compared with a real checkpoint (VALIDATED says which were)

Everything else (embeddings, head, norms, router gates, vision tower, the MTP input projection) is priced in the model
dtype. A quant_method outside SUPPORTED is refused with the value and the list.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmops.inference.plugins.module_utils.model import tensors as model_tensors

SUPPORTED = ('fp8', 'mxfp4', 'modelopt', 'modelopt_fp4', 'modelopt_fp8', 'compressed-tensors', 'gptq', 'awq')
DTYPE_BYTES = {'bfloat16': 2, 'float16': 2, 'float32': 4}
# The formats checked against a real checkpoint's byte count (tests/unit/plugins/module_utils/test_weight_bytes.py
# holds each reference figure with its source and the error); any other is written to a profile as unverified.
VALIDATED = {
    'fp8-block': 'the DeepSeek-R1 per-tensor table (91,991 tensors, 688,574,839,360 bytes: exact) and the '
                 'Kimi-K2-Instruct header audit (all but 61 tensors of 112 bytes)',
    'mxfp4': 'the gpt-oss-120b and gpt-oss-20b index total_size (65,248,815,744 and 13,761,264,768 bytes: exact)',
    'int4-pack': 'the Kimi-K2.5 index total_size (595,148,192,736 bytes, 208,550 tensors: exact)',
}
QUANTIZED_ROLES = ('linear', 'expert')


class WeightBytesError(ValueError):
    """The config's quantization cannot be priced (an unknown or unsupported format)."""


def quantization_config(config):
    """The quantization_config of a config.json (text_config first, as SGLang reads nested configs), else its
    compression_config, or None."""
    config = config or {}
    text = config.get('text_config') if isinstance(config.get('text_config'), dict) else {}
    for key in ('quantization_config', 'compression_config'):
        quant = text.get(key) or config.get(key)
        if isinstance(quant, dict) and quant:
            return quant
    return None


# --------------------------------------------------------------------------------------------------------------
# Ignore-list matching, one rule per producer (as SGLang matches them)
# --------------------------------------------------------------------------------------------------------------

def _path_match(ignored, name):
    """layers/quantization/utils.py _module_path_match: equal, a dotted prefix, or a dotted sub-path."""
    ignored = ignored.rstrip('.')
    return name == ignored or name.startswith(ignored + '.') or ('.' + ignored + '.') in ('.' + name + '.')


def _glob(pattern):
    return re.compile(pattern.replace('.', r'\.').replace('*', '.*'))


def _matcher(kind, entries):
    """A function name -> ignored? for the producer's list (empty: nothing ignored)."""
    entries = [str(e) for e in entries or ()]
    if not entries:
        return lambda name: False
    if kind == 'modelopt':
        # modelopt_quant.py is_layer_excluded: glob fullmatch of the whole name or of any dotted part.
        globs = [_glob(e) for e in entries]
        return lambda name: any(g.fullmatch(name) or any(g.fullmatch(p) for p in name.split('.')) for g in globs)
    if kind == 'compressed-tensors':
        # compressed_tensors/utils.py check_equal_or_regex_match: "re:" regexes with re.match, else equal or suffix.
        regexes = [re.compile(e[3:]) for e in entries if e.startswith('re:')]
        plain = [e for e in entries if not e.startswith('re:')]
        return lambda name: (any(r.match(name) for r in regexes)
                             or any(name == p or name.endswith('.' + p) for p in plain))
    if kind == 'awq':
        # awq.py is_layer_skipped_awq: a substring of the module name.
        return lambda name: any(e in name for e in entries)
    # fp8.py keeps both "model."-prefixed and bare variants of each entry.
    variants = set()
    for entry in entries:
        base = entry[len('model.'):] if entry.startswith('model.') else entry
        variants.update((base, 'model.' + base))
    return lambda name: any(_path_match(v, name) for v in variants)


# --------------------------------------------------------------------------------------------------------------
# Formats: each (label, validated key, ignored(name), price(tensor) -> bytes or None when the format leaves that
# tensor alone, tensors stored per quantized weight)
# --------------------------------------------------------------------------------------------------------------

def _elements(shape):
    size = 1
    for dim in shape:
        size *= dim
    return size


def _ceil(a, b):
    return -(-a // b)


def _fp8(quant):
    block = quant.get('weight_block_size')
    ignored = _matcher('fp8', quant.get('modules_to_not_convert') or quant.get('ignored_layers'))
    if block:
        if not (isinstance(block, (list, tuple)) and len(block) == 2 and all(isinstance(b, int) and b > 0 for b in block)):
            raise WeightBytesError('quantization_config.weight_block_size %r: expected two positive integers' % (block,))

        def price(t):
            out, inp = t['shape']
            return out * inp + _ceil(out, block[0]) * _ceil(inp, block[1]) * 4
        return 'fp8 block %dx%d (FP8 weights + float32 scale per block)' % tuple(block), 'fp8-block', ignored, price, 2
    static = quant.get('activation_scheme') == 'static'

    def per_tensor(t):
        return _elements(t['shape']) + 4 + (4 if static else 0)
    return 'fp8 per-tensor (FP8 weights + float32 scale)', 'fp8-tensor', ignored, per_tensor, 3 if static else 2


def _mxfp4(quant):
    # mxfp4.py: only FusedMoE layers are MXFP4; every Linear stays in the model dtype whatever the list says.
    def price(t):
        if t['role'] != 'expert':
            return None
        out, inp = t['shape']
        return out * inp // 2 + out * _ceil(inp, 32)
    return 'mxfp4 (uint8 blocks, 2 values a byte, + uint8 scale per 32)', 'mxfp4', lambda name: False, price, 2


def _modelopt_fp8(quant):
    # modelopt_quant.py:560-609 ModelOptFp8LinearMethod.create_weights: a float8_e4m3fn weight and one float32
    # weight_scale and input_scale per checkpoint Linear (per expert projection in ModelOptFp8MoEMethod, :1109-1192);
    # the exclude_modules (hf_quant_config.json) / ignore (config.json) globs keep their layers in the model dtype.
    _require_list(quant, ('ignore', 'exclude_modules'), 'modelopt')
    ignored = _matcher('modelopt', quant.get('ignore') or quant.get('exclude_modules'))

    def price(t):
        return _elements(t['shape']) + 4 + 4
    return ('modelopt FP8 per-tensor (FP8 weights + float32 weight_scale and input_scale)', 'modelopt-fp8', ignored,
            price, 3)


def _nvfp4(quant):
    algo = str(quant.get('quant_algo') or ('NVFP4' if quant.get('quant_method') == 'modelopt_fp4' else '')).upper()
    if algo != 'NVFP4':
        raise WeightBytesError('quantization_config: modelopt quant_algo %r is not priced (only NVFP4 is)'
                               % (quant.get('quant_algo'),))
    group = int(quant.get('group_size') or _first_group(quant) or 16)
    _require_list(quant, ('ignore', 'exclude_modules'), 'modelopt')
    ignored = _matcher('modelopt', quant.get('ignore') or quant.get('exclude_modules'))

    def price(t):
        out, inp = t['shape']
        return out * inp // 2 + out * _ceil(inp, group) + 4 + 4
    return ('modelopt NVFP4 (4-bit weights + FP8 scale per %d + float32 global scales)' % group, 'nvfp4', ignored, price,
            4)


def _require_list(quant, keys, producer):
    """modelopt and llm-compressor always write their exclusion list (at least lm_head / an empty list): a config
    without one lost it (a hand-written or trimmed copy), and pricing it would quantize every Linear."""
    if not any(isinstance(quant.get(key), list) for key in keys):
        raise WeightBytesError('quantization_config (%s) has no %s list: every %s export writes one, so this copy lost '
                               'it and the modules it keeps unquantized are unknown' % (
                                   quant.get('quant_method'), ' / '.join(keys), producer))


def _first_group(quant):
    for group in (quant.get('config_groups') or {}).values():
        weights = (group or {}).get('weights') or {}
        if weights.get('group_size'):
            return weights['group_size']
    return None


def _compressed(quant, dtype_bytes):
    groups = quant.get('config_groups') or {}
    schemes = [(g or {}).get('weights') or {} for g in groups.values()]
    if len(schemes) != 1:
        raise WeightBytesError('compressed-tensors: %d config_groups; only one weight scheme is priced' % len(schemes))
    w = schemes[0]
    targets = list((list(groups.values())[0] or {}).get('targets') or [])
    bits = int(w.get('num_bits') or 0)
    if w.get('type') != 'int' or bits not in (4, 8) or quant.get('format') not in ('pack-quantized', None):
        raise WeightBytesError('compressed-tensors: weights %s %s-bit in format %s are not priced (int 4/8-bit '
                               'pack-quantized are)' % (w.get('type'), bits, quant.get('format')))
    if targets and targets != ['Linear']:
        raise WeightBytesError('compressed-tensors: targets %s are not priced (only ["Linear"])' % targets)
    strategy = w.get('strategy') or 'group'
    group = w.get('group_size') if strategy == 'group' else None
    symmetric = w.get('symmetric', True)
    g_idx = w.get('actorder') not in (None, False, 'static')
    _require_list(quant, ('ignore',), 'compressed-tensors')
    ignored = _matcher('compressed-tensors', quant.get('ignore'))

    def price(t):
        out, inp = t['shape']
        per_row = _ceil(inp, group) if group else 1
        size = out * inp * bits // 8 + out * per_row * dtype_bytes + 2 * 4
        if not symmetric:
            size += _ceil(out * bits, 32) * per_row * 4
        if g_idx:
            size += inp * 4
        return size
    label = 'compressed-tensors int%d %s (packed int32 + %s scales%s)' % (
        bits, 'group %d' % group if group else strategy, 'bf16' if dtype_bytes == 2 else 'fp32',
        '' if symmetric else ' + zero points')
    key = 'int%d-pack%s%s' % (bits, '' if symmetric else '-zero-points', '-g-idx' if g_idx else '')
    return label, key, ignored, price, 3 + (0 if symmetric else 1) + (1 if g_idx else 0)


def _gptq_awq(quant, method):
    bits = int(quant.get('bits') or quant.get('w_bit') or 4)
    group = int(quant.get('group_size') or quant.get('q_group_size') or 128)
    if 32 % bits:
        raise WeightBytesError('%s: %d-bit weights are not priced (2, 4 or 8 are)' % (method, bits))
    ignored = _matcher('awq' if method == 'awq' else 'fp8', quant.get('modules_to_not_convert') or ['lm_head'])

    def price(t):
        out, inp = t['shape']
        rows = _ceil(inp, group) if group > 0 else 1
        size = out * inp * bits // 8 + rows * _ceil(out * bits, 32) * 4 + rows * out * 2
        return size + (inp * 4 if method == 'gptq' else 0)
    return ('%s int%d group %d (int32 qweight/qzeros + fp16 scales)' % (method, bits, group), method, ignored, price,
            4 if method == 'gptq' else 3)


def _format(quant, dtype_bytes, method=None):
    # method: the quant_method SGLang resolves (model_config.sglang_quant_method: a ModelOpt config without one is
    # modelopt_fp8 / modelopt_fp4 by its quant_algo).
    method = str(method or quant.get('quant_method') or '')
    if method not in SUPPORTED:
        raise WeightBytesError('quant_method %r has no known checkpoint layout: the planner prices %s; give '
                               'weights_bytes (model.safetensors.index.json metadata.total_size) instead'
                               % (method or quant.get('quant_method'), ', '.join(SUPPORTED)))
    if method == 'fp8':
        return _fp8(quant)
    if method == 'mxfp4':
        return _mxfp4(quant)
    if method == 'modelopt_fp8':
        return _modelopt_fp8(quant)
    if method in ('modelopt', 'modelopt_fp4'):
        return _nvfp4(quant)
    if method == 'compressed-tensors':
        return _compressed(quant, dtype_bytes)
    return _gptq_awq(quant, method)


def checkpoint_bytes(config, facts):
    """Bytes of the checkpoint of ``config`` (model_config.model_facts() of it as ``facts``).

    Returns total (every tensor in the files), parts (language / vision / mtp as SGLang keeps them, and
    checkpoint_only: tensors in the files that SGLang replaces, the DeepSeek MTP layer's embedding and head),
    replicated (bytes of the tensors the planner replicates on every rank: router gates, layer norms, MLA's latent
    down-projections), format (what was priced), format_key, validated (the reference it was checked against, or
    None), quantized_params and tensors (how many tensors the files hold). WeightBytesError for a config without a supported quantization_config.
    """
    quant = quantization_config(config)
    if not quant:
        raise WeightBytesError('the config has no quantization_config: its size is parameters x dtype')
    if quant.get('trimmed_lists'):
        raise WeightBytesError('quantization_config lost %s when the profile was written (trimmed_lists): the '
                               'computed size needs them; set weights_bytes (make profile records it) or plan from '
                               'the checkpoint\'s config.json' % ', '.join(sorted(quant['trimmed_lists'])))
    dtype_bytes = DTYPE_BYTES.get(facts['dtype'], 2)
    label, key, ignored, price, stored = _format(quant, dtype_bytes, facts.get('quant_method'))
    parts = dict(language=0, vision=0, mtp=0, checkpoint_only=0)
    replicated = quantized = tensors = 0
    for t in model_tensors.checkpoint(facts):
        size = None
        if t['role'] in QUANTIZED_ROLES and len(t['shape']) == 2 and not ignored(t['name']):
            size = price(t)
        if size is None:
            size = _elements(t['shape']) * (4 if t['role'] == 'fp32' else dtype_bytes)
            tensors += t['count']
        else:
            quantized += _elements(t['shape']) * t['count']
            tensors += stored * t['count']
        size *= t['count']
        parts['checkpoint_only' if t['checkpoint_only'] else t['part']] += size
        if _replicated(t, facts):
            replicated += size
    return dict(total=sum(parts.values()), parts=parts, replicated=replicated, format=label, format_key=key,
                validated=VALIDATED.get(key), quantized_params=quantized, tensors=tensors)


_REPLICATED_SUFFIXES = ('.input_layernorm', '.post_attention_layernorm', '.mlp.gate', '.mlp.router',
                        '.self_attn.q_a_proj', '.self_attn.kv_a_proj_with_mqa')


def _replicated(t, facts):
    """The tensors vram_plan.param_counts counts as replicated on every TP rank (decoder layers only)."""
    if t['part'] != 'language' or not t['name'].endswith(_REPLICATED_SUFFIXES):
        return False
    return facts['attention'] == 'mla' or not t['name'].endswith(('q_a_proj', 'kv_a_proj_with_mqa'))
