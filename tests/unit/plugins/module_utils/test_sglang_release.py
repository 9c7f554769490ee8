# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The SGLang release table (profiles/sglang_releases.yml): loading, validation and the refusals of release()."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest
import yaml

from ansible_collections.llmops.inference.plugins.module_utils.sglang import release as sr
from collection_paths import PIN, TABLE_FILE, release_table_data

TABLE = release_table_data()


def table(**edits):
    """A deep copy of the real table; edits: dotted path -> value (None deletes)."""
    data = copy.deepcopy(TABLE)
    for path, value in edits.items():
        keys = path.split('/')
        node = data
        for key in keys[:-1]:
            # Its own copy: a YAML alias shares the node with other releases (0.5.22 and the pin share flags).
            node[key] = copy.deepcopy(node[key])
            node = node[key]
        if value is None:
            del node[keys[-1]]
        else:
            node[keys[-1]] = value
    return data


def refused(data, version=PIN, **kwargs):
    with pytest.raises(sr.ReleaseError) as exc:
        sr.release(data, version, **kwargs)
    return str(exc.value)


def test_the_real_table_loads():
    loaded = sr.load_table(TABLE)
    assert sorted(loaded) == ['architectures', 'parser_detection', 'planner_families', 'quantization_rules',
                              'releases']  # shared: only anchors, dropped
    assert sorted(loaded['planner_families']) == ['apr', 'configurator', 'configurator_0518']
    assert sr.known_versions(loaded) == ['0.5.9', '0.5.10', '0.5.11', '0.5.12', '0.5.15', '0.5.18', '0.5.20', '0.5.22',
                                         '0.5.23']  # not the pin: the table's releases, oldest first
    for version, entry in loaded['releases'].items():
        assert entry['source'], version
        assert 'flags' in entry and 'defaults' in entry, version
    both = [v for v in sr.known_versions(loaded) if 'planner' in loaded['releases'][v]]
    assert both == ['0.5.10', '0.5.11', '0.5.18', '0.5.22', '0.5.23']  # not the pin: the table's releases with both rule sets
    # Loading is idempotent (the modules may pass an already loaded table on).
    assert sr.load_table(loaded) == loaded


def test_the_pin_resolves_with_everything():
    rel = sr.release(TABLE, PIN)
    assert rel['version'] == PIN and rel['planner_family'] == 'configurator'
    assert rel['planner']['family'] == 'configurator' and rel['planner']['buckets'][-1][0] is None
    assert rel['flags']['mamba_flag'] == '--mamba-radix-cache-strategy'
    assert rel['choices']['mamba_strategy'] == rel['flags']['mamba_choices']
    assert 'qwen3_coder' in rel['choices']['tool_call_parser'] and 'qwen3' in rel['choices']['reasoning_parser']
    assert rel['defaults']['speculative_max_running_requests'] == 48
    assert 'Qwen3_5MoeForConditionalGeneration' in rel['architectures']['hybrid_gdn']
    assert isinstance(rel['architectures']['multimodal'], frozenset)
    assert sr.release(TABLE, ' v%s ' % PIN)['version'] == PIN
    # Anchored values are shared, but a resolved release is a copy: editing it does not touch the table.
    rel['flags']['mamba_auto'] = 'no_buffer'
    assert sr.release(TABLE, PIN)['flags']['mamba_auto'] == 'extra_buffer'


def test_release_without_planner_rules_is_refused():
    assert refused(TABLE, '0.5.20') == (
        "sglang 0.5.20: profiles/sglang_releases.yml has flag rules but no planner rules for it (no `planner:` key): "
        "read that release's memory planner (arg_groups/memory_hook.py, mem_cache/kv_cache_configurator.py) and add "
        "it")
    # Tests of the flag rules may ask for less; the modules never do.
    assert sr.release(TABLE, '0.5.20', need=('flags', 'defaults'))['planner'] is None


def test_release_without_flag_rules_is_refused():
    message = refused(table(**{'releases/0.5.18/flags': None}), '0.5.18')
    assert message == (
        "sglang 0.5.18: profiles/sglang_releases.yml has planner rules but no flag rules for it (no `flags:` key): "
        "read that release's server arguments (server_args.py, arg_groups/, environ.py) and add them")
    message = refused(table(**{'releases/0.5.18/defaults': None}), '0.5.18')
    assert 'no server-argument defaults for it (no `defaults:` key)' in message


def test_unknown_version_lists_the_known_ones():
    message = refused(TABLE, '0.5.99')
    assert message.startswith('sglang 0.5.99: profiles/sglang_releases.yml has no entry for it; known releases: '
                              '0.5.9, 0.5.10, 0.5.11, 0.5.12, 0.5.15, 0.5.18, 0.5.20, 0.5.22, 0.5.23 ')  # not the pin: all releases
    assert 'add it under `releases:`' in message
    assert 'sglang_version is required' in refused(TABLE, None)
    assert 'sglang_version is required' in refused(TABLE, ' ')


# "{pin}" in a path or fragment stands for the pinned release's entry.
@pytest.mark.parametrize('edits, fragment', [
    ({'releases/{pin}/flags/mamba_flags': '--x'},
     'unknown key mamba_flags in releases."{pin}".flags (did you mean mamba_flag?)'),
    ({'releases/{pin}/plannr': 'configurator'}, 'unknown key plannr in releases."{pin}" (did you mean planner?)'),
    ({'release': {}}, 'unknown top-level key release (did you mean releases?)'),
    ({'planner_families/apr/spec_reserve': 1},
     'unknown key spec_reserve in planner_families.apr (did you mean spec_reserve_mib?)'),
    ({'releases/{pin}/choices/tool_parser': ['x']},
     'unknown key tool_parser in releases."{pin}".choices (did you mean tool_call_parser?)'),
    ({'releases/{pin}/defaults/mamba_track_intervall': 1}, 'did you mean mamba_track_interval?'),
    ({'architectures/hybrid_gdm': []}, 'unknown key hybrid_gdm in architectures (did you mean hybrid_gdn?)'),
    ({'releases/{pin}/planner': 'configurater'},
     'releases."{pin}".planner \'configurater\' is not a planner_families key (did you mean configurator?)'),
    ({'releases/{pin}/flags/parallel_end': None}, 'releases."{pin}".flags lacks parallel_end'),
    ({'releases/{pin}/flags/mamba_auto': 'extra'},
     'releases."{pin}".flags.mamba_auto must be extra_buffer or no_buffer'),
    ({'planner_families/apr/buckets': [[20, 2048, 8, 8]]}, 'planner_families.apr.buckets must be'),
    ({'releases/{pin}/source': None}, 'releases."{pin}" lacks source'),
    ({'releases/{pin}/defaults/mamba_cache_ratio': 'three'}, 'mamba_cache_ratio must be an integer'),
    ({'releases/{pin}/metrics/prefx': 'x'}, 'unknown key prefx in releases."{pin}".metrics (did you mean prefix?)'),
    ({'releases/{pin}/metrics/families/running_requests/typ': 'gauge'},
     'unknown key typ in releases."{pin}".metrics.families.running_requests (did you mean type?)'),
    ({'releases/{pin}/metrics/families/running_requests/type': 'gauge_'},
     'metrics.families.running_requests.type must be gauge or counter or histogram'),
    ({'releases/{pin}/metrics/families/running_requests/labels': 'schedular'},
     "metrics.families.running_requests.labels 'schedular' is not a label_sets key (did you mean scheduler?)"),
    ({'releases/{pin}/metrics/families/running_requests/name': 'vllm:num_requests_running'},
     "does not start with the prefix 'sglang:'"),
    ({'releases/{pin}/metrics/families/ttft_seconds/buckets': None}, 'a histogram (and only a histogram) lists'),
    ({'releases/{pin}/metrics/families/itl_seconds/buckets': [0.2, 0.1]}, 'buckets must be an ascending list'),
    ({'releases/{pin}/metrics/families/requests/name': 'sglang:num_requests'}, 'a counter is exposed with _total'),
    ({'releases/{pin}/metrics/families/queued_requests/name': 'sglang:num_running_reqs'}, 'is listed twice'),
    ({'releases/{pin}/metrics/families/requests/type': None}, 'metrics.families.requests lacks type'),
], ids=lambda value: str(value)[:40])
def test_malformed_tables_are_refused_naming_the_key(edits, fragment):
    message = refused(table(**dict((path.format(pin=PIN), value) for path, value in edits.items())))
    assert message.startswith('profiles/sglang_releases.yml: ')
    assert fragment.format(pin=PIN) in message


def test_the_pin_has_its_metric_names():
    rel = sr.release(TABLE, PIN)
    metrics = rel['metrics']
    assert metrics['prefix'] == 'sglang:' and metrics['path'] == '/metrics'
    families = metrics['families']
    # What the monitoring role, the benchmark and the stand-in read, by meaning.
    for key in ('running_requests', 'queued_requests', 'token_usage', 'retracted_requests', 'accept_length',
                'generation_tokens', 'verify_calls', 'ttft_seconds', 'itl_seconds', 'e2e_seconds', 'http_responses',
                'weight_memory_gb', 'kv_cache_memory_gb', 'graph_memory_gb'):
        assert families[key]['name'].startswith('sglang:'), key
    assert families['generation_tokens']['name'] == 'sglang:generation_tokens_total'
    # A release whose collectors were never read has none (and still resolves).
    assert sr.release(table(**{'releases/%s/metrics' % PIN: None}), PIN)['metrics'] is None


def test_not_a_table():
    assert 'must be a non-empty mapping' in refused(None)
    assert 'must be a non-empty mapping' in refused({})
    assert 'is not a version' in refused(table(**{'releases/latest': {'source': 'x'}}))


def test_check_choice():
    rel = sr.release(TABLE, PIN)
    assert sr.check_choice(rel, 'tool_call_parser', 'qwen3_coder') is None
    assert sr.check_choice(rel, 'kv_cache_dtype', None) is None
    message = sr.check_choice(rel, 'tool_call_parser', 'qwen3-coder')
    assert message.startswith("tool_call_parser 'qwen3-coder' is not one of the choices of --tool-call-parser in "
                              "sglang %s (nearest: qwen3_coder); valid: auto, " % PIN)
    assert message.endswith("(the release's choices in profiles/sglang_releases.yml)")
    assert "of --mamba-radix-cache-strategy in sglang %s (nearest: extra_buffer)" % PIN in \
        sr.check_choice(rel, 'mamba_strategy', 'extra-buffer')
    # Nothing close: no nearest, still the valid list.
    assert 'nearest' not in sr.check_choice(rel, 'mamba_ssm_dtype', 'zzz')
    # A release whose parser was not read records no choices for the option: nothing to check.
    old = sr.release(TABLE, '0.5.20', need=('flags',))
    assert sr.check_choice(old, 'tool_call_parser', 'anything') is None
    assert 'extra_buffer_lazy' not in (sr.check_choice(old, 'mamba_strategy', 'extra_buffer_lazy') or 'ok')
    apr = sr.release(TABLE, '0.5.11')
    assert 'of --mamba-scheduler-strategy in sglang 0.5.11' in sr.check_choice(apr, 'mamba_strategy',
                                                                               'extra_buffer_lazy')
    with pytest.raises(sr.ReleaseError, match='not an option with recorded choices'):
        sr.check_choice(rel, 'tool_parser', 'x')


def test_the_pin_is_written_only_in_profiles_sglang_yml():
    # The release table lists releases; which one is pinned is profiles/sglang.yml's business alone.
    with open(TABLE_FILE) as stream:
        text = stream.read()
    assert 'pinned: ' not in text and 'pin: ' not in text
    assert PIN in TABLE['releases']


def _merged_keys(node):
    """Keys a `<<:` value node brings in (an alias to a mapping, or a list of them)."""
    targets = node.value if isinstance(node, yaml.SequenceNode) else [node]
    keys = set()
    for target in targets:
        keys.update(key.value for key, dummy in target.value)
    return keys


def test_no_release_overrides_a_merged_key():
    # Ansible's YAML loader (from_yaml) warns "Found duplicate mapping key" for every key that overrides one brought
    # in by `<<:`, on each read of the table: releases merge anchors that do not overlap instead.
    with open(TABLE_FILE) as stream:
        root = yaml.compose(stream)
    overrides = []
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            merged = set()
            for key, value in node.value:
                if key.value == '<<':
                    merged |= _merged_keys(value)
            overrides += ['%s (line %d)' % (key.value, key.start_mark.line + 1) for key, dummy in node.value
                          if key.value in merged]
            stack.extend(value for dummy, value in node.value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    assert overrides == []


def test_install_overrides_give_the_exact_pip_check_lines():
    overrides = sr.release(TABLE, '0.5.22')['install_overrides']
    assert sr.pip_check_accepted('0.5.22', overrides) == [
        'sglang 0.5.22 has requirement cuda-tile==1.6.0rc5, but you have cuda-tile 1.6.0.']
    assert sr.pip_check_accepted(PIN, sr.release(TABLE, PIN)['install_overrides']) == []
    wrong = {'cuda-tile': {'requires': '1.6.0rc5', 'install': '1.6.0', 'why': 'x'}}
    message = refused(table(**{'releases/0.5.22/install_overrides': wrong}), '0.5.22')
    assert 'install_overrides.cuda-tile.requires' in message and '"==1.6.0rc5"' in message


def test_a_planner_family_with_a_base_names_only_where_it_differs():
    loaded = sr.load_table(TABLE)['planner_families']
    base, older = loaded['configurator'], loaded['configurator_0518']
    # 0.5.18's buckets are its own (server_args.py _handle_gpu_memory_settings: 2048 / 24 / 80 below 35 GiB) ...
    assert [35, 2048, 24, 80] in older['buckets'] and [35, 4096, 48, 160] in base['buckets']
    # ... every other rule is the base family's, and the merged family is a whole one (no `base` key left).
    own = dict(buckets=None, source=None, mm_reserve_hopper=None, model_dtype_overrides=None)
    assert dict(older, **own) == dict(base, **own) and 'base' not in older
    assert older['mm_reserve_hopper'] is None and base['mm_reserve_hopper']['model_types'] == ['qwen3_vl', 'qwen3_vl_moe']
    assert sr.release(TABLE, '0.5.18')['planner']['buckets'][1] == (35, 2048, 24, 80)


@pytest.mark.parametrize('base, wanted', [
    ('configuratr', "base 'configuratr' must name another planner family that has no base itself (did you mean "
                    "configurator?)"),
    ('configurator_0518', "base 'configurator_0518' must name another planner family that has no base itself"),
])
def test_a_planner_family_base_must_be_a_family_without_a_base(base, wanted):
    data = copy.deepcopy(TABLE)
    data['planner_families']['other'] = dict(base=base, source='x')
    with pytest.raises(sr.ReleaseError) as exc:
        sr.load_table(data)
    assert wanted in str(exc.value)
