#!/usr/bin/env python
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""SGLang itself as the oracle of the VRAM plan: the pinned release's own server-argument resolution and KV-pool
sizing, run on this CPU with only the device queries answered (issue #26).

Run it with the lab SGLang venv's python (``PY=$(tests/bench/setup-bench-venv.sh | tail -n 1)``):

  $PY tests/oracle/sglang_oracle.py --config DIR [--draft DIR] --tp N --gpu-mem-mib M [--free-before-load-gib X]
      [--free-after-load-gib Y] [--spec off|nextn|eagle3] [--kv-dtype auto|fp8_e4m3|...] [--mem-fraction F]
      [--context N] [--cc 9.0] [--max-running-requests N] [--page-size N] [--spec-steps N --spec-topk N
      --spec-draft-tokens N] [--mamba-strategy extra_buffer|no_buffer|...] --json
  $PY tests/oracle/sglang_oracle.py --cases CASES.json [--out RESULTS.json]      (batch: one import, many cases)

``CASES.json`` is a JSON list of case objects with the keys of ``case_from_args`` (config, draft, tp, gpu_mem_mib,
free_before_load_gib, free_after_load_gib, spec, kv_dtype, mem_fraction, context, cc, max_running_requests,
page_size, spec_steps, spec_topk, spec_draft_tokens, mamba_strategy, id); the batch prints (or writes) a JSON list of results in
the same order. Importable: ``run_case(dict) -> dict`` (import cost ~20 s once, then ~50-100 ms a case).

What runs is SGLang's code, nothing re-implemented: ``ServerArgs(...).resolve_once()`` (arg_groups/pipeline.py: every
*_hook, the memory / cuda-graph / mamba / speculative defaults and their validations), ``runtime_context.publish``,
``ModelConfig`` (configs/model_config.py), ``resolve_layer_indices``, ``configure_kv_cache_dtype`` (with the
checkpoint's quantization config object as the "model"), ``resolve_spec_aux_hidden_state_config`` and a
``KVCacheConfigurator`` whose ``_resolve_memory_pool_config`` (mem_cache/kv_cache_configurator.py: free-memory
budget, mamba pool, pool configurator, max_running_requests) sizes the pools. Mocked, and only these: the GPU's
total memory (nvidia-smi's memory.total via utils.common.get_nvgpu_memory_capacity), the free memory SGLang measures
after loading the weights (get_available_gpu_memory), the compute capability, device count and the CUDA
availability probes (torch.cuda.*, runtime_context.override_platform), the process placement (world rank 0, one
process; SpawnRanks) and the world group (no collective runs); and gc.collect before the free-memory
measurement (host housekeeping, ~0.3 s a case).

Result keys (stable; other helpers parse them; a value SGLang does not produce for the case is null):

  sglang_version        the installed release
  case                  the inputs as read (the keys above, defaults filled)
  refused               null, or {stage, type, message}: SGLang's own refusal (its ValueError / AssertionError /
                        RuntimeError text); stage is "server_args" (resolve_once), "model" (ModelConfig / layers),
                        "pool" (pool sizing) or "harness" (the harness could not drive SGLang: not SGLang's verdict)
  server                resolved server arguments: mem_fraction_static, chunked_prefill_size, cuda_graph_max_bs,
                        max_running_requests (the argument; null = SGLang sizes it), page_size, context_length,
                        kv_cache_dtype, attention_backend, disable_radix_cache, disable_overlap_schedule,
                        mamba_scheduler_strategy, mamba_track_interval, mamba_ssm_dtype, max_mamba_cache_size,
                        mamba_full_memory_ratio,
                        speculative_algorithm, speculative_num_steps, speculative_eagle_topk,
                        speculative_num_draft_tokens, attn_dp_size, attn_tp_size
  model                 arch, attention_arch, num_kv_heads_per_rank, head_dim, v_head_dim, num_effective_layers,
                        full_attention_layers, swa_attention_layers, context_len, dtype, is_hybrid_swa,
                        is_hybrid_mamba, num_nextn_predict_layers, sliding_window_size
  cells                 kv_cache_dtype (the pool's torch dtype), kv_cache_dtype_str, element_size,
                        kv_bytes_per_token (the pool configurator's cell: target + draft layers priced in the budget),
                        kv_bytes_per_token_target, kv_bytes_per_token_draft (the part of the cell for the draft),
                        full_bytes_per_token / swa_bytes_per_token (hybrid SWA only), eagle_draft_num_layers
  state                 mamba_bytes_per_slot (mamba_cache_per_req), mamba_layers, mamba_ssm_dtype,
                        mamba_conv_dtype, mamba_slots_per_request (_calculate_mamba_ratio)
  pools                 (only with free_after_load_gib and free_before_load_gib) available_bytes (the budget the
                        configurator divides), max_total_num_tokens, full_max_total_num_tokens,
                        swa_max_total_num_tokens, max_running_requests (per DP worker), max_mamba_cache_size (slots)
  needs_gpu             {name: reason} for the figures that exist only on a GPU (weights_loaded,
                        cuda_graph_memory, activation_peak)
  seconds               wall time of this case
"""

import argparse
import contextlib
import json
import logging
import os
import sys
import time
import traceback
import types
from unittest import mock

CASE_DEFAULTS = dict(id=None, config=None, draft=None, tp=1, gpu_mem_mib=None, free_before_load_gib=None,
                     free_after_load_gib=None, spec='off', kv_dtype='auto', mem_fraction=None, context=None,
                     cc='9.0', max_running_requests=None, page_size=None, spec_steps=None, spec_topk=None,
                     spec_draft_tokens=None, mamba_strategy=None)
SPEC_ALGORITHMS = {'off': None, 'nextn': 'NEXTN', 'eagle3': 'EAGLE3'}
NEEDS_GPU = dict(
    weights_loaded='the bytes the weights take on the GPU are measured by loading them (model_runner.load_model); '
                   'the harness takes the free memory after loading as an input',
    cuda_graph_memory='CUDA-graph capture memory is what the captured graphs allocate on the device '
                      '(cuda_graph_runner); only mem_fraction_static\'s reserve for it is SGLang arithmetic',
    activation_peak='the activation peak of the largest prefill is measured on the device; SGLang reserves '
                    'pre_capture_activation_reserve_mb for it',
)
_SG = {}


def _sglang():
    """Import what the harness drives, once (the import is ~20 s)."""
    if _SG:
        return _SG
    logging.disable(logging.WARNING)
    import torch  # pylint: disable=import-error
    import sglang  # pylint: disable=import-error
    from sglang.srt.utils import common  # pylint: disable=import-error
    from sglang.srt import runtime_context as rc  # pylint: disable=import-error
    from sglang.srt.server_args import ServerArgs  # pylint: disable=import-error
    from sglang.srt.arg_groups import overrides  # pylint: disable=import-error
    from sglang.srt.mem_cache import kv_cache_configurator as kvcm  # pylint: disable=import-error
    from sglang.srt.mem_cache import kv_cache_dtype as kvd  # pylint: disable=import-error
    from sglang.srt.model_executor import pool_configurator as pcm  # pylint: disable=import-error
    from sglang.srt.model_executor.model_runner_components import layer_setup  # pylint: disable=import-error
    from sglang.srt.model_executor.model_runner_components import load_model_utils  # pylint: disable=import-error
    from sglang.srt.model_executor.model_runner_components import spec_aux_hidden_state as sah  # pylint: disable=import-error
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm  # pylint: disable=import-error
    _register_device_quantization(torch)
    _SG.update(torch=torch, version=sglang.__version__, common=common, rc=rc, ServerArgs=ServerArgs,
               overrides=overrides, kvcm=kvcm, kvd=kvd, pcm=pcm, layer_setup=layer_setup,
               load_model_utils=load_model_utils, sah=sah, SpeculativeAlgorithm=SpeculativeAlgorithm)
    return _SG


def _register_device_quantization(torch):
    """layers/quantization/__init__.py registers some methods (mxfp4) only when a CUDA device answers at import
    time: re-run that module's registration with the availability probe answered, into the registry dicts that
    configs/model_config.py already holds."""
    import importlib
    from sglang.srt.layers import quantization  # pylint: disable=import-error
    held = dict((name, getattr(quantization, name)) for name in ('BASE_QUANTIZATION_METHODS', 'QUANTIZATION_METHODS')
                if isinstance(getattr(quantization, name, None), dict))
    from sglang.srt.utils import common  # pylint: disable=import-error
    with mock.patch.object(torch.cuda, 'is_available', lambda: True):
        _clear_probe_caches(common)
        importlib.reload(quantization)
    _clear_probe_caches(common)
    for name, old in held.items():
        old.update(getattr(quantization, name))
        setattr(quantization, name, old)


def _cc_tuple(cc):
    major, _dot, minor = str(cc).partition('.')
    return int(major), int(minor or 0)


@contextlib.contextmanager
def device_mocks(gpu_mem_mib, cc, device_count=8, free_after_load_gib=None):
    """Answer the device queries, and only those: memory.total, free memory, capability, count, availability."""
    sg = _sglang()
    torch, common, rc = sg['torch'], sg['common'], sg['rc']
    major, minor = _cc_tuple(cc)
    sm = major * 10 + minor
    free = [free_after_load_gib]

    def available(*_args, **_kwargs):
        if free[0] is None:
            raise RuntimeError('harness: no free_after_load_gib given, so the pool budget is not measured')
        return float(free[0])

    props = types.SimpleNamespace(total_memory=int(gpu_mem_mib * (1 << 20)), is_integrated=False,
                                  major=major, minor=minor, name='mocked', multi_processor_count=132)
    facts = dict(is_cuda=True, is_hip=False, is_npu=False, is_xpu=False, is_musa=False, is_mps=False,
                 is_sm90=major == 9, is_sm100=major == 10, is_sm100_or_sm110=major in (10, 11), is_sm110=major == 11,
                 is_sm120=major == 12, is_blackwell=major in (10, 11, 12), is_hopper_with_cuda_12_3=major == 9,
                 device_sm=sm, device_capability=(major, minor))
    patches = [
        mock.patch.object(common, 'get_nvgpu_memory_capacity', lambda: float(gpu_mem_mib)),
        mock.patch.object(torch.cuda, 'is_available', lambda: True),
        mock.patch.object(torch.cuda, 'get_device_capability', lambda *a, **k: (major, minor)),
        mock.patch.object(torch.cuda, 'device_count', lambda: device_count),
        mock.patch.object(torch.cuda, 'current_device', lambda: 0),
        mock.patch.object(torch.cuda, 'get_device_properties', lambda *a, **k: props),
        mock.patch.object(torch.cuda, 'mem_get_info', lambda *a, **k: (int(available() * (1 << 30)),
                                                                       int(gpu_mem_mib * (1 << 20)))),
        mock.patch.object(sg['kvcm'], 'get_available_gpu_memory', available),
        mock.patch.object(common, 'get_available_gpu_memory', available),
    ]
    # Host housekeeping before the device is measured (it frees weight-loading temporaries); nothing to free here,
    # and a full collection of the imported runtime costs ~0.3 s a case (0.5.18's configurator does not collect).
    if hasattr(sg['kvcm'], 'gc'):
        patches.append(mock.patch.object(sg['kvcm'], 'gc', types.SimpleNamespace(collect=lambda *a: 0)))
    for name in ('is_cuda', 'is_cuda_alike'):
        if hasattr(common, name):
            patches.append(mock.patch.object(common, name, lambda: True))
    for name in ('is_hip', 'is_npu', 'is_xpu', 'is_musa', 'is_mps'):
        if hasattr(common, name):
            patches.append(mock.patch.object(common, name, lambda: False))
    for name, value in (('is_sm90_supported', major == 9), ('is_sm100_supported', major == 10),
                        ('is_sm120_supported', major == 12), ('is_blackwell_supported', major in (10, 11, 12)),
                        ('get_device_sm', sm), ('get_device_capability', (major, minor))):
        if hasattr(common, name):
            patches.append(mock.patch.object(common, name, _constant(value)))
    # The probes are lru_cache-d and many modules hold them by name: clear the caches so that every holder asks the
    # mocked torch.cuda during the case, and again afterwards.
    _clear_probe_caches(common)
    try:
        with contextlib.ExitStack() as stack:
            for patch in patches:
                stack.enter_context(patch)
            stack.enter_context(_platform_override(rc, facts))
            _clear_probe_caches(common)
            yield free
    finally:
        _clear_probe_caches(common)


def _constant(value):
    return lambda *_args, **_kwargs: value


def _clear_probe_caches(common):
    for name in dir(common):
        func = getattr(common, name, None)
        if (name.startswith('is_') or name.startswith('get_device') or name.endswith('_supported')) and \
                hasattr(func, 'cache_clear'):
            func.cache_clear()


@contextlib.contextmanager
def _platform_override(rc, facts):
    if not hasattr(rc, 'override_platform'):
        # 0.5.18 has no platform facts of its own: it asks utils.common's probes, which device_mocks patches.
        yield
        return
    known = set(getattr(rc, '_PLATFORM_PROBES', {})) | set(getattr(rc, '_PLATFORM_VALUES', {}))
    override = rc.override_platform(**dict((k, v) for k, v in facts.items() if k in known))
    with override:
        yield


def case_from_args(case):
    out = dict(CASE_DEFAULTS)
    unknown = set(case) - set(CASE_DEFAULTS)
    if unknown:
        raise ValueError('case: unknown keys %s (known: %s)' % (sorted(unknown), ', '.join(sorted(CASE_DEFAULTS))))
    out.update(dict((k, v) for k, v in case.items() if v is not None))
    if not out['config']:
        raise ValueError('case: config (a directory with config.json) is required')
    if not out['gpu_mem_mib']:
        raise ValueError('case: gpu_mem_mib (nvidia-smi memory.total, MiB) is required')
    if out['spec'] not in SPEC_ALGORITHMS:
        raise ValueError('case: spec %r is not one of %s' % (out['spec'], ', '.join(SPEC_ALGORITHMS)))
    if out['spec'] == 'eagle3' and not out['draft']:
        raise ValueError('case: spec eagle3 needs draft (the draft checkpoint directory)')
    return out


def server_kwargs(case):
    kwargs = dict(model_path=case['config'], tp_size=int(case['tp']), device='cuda', kv_cache_dtype=case['kv_dtype'],
                  skip_tokenizer_init=True)
    for key, arg in (('mem_fraction', 'mem_fraction_static'), ('context', 'context_length'),
                     ('max_running_requests', 'max_running_requests'), ('page_size', 'page_size'),
                     ('mamba_strategy', 'mamba_radix_cache_strategy')):
        if case[key] is not None:
            kwargs[arg] = case[key]
    algorithm = SPEC_ALGORITHMS[case['spec']]
    if algorithm:
        kwargs['speculative_algorithm'] = algorithm
        if case['draft']:
            kwargs['speculative_draft_model_path'] = case['draft']
        for key, arg in (('spec_steps', 'speculative_num_steps'), ('spec_topk', 'speculative_eagle_topk'),
                         ('spec_draft_tokens', 'speculative_num_draft_tokens')):
            if case[key] is not None:
                kwargs[arg] = int(case[key])
    return kwargs


def _refusal(stage, exc):
    return dict(stage=stage, type=type(exc).__name__, message=str(exc))


def _val(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _resolved(sa):
    sg = _sglang()
    view = sg['overrides'].resolved_view(sa) if hasattr(sg['overrides'], 'resolved_view') else sa
    # 0.5.22+: resolved_dict(); 0.5.18 materialises the resolution onto the fields themselves
    # (overrides.materialize_declarations) and keeps cuda_graph_config as a CudaGraphConfig object.
    d = sa.resolved_dict() if hasattr(sa, 'resolved_dict') else dict(vars(sa))
    graph = d.get('cuda_graph_config') or {}
    decode = graph.get('decode') if isinstance(graph, dict) else getattr(graph, 'decode', None)
    if decode is not None and not isinstance(decode, dict):
        decode = dict(max_bs=getattr(decode, 'max_bs', None))
    out = dict((k, _val(d.get(k))) for k in (
        'mem_fraction_static', 'chunked_prefill_size', 'max_running_requests', 'page_size', 'context_length',
        'kv_cache_dtype', 'attention_backend', 'disable_radix_cache', 'disable_overlap_schedule', 'mamba_ssm_dtype',
        'max_mamba_cache_size', 'mamba_full_memory_ratio',
        'speculative_algorithm', 'speculative_num_steps', 'speculative_eagle_topk', 'speculative_num_draft_tokens',
        'attn_dp_size'))
    out['cuda_graph_max_bs'] = (decode or {}).get('max_bs') if isinstance(decode, dict) else None
    # The mamba radix-cache strategy as resolved (overrides._mamba_radix_cache_resolution), null when the model keeps
    # no mamba radix cache (not hybrid, or the radix cache off).
    out['mamba_scheduler_strategy'] = _val(d.get('mamba_radix_cache_strategy')) if d.get('uses_mamba_radix_cache') \
        else None
    out['mamba_track_interval'] = _val(d.get('mamba_track_interval'))
    try:
        out['attn_tp_size'] = int(sg['rc'].attn_tp_size_of(view))
    except Exception:  # pylint: disable=broad-except
        out['attn_tp_size'] = None
    return out


def _model_quant_stand_in(model_config):
    """What configure_kv_cache_dtype reads from the loaded model: its quant_config (the checkpoint's quantization
    config object, built by SGLang's loader code from the config files; no weights involved)."""
    try:
        from sglang.srt.model_loader.weight_utils import get_quant_config  # pylint: disable=import-error
        from sglang.srt.configs.load_config import LoadConfig  # pylint: disable=import-error
    except ImportError:
        return None
    if getattr(model_config, 'quantization', None) is None:
        return None
    try:
        quant = get_quant_config(model_config, LoadConfig())
    except TypeError:
        quant = get_quant_config(model_config, LoadConfig(), [])
    return types.SimpleNamespace(quant_config=quant)


def _layer_model(model_config):
    """resolve_layer_indices / resolve_sliding_window_size read a few attributes of the model object; none exist
    before loading except the class's own (get_attention_sliding_window_size is a method of some model classes)."""
    return None


class _HarnessMismatch(Exception):
    """A release's call needs an argument the harness does not pass: the harness's fault, never SGLang's refusal."""


def _taking(func):
    """``func`` called with the keyword arguments it declares and no others: the harness names the arguments of
    every supported release (0.5.23's KVCacheConfigurator takes draft_parallel_layout, 0.5.22's does not; 0.5.18's
    takes ps instead of attn_dp_size / pp_size, and resolve_layer_indices takes spec_algorithm instead of
    draft_model_idx). A required argument the harness does not name raises _HarnessMismatch before the call, so
    _stage labels it a harness error and not a TypeError of SGLang's own (a refusal)."""
    import inspect
    params = inspect.signature(func).parameters
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):
        return func
    positional = [name for name, p in params.items() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]

    def call(*args, **kwargs):
        given = dict((k, v) for k, v in kwargs.items() if k in params)
        missing = [name for name, p in params.items()
                   if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY, p.POSITIONAL_ONLY)
                   and name not in given and name not in positional[:len(args)]]
        if missing:
            raise _HarnessMismatch('%s needs %s, which tests/oracle/sglang_oracle.py does not pass (this release '
                                   'changed the call: name the argument in the harness)'
                                   % (getattr(func, '__qualname__', func), ', '.join(missing)))
        return func(*args, **given)
    return call


def _model_config_of(sg):
    """The target's ModelConfig as the scheduler builds it: overrides.model_config_of (0.5.22+), or
    ModelConfig.from_server_args(server_args) (0.5.18: managers/scheduler.py)."""
    if hasattr(sg['overrides'], 'model_config_of'):
        return sg['overrides'].model_config_of
    from sglang.srt.configs.model_config import ModelConfig  # pylint: disable=import-error
    return ModelConfig.from_server_args


def run_case(case):
    """One case -> the result dict documented in the module docstring."""
    start = time.time()
    case = case_from_args(case)
    sg = _sglang()
    result = dict(sglang_version=sg['version'], case=case, refused=None, server=None, model=None, cells=None,
                  state=None, pools=None, needs_gpu=dict(NEEDS_GPU))
    rc = sg['rc']
    # SGLang's model overrides write process environment variables (envs.X.set: Qwen3-VL's Hopper serving override
    # sets SGLANG_VLM_CACHE_SIZE_MB), which a later case of the same batch would read as the operator's: each case
    # starts from the environment the batch started with.
    environment = dict(os.environ)
    try:
        with device_mocks(case['gpu_mem_mib'], case['cc'], free_after_load_gib=case['free_after_load_gib']):
            _run(case, result, sg)
    except _Refused as exc:
        result['refused'] = exc.args[0]
    finally:
        try:
            rc.reset_context()
        except Exception:  # pylint: disable=broad-except
            pass
        os.environ.clear()
        os.environ.update(environment)
    result['seconds'] = round(time.time() - start, 3)
    return result


class _Refused(Exception):
    pass


SGLANG_ERRORS = (ValueError, AssertionError, RuntimeError, NotImplementedError, KeyError, TypeError)


def _stage(stage, func, *args, **kwargs):
    try:
        return func(*args, **kwargs)
    except _HarnessMismatch as exc:
        raise _Refused(_refusal('harness', exc))
    except SGLANG_ERRORS as exc:
        raise _Refused(_refusal(stage, exc))


def _run(case, result, sg):
    with contextlib.ExitStack() as stack:
        _run_published(case, result, sg, stack)


def _publish(rc, sa, stack):
    """Publish the resolved arguments as the scheduler process does, with the process placement of world rank 0.

    0.5.22+: ``publish(sa, role=, ranks=SpawnRanks(...))`` derives the topology from the arguments; the world group is
    the one thing a collective would need. 0.5.18: ``publish(sa, role=)`` only, and the live topology is read from the
    initialised process groups (runtime_context.ParallelContext properties): it is overridden for the case with
    SGLang's own ``compute_dp_attention_world_info`` (layers/dp_attention.py), which initialize_dp_attention runs.
    Returns (parallel context, the ``ps`` ParallelState 0.5.18's KVCacheConfigurator takes, or None)."""
    try:
        if hasattr(rc, 'SpawnRanks'):
            rc.publish(sa, role='scheduler', ranks=rc.SpawnRanks(world_rank=0, dp_rank=None, gpu_id=0))
            parallel = rc.get_parallel()
            parallel.override_permanently(world_group=types.SimpleNamespace(cpu_group=None))
            return parallel, None
        rc.publish(sa, role='scheduler')
        return _topology_0518(rc, sa, stack)
    except SGLANG_ERRORS as exc:
        raise _Refused(_refusal('harness', exc))


def _topology_0518(rc, sa, stack):
    from sglang.srt.layers import dp_attention  # pylint: disable=import-error
    from sglang.srt.distributed.parallel_state_wrapper import ParallelState  # pylint: disable=import-error
    tp, dp = int(sa.tp_size), int(getattr(sa, 'dp_size', 1) or 1)
    cp = int(rc.configured_attn_cp_size()) if hasattr(rc, 'configured_attn_cp_size') else 1
    attn_tp_rank, attn_tp, attn_dp_rank, attn_dp = dp_attention.compute_dp_attention_world_info(
        bool(sa.enable_dp_attention), 0, tp, dp, cp)
    ep = int(getattr(sa, 'ep_size', 1) or 1)
    live = dict(world_size=tp, world_rank=0, tp_size=tp, tp_rank=0, pp_size=1, pp_rank=0, moe_ep_size=ep,
                moe_ep_rank=0, moe_dp_size=1, moe_dp_rank=0, moe_tp_size=tp // ep, moe_tp_rank=0,
                attn_tp_size=attn_tp, attn_tp_rank=attn_tp_rank, attn_cp_size=cp, attn_cp_rank=0,
                dcp_enabled=False, dcp_size=1, dcp_rank=0, attn_dcp_size=1, attn_dcp_rank=0, attn_dp_size=attn_dp,
                attn_dp_rank=attn_dp_rank, world_group=types.SimpleNamespace(cpu_group=None), pp_group=None)
    parallel = rc.get_parallel()
    stack.enter_context(parallel.override(**live))
    # 0.5.18's pool budget asks the world group itself whether the free-memory reading is all-reduced
    # (kv_cache_configurator._profile_available_bytes: get_world_group().world_size > 1); the reading is mocked.
    from sglang.srt.mem_cache import kv_cache_configurator as kvcm  # pylint: disable=import-error
    if hasattr(kvcm, 'get_world_group'):
        world = types.SimpleNamespace(world_size=tp, rank_in_group=0, cpu_group=None)
        stack.enter_context(mock.patch.object(kvcm, 'get_world_group', lambda: world))
    ps = ParallelState.trivial(tp_size=tp, dp_size=dp, attn_tp_size=attn_tp, attn_tp_rank=attn_tp_rank,
                               attn_dp_size=attn_dp, attn_dp_rank=attn_dp_rank, attn_cp_size=cp,
                               moe_ep_size=ep)
    return parallel, ps


def _run_published(case, result, sg, stack):
    rc, torch = sg['rc'], sg['torch']
    sa = _stage('server_args', sg['ServerArgs'], **server_kwargs(case))
    if hasattr(sa, 'resolve_once'):
        _stage('server_args', sa.resolve_once)
    # (0.5.18 resolves in ServerArgs.__post_init__: its refusals come from the constructor above.)
    result['server'] = _resolved(sa)
    parallel, ps = _publish(rc, sa, stack)
    result['server']['attn_tp_size'] = parallel.attn_tp_size
    model_config = _stage('model', _model_config_of(sg), sa)
    spec_algorithm = sg['SpeculativeAlgorithm'].from_string(rc.get_spec().speculative_algorithm)
    model = _model_quant_stand_in(model_config)
    layer_info = _stage('model', _taking(sg['layer_setup'].resolve_layer_indices), model=model,
                        model_config=model_config, is_draft_worker=False, draft_model_idx=None,
                        spec_algorithm=spec_algorithm)
    if hasattr(sg['layer_setup'], 'adjust_hybrid_swa_layer_ids'):
        # 0.5.18 narrows the model config's SWA / full layer ids to this rank's layers right after (model_runner.py).
        _stage('model', sg['layer_setup'].adjust_hybrid_swa_layer_ids, model_config=model_config,
               start_layer=layer_info.start_layer, end_layer=layer_info.end_layer,
               is_hybrid_swa=model_config.is_hybrid_swa)
    resolved_dtype, kv_dtype = _stage('model', sg['kvd'].configure_kv_cache_dtype,
                                      server_args_kv_cache_dtype=rc.get_model().kv_cache_dtype, model=model,
                                      model_dtype=model_config.dtype, is_draft_worker=False, is_dflash=False,
                                      speculative_draft_attention_backend=None,
                                      speculative_draft_kv_cache_dtype=rc.get_spec().speculative_draft_kv_cache_dtype)
    kv_dtype_str = resolved_dtype if resolved_dtype is not None else rc.get_model().kv_cache_dtype
    spec_aux = _stage('model', sg['sah'].resolve_spec_aux_hidden_state_config, server_args=sa,
                      model_config=model_config, spec_algorithm=spec_algorithm, is_draft_worker=False)
    if (spec_algorithm.is_eagle() or spec_algorithm.is_standalone()) and rc.get_spec().speculative_draft_model_path:
        # The draft worker's own ModelConfig, built as the server builds it: TpModelWorker(is_draft_worker=True,
        # context_length=<the target's context_len>) (speculative/eagle_worker_v2.py:223-231,
        # managers/tp_worker.py:465-481). Its _derive_context_length refuses a draft trained for a shorter context.
        from sglang.srt.configs.model_config import ModelConfig  # pylint: disable=import-error
        _stage('model', ModelConfig.from_server_args, sa, model_path=rc.get_spec().speculative_draft_model_path,
               model_revision=rc.get_spec().speculative_draft_model_revision, is_draft_model=True,
               context_length=model_config.context_len)
    from sglang.srt.configs.model_config import AttentionArch  # pylint: disable=import-error
    use_mla = model_config.attention_arch == AttentionArch.MLA
    sliding = sg['load_model_utils'].resolve_sliding_window_size(model, model_config)
    kvc = _stage('pool', _taking(sg['kvcm'].KVCacheConfigurator), draft_parallel_layout=None, ps=ps,
                 device='cuda', gpu_id=0, attn_dp_size=parallel.attn_dp_size, pp_size=1, pp_group=None, model=model,
                 model_config=model_config, server_args=sa, kv_cache_dtype=kv_dtype, kv_cache_dtype_str=kv_dtype_str,
                 model_dtype=model_config.dtype, page_size=rc.get_schedule().page_size,
                 sliding_window_size=sliding, spec_algorithm=spec_algorithm, is_draft_worker=False,
                 post_capture_kv_active=False, spec_aux_config=spec_aux,
                 is_hybrid_swa=model_config.is_hybrid_swa,
                 is_hybrid_swa_compress=getattr(model_config, 'is_hybrid_swa_compress', False),
                 use_mla_backend=use_mla, layer_info=layer_info, forward_stream=None, req_to_token_pool=None,
                 token_to_kv_pool_allocator=None, memory_pool_config=None, draft_model_idx=None)
    result['model'] = _model_facts(model_config, layer_info, parallel, sliding)
    result['model']['is_hybrid_mamba'] = kvc.mambaish_config is not None
    configurator = _stage('pool', sg['pcm'].create_memory_pool_configurator, kvc)
    result['cells'] = _cells(sg, kvc, configurator, kv_dtype, kv_dtype_str, spec_aux, torch)
    result['state'] = _state(kvc)
    if case['free_after_load_gib'] is None or case['free_before_load_gib'] is None:
        result['pools'] = None
        return
    config = _stage('pool', kvc._resolve_memory_pool_config,  # pylint: disable=protected-access
                    float(case['free_before_load_gib']))
    sched = rc.get_schedule()
    result['pools'] = dict(
        max_total_num_tokens=config.max_total_num_tokens,
        full_max_total_num_tokens=config.full_max_total_num_tokens,
        swa_max_total_num_tokens=config.swa_max_total_num_tokens,
        max_running_requests=config.max_running_requests,
        max_mamba_cache_size=sched.max_mamba_cache_size if kvc.mambaish_config is not None else None)


def _model_facts(mc, layer_info, parallel, sliding):
    tp = parallel.attn_tp_size
    try:
        kv_heads = mc.get_num_kv_heads(tp)
    except Exception:  # pylint: disable=broad-except
        kv_heads = None
    return dict(
        arch=mc.hf_config.architectures[0], attention_arch=str(mc.attention_arch), num_kv_heads_per_rank=kv_heads,
        head_dim=getattr(mc, 'head_dim', None), v_head_dim=getattr(mc, 'v_head_dim', None),
        num_effective_layers=layer_info.num_effective_layers,
        full_attention_layers=_count(_layer_ids(layer_info, mc, 'full_attention_layer_ids')),
        swa_attention_layers=_count(_layer_ids(layer_info, mc, 'swa_attention_layer_ids')),
        context_len=mc.context_len, dtype=str(mc.dtype), is_hybrid_swa=bool(mc.is_hybrid_swa),
        is_hybrid_mamba=None, num_nextn_predict_layers=getattr(mc, 'num_nextn_predict_layers', None),
        sliding_window_size=sliding)


def _layer_ids(layer_info, mc, name):
    """0.5.22+ keeps the rank's layer ids in ModelLayerInfo; 0.5.18 on the model config (hybrid SWA only)."""
    if hasattr(layer_info, name):
        return getattr(layer_info, name)
    return getattr(mc, name, None) if mc.is_hybrid_swa else None


def _count(ids):
    return len(ids) if ids is not None else None


def _cells(sg, kvc, configurator, kv_dtype, kv_dtype_str, spec_aux, torch):
    out = dict(kv_cache_dtype=str(kv_dtype), kv_cache_dtype_str=kv_dtype_str,
               element_size=torch._utils._element_size(kv_dtype),  # pylint: disable=protected-access
               eagle_draft_num_layers=getattr(spec_aux, 'eagle_draft_num_layers', None),
               kv_bytes_per_token=None, kv_bytes_per_token_target=None, kv_bytes_per_token_draft=None,
               full_bytes_per_token=None, swa_bytes_per_token=None, configurator=type(configurator).__name__)
    if isinstance(configurator, sg['pcm'].HybridSWAPoolConfigurator):
        out['full_bytes_per_token'], out['swa_bytes_per_token'] = _swa_cells(configurator)
        out['kv_bytes_per_token'] = getattr(configurator, '_cell_size', None)
    elif isinstance(configurator, sg['pcm'].DefaultPoolConfigurator):
        total = configurator._cell_size  # pylint: disable=protected-access
        mamba = kvc.mambaish_config
        if mamba is not None:
            layers = len([i for i in mamba.full_attention_layer_ids
                          if kvc.layer_info.start_layer <= i < kvc.layer_info.end_layer])
        else:
            layers = kvc.layer_info.num_effective_layers
        target = configurator._compute_cell_size(kvc, layers)  # pylint: disable=protected-access
        out.update(kv_bytes_per_token=total, kv_bytes_per_token_target=target, kv_bytes_per_token_draft=total - target)
    return out


def _swa_cells(configurator):
    """(full-side, SWA-side) bytes per token of a HybridSWAPoolConfigurator: its own _full_cell_bytes /
    _swa_cell_bytes (0.5.22+), or 0.5.18's per-layer rows times its layer counts (the same terms its _cell_size sums;
    0.5.18 has no draft SWA layers besides the banded Inkling depths)."""
    # pylint: disable=protected-access
    if hasattr(configurator, '_full_cell_bytes'):
        return configurator._full_cell_bytes(), configurator._swa_cell_bytes()
    full = configurator._full_per_token * (configurator._full_layers_num + configurator._draft_full_layers_num)
    swa = configurator._swa_per_token * configurator._swa_layers_num
    return full, swa


def _state(kvc):
    mamba = kvc.mambaish_config
    if mamba is None:
        return dict(mamba_bytes_per_slot=None, mamba_layers=None, mamba_ssm_dtype=None, mamba_conv_dtype=None,
                    mamba_slots_per_request=None)
    params = mamba.mamba2_cache_params
    out = dict(mamba_bytes_per_slot=int(params.mamba_cache_per_req), mamba_layers=len(params.layers),
               mamba_ssm_dtype=str(params.dtype.temporal), mamba_conv_dtype=str(params.dtype.conv),
               mamba_slots_per_request=kvc._calculate_mamba_ratio())  # pylint: disable=protected-access
    return out


def _parser():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--config')
    parser.add_argument('--draft')
    parser.add_argument('--tp', type=int, default=1)
    parser.add_argument('--gpu-mem-mib', type=float)
    parser.add_argument('--free-before-load-gib', type=float)
    parser.add_argument('--free-after-load-gib', type=float)
    parser.add_argument('--spec', default='off', choices=sorted(SPEC_ALGORITHMS))
    parser.add_argument('--kv-dtype', default='auto')
    parser.add_argument('--mem-fraction', type=float)
    parser.add_argument('--context', type=int)
    parser.add_argument('--cc', default='9.0')
    parser.add_argument('--max-running-requests', type=int)
    parser.add_argument('--page-size', type=int)
    parser.add_argument('--spec-steps', type=int, help='--speculative-num-steps (unset: SGLang\'s auto choice)')
    parser.add_argument('--spec-topk', type=int, help='--speculative-eagle-topk')
    parser.add_argument('--spec-draft-tokens', type=int, help='--speculative-num-draft-tokens')
    parser.add_argument('--mamba-strategy', help='--mamba-radix-cache-strategy (unset: SGLang\'s auto choice)')
    parser.add_argument('--json', action='store_true', help='print one JSON object (the only output format)')
    parser.add_argument('--cases', help='a JSON list of cases: run them all in one process')
    parser.add_argument('--out', help='with --cases: write the results here instead of stdout')
    return parser


def main(argv=None):
    args = _parser().parse_args(argv)
    if args.cases:
        with open(args.cases) as handle:
            cases = json.load(handle)
        results = []
        for case in cases:
            try:
                results.append(run_case(case))
            except Exception as exc:  # pylint: disable=broad-except
                results.append(dict(case=case, refused=dict(stage='harness', type=type(exc).__name__,
                                                            message='%s\n%s' % (exc, traceback.format_exc()))))
        text = json.dumps(results, indent=1, sort_keys=True)
        if args.out:
            with open(args.out, 'w') as handle:
                handle.write(text + '\n')
        else:
            print(text)
        return 0
    if not args.config or not args.gpu_mem_mib:
        _parser().error('--config and --gpu-mem-mib are required (or --cases FILE)')
    case = dict(config=args.config, draft=args.draft, tp=args.tp, gpu_mem_mib=args.gpu_mem_mib,
                free_before_load_gib=args.free_before_load_gib, free_after_load_gib=args.free_after_load_gib,
                spec=args.spec, kv_dtype=args.kv_dtype, mem_fraction=args.mem_fraction, context=args.context,
                cc=args.cc, max_running_requests=args.max_running_requests, page_size=args.page_size,
                spec_steps=args.spec_steps, spec_topk=args.spec_topk, spec_draft_tokens=args.spec_draft_tokens,
                mamba_strategy=args.mamba_strategy)
    print(json.dumps(run_case(case), indent=1, sort_keys=True))
    return 0


if __name__ == '__main__':
    sys.exit(main())
