# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The resolver on good inputs: precedence, the plan and the command line agreeing, variants, the P2P verdict."""

from __future__ import annotations

import itertools
import os

import pytest

from test_deployment_refusals import ROOT, bad_inputs, run  # noqa: F401  (the shared harness)


def seed(**server):
    case = dict(id='t', host='proxmox', server=server)
    hosts = bad_inputs.hosts(case, '/nonexistent')
    return hosts, {'proxmox_hosts': ['pve-t'], 'sglang_servers': ['ct-t']}


def resolve(overrides=None, p2p_verdict='', model_commit='', inventory_dir='/nonexistent', **server):
    hosts, groups = seed(**server)
    variables = dict((k, v) for k, v in hosts['ct-t'].items() if k != 'llmops_api_key')
    from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.resolve import resolve as _resolve
    from test_deployment_refusals import Loader, role_options
    request = dict(host='ct-t', groups=groups, variables=variables, vars_of=lambda name: hosts.get(name, {}),
                   overrides=overrides or {}, p2p_verdict=p2p_verdict, require_secrets=True, api_key='k',
                   model_commit=model_commit, inventory_dir=inventory_dir,
                   collection_profiles=os.path.join(ROOT, 'profiles'), role_options=role_options.ROLE_OPTIONS)
    deployment, problems = _resolve(request, Loader())
    assert not problems, problems.message()
    return deployment


def flag(argv, name):
    return argv[argv.index(name) + 1] if name in argv else None


def seed_expectations():
    """What the pinned SGLang resolves for the seed server (qwen3.5-122b-a10b, TP 4, MTP, on the 97887 MiB RTX PRO 6000
    profile), by hand from the model profile's config and SGLang's rules (paths under sglang/srt/), not from the plan:
    - context: the text config's max_position_embeddings (its rope_parameters carry no factor);
    - mamba strategy: arg_groups/overrides.py:477-486, "auto" with the overlap schedule on -> extra_buffer;
    - mem_fraction_static: arg_groups/memory_hook.py:309-325 (SGLANG_ENABLE_POST_CAPTURE_KV_SIZING off by default,
      environ.py:640): 512 + 8192 x 1.5 + 4 / 8 x 1024 + reserve_for_graph_mb (512 x 2 + 58 prefill sizes x 8) = 14800
      MiB -> round((97887 - 14800) / 97887, 3) = 0.849; then the ViT factor (:432-469): the vision config has no
      num_hidden_layers (transformers' Qwen3_5MoeVisionConfig keeps it as depth), so 24 x 1152^2 / (24 x 1024^2) =
      1.265625 -> 0.95 x (1 - 0.1 x 0.265625) = 0.924765625; 0.849 x 0.924765625, rendered to four decimals."""
    import yaml
    with open(os.path.join(ROOT, 'profiles', 'models', 'qwen3.5-122b-a10b.yml')) as handle:
        config = yaml.safe_load(handle)['config']
    text, vision = config['text_config'], config['vision_config']
    assert 'factor' not in text['rope_parameters'] and 'num_hidden_layers' not in vision
    reserved = 512 + 8192 * 1.5 + 4 / 8.0 * 1024 + 512 * 2 + 58 * 8
    base = round((97887 - reserved) / 97887.0, 3)
    ratio = 24 * vision['hidden_size'] ** 2 / float(24 * 1024 ** 2)
    factor = 0.95 * max(0.8, min(1.05, 1 - 0.1 * (ratio - 1)))
    assert (reserved, base, round(factor, 9)) == (14800, 0.849, 0.924765625)
    return dict(context=text['max_position_embeddings'], strategy='extra_buffer', fraction='%.4f' % (base * factor))


def test_the_command_line_states_the_plan():
    d = resolve()
    plan, argv = d['plan'], d['argv']
    # Nothing requested: no flag, SGLang's own choice (the seed: MTP's 48, capped by the mamba pool) as the plan says.
    assert flag(argv, '--max-running-requests') is None
    assert plan['max_running_requests_bound_by'] == 'mamba_slots'
    assert plan['max_running_requests'] == plan['mamba_cache_slots'] // plan['mamba_slots_per_request'] < 48
    assert flag(argv, '--context-length') == str(plan['context_length'])
    assert float(flag(argv, '--mem-fraction-static')) == pytest.approx(plan['mem_fraction_static'], abs=5e-5)
    assert flag(argv, '--mamba-radix-cache-strategy') == plan['mamba_strategy'] == d['mamba_strategy']
    # The pass-through above, anchored once to values that do not come from the planner.
    expected = seed_expectations()
    assert expected == dict(context=262144, strategy='extra_buffer', fraction='0.7851')
    assert flag(argv, '--context-length') == str(expected['context'])
    assert flag(argv, '--mamba-radix-cache-strategy') == expected['strategy']
    assert flag(argv, '--mem-fraction-static') == expected['fraction']
    assert flag(argv, '--tp-size') == '4' and flag(argv, '--speculative-num-draft-tokens') == '4'
    assert d['settings']['max_running_requests'] == dict(
        value=plan['max_running_requests'], source='sglang default (no flag; the plan: bound by mamba slots)')
    assert d['command'][-len(argv):] == argv and d['exec_start'].endswith(' '.join(argv[-4:]))


GRID = list(itertools.product([None, 0], [True, False], ['auto', 'bfloat16'], ['auto', 'fp8_e4m3'], [None, 64]))


@pytest.mark.parametrize('draft,radix,ssm,kv,page', GRID)
def test_plan_and_argv_agree_on_a_grid(draft, radix, ssm, kv, page):
    server = dict(llmops_radix_cache=radix, llmops_mamba_ssm_dtype=ssm, llmops_kv_cache_dtype=kv,
                  llmops_plan_must_fit=False)
    if draft is not None:
        server['llmops_speculative_num_draft_tokens'] = draft
    if page is not None:
        server['llmops_page_size'] = page
    hosts, groups = seed(**server)
    deployment, problems = run('ct-t', hosts, groups)
    if problems:  # a combination SGLang refuses: refused with a fix, and no command line
        assert all('Fix: ' in line for line in problems.lines())
        return
    plan, argv = deployment['plan'], deployment['argv']
    # Never requested here: never rendered, and never reported as bound by a request.
    assert flag(argv, '--max-running-requests') is None
    assert plan['max_running_requests_bound_by'] != 'requested'
    assert ('--speculative-algorithm' in argv) == bool(plan['speculative']['enabled'])
    assert ('--disable-radix-cache' in argv) == (not plan['radix_cache'])
    assert flag(argv, '--mamba-radix-cache-strategy') == plan['mamba_strategy']
    assert ('--disable-overlap-schedule' in argv) == bool(plan['disable_overlap_schedule'])
    if kv != 'auto':
        assert flag(argv, '--kv-cache-dtype') == plan['kv_cache_dtype'] == kv
    if ssm != 'auto':
        assert flag(argv, '--mamba-ssm-dtype') == plan['mamba_ssm_dtype'] == ssm
    if page is not None:
        assert flag(argv, '--page-size') == str(plan['page_size'])


def test_precedence_override_beats_inventory_and_profile():
    d = resolve(overrides={'llmops_speculative_num_draft_tokens': 0, 'llmops_http_port': 31000},
                llmops_http_port=30500)
    assert d['http']['port'] == 31000 and '--speculative-algorithm' not in d['argv']
    assert d['settings']['speculative_num_draft_tokens'] == dict(value=0, source='override')
    d = resolve(llmops_speculative_num_steps=2)
    assert d['settings']['speculative_num_steps'] == dict(value=2, source='inventory')
    assert d['settings']['speculative_num_draft_tokens'] == dict(value=3, source='profile')  # 4 asked, topk 1: steps + 1
    assert flag(d['argv'], '--speculative-num-steps') == '2'
    # topk 1 forces draft tokens = steps + 1, and the plan says what SGLang will use
    assert flag(d['argv'], '--speculative-num-draft-tokens') == str(d['plan']['speculative']['num_draft_tokens'])


def test_an_explicit_cap_above_what_the_pools_hold_is_rendered_as_the_cap():
    d = resolve(llmops_max_running_requests=500)
    assert d['plan']['max_running_requests'] < 500
    assert flag(d['argv'], '--max-running-requests') == str(d['plan']['max_running_requests'])
    assert any('llmops_max_running_requests 500: SGLang caps it' in w for w in d['warnings'])


def test_variants_are_resolved_deployments():
    d = resolve(llmops_variants=[{'name': 'mtp', 'overrides': {}},
                                 {'name': 'no-mtp', 'overrides': {'llmops_speculative_num_draft_tokens': 0}}])
    names = [v['name'] for v in d['variants']]
    assert names == ['mtp', 'no-mtp']
    mtp, no_mtp = (v['deployment'] for v in d['variants'])
    assert mtp['argv'] == d['argv'] and d['variants'][0]['mtp'] is True
    assert '--speculative-algorithm' not in no_mtp['argv'] and d['variants'][1]['mtp'] is False
    assert no_mtp['unit'] == d['unit'] and 'variants' not in no_mtp
    assert flag(no_mtp['argv'], '--max-running-requests') is None


@pytest.mark.parametrize('verdict,disabled', [('', True), ('p2p_ok', False), ('use_nccl_p2p_disable', True)])
def test_p2p_verdict_decides_nccl_p2p_disable(verdict, disabled):
    d = resolve(p2p_verdict=verdict)
    assert d['nccl']['p2p_disable'] is disabled and d['nccl']['p2p_verdict'] == verdict
    assert (d['environment'].get('NCCL_P2P_DISABLE') == '1') is disabled
    assert ('--disable-custom-all-reduce' in d['argv']) is disabled


def test_nccl_broken_is_refused_by_the_collection():
    hosts, groups = seed()
    variables = dict((k, v) for k, v in hosts['ct-t'].items())
    from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.resolve import resolve as _resolve
    from test_deployment_refusals import Loader, role_options
    request = dict(host='ct-t', groups=groups, variables=variables, vars_of=lambda name: hosts.get(name, {}),
                   overrides={}, p2p_verdict='nccl_broken', require_secrets=True, api_key='k',
                   collection_profiles=os.path.join(ROOT, 'profiles'), role_options=role_options.ROLE_OPTIONS)
    dummy, problems = _resolve(request, Loader())
    text = problems.message()
    assert 'deployment_p2p_verdict: refused before the start [nccl_broken]' in text and 'SGLang' not in text.split(
        '[nccl_broken]')[0]


def test_the_parser_is_asked_for_every_command_line():
    seen = []

    def parse(python, argvs):
        seen.append([list(argv) for argv in argvs])
        return [(True, 'x.y') if '--disable-radix-cache' not in argv else (False, 'unrecognized arguments: x')
                for argv in argvs]

    hosts, groups = seed(llmops_parser_python='/usr/bin/python3',
                         llmops_variants=[{'name': 'radix-off', 'overrides': {'llmops_radix_cache': False}}])
    variables = dict((k, v) for k, v in hosts['ct-t'].items())
    from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.resolve import resolve as _resolve
    from test_deployment_refusals import Loader, role_options
    request = dict(host='ct-t', groups=groups, variables=variables, vars_of=lambda name: hosts.get(name, {}),
                   overrides={}, p2p_verdict='', require_secrets=True, api_key='k', parse=parse,
                   collection_profiles=os.path.join(ROOT, 'profiles'), role_options=role_options.ROLE_OPTIONS)
    deployment, problems = _resolve(request, Loader())
    # One call (one SGLang import) for the deployment and its variant.
    assert len(seen) == 1 and len(seen[0]) == 2 and deployment['sglang']['parsed_by'] == '/usr/bin/python3 (sglang x.y)'
    assert 'variant radix-off: llmops_extra_args' in problems.message()


def test_the_proxmox_host_object():
    hosts, groups = seed()
    from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.resolve import resolve as _resolve
    from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.resolve import summary
    from test_deployment_refusals import Loader, role_options
    request = dict(host='pve-t', groups=groups, variables=hosts['pve-t'], vars_of=lambda name: hosts.get(name, {}),
                   collection_profiles=os.path.join(ROOT, 'profiles'), role_options=role_options.ROLE_OPTIONS)
    d, problems = _resolve(request, Loader())
    assert not problems and d['kind'] == 'proxmox_host' and d['sev_snp'] is True
    assert d['containers'] == [dict(host='ct-t', ctid=101, numa_node=0, addresses=d['nvidia_addresses'])]
    assert summary(d).startswith('pve-t: 8 GPU(s), vfio-pci 0000:81:00.0')


LOCKED = '0123456789abcdef' * 2 + '01234567'
MOVED = 'f' * 40


def test_a_branch_is_locked_once_and_served_from_the_lock(tmp_path):
    d = resolve(inventory_dir=str(tmp_path))
    model = d['model']
    assert (model['revision'], model['revision_is_commit'], model['lock']['write']) == ('main', False, None)
    assert model['path'].endswith('@main') and any('not locked yet' in w for w in d['warnings'])
    assert model['lock']['file'] == str(tmp_path / 'llmops-lock.yml')
    # The preflight asked the Hub: the commit gets its own directory and a lock entry to write.
    d = resolve(inventory_dir=str(tmp_path), model_commit=LOCKED)
    model = d['model']
    assert model['revision'] == LOCKED and model['path'].endswith('@' + LOCKED[:12])
    assert model['lock']['write'] == {'repo_id': model['repo_id'], 'requested': 'main', 'commit': LOCKED}
    assert flag(d['argv'], '--model-path') == model['path']
    # The next run reads the lock and keeps that commit, even when the Hub's main has moved.
    (tmp_path / 'llmops-lock.yml').write_text(
        'schema: 1\nhosts:\n  ct-t: {repo_id: %s, requested: main, commit: %s, locked: x}\n' % (model['repo_id'], LOCKED))
    for commit in ('', MOVED):
        d = resolve(inventory_dir=str(tmp_path), model_commit=commit)
        assert (d['model']['revision'], d['model']['revision_source'], d['model']['lock']['write']) == (
            LOCKED, 'lock', None)
    assert any(MOVED in w and 'the lock keeps' in w for w in d['warnings'])


def test_a_broken_lock_is_refused_with_its_file(tmp_path):
    from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.resolve import resolve as _resolve
    from test_deployment_refusals import Loader, role_options
    (tmp_path / 'llmops-lock.yml').write_text('schema: 1\nhosts:\n  ct-t: {commit: main}\n')
    hosts, groups = seed()
    request = dict(host='ct-t', groups=groups, variables=hosts['ct-t'], vars_of=lambda name: hosts.get(name, {}),
                   overrides={}, p2p_verdict='', require_secrets=False, inventory_dir=str(tmp_path),
                   collection_profiles=os.path.join(ROOT, 'profiles'), role_options=role_options.ROLE_OPTIONS)
    problems = _resolve(request, Loader())[1]
    message = problems.message()
    assert str(tmp_path / 'llmops-lock.yml') + ': hosts.ct-t' in message and '40 lower-case hex' in message


def test_metrics_are_on_by_default_with_the_release_names():
    d = resolve()
    assert '--enable-metrics' in d['argv']
    assert d['settings']['enable_metrics'] == dict(value=True, source='collection default')
    metrics = d['metrics']
    assert metrics['enabled'] is True and metrics['path'] == '/metrics' and metrics['prefix'] == 'sglang:'
    assert metrics['url'] == d['http']['url'] + '/metrics'
    assert metrics['names']['running_requests'] == 'sglang:num_running_reqs'
    assert metrics['names']['verify_calls'] == 'sglang:spec_verify_calls_total'
    # The opt-out: no flag, and the object says so (the names stay: they describe the release).
    off = resolve(llmops_enable_metrics=False)
    assert '--enable-metrics' not in off['argv'] and off['metrics']['enabled'] is False
    assert off['settings']['enable_metrics']['value'] is False


def test_nothing_requested_leaves_sglang_its_own_max_running_requests():
    # Issue 26: a dense plan rendered --max-running-requests 4096 "bound by requested" although nothing was requested.
    # SGLang's rule for an unset value (mem_cache/kv_cache_configurator.py:3119-3172): the estimate
    # max(min(tokens / context_length * 512, 4096), 2048), capped by tokens // 2; under speculative decoding
    # arg_groups/speculative_hook.py:1086-1094 resets it to 48 first.
    # The seed's 4x RTX PRO 6000, TP4: a dense Llama whose estimate is below SGLang's 4096 ceiling.
    d = resolve(overrides={'llmops_model_profile': 'llama-3.3-70b-instruct', 'llmops_speculative_num_draft_tokens': 0})
    plan = d['plan']
    assert flag(d['argv'], '--max-running-requests') is None
    estimate = max(min(int(plan['kv_cache_tokens'] / float(plan['context_length']) * 512), 4096), 2048)
    assert plan['max_running_requests'] == min(estimate, plan['kv_cache_tokens'] // 2) < 4096
    assert plan['max_running_requests_bound_by'] == 'estimate'
    assert d['settings']['max_running_requests']['source'].startswith('sglang default (no flag')
    eagle = resolve(overrides={'llmops_model_profile': 'qwen3-32b-eagle3', 'llmops_gpu_profile': 'h200',
                               'llmops_tp_size': 1, 'llmops_gpu_indices': [0]})
    assert flag(eagle['argv'], '--max-running-requests') is None
    assert eagle['plan']['max_running_requests'] == 48
    assert eagle['plan']['max_running_requests_bound_by'] == 'speculative_default'
    # What-else-fits offers the flag at what SGLang would take without the reset (the same rule as above).
    tokens, context = eagle['plan']['kv_cache_tokens'], eagle['plan']['context_length']
    unset = min(max(min(int(tokens / float(context) * 512), 4096), 2048), tokens // 2)
    offered = [r for r in eagle['plan']['recommendations'] if r['flags'][0] == '--max-running-requests']
    assert offered and offered[0]['flags'] == ['--max-running-requests', str(unset)]
    assert offered[0]['effect']['max_running_requests'] == [48, unset]
    # An operator's value is still rendered, as the plan caps it.
    asked = resolve(overrides={'llmops_model_profile': 'llama-3.3-70b-instruct', 'llmops_speculative_num_draft_tokens': 0,
                               'llmops_max_running_requests': 64})
    assert flag(asked['argv'], '--max-running-requests') == '64'
    assert asked['plan']['max_running_requests_bound_by'] == 'requested'
