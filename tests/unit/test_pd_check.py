# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The PD layout checker (plugins/module_utils/sglang/pd_check.py): known-good layouts accepted, each known-bad one
refused with its rule named, the values, the fix and SGLang's lines; every rule has a case here (a rule without one,
or a case whose rule no longer fires, fails). That the rules are SGLang's own: tests/sglang/test_pd_parser.py."""

from __future__ import absolute_import, division, print_function

import copy
import re

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.sglang import pd_check


def seed(**changes):
    """The seed model (Qwen3.5-122B-A10B, GQA + GDN, no MLA, no SWA) on one 8-GPU host over TCP: accepted."""
    layout = dict(
        arch='Qwen3_5MoeForConditionalGeneration', mla=False, sliding_window=False, transfer_backend='mooncake_tcp',
        devices=dict(infiniband=False, memlock_unlimited=False),
        prefill=dict(host='gpu1', listen='0.0.0.0', http_port=30000, bootstrap_port=8998, tp=4, speculative='NEXTN'),
        decode=dict(host='gpu1', listen='0.0.0.0', http_port=30001, tp=4, speculative='NEXTN', radix_cache=False),
        gateway=dict(host='gpu1', port=8080))
    for key, value in changes.items():
        if '.' in key:
            side, field = key.split('.', 1)
            layout[side] = dict(layout[side], **{field: value})
        else:
            layout[key] = value
    return layout


def rules(layout, release=None):
    return [r['rule'] for r in pd_check.check(layout, release)]


# name -> (layout changes, the rule that must be among the refusals)
BAD = {
    'backend not a choice': (dict(transfer_backend='tcp'), 'transfer_backend_choice'),
    'fake backend': (dict(transfer_backend='fake'), 'transfer_backend_fake'),
    'ascend on NVIDIA': (dict(transfer_backend='ascend'), 'transfer_backend_foreign'),
    'mori on NVIDIA': (dict(transfer_backend='mori'), 'transfer_backend_foreign'),
    'mooncake without its package': (dict(packages=['sglang', 'torch']), 'transfer_engine_package'),
    'mooncake RDMA without /dev/infiniband': (dict(transfer_backend='mooncake'), 'rdma_devices'),
    'nixl with IB but no memlock': (dict(transfer_backend='nixl', devices=dict(infiniband=True)), 'rdma_devices'),
    'ib_device without an HCA': (dict(transfer_backend='mooncake', ib_device='mlx5_0',
                                      devices=dict(infiniband=False, memlock_unlimited=True)), 'ib_device_sysfs'),
    'TP 4 prefill, TP 2 decode, non-MLA': (dict(**{'decode.tp': 2}), 'tp_mismatch'),
    'TP 4 and TP 3 (MLA)': (dict(mla=True, **{'decode.tp': 3}), 'tp_ratio'),
    'SWA model with TP 4 / 2': (dict(sliding_window=True, **{'decode.tp': 2}), 'swa_tp_mismatch'),
    'page size 64 / default': (dict(**{'prefill.page_size': 64}), 'page_size_mismatch'),
    'fp8 KV on decode only': (dict(**{'decode.kv_cache_dtype': 'fp8_e4m3'}), 'kv_cache_dtype_mismatch'),
    'pp 2 prefill, pp 3 decode': (dict(**{'prefill.pp': 2, 'decode.pp': 3, 'decode.speculative': None,
                                          'prefill.speculative': None}), 'pp_mismatch'),
    'pp 2 decode with MTP': (dict(**{'prefill.pp': 2, 'decode.pp': 2}), 'pp_speculative'),
    'pp 2 prefill with NGRAM': (dict(**{'prefill.pp': 2, 'prefill.speculative': 'NGRAM', 'decode.speculative': 'NGRAM'}),
                                'pp_speculative'),
    'MTP on the prefill only': (dict(**{'decode.speculative': None}), 'speculative_prefill_only'),
    'decode radix + NGRAM': (dict(**{'prefill.speculative': None, 'decode.speculative': 'NGRAM',
                                     'decode.radix_cache': True}), 'decode_radix_speculative'),
    'decode radix cache on Gemma 4': (dict(arch='Gemma4ForConditionalGeneration', sliding_window=True,
                                           **{'decode.radix_cache': True}), 'decode_radix_swa_compress'),
    'allocation policies differ': (dict(**{'decode.allocation_policy': 'prefill_complete'}), 'allocation_policy'),
    'prefill_complete with TP 4': (dict(allocation_policy='prefill_complete'), 'allocation_policy'),
    'prefill_complete with nixl': (dict(allocation_policy='prefill_complete', transfer_backend='nixl',
                                        devices=dict(infiniband=True, memlock_unlimited=True),
                                        **{'prefill.tp': 1, 'decode.tp': 1}), 'allocation_policy'),
    'decode http_port = prefill bootstrap_port': (dict(**{'decode.http_port': 8998}), 'ports'),
    'gateway on the prefill port': (dict(gateway=dict(host='gpu1', port=30000)), 'ports'),
    'DP attention range hits the decode port': (dict(**{'prefill.dp_attention': True, 'prefill.dp': 4,
                                                        'decode.dp_attention': True, 'decode.dp': 4,
                                                        'decode.http_port': 30233}), 'ports'),
    'prefill on loopback, decode elsewhere': (dict(**{'prefill.listen': '127.0.0.1', 'decode.host': 'gpu2'}),
                                              'bootstrap_reachable'),
}


def test_the_seed_layout_is_accepted():
    assert pd_check.check(seed()) == []


@pytest.mark.parametrize('name, changes', [
    ('RDMA with /dev/infiniband and memlock', dict(
        transfer_backend='mooncake', ib_device='mlx5_0', devices=dict(infiniband=True, memlock_unlimited=True))),
    ('MLA model with TP 4 prefill, TP 2 decode', dict(mla=True, **{'decode.tp': 2})),
    ('MLA sliding-window model with TP 4 / 8', dict(mla=True, sliding_window=True, **{'decode.tp': 8})),
    ('MTP on the decode only', dict(**{'prefill.speculative': None})),
    ('decode radix + NEXTN (SGLang resolves it to EAGLE)', dict(**{'decode.radix_cache': True})),
    ('decode radix + EAGLE3', dict(**{'prefill.speculative': 'EAGLE3', 'decode.speculative': 'EAGLE3',
                                      'decode.radix_cache': True})),
    ('the same explicit page size and fp8 KV', dict(**{'prefill.page_size': 64, 'decode.page_size': 64,
                                                       'prefill.kv_cache_dtype': 'fp8_e4m3',
                                                       'decode.kv_cache_dtype': 'fp8_e4m3'})),
    ('pp 2 prefill with MTP (NEXTN is EAGLE), pp 1 decode', dict(**{'prefill.pp': 2})),
    ('pp 2 on both sides without speculative decoding', dict(**{'prefill.pp': 2, 'decode.pp': 2,
                                                                'prefill.speculative': None, 'decode.speculative': None})),
    ('prefill_complete on attention-TP 1 over mooncake_tcp', dict(
        allocation_policy='prefill_complete', **{'prefill.tp': 4, 'prefill.dp': 4, 'prefill.dp_attention': True,
                                                 'decode.tp': 4, 'decode.dp': 4, 'decode.dp_attention': True,
                                                 'decode.http_port': 31000})),
    ('two hosts, the same ports on each', dict(**{'decode.host': 'gpu2', 'decode.http_port': 30000,
                                                  'decode.bootstrap_port': 8998})),
    ('both on loopback on one host, no gateway', dict(gateway=None, **{'prefill.listen': None,
                                                                       'decode.listen': None})),
    ('the mooncake package in the lock', dict(packages=['sglang', 'mooncake-transfer-engine-cuda13'])),
])
def test_known_good_layouts_are_accepted(name, changes):
    assert pd_check.check(seed(**changes)) == [], name


@pytest.mark.parametrize('name', sorted(BAD))
def test_known_bad_layouts_are_refused_with_their_rule(name):
    changes, rule = BAD[name]
    refusals = pd_check.check(seed(**changes))
    assert rule in [r['rule'] for r in refusals], (name, refusals)
    for refusal in refusals:
        assert sorted(refusal) == ['enforced_by', 'fix', 'message', 'rule', 'source']
        assert refusal['message'] and refusal['fix']
        assert refusal['source'] == pd_check.source(refusal['rule'])
        assert re.match(r'^sglang/srt/[\w/]+\.py:\d+(-\d+)?(; sglang/srt/[\w/]+\.py:\d+(-\d+)?)*$', refusal['source'])
        assert refusal['enforced_by'] in ('sglang_startup', 'sglang_transfer', 'collection')


def test_every_rule_has_a_known_bad_case():
    assert sorted(set(rule for dummy, rule in BAD.values())) == sorted(pd_check.RULES)


def test_the_messages_name_the_values():
    refusal = [r for r in pd_check.check(seed(**{'decode.tp': 2})) if r['rule'] == 'tp_mismatch'][0]
    assert 'attention TP 4' in refusal['message'] and 'attention TP 2' in refusal['message']
    assert 'Qwen3_5MoeForConditionalGeneration' in refusal['message']
    assert 'same tp' in refusal['fix'] and refusal['enforced_by'] == 'collection'
    assert refusal['source'].startswith('sglang/srt/disaggregation/common/conn.py:1457-1472')
    rdma = [r for r in pd_check.check(seed(transfer_backend='mooncake', devices=dict(infiniband=True)))
            if r['rule'] == 'rdma_devices']
    assert len(rdma) == 2 and 'LimitMEMLOCK=infinity' in rdma[0]['message']
    assert '/dev/infiniband and LimitMEMLOCK' not in rdma[0]['message'] and 'mooncake_tcp' in rdma[0]['fix']
    radix = [r for r in pd_check.check(seed(**BAD['decode radix + NGRAM'][0])) if r['rule'] == 'decode_radix_speculative']
    assert '(--speculative-algorithm NGRAM)' in radix[0]['message']
    port = [r for r in pd_check.check(seed(**{'decode.http_port': 8998})) if r['rule'] == 'ports'][0]
    assert 'port 8998 on gpu1' in port['message'] and 'prefill[0] bootstrap_port' in port['message']


def test_one_refusal_per_rule_and_pair_in_a_clean_case():
    # A single fault gives exactly its own rule (the rules do not fire on each other's faults).
    assert rules(seed(**{'decode.kv_cache_dtype': 'fp8_e4m3'})) == ['kv_cache_dtype_mismatch']
    assert rules(seed(mla=True, **{'decode.tp': 3})) == ['tp_ratio']
    assert rules(seed(**{'decode.tp': 2})) == ['tp_mismatch']
    assert rules(seed(sliding_window=True, **{'decode.tp': 2})) == ['tp_mismatch', 'swa_tp_mismatch']


def test_several_workers_each_pair_and_port_is_checked():
    layout = seed()
    layout['prefill'] = [layout['prefill'], dict(layout['prefill'], http_port=30002, bootstrap_port=8998)]
    refusals = pd_check.check(layout)
    assert [r['rule'] for r in refusals] == ['ports']
    assert 'prefill[0] bootstrap_port and prefill[1] bootstrap_port' in refusals[0]['message']
    layout['prefill'][1]['bootstrap_port'] = 8999
    layout['prefill'][1]['tp'] = 2
    assert rules(layout) == ['tp_mismatch']


def test_the_release_may_override_the_facts():
    release = dict(version='x', pd=dict(transfer_backends=['mooncake', 'mooncake_tcp', 'tcp'], tcp_backends=['tcp']))
    assert rules(seed(transfer_backend='tcp'), release) == []
    assert rules(seed(transfer_backend='tcp')) == ['transfer_backend_choice']
    with pytest.raises(pd_check.PDLayoutError, match='unknown keys bootstrap'):
        pd_check.check(seed(), dict(pd=dict(bootstrap=1)))
    assert pd_check.FACTS['transfer_backends'][0] == 'mooncake'  # not changed by an override


@pytest.mark.parametrize('layout, match', [
    ('x', 'must be a mapping'),
    (dict(prefill=dict(host='a', http_port=1, tp=1)), 'layout.decode'),
    (seed(**{'decode.tp': 0}), 'decode\\[0\\].tp must be a positive integer'),
    (seed(**{'decode.host': None}), 'decode\\[0\\].host'),
    (seed(**{'decode.dp_attention': True, 'decode.dp': 3}), 'not divisible by the attention DP size 3'),
])
def test_a_malformed_layout_is_an_error(layout, match):
    with pytest.raises(pd_check.PDLayoutError, match=match):
        pd_check.check(layout)


def test_extra_args_and_server_options():
    layout = seed(transfer_backend='mooncake', ib_device='mlx5_0', **{'decode.radix_cache': True})
    assert pd_check.extra_args(layout, 'prefill') == [
        '--disaggregation-mode', 'prefill', '--disaggregation-transfer-backend', 'mooncake',
        '--disaggregation-bootstrap-port', '8998', '--disaggregation-ib-device', 'mlx5_0']
    assert pd_check.extra_args(layout, 'decode') == [
        '--disaggregation-mode', 'decode', '--disaggregation-transfer-backend', 'mooncake',
        '--disaggregation-ib-device', 'mlx5_0', '--disaggregation-decode-enable-radix-cache']
    # mooncake_tcp drops the HCA (SGLang does too: pd_disaggregation_hook.py:37-41); the default policy is not rendered.
    tcp = seed(ib_device='mlx5_0', allocation_policy='early')
    assert '--disaggregation-ib-device' not in pd_check.extra_args(tcp, 'prefill')
    assert '--disaggregation-decode-allocation-policy' not in pd_check.extra_args(tcp, 'decode')
    assert pd_check.extra_args(seed(allocation_policy='prefill_complete'), 'decode')[-2:] == [
        '--disaggregation-decode-allocation-policy', 'prefill_complete']
    options = pd_check.server_options(seed(**{'decode.speculative': None}), 'decode')
    assert options == dict(host='0.0.0.0', port=30001, tp_size=4, radix_cache=False, speculative_num_draft_tokens=0,
                           extra_args=['--disaggregation-mode', 'decode', '--disaggregation-transfer-backend',
                                       'mooncake_tcp'])
    options = pd_check.server_options(seed(**{'prefill.dp_attention': True, 'prefill.dp': 2, 'prefill.page_size': 64,
                                              'prefill.kv_cache_dtype': 'fp8_e4m3', 'prefill.pp': 2}), 'prefill')
    assert (options['dp_size'], options['enable_dp_attention'], options['page_size'], options['kv_cache_dtype'],
            options['pp_size'], options['disable_overlap_schedule'], options['speculative_algorithm']) == (
        2, True, 64, 'fp8_e4m3', 2, True, 'NEXTN')
    assert 'radix_cache' not in options
    with pytest.raises(pd_check.PDLayoutError, match='side must be'):
        pd_check.extra_args(seed(), 'gateway')


def test_gateway_args_carry_each_bootstrap_port():
    layout = seed(**{'decode.host': 'fe80::1'})
    layout['prefill'] = [layout['prefill'], dict(layout['prefill'], host='gpu3', bootstrap_port=9000)]
    assert pd_check.gateway_args(layout) == [
        '--pd-disaggregation', '--prefill', 'http://gpu1:30000', '8998', '--prefill', 'http://gpu3:30000', '9000',
        '--decode', 'http://[fe80::1]:30001']
    del layout['prefill'][0]['bootstrap_port']
    assert pd_check.gateway_args(layout)[3] == str(pd_check.FACTS['bootstrap_port_default'])


def test_format_refusals():
    text = pd_check.format_refusals(pd_check.check(seed(**{'decode.tp': 2})))
    assert text.splitlines()[1].startswith('1. [tp_mismatch] ')
    assert 'Fix: Give the prefill and the decode workers the same tp' in text
    assert '(SGLang: sglang/srt/disaggregation/common/conn.py:1457-1472; ' in text


def test_check_does_not_change_the_layout():
    layout = seed(**{'decode.tp': 2})
    before = copy.deepcopy(layout)
    pd_check.check(layout)
    pd_check.server_options(layout, 'prefill')
    assert layout == before
