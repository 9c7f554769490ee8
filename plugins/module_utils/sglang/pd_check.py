# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Prefill/decode (PD) disaggregation layouts: a static check against SGLang's own PD rules, and the PD flags.

PRIVATE to the collection. Pure, stdlib only. Nothing here deploys anything: it says whether a layout of prefill and
decode workers would run under the pinned SGLang, and renders the flags that make a worker a prefill or a decode
server (to be passed to ``sglang_flags.render()`` as ``server['extra_args']``) and the gateway's PD arguments.

Every rule is SGLang's own, read in the pinned release's source (paths under ``sglang/srt/``); each cites the lines
and a quote from them (``RULES``). ``tests/sglang/test_pd_parser.py`` (run by ``tests/sglang/run-parser-tests.sh``)
checks every quote against the installed release, the facts in ``FACTS`` against its parser and hooks, and the
rendered prefill and decode argv of the seed model against its own ``ServerArgs`` parser.

Public API (stable; ``plugins/module_utils/compare`` may filter PD layouts with ``check()``):

``check(layout, release=None) -> [dict(rule, message, fix, source, enforced_by)]`` -- an empty list: accepted.
  rule         a ``RULES`` key
  message      what is wrong, with the values (house style of vram_plan's PlanError messages)
  fix          what to change
  source       SGLang's lines, e.g. ``sglang/srt/arg_groups/speculative_hook.py:164-173``
  enforced_by  ``sglang_startup`` (SGLang refuses to start), ``sglang_transfer`` (SGLang starts, then fails or hangs
               at the first KV transfer), ``collection`` (SGLang only warns or does not look; the collection refuses)

``layout`` (unknown keys are ignored; a malformed layout raises PDLayoutError)::

  arch               the model's architecture (model_facts()['arch']; the SWA-compress rule and the messages)
  mla                bool: MLA attention (model_facts()['attention'] == 'mla')
  sliding_window     bool: hybrid sliding-window attention (model_facts()['n_swa'] > 0)
  transfer_backend   --disaggregation-transfer-backend (default: FACTS['transfer_backend_default'])
  devices            dict(infiniband: bool (/dev/infiniband in the container), memlock_unlimited: bool
                     (LimitMEMLOCK=infinity)); a worker's own ``devices`` wins
  ib_device          optional --disaggregation-ib-device
  allocation_policy  optional --disaggregation-decode-allocation-policy (both roles; a worker's own wins)
  packages           optional: the distribution names the workers' venv installs (e.g. the lock's); then the
                     transfer engine's package must be among them
  prefill, decode    one worker dict or a list of them:
                     host (the machine), http_port, bootstrap_port (prefill; default FACTS), tp, dp (attention DP
                     size, with dp_attention true), pp, page_size (None: SGLang's), kv_cache_dtype ('auto'),
                     radix_cache (decode: --disaggregation-decode-enable-radix-cache), speculative (the
                     --speculative-algorithm, None: off), listen (the --host it binds; default 127.0.0.1, as
                     sglang_flags renders)
  gateway            optional dict(host, port): the smg router in front of them

``release``: optional. A dict whose ``pd`` mapping overrides ``FACTS`` keys (a release table entry once it records
PD facts); otherwise FACTS, which are the pinned release's (the parser test fails when a new pin changes them).

``extra_args(layout, side, index=0)``: the PD flags of one worker. ``server_options(layout, side, index=0)``: the
``server`` overrides for ``sglang_flags.render()`` (port, TP, DP, page size, KV dtype, speculative off, radix cache
and those extra args). ``gateway_args(layout)``: ``--pd-disaggregation --prefill URL BOOTSTRAP --decode URL``.
``format_refusals(refusals)``: one numbered message.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

# The pinned release's PD facts (sglang/srt paths; tests/sglang/test_pd_parser.py compares them with the release).
FACTS = dict(
    # arg_groups/choices.py:122-129 DISAGG_TRANSFER_BACKEND_CHOICES; arg_groups/fields/disagg.py:65-71 default.
    transfer_backends=['mooncake', 'nixl', 'ascend', 'fake', 'mori', 'mooncake_tcp'],
    transfer_backend_default='mooncake',
    # Mooncake's default protocol is rdma (environ.py:887, mooncake_transfer_engine.py:207-209); NIXL's default
    # backend is UCX (environ.py:766), which registers the GPU KV pools for RDMA.
    rdma_backends=['mooncake', 'nixl'],
    # mooncake_tcp: mooncake with MC_FORCE_TCP=1 (arg_groups/pd_disaggregation_hook.py:27-45).
    tcp_backends=['mooncake_tcp'],
    # Backends for other accelerators (disaggregation/ascend: memfabric_hybrid; disaggregation/mori: AMD's mori) and
    # the synthetic one that moves no KV (disaggregation/fake).
    foreign_backends=['ascend', 'mori'],
    # The import each backend needs, which the sglang wheel does not require (mooncake_transfer_engine.py:119-126,
    # disaggregation/nixl/conn.py:543): distribution-name prefixes on PyPI.
    engine_packages={'mooncake': ['mooncake-transfer-engine'], 'mooncake_tcp': ['mooncake-transfer-engine'],
                     'nixl': ['nixl']},
    # arg_groups/fields/disagg.py:81-83.
    bootstrap_port_default=8998,
    # arg_groups/fields/disagg.py:59-64.
    allocation_policies=['early', 'prefill_complete'],
    allocation_policy_default='early',
    # arg_groups/speculative_hook.py:109-116 (NEXTN -> EAGLE) and 164-173 (the algorithms decode radix allows).
    spec_aliases={'NEXTN': 'EAGLE'},
    radix_spec_algorithms=['DSPARK', 'EAGLE', 'EAGLE3'],
    # configs/model_config.py:74-77 and 1246-1256: the SWA-compress architectures (no decode radix cache,
    # mem_cache/kv_cache_builder.py:301-305).
    swa_compress_archs=['MiMoV2ForCausalLM', 'MiMoV2FlashForCausalLM', 'MiMoV2MTP', 'Gemma4ForCausalLM',
                        'Gemma4ForConditionalGeneration', 'EmbeddingGemma2Model', 'InklingForConditionalGeneration',
                        'InklingForConditionalGenerationMTP', 'Gemma4UnifiedForConditionalGeneration',
                        'DiffusionGemmaForBlockDiffusion'],
    # arg_groups/validation_hook.py:119-164: the algorithms pipeline parallelism runs (on a prefill server only).
    pp_spec_algorithms=['DSPARK', 'EAGLE'],
    # server_args.py:728, 818-848: with DP attention on one node, dist_init_port = --port + 233 and the six ports
    # above it (port_base .. port_base + 5).
    dp_port_delta=233,
    dp_port_count=7,
)

# rule -> where SGLang says it: [(path under sglang/srt, first line, last line, a quote from those lines)] and who
# refuses it.
RULES = {
    'transfer_backend_choice': dict(enforced_by='sglang_startup', cites=[
        ('arg_groups/choices.py', 122, 129, 'DISAGG_TRANSFER_BACKEND_CHOICES = [')]),
    'transfer_backend_fake': dict(enforced_by='sglang_startup', cites=[
        ('arg_groups/pd_disaggregation_hook.py', 145, 148,
         "Prefill server does not support 'fake' as the transfer backend")]),
    'transfer_backend_foreign': dict(enforced_by='sglang_startup', cites=[
        ('disaggregation/utils.py', 742, 769, 'elif transfer_backend == TransferBackend.MORI:'),
        ('disaggregation/ascend/transfer_engine.py', 13, 18, 'from memfabric_hybrid import TransferEngine'),
        ('disaggregation/mori/conn.py', 17, 18, 'from mori.cpp import TransferStatus')]),
    'transfer_engine_package': dict(enforced_by='sglang_startup', cites=[
        ('distributed/device_communicators/mooncake_transfer_engine.py', 119, 126, 'Please install mooncake by following'),
        ('disaggregation/nixl/conn.py', 543, 543, 'from nixl._api import nixl_agent')]),
    'rdma_devices': dict(enforced_by='sglang_startup', cites=[
        ('environ.py', 887, 887, 'MOONCAKE_PROTOCOL = EnvStr("rdma")'),
        ('distributed/device_communicators/mooncake_transfer_engine.py', 145, 153, 'Mooncake memory registration failed'),
        ('environ.py', 766, 766, 'SGLANG_DISAGGREGATION_NIXL_BACKEND = EnvStr("UCX")'),
        ('arg_groups/pd_disaggregation_hook.py', 27, 45, 'os.environ.setdefault("MC_FORCE_TCP", "1")')]),
    'ib_device_sysfs': dict(enforced_by='sglang_startup', cites=[
        ('arg_groups/validation_hook.py', 535, 541, 'InfiniBand sysfs path not found')]),
    'tp_mismatch': dict(enforced_by='collection', cites=[
        ('disaggregation/common/conn.py', 1457, 1472,
         'Performance is NOT guaranteed when using different TP sizes for non-MLA models'),
        ('disaggregation/common/conn.py', 1395, 1409, 'PD Disaggregation does NOT support different attention TP')]),
    'tp_ratio': dict(enforced_by='sglang_transfer', cites=[
        ('disaggregation/common/conn.py', 1452, 1485, 'self.attn_tp_size // info.attn_tp_size')]),
    'swa_tp_mismatch': dict(enforced_by='sglang_transfer', cites=[
        ('disaggregation/mooncake/conn.py', 2083, 2092,
         'does NOT support PD different TP sizes for non-MLA {st.upper()} hybrid models yet.'),
        ('disaggregation/nixl/conn.py', 3184, 3202,
         'does NOT support PD different TP sizes for non-MLA {st.upper()} hybrid models yet.')]),
    'page_size_mismatch': dict(enforced_by='sglang_transfer', cites=[
        ('disaggregation/common/conn.py', 1320, 1325, 'Both servers must use the same --page-size value.')]),
    'kv_cache_dtype_mismatch': dict(enforced_by='sglang_transfer', cites=[
        ('disaggregation/common/conn.py', 1327, 1335, 'Both servers must use the same --kv-cache-dtype value.')]),
    'pp_mismatch': dict(enforced_by='sglang_transfer', cites=[
        ('disaggregation/common/conn.py', 1515, 1518, 'should be equal to prefill pp size ({info.pp_size}) or 1')]),
    'pp_speculative': dict(enforced_by='sglang_startup', cites=[
        ('arg_groups/validation_hook.py', 119, 138, 'Pipeline parallelism currently only supports EAGLE'),
        ('arg_groups/validation_hook.py', 139, 164, 'PP + speculative decoding (MTP) is only supported on prefill nodes')]),
    'speculative_prefill_only': dict(enforced_by='sglang_transfer', cites=[
        ('disaggregation/nixl/conn.py', 1483, 1492, 'decode registered fewer KV regions'),
        ('disaggregation/common/conn.py', 1734, 1734,
         'Decode has draft model KV while Prefill is deployed without speculative decoding')]),
    'decode_radix_speculative': dict(enforced_by='sglang_startup', cites=[
        ('arg_groups/speculative_hook.py', 109, 116, 'if speculative_algorithm == "NEXTN" or speculative_algorithm == "EAGLE":'),
        ('arg_groups/speculative_hook.py', 164, 173,
         'and cfg.speculative_algorithm not in (None, "DSPARK", "EAGLE", "EAGLE3")')]),
    'decode_radix_swa_compress': dict(enforced_by='sglang_startup', cites=[
        ('mem_cache/kv_cache_builder.py', 301, 305, 'SWA-compress models (e.g. Gemma4 / MiMo-V2) yet.'),
        ('configs/model_config.py', 1246, 1256, 'self.is_hybrid_swa_compress = self.hf_config.architectures[0] in [')]),
    'allocation_policy': dict(enforced_by='sglang_startup', cites=[
        ('arg_groups/fields/disagg.py', 59, 64, 'Set the same policy on both roles.'),
        ('arg_groups/pd_disaggregation_hook.py', 199, 242, 'prefill_complete does not')]),
    'ports': dict(enforced_by='sglang_startup', cites=[
        ('managers/disagg_service.py', 28, 48, 'port=get_disagg().disaggregation_bootstrap_port'),
        ('disaggregation/common/conn.py', 3319, 3319, 'site = web.TCPSite(self._runner, host=self.host, port=self.port)'),
        ('server_args.py', 818, 848, 'derived_port = server_args.port + ZMQ_TCP_PORT_DELTA')]),
    'bootstrap_reachable': dict(enforced_by='sglang_transfer', cites=[
        ('managers/disagg_service.py', 41, 48, 'host=get_serving().host,')]),
}

_LOOPBACK = ('127.0.0.1', 'localhost', '::1')
_SIDES = ('prefill', 'decode')


class PDLayoutError(ValueError):
    """A layout this module cannot read (not an SGLang refusal)."""


def source(rule):
    """The SGLang lines of a rule, as one string: ``sglang/srt/<path>:<first>-<last>; ...``."""
    return '; '.join('sglang/srt/%s:%s' % (path, first if first == last else '%d-%d' % (first, last))
                     for path, first, last, dummy in RULES[rule]['cites'])


def facts(release=None):
    """FACTS, with the ``pd`` mapping of ``release`` (when it has one) laid over them."""
    out = copy.deepcopy(FACTS)
    pd = (release or {}).get('pd') if isinstance(release, dict) else None
    if isinstance(pd, dict):
        unknown = sorted(set(pd) - set(FACTS))
        if unknown:
            raise PDLayoutError('release pd facts: unknown keys %s (known: %s)' % (', '.join(unknown), ', '.join(sorted(FACTS))))
        out.update(copy.deepcopy(pd))
    return out


def _int(worker, key, default, where):
    value = worker.get(key, default)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PDLayoutError('%s.%s must be a positive integer, not %r' % (where, key, value))
    return value


def workers(layout, side):
    """The normalised worker dicts of one side (a dict or a list of dicts in the layout)."""
    if not isinstance(layout, dict):
        raise PDLayoutError('a PD layout must be a mapping, not %r' % (layout,))
    value = layout.get(side)
    items = [value] if isinstance(value, dict) else value
    if not isinstance(items, list) or not items or not all(isinstance(w, dict) for w in items):
        raise PDLayoutError('layout.%s must be a worker mapping or a non-empty list of them, not %r' % (side, value))
    out = []
    for index, worker in enumerate(items):
        where = '%s[%d]' % (side, index)
        tp = _int(worker, 'tp', None, where)
        dp = _int(worker, 'dp', 1, where) if worker.get('dp_attention') else 1
        if tp % dp:
            raise PDLayoutError('%s: tp %d is not divisible by the attention DP size %d' % (where, tp, dp))
        if not worker.get('host'):
            raise PDLayoutError('%s.host (the machine it runs on) is required' % where)
        spec = worker.get('speculative')
        out.append(dict(
            worker, where=where, tp=tp, dp=dp, attn_tp=tp // dp, pp=_int(worker, 'pp', 1, where),
            http_port=_int(worker, 'http_port', None, where), speculative=str(spec).upper() if spec else None,
            page_size=worker.get('page_size'), kv_cache_dtype=worker.get('kv_cache_dtype') or 'auto',
            radix_cache=bool(worker.get('radix_cache')), listen=worker.get('listen') or '127.0.0.1',
            dp_attention=bool(worker.get('dp_attention'))))
    return out


def _refuse(out, rule, message, fix):
    out.append(dict(rule=rule, message=message, fix=fix, source=source(rule), enforced_by=RULES[rule]['enforced_by']))


def _devices(layout, worker):
    merged = dict(layout.get('devices') or {})
    merged.update(worker.get('devices') or {})
    return bool(merged.get('infiniband')), bool(merged.get('memlock_unlimited'))


def _check_backend(layout, f, every, out):
    backend = layout.get('transfer_backend') or f['transfer_backend_default']
    if backend not in f['transfer_backends']:
        _refuse(out, 'transfer_backend_choice', 'transfer_backend %r is not one of SGLang\'s '
                '--disaggregation-transfer-backend choices (%s): argparse refuses it.'
                % (backend, ', '.join(f['transfer_backends'])),
                'Use %s (no RDMA device) or mooncake / nixl (RDMA).' % (' or '.join(f['tcp_backends'])))
        return backend
    if backend == 'fake':
        _refuse(out, 'transfer_backend_fake', 'transfer_backend fake moves no KV (synthetic decode benchmarks only) and '
                'the prefill server asserts "Prefill server does not support \'fake\' as the transfer backend".',
                'Use %s, or mooncake / nixl with RDMA.' % ' or '.join(f['tcp_backends']))
    if backend in f['foreign_backends']:
        _refuse(out, 'transfer_backend_foreign', 'transfer_backend %s is for other accelerators (ascend: Huawei NPUs '
                'through memfabric_hybrid; mori: AMD GPUs through mori); the collection deploys NVIDIA GPUs.' % backend,
                'Use %s, or mooncake / nixl with RDMA.' % ' or '.join(f['tcp_backends']))
    wanted = f['engine_packages'].get(backend)
    packages = layout.get('packages')
    if wanted and packages is not None:
        names = [str(p).lower().replace('_', '-') for p in packages]
        if not any(n == w or n.startswith(w + '-') for n in names for w in wanted):
            _refuse(out, 'transfer_engine_package', 'transfer_backend %s imports %s, which the sglang wheel does not '
                    'require and the workers\' packages (%d) do not include: the prefill and decode servers fail when '
                    'they build the KV manager.' % (backend, ' / '.join(wanted), len(names)),
                    'Add %s (the CUDA build matching the GPUs\' driver) to the SGLang lock.' % wanted[0])
    if backend in f['rdma_backends']:
        for worker in every:
            infiniband, memlock = _devices(layout, worker)
            if not (infiniband and memlock):
                missing = [text for ok, text in ((infiniband, '/dev/infiniband'), (memlock, 'LimitMEMLOCK=infinity'))
                           if not ok]
                _refuse(out, 'rdma_devices', '%s on %s: transfer_backend %s runs over RDMA (Mooncake\'s default '
                        'protocol rdma; NIXL\'s default backend UCX) and registers the GPU KV pools with the NIC, but the '
                        'container lacks %s ("Mooncake memory registration failed" or a hang at the first transfer).'
                        % (worker['where'], worker['host'], backend, ' and '.join(missing)),
                        'Give the container /dev/infiniband and LimitMEMLOCK=infinity, or use transfer_backend %s '
                        '(TCP, no RDMA).' % f['tcp_backends'][0])
    if layout.get('ib_device'):
        hosts = sorted(set(w['host'] for w in every if not _devices(layout, w)[0]))
        if hosts and backend not in f['tcp_backends']:
            _refuse(out, 'ib_device_sysfs', 'ib_device %r is set but %s has no InfiniBand device: SGLang raises '
                    '"InfiniBand sysfs path not found: /sys/class/infiniband" while it validates the arguments.'
                    % (layout['ib_device'], ', '.join(hosts)), 'Drop ib_device, or give the container the HCA.')
    return backend


def _check_pair(layout, prefill, decode, out):
    """The rules between one prefill and one decode worker."""
    mla, swa = bool(layout.get('mla')), bool(layout.get('sliding_window'))
    arch = layout.get('arch') or 'the model'
    pair = '%s (attention TP %d) and %s (attention TP %d)' % (
        prefill['where'], prefill['attn_tp'], decode['where'], decode['attn_tp'])
    if prefill['attn_tp'] != decode['attn_tp']:
        small, large = sorted((prefill['attn_tp'], decode['attn_tp']))
        if large % small:
            _refuse(out, 'tp_ratio', '%s: SGLang maps the KV of one side\'s TP ranks onto the other\'s by integer '
                    'division of the two attention TP sizes, so %d and %d leave ranks without a peer (missing KV or '
                    'a hang at the first transfer).' % (pair, large, small),
                    'Make one attention TP size a multiple of the other, or (best) the same.')
        if not mla:
            _refuse(out, 'tp_mismatch', '%s: %s is not an MLA model and its KV heads must be resliced between the '
                    'two TP sizes; SGLang only warns "Performance is NOT guaranteed when using different TP sizes for '
                    'non-MLA models" and refuses several layouts only at the first transfer (MXFP8 KV, unified memory, '
                    'hybrid states), so the collection requires the same TP on both sides.' % (pair, arch),
                    'Give the prefill and the decode workers the same tp (and dp) for %s.' % arch)
        if swa and not mla:
            _refuse(out, 'swa_tp_mismatch', '%s: %s has sliding-window layers; with different TP sizes SGLang reslices '
                    'only the paged SWA pool and raises "PD Disaggregation does NOT support PD different TP sizes for '
                    'non-MLA <state> hybrid models yet." for the other SWA states (ring, MXFP8 block scales).'
                    % (pair, arch), 'Use the same tp on both sides for a sliding-window model.')
    if prefill['page_size'] != decode['page_size']:
        _refuse(out, 'page_size_mismatch', '%s: page_size %s (prefill) and %s (decode): "Both servers must use the same '
                '--page-size value." (checked when decode first contacts the prefill\'s bootstrap server).'
                % (pair, prefill['page_size'] or 'SGLang\'s default', decode['page_size'] or 'SGLang\'s default'),
                'Set the same explicit page_size on both sides.')
    if prefill['kv_cache_dtype'] != decode['kv_cache_dtype']:
        _refuse(out, 'kv_cache_dtype_mismatch', '%s: kv_cache_dtype %s (prefill) and %s (decode): "Both servers must '
                'use the same --kv-cache-dtype value."' % (pair, prefill['kv_cache_dtype'], decode['kv_cache_dtype']),
                'Set the same kv_cache_dtype on both sides.')
    if decode['pp'] not in (prefill['pp'], 1):
        _refuse(out, 'pp_mismatch', '%s: pp %d (prefill) and %d (decode): SGLang asserts "Decode pp size should be '
                'equal to prefill pp size or 1".' % (pair, prefill['pp'], decode['pp']),
                'Give the decode worker pp %d or 1.' % prefill['pp'])
    if prefill['speculative'] and not decode['speculative']:
        _refuse(out, 'speculative_prefill_only', '%s: speculative %s on the prefill only: its draft KV has no '
                'destination on the decode ("decode registered fewer KV regions ... than prefill"); SGLang supports '
                'the other way round (speculative on the decode only).' % (pair, prefill['speculative']),
                'Run speculative decoding on the decode worker too, or on the decode worker only.')


def _check_pp_spec(f, worker, side, out):
    spec = worker['speculative']
    resolved = f['spec_aliases'].get(spec, spec) if spec else None
    if worker['pp'] == 1 or not resolved:
        return
    if side == 'decode':
        _refuse(out, 'pp_speculative', '%s: pp %d with speculative %s: "PP + speculative decoding (MTP) is only '
                'supported on prefill nodes (disaggregation-mode=prefill)".' % (worker['where'], worker['pp'], spec),
                'Give the decode worker pp 1 (more TP instead), or no speculative decoding.')
    elif resolved not in f['pp_spec_algorithms']:
        _refuse(out, 'pp_speculative', '%s: pp %d with speculative %s (SGLang resolves it to %s): "Pipeline '
                'parallelism currently only supports EAGLE (non-multi-layer) speculative decoding".'
                % (worker['where'], worker['pp'], spec, resolved),
                'Use pp 1 on the prefill worker, or one of %s (NEXTN is EAGLE).' % ', '.join(f['pp_spec_algorithms']))


def _check_decode(layout, f, backend, decode, every_prefill, out):
    spec = decode['speculative']
    resolved = f['spec_aliases'].get(spec, spec) if spec else None
    if decode['radix_cache'] and resolved and resolved not in f['radix_spec_algorithms']:
        _refuse(out, 'decode_radix_speculative', '%s: radix_cache with speculative %s (SGLang resolves it to %s): '
                '"--disaggregation-decode-enable-radix-cache is incompatible with speculative decoding '
                '(--speculative-algorithm %s)"; SGLang allows only %s there.'
                % (decode['where'], spec, resolved, resolved, ', '.join(f['radix_spec_algorithms'])),
                'Drop radix_cache on the decode worker, or use one of %s.' % ', '.join(f['radix_spec_algorithms']))
    if decode['radix_cache'] and layout.get('arch') in f['swa_compress_archs']:
        _refuse(out, 'decode_radix_swa_compress', '%s: radix_cache with %s: "--disaggregation-decode-enable-radix-cache '
                'does not support SWA-compress models (e.g. Gemma4 / MiMo-V2) yet." (when the decode server builds its '
                'KV cache, after loading the weights).' % (decode['where'], layout['arch']),
                'Drop radix_cache on the decode worker for %s.' % layout['arch'])
    policy = decode.get('allocation_policy') or layout.get('allocation_policy') or f['allocation_policy_default']
    others = sorted(set(p.get('allocation_policy') or layout.get('allocation_policy') or f['allocation_policy_default']
                        for p in every_prefill))
    problems = []
    if policy not in f['allocation_policies']:
        problems.append('%s is not one of %s' % (policy, ', '.join(f['allocation_policies'])))
    if others != [policy]:
        problems.append('the prefill workers use %s ("Set the same policy on both roles.")' % ', '.join(others))
    if 'prefill_complete' in others + [policy]:
        if backend != 'mooncake' and backend not in f['tcp_backends']:
            problems.append('prefill_complete does not yet support transfer backends other than Mooncake')
        if decode['radix_cache']:
            problems.append('prefill_complete does not yet support decode radix cache')
        for worker in [decode] + every_prefill:
            if worker['attn_tp'] != 1:
                problems.append('prefill_complete does not yet support attention tensor parallelism greater than one '
                                '(%s: attention TP %d)' % (worker['where'], worker['attn_tp']))
    if problems:
        _refuse(out, 'allocation_policy', '%s: allocation_policy %s: %s.' % (decode['where'], policy, '; '.join(problems)),
                'Use allocation_policy early (SGLang\'s default) on every worker, or meet prefill_complete\'s conditions.')


def _listeners(f, worker, side):
    """(port, what) of every TCP port a worker binds on its machine."""
    port = worker['http_port']
    out = [(port, '%s http_port' % worker['where'])]
    if side == 'prefill':
        out.append((worker['bootstrap_port'], '%s bootstrap_port' % worker['where']))
    if worker['dp_attention']:
        # SGLang moves the range below --port when it would pass 65535 (server_args.py:820-822, 841-842).
        base = port + f['dp_port_delta']
        if base + f['dp_port_count'] > 65535:
            base = port - f['dp_port_delta']
        out.extend((base + i, '%s DP-attention port --port%+d' % (worker['where'], base + i - port))
                   for i in range(f['dp_port_count']))
    return out


def _check_ports(layout, f, sides, out):
    by_host = {}
    for side in _SIDES:
        for worker in sides[side]:
            for port, what in _listeners(f, worker, side):
                by_host.setdefault(worker['host'], []).append((port, what))
    gateway = layout.get('gateway') or {}
    if gateway.get('host') and gateway.get('port'):
        by_host.setdefault(gateway['host'], []).append((int(gateway['port']), 'gateway port'))
    for host in sorted(by_host):
        seen = {}
        for port, what in by_host[host]:
            seen.setdefault(port, []).append(what)
        for port in sorted(p for p, users in seen.items() if len(users) > 1):
            _refuse(out, 'ports', 'port %d on %s is bound by %s: the second server fails to bind it.'
                    % (port, host, ' and '.join(seen[port])),
                    'Give every http_port, bootstrap_port (prefill) and DP-attention range (--port+%d .. +%d) on one '
                    'machine its own port.' % (f['dp_port_delta'], f['dp_port_delta'] + f['dp_port_count'] - 1))


def _check_reach(layout, sides, out):
    gateway = layout.get('gateway') or {}
    for side in _SIDES:
        for worker in sides[side]:
            if worker['listen'] not in _LOOPBACK:
                continue
            peers = set(d['host'] for d in sides['decode']) if side == 'prefill' else set()
            if gateway.get('host'):
                peers.add(gateway['host'])
            remote = sorted(p for p in peers if p != worker['host'])
            if remote:
                what = 'its HTTP port and bootstrap server' if side == 'prefill' else 'its HTTP port'
                _refuse(out, 'bootstrap_reachable', '%s on %s listens on %s, so %s cannot be reached from %s (SGLang '
                        'binds the bootstrap server to --host too).'
                        % (worker['where'], worker['host'], worker['listen'], what, ', '.join(remote)),
                        'Set listen (--host) to an address the other machines reach, e.g. 0.0.0.0.')


def check(layout, release=None):
    """The refusals of a PD layout (module doc): [] when SGLang (and the collection) would run it."""
    f = facts(release)
    sides = dict((side, workers(layout, side)) for side in _SIDES)
    for worker in sides['prefill']:
        worker['bootstrap_port'] = _int(worker, 'bootstrap_port', f['bootstrap_port_default'], worker['where'])
    out = []
    every = sides['prefill'] + sides['decode']
    backend = _check_backend(layout, f, every, out)
    for prefill in sides['prefill']:
        for decode in sides['decode']:
            _check_pair(layout, prefill, decode, out)
    for decode in sides['decode']:
        _check_decode(layout, f, backend, decode, sides['prefill'], out)
    for side in _SIDES:
        for worker in sides[side]:
            _check_pp_spec(f, worker, side, out)
    _check_ports(layout, f, sides, out)
    _check_reach(layout, sides, out)
    return out


def extra_args(layout, side, index=0, release=None):
    """The PD flags of one worker (full flag names), to go into sglang_flags.render()'s server['extra_args']."""
    if side not in _SIDES:
        raise PDLayoutError('side must be prefill or decode, not %r' % (side,))
    f = facts(release)
    worker = workers(layout, side)[index]
    backend = layout.get('transfer_backend') or f['transfer_backend_default']
    args = ['--disaggregation-mode', side, '--disaggregation-transfer-backend', backend]
    if side == 'prefill':
        port = _int(worker, 'bootstrap_port', f['bootstrap_port_default'], worker['where'])
        args += ['--disaggregation-bootstrap-port', str(port)]
    if layout.get('ib_device') and backend not in f['tcp_backends']:
        args += ['--disaggregation-ib-device', str(layout['ib_device'])]
    policy = worker.get('allocation_policy') or layout.get('allocation_policy')
    if policy and policy != f['allocation_policy_default']:
        args += ['--disaggregation-decode-allocation-policy', str(policy)]
    if side == 'decode' and worker['radix_cache']:
        args += ['--disaggregation-decode-enable-radix-cache']
    return args


def server_options(layout, side, index=0, release=None):
    """sglang_flags.render()'s ``server`` overrides for one worker (model_path and the rest are the caller's)."""
    worker = workers(layout, side)[index]
    out = dict(host=worker['listen'], port=worker['http_port'], tp_size=worker['tp'],
               extra_args=extra_args(layout, side, index, release))
    if worker['dp_attention']:
        out.update(dp_size=worker['dp'], enable_dp_attention=True)
    if worker['pp'] > 1:
        # SGLang asserts the overlap schedule off with pp > 1 (arg_groups/validation_hook.py:121-123).
        out.update(pp_size=worker['pp'], disable_overlap_schedule=True)
    if worker['page_size'] is not None:
        out['page_size'] = worker['page_size']
    if worker['kv_cache_dtype'] != 'auto':
        out['kv_cache_dtype'] = worker['kv_cache_dtype']
    if worker['speculative']:
        out['speculative_algorithm'] = worker['speculative']
    else:
        out['speculative_num_draft_tokens'] = 0
    if side == 'decode':
        # SGLang turns the radix cache off on a decode server unless the decode flag asks for it
        # (pd_disaggregation_hook.py:98-127): render the same, so the mamba strategy is chosen for what runs.
        out['radix_cache'] = worker['radix_cache']
    return out


def _url(worker):
    host = worker['host']
    return 'http://%s:%d' % ('[%s]' % host if ':' in host else host, worker['http_port'])


def gateway_args(layout, release=None):
    """smg's PD arguments: each prefill with its bootstrap port (smg's default is none), then each decode."""
    f = facts(release)
    args = ['--pd-disaggregation']
    for worker in workers(layout, 'prefill'):
        args += ['--prefill', _url(worker), str(_int(worker, 'bootstrap_port', f['bootstrap_port_default'],
                                                     worker['where']))]
    for worker in workers(layout, 'decode'):
        args += ['--decode', _url(worker)]
    return args


def format_refusals(refusals):
    """One message: each refusal numbered, with its fix and SGLang's lines."""
    lines = ['The PD layout would not run under SGLang (checked on paper, nothing deployed):']
    for index, item in enumerate(refusals, 1):
        lines.append('%d. [%s] %s Fix: %s (SGLang: %s)' % (index, item['rule'], item['message'], item['fix'],
                                                           item['source']))
    return '\n'.join(lines)
