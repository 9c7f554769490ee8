# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Flag rules for both model profiles across SGLang releases (pure; the real parser is tests/sglang/)."""
import os

import pytest
import yaml

from ansible_collections.llmops.inference.plugins.module_utils.sglang import flags as f
from ansible_collections.llmops.inference.plugins.module_utils.sglang import release as sr

from collection_paths import PIN, ROOT, release_table_data


def profile(name):
    with open(os.path.join(ROOT, 'profiles', 'models', name + '.yml')) as stream:
        return yaml.safe_load(stream)


TABLE = release_table_data()
# Every release with flag rules; most have no planner rules, which only the renderer tests may do without.
FLAG_RELEASES = sorted((v for v, e in TABLE['releases'].items() if 'flags' in e), key=sr.version_key)


def rel(version=PIN):
    return sr.release(TABLE, version, need=('flags', 'defaults'))


Q122 = profile('qwen3.5-122b-a10b')
Q397 = profile('qwen3.5-397b-a17b-nvfp4')
PLAN = dict(mem_fraction_static=0.7851, max_running_requests=22, context_length=262144, chunked_prefill_size=8192)
SERVER = dict(model_path='/shared/models/Qwen3.5-122B-A10B', host='0.0.0.0', port=30000)


def flag(argv, name):
    return argv[argv.index(name) + 1] if name in argv else None


def render(version=PIN, model=Q122, plan=None, host=None, **server):
    return f.render(rel(version), model, PLAN if plan is None else plan, host or {}, dict(SERVER, **server))


def test_pin_has_every_kind_of_rules():
    # The modules call release() without `need`: the pin must have planner, flag rules and defaults.
    assert sr.release(TABLE, PIN)['planner_family'] == 'configurator'
    assert FLAG_RELEASES == ['0.5.9', '0.5.10', '0.5.11', '0.5.12', '0.5.15', '0.5.18', '0.5.20', '0.5.22', PIN]


def test_122b_on_the_pin_renders_the_seed_deployment():
    r = render(host=dict(gpu_indices=[0, 1, 2, 3], sev_snp=True))
    argv = r['argv']
    assert argv[:2] == ['--model-path', '/shared/models/Qwen3.5-122B-A10B']
    assert flag(argv, '--served-model-name') == 'qwen3.5-122b'
    assert flag(argv, '--tp-size') == '4'
    assert flag(argv, '--reasoning-parser') == 'qwen3'
    assert flag(argv, '--tool-call-parser') == 'qwen3_coder'
    assert [flag(argv, x) for x in ('--speculative-algorithm', '--speculative-num-steps', '--speculative-eagle-topk',
                                    '--speculative-num-draft-tokens')] == ['NEXTN', '3', '1', '4']
    assert flag(argv, '--mamba-radix-cache-strategy') == 'extra_buffer'
    assert '--mamba-scheduler-strategy' not in argv
    assert flag(argv, '--max-running-requests') == '22'
    assert flag(argv, '--mem-fraction-static') == '0.7851'
    assert flag(argv, '--context-length') == '262144'
    assert '--quantization' not in argv
    assert r['env'] == {'CUDA_VISIBLE_DEVICES': '0,1,2,3', 'CUDA_DEVICE_ORDER': 'PCI_BUS_ID', 'NCCL_P2P_DISABLE': '1',
                        'PYTHONUNBUFFERED': '1'}
    assert '--disable-custom-all-reduce' in argv
    assert r['preflight'] == [] and r['warnings'] == []


def test_never_abbreviated_flags():
    for version in FLAG_RELEASES:
        argv = render(version)['argv']
        assert '--speculative-algo' not in argv and '--tp' not in argv
        assert all(not a.startswith('--') or len(a) > 4 for a in argv)


@pytest.mark.parametrize('version, flag_name, spec_v2', [
    ('0.5.9', '--mamba-scheduler-strategy', '1'),
    ('0.5.10', '--mamba-scheduler-strategy', '1'),
    ('0.5.11', '--mamba-scheduler-strategy', None),
    ('0.5.12', '--mamba-scheduler-strategy', None),
    ('0.5.15', '--mamba-radix-cache-strategy', None),
    ('0.5.18', '--mamba-radix-cache-strategy', None),
    ('0.5.20', '--mamba-radix-cache-strategy', None),
    ('0.5.22', '--mamba-radix-cache-strategy', None),
    (PIN, '--mamba-radix-cache-strategy', None),
])
def test_mamba_flag_and_spec_v2_by_release(version, flag_name, spec_v2):
    r = render(version)
    assert flag(r['argv'], flag_name) == 'extra_buffer'
    other = ({'--mamba-scheduler-strategy', '--mamba-radix-cache-strategy'} - {flag_name}).pop()
    assert other not in r['argv']
    assert r['env'].get('SGLANG_ENABLE_SPEC_V2') == spec_v2


def test_unknown_release_is_refused():
    with pytest.raises(sr.ReleaseError, match='sglang 0.5.5: profiles/sglang_releases.yml has no entry for it'):
        render('0.5.5')
    # The modules' release() refuses flags-only releases; render() itself needs flags and defaults.
    with pytest.raises(sr.ReleaseError, match='has flag rules but no planner rules'):
        sr.release(TABLE, '0.5.12')
    with pytest.raises(f.FlagError, match='release is required'):
        f.render(PIN, Q122, PLAN, {}, SERVER)  # a version string is no release


def test_no_mtp_means_no_spec_flags_and_the_resolved_strategy_explicit():
    r = render(speculative_num_draft_tokens=0)
    assert not any(a.startswith('--speculative') for a in r['argv'])
    # The unit says what runs: auto resolves to extra_buffer with the overlap schedule on.
    assert flag(r['argv'], '--mamba-radix-cache-strategy') == 'extra_buffer' and r['mamba_strategy'] == 'extra_buffer'
    assert '--disable-overlap-schedule' not in r['argv']
    # Radix off: no strategy at all.
    r = render(speculative_num_draft_tokens=0, radix_cache=False)
    assert '--mamba-radix-cache-strategy' not in r['argv'] and r['mamba_strategy'] is None


def test_auto_resolving_to_no_buffer_turns_overlap_off_explicitly():
    # Overlap off and page 1: the pinned release's auto is no_buffer (and keeps overlap off).
    r = render(disable_overlap_schedule=True)
    assert flag(r['argv'], '--mamba-radix-cache-strategy') == 'no_buffer'
    assert r['argv'].count('--disable-overlap-schedule') == 1 and r['preflight'] == []
    # A model without extra_buffer support: auto is no_buffer, and SGLang turns the overlap schedule off.
    model = yaml.safe_load(yaml.safe_dump(Q122))
    model['config']['architectures'] = ['SomeHybridForCausalLM']
    r = render(model=model, speculative_num_draft_tokens=0)
    assert flag(r['argv'], '--mamba-radix-cache-strategy') == 'no_buffer'
    assert '--disable-overlap-schedule' in r['argv'] and r['preflight'] == []
    # 0.5.11 without MTP: auto is no_buffer with the overlap schedule off.
    r = render('0.5.11', speculative_num_draft_tokens=0)
    assert flag(r['argv'], '--mamba-scheduler-strategy') == 'no_buffer' and '--disable-overlap-schedule' in r['argv']


def test_397b_nvfp4_profile_has_quantization_and_fp4_backends_without_mtp():
    r = render(model=Q397, plan=dict(max_running_requests=64), host=dict(gpu_indices=list(range(8))),
               model_path='/m')
    argv = r['argv']
    assert flag(argv, '--quantization') == 'modelopt_fp4'
    assert flag(argv, '--moe-runner-backend') == 'flashinfer_cutlass'
    assert flag(argv, '--fp4-gemm-backend') == 'flashinfer_cudnn'
    assert flag(argv, '--tp-size') == '8'
    assert not any(a.startswith('--speculative') for a in argv)
    assert flag(argv, '--served-model-name') == 'qwen3.5-397b'
    assert r['env']['CUDA_VISIBLE_DEVICES'] == '0,1,2,3,4,5,6,7'


def test_missing_max_running_requests_with_mtp_warns_about_the_48_cap():
    r = render(plan={})
    assert '--max-running-requests' not in r['argv']
    assert any('reset to 48' in w for w in r['warnings'])


def test_gpu_indices_must_be_numeric():
    with pytest.raises(f.FlagError, match='not GPU-5f3c'):
        render(host=dict(gpu_indices=['GPU-5f3c']))
    with pytest.raises(f.FlagError, match='duplicate'):
        render(host=dict(gpu_indices=[0, 0, 1, 2]))
    assert render(host=dict(gpu_indices=[' 2', '0']))['env']['CUDA_VISIBLE_DEVICES'] == '2,0'


def test_too_few_gpus_for_tp_is_a_preflight_failure():
    checks = render(host=dict(gpu_indices=[0, 1]))['preflight']
    assert [c['check'] for c in checks] == ['gpu_count']


@pytest.mark.parametrize('host, expected', [
    (dict(p2p_verdict='use_nccl_p2p_disable'), True),
    (dict(p2p_verdict='p2p_ok', sev_snp=True), False),
    (dict(sev_snp=True), True),
    (dict(p2p_trusted=False), True),
    (dict(p2p_trusted=True), False),
    ({}, False),
])
def test_nccl_p2p_decision(host, expected):
    r = render(host=host)
    assert ('NCCL_P2P_DISABLE' in r['env']) is expected
    assert ('--disable-custom-all-reduce' in r['argv']) is expected


def test_explicit_p2p_setting_wins_and_single_gpu_needs_nothing():
    assert 'NCCL_P2P_DISABLE' not in render(host=dict(sev_snp=True), nccl_p2p_disable=False)['env']
    assert 'NCCL_P2P_DISABLE' not in render(host=dict(sev_snp=True), tp_size=1)['env']


def test_nccl_broken_verdict_is_refused():
    checks = render(host=dict(p2p_verdict='nccl_broken'))['preflight']
    assert checks[0]['check'] == 'nccl_broken'
    assert 'Init parallel begin.' in checks[0]['fix']


def test_multi_node_fields():
    r = render(tp_size=8, host=dict(nnodes=2, node_rank=1, dist_init_addr='10.0.0.1:5000', gpu_indices=[0, 1, 2, 3]))
    assert [flag(r['argv'], x) for x in ('--nnodes', '--node-rank', '--dist-init-addr')] == ['2', '1', '10.0.0.1:5000']
    assert r['preflight'] == []
    with pytest.raises(f.FlagError, match='dist_init_addr'):
        render(host=dict(nnodes=2, node_rank=0))


def test_tp_not_divisible_by_nodes():
    checks = render(tp_size=4, host=dict(nnodes=3, node_rank=0, dist_init_addr='h:1'))['preflight']
    assert checks[0]['message'] == 'tp_size must be divisible by number of nodes'


def test_served_name_with_colon_quotes_sglang():
    checks = render(served_model_name='qwen:122b')['preflight']
    assert checks[0]['message'].startswith("served_model_name cannot contain a colon (':') character. The colon is "
                                           "reserved for the 'model:adapter' syntax")
    assert 'qwen-122b' in checks[0]['fix']


def test_chunked_prefill_vs_page_size():
    checks = render(page_size=64, chunked_prefill_size=1000)['preflight']
    assert [c['message'] for c in checks] == ['chunked_prefill_size must be divisible by page_size']
    assert render(page_size=64, chunked_prefill_size=8192)['preflight'] == []
    # The plan's (SGLang default) chunk size is checked too.
    assert render(page_size=48, plan=dict(PLAN, chunked_prefill_size=8192))['preflight'][0]['check'] \
        in ('mamba_page_size', 'chunked_prefill_page')


def test_context_longer_than_the_model_needs_the_override_env():
    checks = render(context_length=300000)['preflight']
    assert checks[0]['check'] == 'context_length'
    assert 'SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1' in checks[0]['message']
    ok = render(context_length=300000, extra_env={'SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN': '1'})
    assert ok['preflight'] == []


def test_mtp_radix_no_buffer_on_apr_releases_quotes_the_valueerror():
    checks = render('0.5.12', mamba_strategy='no_buffer')['preflight']
    assert checks[0]['check'] == 'spec_radix_mamba'
    assert checks[0]['message'] == (
        'Speculative decoding for Qwen3_5MoeForConditionalGeneration is not compatible with radix cache when using '
        '--mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, please use '
        '--mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1.')


def test_no_buffer_on_head_needs_overlap_off():
    checks = render(mamba_strategy='no_buffer')['preflight']
    assert [c['message'] for c in checks] == [
        'no_buffer do not support overlap schedule. Try to set disable_overlap_schedule=True.']
    assert render(mamba_strategy='no_buffer', disable_overlap_schedule=True)['preflight'] == []


def test_extra_buffer_without_radix_and_lazy_on_old_release():
    checks = render('0.5.12', radix_cache=False, mamba_strategy='extra_buffer')['preflight']
    assert checks[0]['message'].startswith('mamba extra_buffer is not compatible with --disable-radix-cache')
    with pytest.raises(f.FlagError, match="mamba_strategy 'extra_buffer_lazy' is not one of the choices of "
                                          "--mamba-scheduler-strategy in sglang 0.5.12"):
        render('0.5.12', mamba_strategy='extra_buffer_lazy')
    with pytest.raises(f.FlagError, match='extra_buffer_lazy'):
        render('0.5.12', mamba_strategy='extra_buffer_lazy', radix_cache=False)
    assert flag(render(mamba_strategy='extra_buffer_lazy')['argv'], '--mamba-radix-cache-strategy') == 'extra_buffer_lazy'


def test_backend_checks_on_blackwell():
    checks = render(attention_backend='fa3', host=dict(compute_capability='12.0'))['preflight']
    assert [c['check'] for c in checks] == ['fa3_blackwell', 'gdn_blackwell_backend']
    assert render(attention_backend='triton', host=dict(compute_capability='12.0'))['preflight'] == []


def test_extra_args_abbreviations_and_api_key_are_refused():
    with pytest.raises(f.FlagError, match='--speculative-algorithm'):
        render(extra_args=['--speculative-algo', 'NEXTN'])
    with pytest.raises(f.FlagError, match='--mamba-radix-cache-strategy'):
        render(extra_args=['--mamba-scheduler-strategy', 'extra_buffer'])
    with pytest.raises(f.FlagError, match='api-key'):
        render(extra_args=['--api-key', 'x'])


def test_mtp_on_a_checkpoint_without_mtp_layers():
    model = yaml.safe_load(yaml.safe_dump(Q122))
    model['config']['text_config']['mtp_num_hidden_layers'] = 0
    assert render(model=model)['preflight'][0]['check'] == 'mtp_layers'


def test_exec_start_quoting():
    assert f.exec_start(['/opt/v/bin/python', '-m', 'sglang.launch_server', '--x', 'a b', '100%', '$HOME', 'q"']) == \
        '/opt/v/bin/python -m sglang.launch_server --x "a b" "100%%" "$$HOME" "q\\""'


def test_format_preflight():
    text = f.format_preflight(PIN, [dict(check='c', message='m.', fix='f.')])
    assert 'SGLang %s would refuse' % PIN in text and '1. [c] SGLang: "m." Fix: f.' in text


def test_release_specific_refusals():
    # The pinned release's mamba hook no longer refuses extra_buffer without the radix cache; 0.5.12 does.
    assert render(radix_cache=False, mamba_strategy='extra_buffer')['preflight'] == []
    # Pipeline parallelism with MTP: each release's own wording.
    assert render('0.5.12', pp_size=2)['preflight'][-1]['message'].startswith('Pipeline parallelism is not compatible')
    assert render(pp_size=2)['preflight'][-1]['message'].startswith('PP + speculative decoding (MTP)')
    # Spec v2's topk = 1 limit is a 0.5.9-0.5.12 rule.
    assert [c['check'] for c in render('0.5.12', speculative_eagle_topk=2)['preflight']] == ['spec_v2_topk']
    assert render(speculative_eagle_topk=2)['preflight'] == []


def test_values_are_checked_against_the_release_choices():
    model = yaml.safe_load(yaml.safe_dump(Q122))
    model['serving']['tool_call_parser'] = 'qwen3-coder'
    with pytest.raises(f.FlagError) as exc:
        render(model=model)
    assert "tool_call_parser 'qwen3-coder' is not one of the choices of --tool-call-parser in sglang %s " \
        "(nearest: qwen3_coder)" % PIN in str(exc.value)
    with pytest.raises(f.FlagError, match='nearest: fp8_e4m3'):
        render(kv_cache_dtype='fp8-e4m3')
    with pytest.raises(f.FlagError, match='--attention-backend'):
        render(attention_backend='flash_infer')
    # "auto" of the dtype options renders nothing and needs no choice; releases without recorded choices pass.
    assert '--kv-cache-dtype' not in render(kv_cache_dtype='auto', mamba_ssm_dtype='auto')['argv']
    assert flag(render('0.5.20', attention_backend='anything')['argv'], '--attention-backend') == 'anything'


def test_blackwell_gdn_backends_of_the_pin():
    # layers/attention/attention_registry.py HYBRID_GDN_SM100_BACKENDS includes flashinfer; SM120 has no fa4.
    assert render(attention_backend='flashinfer', host=dict(compute_capability='10.0'))['preflight'] == []
    checks = render(attention_backend='fa4', host=dict(compute_capability='12.0'))['preflight']
    assert [c['check'] for c in checks] == ['gdn_blackwell_backend']


def test_gpus_per_node_is_one_rule():
    assert f.gpus_per_node(8, 2) == 4 and f.gpus_per_node(4) == 4 and f.gpus_per_node(2, 2, pp_size=2) == 2
    # Not a whole number of GPUs per node (or no TP size at all): no count to check against.
    assert [f.gpus_per_node(*a) for a in ((8, 3), (0, 1), (None, 2), (4, 0))] == [None] * 4
    # tp 8 over 3 nodes is refused as tp_nnodes alone: no gpu_count refusal with a made-up per-node count.
    checks = render(tp_size=8, host=dict(nnodes=3, node_rank=0, dist_init_addr='h:1', gpu_indices=[0]))['preflight']
    assert 'tp_nnodes' in [c['check'] for c in checks] and 'gpu_count' not in [c['check'] for c in checks]
    checks = render(tp_size=8, host=dict(nnodes=2, node_rank=0, dist_init_addr='h:1', gpu_indices=[0]))['preflight']
    assert [c['message'] for c in checks if c['check'] == 'gpu_count'] == [
        'tp_size 8 x pp_size 1 over 2 node(s) needs 4 GPUs per node; CUDA_VISIBLE_DEVICES lists 1.']


def test_explicit_else_the_plans_value():
    plan = dict(PLAN, max_running_requests=22)
    r = render(plan=plan, mem_fraction_static=0.5, context_length=4096, max_running_requests=8,
               chunked_prefill_size=2048)
    assert [flag(r['argv'], x) for x in ('--mem-fraction-static', '--context-length', '--max-running-requests')] == \
        ['0.5', '4096', '8']
    r = render(plan=plan)
    assert [flag(r['argv'], x) for x in ('--mem-fraction-static', '--context-length', '--max-running-requests')] == \
        ['0.7851', '262144', '22']
    assert f.planned(dict(context_length=0), dict(context_length=5), 'context_length') == 0


def test_context_refusal_is_sglangs_wording_for_target_and_draft():
    message = ('Warning: User-specified context_length (300000) is greater than the derived context_length (262144). '
               'This may lead to incorrect model outputs or CUDA errors. Note that the derived context_length may '
               "differ from max_position_embeddings in the model's config. To allow overriding this maximum, set the "
               'env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1')
    checks = render(context_length=300000)['preflight']
    assert [(c['check'], c['message'], c['fix']) for c in checks] == [
        ('context_length', message, 'Lower llmops_context_length to at most 262144.')]
    # The EAGLE-3 draft's own limit: the same refusal with the target's context, unless the environment allows it.
    eagle = profile('qwen3-32b-eagle3')
    eagle['serving']['speculative']['draft']['config']['max_position_embeddings'] = 2048
    checks = render(model=eagle, plan={}, speculative_draft_model_path='/d')['preflight']
    assert [c['message'] for c in checks if c['check'] == 'draft_context_length'] == [
        message.replace('User-specified', "Target model's").replace('300000', '40960').replace('262144', '2048')]
    assert render(model=eagle, plan={}, speculative_draft_model_path='/d',
                  extra_env={'SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN': '1'})['preflight'] == []
