# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Failure signatures against the lines SGLang / PyTorch / NVML / NCCL / uvicorn really print, and the stall clock."""
import pytest

from ansible_collections.llmops.inference.plugins.module_utils.sglang.logs import (
    StartupWatch,
    classify,
    milestones,
    redact,
)

REAL = {
    # SGLang <= 0.5.12 server_args.py _handle_mamba_radix_cache (the literals have no space between them).
    'mtp_radix_cache': 'ValueError: Speculative decoding for Qwen3_5MoeForConditionalGeneration is not compatible with '
                       'radix cache when using --mamba-scheduler-strategy no_buffer.To use radix cache with speculative '
                       'decoding, please use --mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1.',
    # 0.5.23 arg_groups/mamba_hook.py validate_mamba_no_buffer
    'mamba_strategy': 'AssertionError: no_buffer do not support overlap schedule. Try to set '
                      'disable_overlap_schedule=True.',
    # 0.5.23 model_executor/pool_configurator.py
    'not_enough_memory': 'RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: '
                         'mem_fraction_static=0.62',
    # 0.5.23 mem_cache/kv_cache_configurator.py
    'mamba_cache_memory': 'RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache. Computed '
                          'max_mamba_cache_size=0 (total_rest_memory=0.02 GB, mamba_cache_per_req=36.63 MB).',
    # nvidia-smi (notes: k4yt3x/video2x#1226), as SGLang 0.5.23 utils/common.py get_nvgpu_memory_capacity reports it.
    'nvml_driver_mismatch': 'RuntimeError: nvidia-smi failed (exit code 18: Failed to initialize NVML: '
                            'Driver/library version mismatch).',
    # PyTorch torch/cuda/__init__.py device_count
    'cuda_driver_mismatch_803': 'RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda '
                                'functions before calling NumCudaDevices() that might have already set an error? Error '
                                '803: system has unsupported display driver / cuda driver combination',
    'cuda_driver_too_old_35': 'RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda '
                              'functions before calling NumCudaDevices() that might have already set an error? Error 35: '
                              'CUDA driver version is insufficient for CUDA runtime version',
    # uvicorn server.py startup
    'port_in_use': "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): address already "
                   "in use",
    'invalid_argument': 'sglang serve: error: unrecognized arguments: --mamba-scheduler-strategy extra_buffer',
    'nccl_shm': 'sglang-ct:1234:1290 [0] include/shm.h:28 NCCL WARN Error: failed to extend /dev/shm/nccl-9ma5 to '
                '9637892 bytes',
    'warmup_failed': '[2026-07-01 10:00:00] Initialization failed. warmup error: Traceback (most recent call last):',
}


@pytest.mark.parametrize('signature', sorted(REAL))
def test_each_real_line_is_classified(signature):
    lines = ['[2026-07-01 10:00:00 TP0] Load weight begin. avail mem=93.72 GB', REAL[signature], 'more']
    found = classify(lines)
    assert found['signature'] == signature
    assert REAL[signature] in found['evidence_lines']
    assert found['fix'] and found['likely_cause']


def test_nvml_fix_points_at_nvidia_driver_info():
    assert 'nvidia_driver_info' in classify([REAL['nvml_driver_mismatch']])['fix']
    assert 'nvidia_driver_info' in classify([REAL['cuda_driver_mismatch_803']])['fix']


def test_port_variants():
    assert classify(['ValueError: port_base at 30233 is not available in 30 seconds. x'])['signature'] == 'port_in_use'
    assert classify(['OSError: [Errno 98] Address already in use'])['signature'] == 'port_in_use'


def test_specific_signature_beats_generic_traceback():
    lines = ['Traceback (most recent call last):', '  File "x.py", line 1', REAL['not_enough_memory']]
    assert classify(lines)['signature'] == 'not_enough_memory'
    assert classify(['Traceback (most recent call last):', 'KeyError: x'])['signature'] == 'startup_error'


def test_healthy_log_has_no_signature_and_all_milestones():
    log = ['[2026-11-30 01:21:00 TP0] Init parallel begin.', '[2026-11-30 01:21:00 TP0] Init parallel ends. elapsed=1.52 s',
           '[TP0] Load weight begin. avail mem=93.72 GB',
           '[TP0] Load weight end. elapsed=95.31 s, type=Qwen3_5MoeForConditionalGeneration, avail mem=36.52 GB, '
           'mem usage=57.20 GB.',
           '[TP0] KV Cache is allocated. #tokens: 715559, K size: 4.10 GB, V size: 4.10 GB',
           '[TP0] Capture decode CUDA graph end. elapsed=21.33 s, mem usage=1.85 GB, avail mem=13.70 GB.',
           'INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)',
           '[2026-11-30 01:21:01] The server is fired up and ready to roll!']
    assert classify(log) is None
    expected = ['parallel_begin', 'parallel_end', 'load_weight_begin', 'load_weight_end', 'kv_cache', 'cuda_graph_end',
                'uvicorn_running', 'ready']
    assert [name for name, dummy in milestones(log)] == expected


def test_stall_after_parallel_begin_both_wordings():
    for begin in ('Init parallel begin.', 'Init torch distributed begin.'):
        watch = StartupWatch(0.0, stall_seconds=45)
        watch.add_lines(1.0, ['[TP%d] %s' % (r, begin) for r in range(4)])
        assert watch.verdict(30.0) is None
        verdict = watch.verdict(46.5)
        assert verdict['signature'] == 'nccl_init_stall'
        assert 'NCCL_P2P_DISABLE' in verdict['fix'] and 'gpu_p2p_check' in verdict['fix']
        assert verdict['quiet_seconds'] == 45.5


def test_no_stall_outside_the_parallel_window_or_while_gpu_memory_grows():
    watch = StartupWatch(0.0, stall_seconds=45)
    watch.add_lines(1.0, ['[TP0] Init parallel begin.', '[TP0] Init parallel ends. elapsed=1 s',
                          '[TP0] Load weight begin. avail mem=93.72 GB'])
    assert watch.verdict(600.0) is None  # loading weights is quiet for minutes
    watch = StartupWatch(0.0, stall_seconds=45)
    watch.add_lines(1.0, ['[TP0] Init parallel begin.'])
    for t in range(2, 100, 5):
        watch.add_gpu_memory(float(t), 1000 + t * 100)
    assert watch.verdict(100.0) is None
    watch.add_gpu_memory(140.0, 1000 + 97 * 100)
    assert watch.verdict(150.0)['signature'] == 'nccl_init_stall'
    assert 'no GPU memory growth' in watch.verdict(150.0)['summary']


def test_probe_access_lines_are_not_progress():
    watch = StartupWatch(0.0, stall_seconds=20)
    watch.add_lines(1.0, ['[TP0] Init parallel begin.'])
    for t in range(2, 30):
        watch.add_lines(float(t), ['INFO:     127.0.0.1:40000 - "GET /health HTTP/1.1" 503'])
    assert watch.verdict(30.0)['signature'] == 'nccl_init_stall'


def test_stall_needs_all_ranks_to_finish():
    watch = StartupWatch(0.0, stall_seconds=10)
    watch.add_lines(1.0, ['[TP%d] Init parallel begin.' % r for r in range(4)] + ['[TP0] Init parallel ends. elapsed=1 s'])
    assert watch.verdict(20.0)['signature'] == 'nccl_init_stall'


def test_exit_without_signature_and_traceback_grace():
    watch = StartupWatch(0.0)
    watch.add_lines(1.0, ['some line', 'Killed'])
    assert watch.verdict(2.0, process_alive=True) is None
    assert watch.verdict(2.0, process_alive=False)['signature'] == 'exited'
    watch = StartupWatch(0.0)
    watch.add_lines(1.0, ['Traceback (most recent call last):'])
    assert watch.verdict(2.0) is None
    watch.add_lines(2.5, [REAL['cuda_driver_mismatch_803']])
    assert watch.verdict(2.6)['signature'] == 'cuda_driver_mismatch_803'


def test_specific_signature_is_reported_at_once():
    watch = StartupWatch(0.0)
    watch.add_lines(5.0, [REAL['mtp_radix_cache']])
    assert watch.verdict(5.0)['signature'] == 'mtp_radix_cache'


def test_redact():
    line = ("[2026-11-30] server_args={'model_path': '/m', 'api_key': 'lab-Zq3vX9', 'admin_api_key': None, "
            "'launch_command': '--api-key lab-Zq3vX9 --port 1'}")
    out = redact(line)
    assert 'lab-Zq3vX9' not in out
    assert "'api_key': '<redacted>'" in out and "'admin_api_key': None" in out
    assert redact('x secret-value y', ['secret-value']) == 'x <redacted> y'
    assert redact('Authorization: Bearer abc') == 'Authorization: Bearer <redacted>'
