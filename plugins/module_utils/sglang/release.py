# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The SGLang release table (profiles/sglang_releases.yml): validation and one resolved release.

PRIVATE to the collection. Pure, stdlib only. The table is data (the file documents its shape at the top); this
module refuses a table with an unknown or missing key (naming the nearest known key), and ``release()`` turns one
version into the object the planner (``vram_plan.plan(release=...)``) and the renderer
(``sglang_flags.render(release, ...)``) take, refusing versions that lack either the planner or the flag rules, so a
plan and a command line always come from the same, fully read release.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re

from ansible_collections.llmops.inference.plugins.module_utils.common.choosing import nearest
from ansible_collections.llmops.inference.plugins.module_utils.model.config import FAMILIES as PLANNER_FAMILIES
from ansible_collections.llmops.inference.plugins.module_utils.sglang.parser_detect import DetectRulesError
from ansible_collections.llmops.inference.plugins.module_utils.sglang.parser_detect import check_rules as check_detection
from ansible_collections.llmops.inference.plugins.module_utils.sglang.quant import QuantRulesError
from ansible_collections.llmops.inference.plugins.module_utils.sglang.quant import check_rules as check_quantization

TABLE_PATH = 'profiles/sglang_releases.yml'
# The "did you mean" word of the table's messages: a looser match than the resolver's 0.6, no prefix rule.
NEAREST_CUTOFF = 0.5

_NUMBER = (int, float)
_STRING = (type(u''), str)

# key -> (required, check). A check is a callable(value) -> bool plus a description for the message.
_IS_BOOL = (lambda v: isinstance(v, bool), 'true or false')
_IS_INT = (lambda v: isinstance(v, int) and not isinstance(v, bool), 'an integer')
_IS_NUMBER = (lambda v: isinstance(v, _NUMBER) and not isinstance(v, bool), 'a number')
_IS_STR = (lambda v: isinstance(v, _STRING) and bool(v), 'a non-empty string')
_IS_STR_OR_NULL = (lambda v: v is None or (isinstance(v, _STRING) and bool(v)), 'a string or null')
_IS_INT_OR_NULL = (lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)), 'an integer or null')
_IS_STR_LIST = (lambda v: isinstance(v, list) and all(isinstance(i, _STRING) and i for i in v), 'a list of strings')


def _is_buckets(value):
    if not isinstance(value, list) or not value:
        return False
    for row in value:
        if not isinstance(row, list) or len(row) != 4:
            return False
        if not (row[0] is None or isinstance(row[0], _NUMBER)):
            return False
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in row[1:]):
            return False
    return value[-1][0] is None


def _is_unknown_gpu(value):
    return (isinstance(value, dict) and sorted(value) == ['chunked_prefill_size', 'cuda_graph_max_bs',
                                                          'mem_fraction_static']
            and isinstance(value['chunked_prefill_size'], int) and isinstance(value['cuda_graph_max_bs'], int)
            and isinstance(value['mem_fraction_static'], _NUMBER))


def _is_backend_map(value):
    return isinstance(value, dict) and all(isinstance(k, _STRING) and _IS_STR_LIST[0](v) for k, v in value.items())


def _is_interval_map(value):
    return isinstance(value, dict) and all(isinstance(k, _STRING) and isinstance(n, int) and not isinstance(n, bool)
                                           and n > 0 for k, n in value.items())


def _is_version_names(value):
    return isinstance(value, dict) and all(isinstance(k, _STRING) and _IS_STR_LIST[0](n) for k, n in value.items())


# architectures.mtp_draft: target architecture -> the MTP draft class and how it builds its embedding / lm_head.
MTP_EMBED_LAYOUTS = ('tp', 'attn_tp', 'embedding_tp_kwargs', 'tp_unless_dp_attention')
MTP_HEAD_RULES = ('own', 'untied')


def _is_mtp_draft_map(value):
    return isinstance(value, dict) and bool(value) and all(
        isinstance(k, _STRING) and isinstance(v, dict) and sorted(v) == ['class', 'embed', 'head']
        and _IS_STR[0](v['class']) and v['embed'] in MTP_EMBED_LAYOUTS and v['head'] in MTP_HEAD_RULES
        for k, v in value.items())


def _is_params(value):
    return (isinstance(value, list) and len(value) == 3
            and all(isinstance(i, int) and not isinstance(i, bool) for i in value))


def _is_page_rule(value):
    return (isinstance(value, list) and len(value) == 2 and isinstance(value[0], int)
            and isinstance(value[1], list) and all(isinstance(i, int) for i in value[1]))


def _is_sm100_pages(value):
    return value is None or (isinstance(value, dict) and sorted(value) in (['mha', 'mla'], ['fa4', 'mha', 'mla'])
                             and all(_is_page_rule(v) for v in value.values()))


def _is_vision_defaults(value):
    return isinstance(value, dict) and all(
        isinstance(k, _STRING) and isinstance(d, dict) and all(isinstance(x, int) and not isinstance(x, bool)
                                                               for x in d.values())
        for k, d in value.items())


def _is_dp_reserve(value):
    return value is None or (isinstance(value, dict) and sorted(value) == ['extra_mib_per_bs', 'large_bs', 'mib_per_bs']
                             and all(isinstance(v, _NUMBER) and not isinstance(v, bool) for v in value.values()))


def _is_pair_map(value):
    return (isinstance(value, dict) and sorted(value) == ['hopper', 'sm100']
            and all(_IS_STR_LIST[0](v) and len(v) == 2 for v in value.values()))


def _is_dsa(value):
    if value is None:
        return True
    if not isinstance(value, dict) or sorted(value) != ['backends', 'indexer_quant_block', 'kv_cache_dtype_auto',
                                                        'page_size', 'raw_layout_backend']:
        return False
    dtypes = value['kv_cache_dtype_auto']
    return (isinstance(value['page_size'], int) and isinstance(value['indexer_quant_block'], int)
            and isinstance(dtypes, dict) and sorted(dtypes) == ['hopper', 'sm100']
            and isinstance(value['backends'], dict) and set(dtypes.values()) <= set(value['backends'])
            and all(_is_pair_map(v) for v in value['backends'].values())
            and _IS_STR[0](value['raw_layout_backend']))


PLANNER_KEYS = {
    'source': _IS_STR,
    'buckets': (_is_buckets, 'a list of [GiB limit or null, chunked_prefill_size, max_bs tp<4, max_bs tp>=4] rows '
                'ending with a null limit'),
    'unknown_gpu': (_is_unknown_gpu, 'a mapping of chunked_prefill_size, cuda_graph_max_bs, mem_fraction_static'),
    'spec_reserve_mib': _IS_NUMBER,
    'draft_weights_before_sizing': _IS_BOOL,
    'draft_kv_in_budget': _IS_BOOL,
    'prefill_graph_term': _IS_BOOL,
    'mm_reserve_mib': _IS_NUMBER,
    'mm_reserve_hopper': (lambda v: v is None or (isinstance(v, dict) and sorted(v) == [
        'high_concurrency_requests', 'high_concurrency_reserve_mib', 'min_gpu_mib', 'model_types', 'reserve_mib']),
        'null or {model_types, min_gpu_mib, reserve_mib, high_concurrency_requests, high_concurrency_reserve_mib}'),
    'padded_mamba_pool': _IS_BOOL,
    'cap_requested_by_estimate': _IS_BOOL,
    'sm100_hybrid_page_size': _IS_INT_OR_NULL,
    'swa_full_tokens_ratio': (lambda v: v is None or (isinstance(v, _NUMBER) and not isinstance(v, bool) and 0 < v <= 1),
                              'a number in (0, 1], or null where that release\'s SWA pool was never read'),
    'sm100_default_pages': (_is_sm100_pages, 'null or {mha: [page, [allowed pages]], mla: [page, [allowed pages]], '
                                             'fa4 (optional): [page, [allowed pages]]}'),
    'dp_attention_graph_reserve': (_is_dp_reserve, 'null or {mib_per_bs, large_bs, extra_mib_per_bs}'),
    'dsa': (_is_dsa, 'null or {page_size, indexer_quant_block, kv_cache_dtype_auto: {sm100, hopper}, backends: '
                     '{<dtype>: {sm100: [prefill, decode], hopper: [prefill, decode]}}, raw_layout_backend}'),
    'model_dtype_overrides': (lambda v: isinstance(v, list) and all(
        isinstance(o, dict) and sorted(o) == ['architectures', 'dtype', 'quant_method', 'source'] for o in v),
        'a list of {architectures, quant_method, dtype, source}: the dtype SGLang forces for those checkpoints'),
}
FLAG_KEYS = {
    'mamba_flag': _IS_STR_OR_NULL,
    'mamba_choices': _IS_STR_LIST,
    'mamba_auto': (lambda v: v in ('extra_buffer', 'no_buffer'), 'extra_buffer or no_buffer'),
    'spec_v2_env': (lambda v: v in ('required', 'default_on', 'removed'), 'required, default_on or removed'),
    'spec_radix_no_buffer': _IS_BOOL,
    'no_buffer_needs_no_overlap': _IS_BOOL,
    'extra_buffer_needs_radix': _IS_BOOL,
    'spec_v2_topk1': _IS_BOOL,
    'pp_spec_message': _IS_STR,
    'parallel_begin': _IS_STR,
    'parallel_end': _IS_STR,
    'memory_baseline_line': _IS_BOOL,
    'mamba_alias': _IS_STR_OR_NULL,
}
DEFAULT_KEYS = {
    'speculative_max_running_requests': _IS_INT,
    'speculative_auto_params': (_is_params, '[steps, topk, draft tokens]'),
    'speculative_auto_params_by_arch': (lambda v: isinstance(v, dict) and all(
        isinstance(k, _STRING) and _is_params(p) for k, p in v.items()), 'architecture -> [steps, topk, draft tokens]'),
    'mamba_cache_ratio': _IS_INT,
    'mamba_full_memory_ratio': _IS_NUMBER,
    'mamba_track_interval': _IS_INT,
    'fla_chunk_size': _IS_INT,
    'max_prefill_tokens': _IS_INT,
}
# Options whose argparse choices a release may record (argparse dest names; the collection's option names too).
CHOICE_OPTIONS = ('reasoning_parser', 'tool_call_parser', 'kv_cache_dtype', 'mamba_ssm_dtype', 'attention_backend',
                  'quantization', 'moe_runner_backend')
# The planner's KV-cache families (one module each in planner/families/) are each one list of architecture names.
ARCHITECTURE_KEYS = dict(((name, _IS_STR_LIST) for name in PLANNER_FAMILIES), **{
    'source': _IS_STR,
    'multimodal': _IS_STR_LIST,
    'breakable_graph_multimodal': _IS_STR_LIST,
    'blackwell_gdn_backends': (_is_backend_map, 'a mapping of compute-capability major to a list of backends'),
    'dsa': _IS_STR_LIST,
    'deepseek_family': _IS_STR_LIST,
    'sm100_hybrid_page': _IS_STR_LIST,
    'sm100_flashinfer': _IS_STR_LIST,
    'eagle3_draft': _IS_STR_LIST,
    'dp_attention': _IS_STR_LIST,
    # Issue #26 point 4: Llama-4's every-N-th-layer-full chunked attention, VLMs served text-only by default, and the
    # model registry of each release read (version -> every architecture name it serves).
    'chunked_attention': (_is_interval_map, 'a mapping of architecture to the full-attention layer interval'),
    'multimodal_off_by_default': _IS_STR_LIST,
    'served': (_is_version_names, 'a mapping of release version to the architecture names of its model registry'),
    'vision_config_defaults': (_is_vision_defaults, 'a mapping of architecture to {vision-config key: integer default}'),
    'mtp_draft': (_is_mtp_draft_map, 'a mapping of target architecture to {class, embed: one of %s, head: one of %s}'
                  % ('/'.join(MTP_EMBED_LAYOUTS), '/'.join(MTP_HEAD_RULES))),
})
# Defaults a release may lack (read for some releases only; the planner falls back where one is absent).
OPTIONAL_DEFAULT_KEYS = ('speculative_auto_params_by_arch',)
RELEASE_KEYS = ('source', 'planner', 'flags', 'choices', 'defaults', 'host_programs', 'quantization', 'detection', 'metrics',
                'architectures',
                'install_overrides')
# A requirement of the release's own wheel that is installed at another version (install_overrides: name -> these):
# the exact requirement SGLang declares, the version installed instead, and why (with its source). pip check then
# reports exactly one line for it (pip_check_accepted), which the installers accept and nothing else.
INSTALL_OVERRIDE_KEYS = {
    'requires': (lambda v: isinstance(v, _STRING) and v.startswith('=='), 'the exact requirement, e.g. "==1.6.0rc5"'),
    'install': (lambda v: isinstance(v, _STRING) and bool(re.match(r'^[0-9][0-9A-Za-z.+]*$', v)), 'a version'),
    'why': _IS_STR,
}
# A program the release runs from the host's PATH and silently does without: the package that provides it, why, and
# the release's own message when it is missing (tests/sglang/test_parser.py finds it in the pinned source).
HOST_PROGRAM_KEYS = {
    'package': _IS_STR,
    'why': _IS_STR,
    'missing_message': _IS_STR,
}
# The Prometheus metrics of a release (optional: only where that release's collectors were read).
METRICS_KEYS = {
    'source': _IS_STR,
    'prefix': _IS_STR,
    'path': (lambda v: isinstance(v, _STRING) and v.startswith('/'), 'a URL path starting with /'),
    'label_sets': (lambda v: isinstance(v, dict) and bool(v) and all(
        isinstance(k, _STRING) and isinstance(x, list) and all(isinstance(i, _STRING) and i for i in x)
        for k, x in v.items()), 'a mapping of collector name to a list of label names'),
    'families': (lambda v: isinstance(v, dict) and bool(v), 'a non-empty mapping of meaning to family'),
}
METRIC_TYPES = ('gauge', 'counter', 'histogram')
FAMILY_KEYS = {
    'name': _IS_STR,
    'type': (lambda v: v in METRIC_TYPES, ' or '.join(METRIC_TYPES)),
    'labels': _IS_STR,
    'extra_labels': _IS_STR_LIST,
    'buckets': (lambda v: isinstance(v, list) and bool(v) and all(
        isinstance(i, _NUMBER) and not isinstance(i, bool) for i in v) and v == sorted(v), 'an ascending list of numbers'),
}
TOP_KEYS = ('planner_families', 'architectures', 'quantization_rules', 'parser_detection', 'releases', 'shared')
# A release key that names a family of another top-level section: release key -> (section, what the family holds).
_FAMILY_REFS = {'quantization': ('quantization_rules', check_quantization),
                'detection': ('parser_detection', check_detection)}

# What to read for a release that lacks a kind of rules, and where it goes.
_WHAT_TO_READ = {
    'planner': ('planner rules', 'planner', "read that release's memory planner (arg_groups/memory_hook.py, "
                'mem_cache/kv_cache_configurator.py) and add it'),
    'flags': ('flag rules', 'flags', "read that release's server arguments (server_args.py, arg_groups/, environ.py) "
              'and add them'),
    'defaults': ('server-argument defaults', 'defaults', "read that release's defaults (arg_groups/speculative_hook.py, "
                 'the --mamba-* fields) and add them'),
}


class ReleaseError(ValueError):
    """The release table is malformed, or a release cannot be used."""


def version_key(version):
    """Sort key of a version string ('0.5.9' < '0.5.10')."""
    return tuple(int(part) for part in re.findall(r'\d+', str(version)))


def normalize_version(version):
    """'v1.2.3 ' -> '1.2.3'; ReleaseError when empty."""
    text = '' if version is None else str(version).strip()
    if text[:1] in ('v', 'V'):
        text = text[1:]
    if not text:
        raise ReleaseError('sglang_version is required (pass the pin, `version:` of profiles/sglang.yml)')
    return text


def _did_you_mean(value, options):
    best = nearest(value, options, cutoff=NEAREST_CUTOFF, unique_prefix=False)
    return ' (did you mean %s?)' % best if best else ''


def _check_keys(where, mapping, spec, required=True):
    """Refuse unknown keys (naming the nearest), missing keys and values of the wrong kind."""
    if not isinstance(mapping, dict):
        raise ReleaseError('%s: %s must be a mapping, got %s' % (TABLE_PATH, where, type(mapping).__name__))
    for key in mapping:
        if key not in spec:
            raise ReleaseError('%s: unknown key %s in %s%s; known keys: %s'
                               % (TABLE_PATH, key, where, _did_you_mean(key, spec), ', '.join(sorted(spec))))
    if required:
        missing = sorted(key for key in spec if key not in mapping)
        if missing:
            raise ReleaseError('%s: %s lacks %s' % (TABLE_PATH, where, ', '.join(missing)))
    for key, value in mapping.items():
        check, what = spec[key]
        if not check(value):
            raise ReleaseError('%s: %s.%s must be %s, got %r' % (TABLE_PATH, where, key, what, value))


def _check_metrics(where, metrics):
    _check_keys(where, metrics, METRICS_KEYS)
    names = set()
    for key, family in metrics['families'].items():
        at = '%s.families.%s' % (where, key)
        _check_keys(at, family, FAMILY_KEYS, required=False)
        missing = sorted(k for k in ('name', 'type', 'labels') if k not in family)
        if missing:
            raise ReleaseError('%s: %s lacks %s' % (TABLE_PATH, at, ', '.join(missing)))
        if family['labels'] not in metrics['label_sets']:
            raise ReleaseError('%s: %s.labels %r is not a label_sets key%s; known: %s' % (
                TABLE_PATH, at, family['labels'], _did_you_mean(family['labels'], metrics['label_sets']),
                ', '.join(sorted(metrics['label_sets']))))
        if not family['name'].startswith(metrics['prefix']):
            raise ReleaseError('%s: %s.name %r does not start with the prefix %r' % (
                TABLE_PATH, at, family['name'], metrics['prefix']))
        if (family['type'] == 'histogram') != ('buckets' in family):
            raise ReleaseError('%s: %s: a histogram (and only a histogram) lists its buckets' % (TABLE_PATH, at))
        if family['type'] == 'counter' and not family['name'].endswith('_total'):
            raise ReleaseError('%s: %s.name %r: a counter is exposed with _total (prometheus_client adds it)'
                               % (TABLE_PATH, at, family['name']))
        if family['name'] in names:
            raise ReleaseError('%s: %s.name %r is listed twice' % (TABLE_PATH, at, family['name']))
        names.add(family['name'])


def _planner_family(raw, name, rules):
    """One planner family, validated; ``base: <family>`` takes every key of that family (itself without a base) and
    the family names only the keys where its release's code differs (their source included)."""
    where = 'planner_families.%s' % name
    if not isinstance(rules, dict) or 'base' not in rules:
        _check_keys(where, rules, PLANNER_KEYS)
        return copy.deepcopy(rules)
    base = rules['base']
    if base not in raw or base == name or not isinstance(raw[base], dict) or 'base' in raw[base]:
        raise ReleaseError('%s: %s.base %r must name another planner family that has no base itself%s; known: %s'
                           % (TABLE_PATH, where, base, _did_you_mean(str(base), raw), ', '.join(sorted(raw))))
    merged = copy.deepcopy(raw[base])
    merged.update(copy.deepcopy(dict((k, v) for k, v in rules.items() if k != 'base')))
    _check_keys(where, merged, PLANNER_KEYS)
    return merged


def _check_release_architectures(where, sets):
    """A release's own architecture sets: where its lists differ from the table-wide ones (the pin's)."""
    own = dict((k, v) for k, v in ARCHITECTURE_KEYS.items() if k not in ('source', 'served'))
    if not isinstance(sets, dict) or not sets:
        raise ReleaseError('%s: %s must be a mapping of architecture-set name to that release\'s own set'
                           % (TABLE_PATH, where))
    _check_keys(where, sets, own, required=False)


def load_table(data):
    """Validate a parsed profiles/sglang_releases.yml and return a normalised copy of it.

    ``data`` is the mapping ``yaml.safe_load`` (or Ansible's ``from_yaml``) gives. Unknown keys anywhere are refused
    with the nearest known key; every planner family, the architecture sets and each release's ``flags``,
    ``choices`` and ``defaults`` are type-checked. The ``shared:`` section only holds YAML anchors and is dropped.
    Raises ReleaseError.
    """
    if not isinstance(data, dict) or not data:
        raise ReleaseError('%s: the release table must be a non-empty mapping (pass the parsed file: '
                           "lookup('ansible.builtin.file', '%s') | from_yaml)" % (TABLE_PATH, TABLE_PATH))
    for key in data:
        if key not in TOP_KEYS:
            raise ReleaseError('%s: unknown top-level key %s%s; known keys: %s'
                               % (TABLE_PATH, key, _did_you_mean(key, TOP_KEYS), ', '.join(TOP_KEYS)))
    for key in ('planner_families', 'architectures', 'releases'):
        if not isinstance(data.get(key), dict) or not data[key]:
            raise ReleaseError('%s: %s must be a non-empty mapping' % (TABLE_PATH, key))
    families = {}
    raw = data['planner_families']
    for name, rules in raw.items():
        families[str(name)] = _planner_family(raw, str(name), rules)
    _check_keys('architectures', data['architectures'], ARCHITECTURE_KEYS)
    architectures = copy.deepcopy(data['architectures'])
    ref_families = {}
    for key, (section, check) in _FAMILY_REFS.items():
        ref_families[key] = {}
        section_data = data.get(section) or {}
        if not isinstance(section_data, dict):
            raise ReleaseError('%s: %s must be a mapping of family name to rules' % (TABLE_PATH, section))
        for name, rules in section_data.items():
            try:
                check(rules, '%s: %s.%s' % (TABLE_PATH, section, name))
            except (QuantRulesError, DetectRulesError) as exc:
                raise ReleaseError(str(exc))
            ref_families[key][str(name)] = copy.deepcopy(rules)
    releases = {}
    release_spec = dict((key, (lambda v: True, '')) for key in RELEASE_KEYS)
    for version, entry in data['releases'].items():
        version = str(version)
        if not re.match(r'^\d+(\.\d+)*([a-z0-9.+-]*)$', version):
            raise ReleaseError('%s: release key %r is not a version (quote it: "1.2.3")' % (TABLE_PATH, version))
        where = 'releases."%s"' % version
        _check_keys(where, entry, release_spec, required=False)
        if not _IS_STR[0](entry.get('source')):
            raise ReleaseError('%s: %s lacks source (the SGLang files its facts mirror)' % (TABLE_PATH, where))
        if 'architectures' in entry:
            _check_release_architectures(where + '.architectures', entry['architectures'])
        if 'planner' in entry and entry['planner'] not in families:
            raise ReleaseError('%s: %s.planner %r is not a planner_families key%s; known: %s'
                               % (TABLE_PATH, where, entry['planner'], _did_you_mean(entry['planner'], families),
                                  ', '.join(sorted(families))))
        for key, (section, dummy) in _FAMILY_REFS.items():
            if key in entry and entry[key] not in ref_families[key]:
                raise ReleaseError('%s: %s.%s %r is not a %s key%s; known: %s'
                                   % (TABLE_PATH, where, key, entry[key], section,
                                      _did_you_mean(entry[key], ref_families[key]),
                                      ', '.join(sorted(ref_families[key])) or 'none'))
        if 'flags' in entry:
            _check_keys(where + '.flags', entry['flags'], FLAG_KEYS)
            flags = entry['flags']
            if flags['mamba_flag'] is not None and 'auto' not in flags['mamba_choices']:
                raise ReleaseError('%s: %s.flags.mamba_choices must list auto' % (TABLE_PATH, where))
        if 'choices' in entry:
            _check_keys(where + '.choices', entry['choices'], dict((k, _IS_STR_LIST) for k in CHOICE_OPTIONS),
                        required=False)
        if 'defaults' in entry:
            _check_keys(where + '.defaults', entry['defaults'], DEFAULT_KEYS, required=False)
            missing = sorted(k for k in DEFAULT_KEYS if k not in entry['defaults'] and k not in OPTIONAL_DEFAULT_KEYS)
            if missing:
                raise ReleaseError('%s: %s.defaults lacks %s' % (TABLE_PATH, where, ', '.join(missing)))
        for program, spec in (entry.get('host_programs') or {}).items():
            _check_keys('%s.host_programs.%s' % (where, program), spec, HOST_PROGRAM_KEYS)
        for package, spec in (entry.get('install_overrides') or {}).items():
            _check_keys('%s.install_overrides.%s' % (where, package), spec, INSTALL_OVERRIDE_KEYS)
        if 'metrics' in entry:
            _check_metrics(where + '.metrics', entry['metrics'])
        releases[version] = copy.deepcopy(entry)
    return dict(planner_families=families, architectures=architectures, releases=releases,
                quantization_rules=ref_families['quantization'], parser_detection=ref_families['detection'])


def known_versions(table):
    """The release keys of a (validated) table, oldest first."""
    return sorted(table['releases'], key=version_key)


def release(table, version, need=('planner', 'flags', 'defaults')):
    """One resolved release of the table: the object vram_plan.plan(release=) and sglang_flags.render() take.

    Returns dict(version, source, planner_family (name or None), planner (that family's rules, with ``family``),
    flags, choices (option -> list; ``mamba_strategy`` from flags.mamba_choices), defaults, architectures (name sets
    as frozensets, ``blackwell_gdn_backends`` as tuples), host_programs, install_overrides, quantization (a quantization_rules family
    or None), detection (a parser_detection family or None), metrics (the Prometheus metric families, or None where
    that release's collectors were never read)).

    Refuses (ReleaseError) an unknown version, listing the known ones, and a version that lacks any kind of rules in
    ``need``, saying what is missing and where to add it. The modules always need all three; ``need`` exists for
    tests of the flag rules of releases whose planner was never read.
    """
    table = load_table(table)
    version = normalize_version(version)
    entry = table['releases'].get(version)
    if entry is None:
        raise ReleaseError('sglang %s: %s has no entry for it; known releases: %s (read that release\'s server '
                           'arguments and memory planner and add it under `releases:`)'
                           % (version, TABLE_PATH, ', '.join(known_versions(table))))
    has = dict(planner='planner' in entry, flags='flags' in entry, defaults='defaults' in entry)
    missing = [kind for kind in ('planner', 'flags', 'defaults') if kind in need and not has[kind]]
    if missing:
        present = [_WHAT_TO_READ[kind][0] for kind in ('flags', 'planner') if has[kind]]
        parts = []
        for kind in missing:
            what, key, todo = _WHAT_TO_READ[kind]
            parts.append('no %s for it (no `%s:` key): %s' % (what, key, todo))
        raise ReleaseError('sglang %s: %s has %s but %s' % (
            version, TABLE_PATH, ' and '.join(present) if present else 'only a source',
            '; and '.join(parts)))
    family = entry.get('planner')
    planner = None
    if family is not None:
        planner = dict(table['planner_families'][family])
        planner['family'] = family
        planner['buckets'] = tuple(tuple(row) for row in planner['buckets'])
    flags = dict(entry['flags']) if 'flags' in entry else None
    choices = dict((key, list(values)) for key, values in (entry.get('choices') or {}).items())
    if flags is not None and flags['mamba_flag'] is not None:
        choices['mamba_strategy'] = list(flags['mamba_choices'])
    # The table-wide sets (the pin's), with the sets this release's own lists give instead.
    arch = dict(table['architectures'], **(entry.get('architectures') or {}))
    architectures = dict(
        source=arch['source'],
        multimodal=frozenset(arch['multimodal']),
        breakable_graph_multimodal=frozenset(arch['breakable_graph_multimodal']),
        dsa=frozenset(arch['dsa']), deepseek_family=frozenset(arch['deepseek_family']),
        sm100_hybrid_page=frozenset(arch['sm100_hybrid_page']), eagle3_draft=frozenset(arch['eagle3_draft']),
        sm100_flashinfer=frozenset(arch['sm100_flashinfer']),
        dp_attention=frozenset(arch['dp_attention']),
        vision_config_defaults=dict((str(k), dict(v)) for k, v in arch['vision_config_defaults'].items()),
        mtp_draft=dict((str(k), dict(v)) for k, v in arch['mtp_draft'].items()),
        blackwell_gdn_backends=dict((str(k), tuple(v)) for k, v in arch['blackwell_gdn_backends'].items()),
        chunked_attention=dict(arch['chunked_attention']),
        multimodal_off_by_default=frozenset(arch['multimodal_off_by_default']),
        # None where the table has not read this release's model registry (refusals then cannot say "not served").
        served=frozenset(arch['served'][version]) if version in arch['served'] else None,
    )
    architectures.update((name, frozenset(arch[name])) for name in PLANNER_FAMILIES)
    # The quantization rules and the parser-detection rules (None where that release's code was never read: the
    # renderer then renders no --quantization of its own and the profile generator keeps "auto").
    quantization = table['quantization_rules'].get(entry['quantization']) if 'quantization' in entry else None
    detection = table['parser_detection'].get(entry['detection']) if 'detection' in entry else None
    return dict(version=version, source=entry['source'], planner_family=family, planner=planner, flags=flags,
                choices=choices, defaults=dict(entry['defaults']) if 'defaults' in entry else None,
                host_programs=copy.deepcopy(entry.get('host_programs') or {}), architectures=architectures,
                install_overrides=copy.deepcopy(entry.get('install_overrides') or {}),
                quantization=copy.deepcopy(quantization), detection=copy.deepcopy(detection),
                metrics=copy.deepcopy(entry['metrics']) if 'metrics' in entry else None)


def pip_check_accepted(version, overrides):
    """The exact lines ``pip check`` prints for the release's install overrides (and the only ones an installer may
    accept): pip's own wording, "<dist> <version> has requirement <name><spec>, but you have <name> <installed>."."""
    return ['sglang %s has requirement %s%s, but you have %s %s.'
            % (version, name, spec['requires'], name, spec['install'])
            for name, spec in sorted((overrides or {}).items())]


def check_choice(rel, option, value):
    """None when ``value`` is one of the release's argparse choices for ``option`` (or the release records none for
    it); otherwise the error message, naming the value, the release, the valid list and the nearest match.

    ``option`` is an argparse dest (``tool_call_parser``, ``kv_cache_dtype``, ...) or ``mamba_strategy``.
    """
    if option not in CHOICE_OPTIONS and option != 'mamba_strategy':
        raise ReleaseError('check_choice: %s is not an option with recorded choices (%s, mamba_strategy)'
                           % (option, ', '.join(CHOICE_OPTIONS)))
    valid = (rel.get('choices') or {}).get(option)
    if valid is None or value is None or str(value) in valid:
        return None
    flag = '--' + option.replace('_', '-')
    if option == 'mamba_strategy':
        flag = (rel.get('flags') or {}).get('mamba_flag') or flag
    best = nearest(value, valid, cutoff=NEAREST_CUTOFF, unique_prefix=False)
    return ('%s %r is not one of the choices of %s in sglang %s%s; valid: %s (the release\'s choices in %s)'
            % (option, str(value), flag, rel['version'], ' (nearest: %s)' % best if best else '', ', '.join(valid),
               TABLE_PATH))
