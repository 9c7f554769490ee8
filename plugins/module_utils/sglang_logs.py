# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Why did an SGLang server not come up? Log-signature classifier and start-up stall detector, pure functions.

PRIVATE to the collection. The signatures are SGLang's (and PyTorch's, NVML's, NCCL's, uvicorn's) real message
texts; every one is covered by a unit test with the line as the software prints it. ``StartupWatch`` follows a
start: feed it journal lines (and GPU memory samples when there are GPUs) with a clock, and ask it for a verdict.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_DRIVER_FIX = ('Run llmops.inference.nvidia_driver_info inside the container/host that runs SGLang (with '
               'expected_version = the host\'s /sys/module/nvidia/version) and install the user-space driver of '
               'exactly that version (in an LXC: NVIDIA-Linux-x86_64-<host version>.run --no-kernel-modules); '
               'after a host driver upgrade, reboot the host or reload the module.')

# (name, [regex...], summary, likely cause, fix). The first signature with a matching line wins, in this order:
# specific causes first, generic Python exceptions last.
SIGNATURES = (
    ('mtp_radix_cache',
     [r'Speculative decoding for \S+ is not compatible with radix cache when using --mamba-\S+ no_buffer'],
     'MTP + radix cache refused with the no_buffer mamba strategy',
     'Speculative decoding (MTP/NEXTN) on a hybrid GDN model with the radix cache needs the extra_buffer mamba '
     'strategy; the command line left it at no_buffer (auto resolves to no_buffer on SGLang <= 0.5.12).',
     'Render the strategy flag the release knows: --mamba-scheduler-strategy extra_buffer (<= 0.5.12, plus '
     'SGLANG_ENABLE_SPEC_V2=1 on 0.5.9/0.5.10) or --mamba-radix-cache-strategy extra_buffer (>= 0.5.15); the '
     'sglang_server role does this when llmops_mamba_strategy is auto. Or add --disable-radix-cache.'),
    ('mamba_strategy',
     [r'no_buffer do not support overlap schedule', r'no_buffer only supports page_size=1',
      r'no_buffer do not support trtllm_mha attention backend', r'extra_buffer is not supported for \S+; use no_buffer',
      r'extra_buffer_lazy unsupported under PD disaggregation'],
     'the mamba radix-cache strategy conflicts with the other flags',
     'SGLang >= 0.5.15 validates the mamba strategy at start-up (arg_groups/mamba_hook.py): no_buffer needs the '
     'overlap schedule off, page size 1 and no trtllm_mha; extra_buffer needs an architecture that supports it.',
     'Leave llmops_mamba_strategy at auto (the role renders extra_buffer for MTP with the radix cache), or '
     'satisfy the quoted assertion; the role\'s pre-checks refuse these combinations before the start.'),
    ('mamba_cache_memory',
     [r'Not enough GPU memory for hybrid \(mamba/linear-attention\) state cache',
      r'Hybrid \(mamba/linear-attention\) state cache is too small to serve any requests',
      r'max_mamba_cache_size.*(?:must be|is) (?:positive|too small)'],
     'the mamba (GDN state) cache does not fit',
     'After weights (and MTP verify states) the budget left for the mamba/GDN state pool holds no slot for a '
     'running request.',
     'Raise --mem-fraction-static, use --mamba-ssm-dtype bfloat16, lower --max-running-requests, or use a larger '
     'TP size; re-plan with playbooks/plan.yml (llmops.inference.vram_plan_info) first.'),
    ('not_enough_memory',
     [r'Not enough memory\. Please try to increase --mem-fraction-static',
      r'Loaded weights leave no GPU memory for the KV cache',
      r'torch\.OutOfMemoryError: CUDA out of memory', r'CUDA out of memory\. Tried to allocate',
      r'RuntimeError: CUDA error: out of memory'],
     'not enough GPU memory for the KV cache / activations',
     'The weights plus the static pools do not fit in --mem-fraction-static of the GPU memory, or another process '
     'holds GPU memory (nvidia-smi --query-compute-apps=pid,used_memory --format=csv).',
     'Re-plan with playbooks/plan.yml, then raise --mem-fraction-static (keep the headroom the plan asks for), lower '
     '--context-length / --max-running-requests, use FP8 KV cache or a larger TP size; stop other GPU processes.'),
    ('nvml_driver_mismatch',
     [r'Failed to initialize NVML: Driver/library version mismatch', r'NVML_ERROR_LIB_RM_VERSION_MISMATCH',
      r'RM has detected an NVML/RM version mismatch',
      r'NVRM: API mismatch: the client has the version'],
     'NVIDIA driver/library version mismatch (NVML)',
     'The user-space NVIDIA libraries (libnvidia-ml, libcuda) are not the version of the loaded kernel module: '
     'host driver upgraded without reboot, or an LXC/container whose user space was not updated with the host.',
     _DRIVER_FIX),
    ('cuda_driver_mismatch_803',
     [r'Error 803: system has unsupported display driver / cuda driver combination',
      r'cudaErrorSystemDriverMismatch', r'CUDA error: system has unsupported display driver',
      r'CUDA driver error 803', r'\bcuInit\b.*\b803\b'],
     'CUDA error 803: libcuda does not match the kernel module',
     'libcuda.so.1 (user-mode driver) is a different version from the loaded nvidia kernel module, often a CUDA '
     'forward-compat libcuda (/usr/local/cuda-*/compat) put on the loader path on a host with a newer driver.',
     _DRIVER_FIX + ' Remove compat directories from LD_LIBRARY_PATH / ld.so.conf.d unless forward compat is intended.'),
    ('cuda_driver_too_old_35',
     [r'Error 35: CUDA driver version is insufficient for CUDA runtime version',
      r'cudaErrorInsufficientDriver', r'CUDA driver version is insufficient for CUDA runtime version',
      r'The NVIDIA driver on your system is too old'],
     'CUDA error 35: the driver is older than the CUDA runtime of the wheels',
     'The PyTorch/SGLang wheels were built for a newer CUDA than the installed driver supports (CUDA 13.x needs '
     'driver >= 580, 12.8 needs >= 570.26).',
     'Upgrade the host driver (and the container user space to the same version), or install wheels for an older '
     'CUDA; llmops.inference.nvidia_driver_info with cuda_runtime=<wheel CUDA> names the minimum driver.'),
    ('port_in_use',
     [r'\[Errno 98\][^\n]*address already in use', r'Address already in use', r'Port is already in use\.',
      r'\S+ at \d+ is not available in \d+ seconds'],
     'the port is already in use',
     'Another process (an old server not stopped, a second instance, another service) listens on the HTTP port '
     'or on one of the ports SGLang derives from it (port + 233 ... for ZMQ, the NCCL port).',
     'Find it with `ss -ltnp` (sport = :<port>) and stop it, or choose another llmops_http_port; two instances '
     'on one host need ports at least 300 apart.'),
    ('invalid_argument',
     [r'error: unrecognized arguments: .*', r'error: argument --\S+: invalid choice: .*',
      r'error: argument --\S+: invalid \w+ value: .*', r'error: the following arguments are required: .*'],
     'SGLang\'s argument parser rejected the command line',
     'A flag or value that this SGLang release does not know (flag renamed between releases, e.g. '
     '--mamba-scheduler-strategy -> --mamba-radix-cache-strategy in 0.5.15/0.5.20, or a choice list that differs).',
     'Validate the command line with the pinned release\'s parser (tests/sglang/validate_args.py, or the '
     'sglang_server_args module\'s validate_with_parser) and use the flag names of that release.'),
    ('nccl_shm',
     [r'NCCL WARN Error: failed to extend /dev/shm', r'failed to extend /dev/shm/nccl-'],
     '/dev/shm too small for NCCL shared-memory transport',
     'With NCCL_P2P_DISABLE=1 NCCL moves data through /dev/shm, which is too small (LXC/containers default 64 MiB).',
     'Enlarge /dev/shm (LXC: a tmpfs mount entry; docker: --shm-size) to several GiB.'),
    ('nccl_error',
     [r'NCCL error', r'ncclUnhandledCudaError', r'ncclSystemError', r'ncclInternalError', r'ncclInvalidUsage',
      r'NCCL WARN'],
     'NCCL failed during initialisation',
     'NCCL could not set up the TP group: broken P2P between the GPUs (IOMMU/ACS/SEV-SNP), /dev/shm, or a '
     'network interface problem between nodes.',
     'Run llmops.inference.gpu_p2p_check on the host; with verdict use_nccl_p2p_disable set '
     'llmops_nccl_p2p_disable: true (NCCL_P2P_DISABLE=1 and --disable-custom-all-reduce).'),
    ('model_not_found',
     [r'is not a local folder and is not a valid model identifier', r"Can't load the configuration of",
      r'does not appear to have a file named config\.json', r"We couldn't connect to 'https://huggingface\.co'"],
     'the model could not be loaded from --model-path',
     'The checkpoint directory is missing, incomplete or unreadable for the service user, and SGLang tried the '
     'Hub instead.',
     'Download it with the hf_model role (playbooks/hf_model.yml) and make llmops_model_path point at it; '
     'check that the service user can read it.'),
    ('cuda_unavailable',
     [r'Found no NVIDIA driver on your system', r'No CUDA GPUs are available', r'libcuda\.so\.1: cannot open shared',
      r'CUDA driver initialization failed', r'cudaErrorNoDevice', r'no CUDA-capable device is detected'],
     'no usable GPU in the service',
     'The service cannot open the GPUs: device nodes missing (/dev/nvidia-uvm is created on demand), not allowed '
     'by the unit\'s DevicePolicy/DeviceAllow or the LXC cgroup, or CUDA_VISIBLE_DEVICES lists absent indices.',
     'Check `ls -l /dev/nvidia*` inside the container, the LXC devN/cgroup lines and llmops_gpu_indices; '
     'create /dev/nvidia-uvm before start (nvidia-modprobe -c0 -u, or nvidia-persistenced).'),
    ('warmup_failed',
     [r'Initialization failed\. warmup error'],
     'the warm-up request failed after the server started',
     'The server loaded but its first generation failed (see the traceback above the line).',
     'Read the traceback in the evidence; common causes are parser or chat-template errors and CUDA errors.'),
    ('startup_error',
     [r'^(?:\[[^\]]*\] )?(?:ValueError|AssertionError|RuntimeError|TypeError|KeyError|ImportError|'
      r'ModuleNotFoundError|OSError): .+', r'Traceback \(most recent call last\)'],
     'SGLang raised an error during start-up',
     'A start-up validation or an exception that has no specific signature here.',
     'Read the evidence lines; if this is a configuration error, add it to the pre-checks in sglang_flags.py.'),
)

_COMPILED = [(name, [re.compile(p) for p in patterns], summary, cause, fix)
             for name, patterns, summary, cause, fix in SIGNATURES]

# Progress milestones (any release): name, regex. The parallel window opens and closes with the first pair.
MILESTONES = (
    ('parallel_begin', re.compile(r'Init (?:torch distributed|parallel) begin\.')),
    ('parallel_end', re.compile(r'Init (?:torch distributed|parallel) ends\.')),
    ('load_weight_begin', re.compile(r'Load weight begin\.')),
    ('load_weight_end', re.compile(r'Load weight end\.')),
    ('mamba_cache', re.compile(r'Mamba Cache is allocated\.')),
    ('kv_cache', re.compile(r'KV Cache is allocated\.')),
    ('memory_pool_end', re.compile(r'Memory pool end\.')),
    ('cuda_graph_end', re.compile(r'Capture .*(?:cuda|CUDA) graph end')),
    ('max_total_num_tokens', re.compile(r'max_total_num_tokens=\d+')),
    ('uvicorn_running', re.compile(r'Uvicorn running on')),
    ('ready', re.compile(r'The server is fired up and ready to roll!')),
)

# uvicorn access-log lines of the readiness probe's own requests.
_PROBE_ACCESS = re.compile(r'"GET /(?:health|v1/models)[ ?][^"]*" ')

STALL_CAUSE = ('No log line and no GPU memory growth since "Init ... begin": the TP ranks are stuck in NCCL / '
               'torch.distributed initialisation. On PCIe GPUs behind an IOMMU with ACS or SEV-SNP, NCCL P2P hangs '
               'or silently corrupts (NVIDIA/nccl#1999, #2079; rtx6kpro#15); SGLang waits up to its watchdog timeout.')
STALL_FIX = ('Run llmops.inference.gpu_p2p_check on the host; with verdict use_nccl_p2p_disable set '
             'llmops_nccl_p2p_disable: true (the role renders NCCL_P2P_DISABLE=1 and '
             '--disable-custom-all-reduce). For more detail start once with NCCL_DEBUG=INFO '
             '(llmops_environment) and look for "via P2P/..." vs "via SHM/...". Multi-node: check '
             '--dist-init-addr reachability and NCCL_SOCKET_IFNAME.')

_SECRET_PATTERNS = (
    # server_args={... 'api_key': 'value' ...} (SGLang logs its resolved arguments at start-up) and YAML/JSON.
    re.compile(r"""((?:\b|['"])(?:admin_)?api_key['"]?\s*[:=]\s*)(['"])([^'"]+)\2"""),
    re.compile(r'(--(?:admin-)?api-key[= ])(\S+)'),
    re.compile(r'(Authorization: Bearer )(\S+)', re.I),
)


def redact(line, secrets=()):
    """Remove secrets from a log line: the given values, and api_key fields/flags whatever their value."""
    text = line
    for secret in secrets:
        if secret:
            text = text.replace(secret, '<redacted>')
    text = _SECRET_PATTERNS[0].sub(lambda m: m.group(1) + m.group(2) + '<redacted>' + m.group(2), text)
    text = _SECRET_PATTERNS[1].sub(lambda m: m.group(1) + '<redacted>', text)
    return _SECRET_PATTERNS[2].sub(lambda m: m.group(1) + '<redacted>', text)


def classify(lines, context=3):
    """First failure signature in the lines, or None.

    Returns dict(signature, summary, likely_cause, fix, evidence_lines, line_index).
    """
    for name, patterns, summary, cause, fix in _COMPILED:
        for index, line in enumerate(lines):
            if any(p.search(line) for p in patterns):
                start = max(0, index - context)
                evidence = list(lines[start:index + context + 1])
                return dict(signature=name, summary=summary, likely_cause=cause, fix=fix,
                            evidence_lines=evidence, line_index=index)
    return None


def milestones(lines):
    """Milestones reached, in log order: list of (name, line)."""
    seen = []
    for line in lines:
        for name, pattern in MILESTONES:
            if pattern.search(line):
                seen.append((name, line))
    return seen


class StartupWatch(object):
    """Follows one start of a server: journal lines, GPU memory samples and a clock -> a verdict.

    ``add_lines(now, lines)`` and ``add_gpu_memory(now, used_mib_total)`` feed it; ``verdict(now, process_alive)``
    returns None while the start is progressing, or a diagnosis dict. A stall is declared when the parallel init
    window is open (more "Init ... begin" than "... ends" lines), and for ``stall_seconds`` neither a new log line
    arrived nor the GPU memory grew by more than ``gpu_growth_mib``.
    """

    def __init__(self, start, stall_seconds=45.0, gpu_growth_mib=64, exit_grace_seconds=3.0):
        self.start = start
        self.stall_seconds = float(stall_seconds)
        self.gpu_growth_mib = gpu_growth_mib
        self.exit_grace_seconds = exit_grace_seconds
        self.lines = []
        self.last_activity = start
        self.last_line_at = None
        self.gpu_mark = None
        self.gpu_samples = 0
        self.begins = 0
        self.ends = 0
        self.window_opened_at = None
        self.failure = None
        self.failure_seen_at = None
        self.reached = []

    def add_lines(self, now, lines):
        for line in lines:
            self.lines.append(line)
            if not _PROBE_ACCESS.search(line):
                # The readiness probe's own requests are not progress.
                self.last_activity = now
                self.last_line_at = now
            for name, pattern in MILESTONES:
                if pattern.search(line):
                    self.reached.append(name)
                    if name == 'parallel_begin':
                        self.begins += 1
                        if self.window_opened_at is None:
                            self.window_opened_at = now
                    elif name == 'parallel_end':
                        self.ends += 1
        if lines and (self.failure is None or self.failure['signature'] == 'startup_error'):
            found = classify(self.lines)
            if found is not None and (self.failure is None or found['signature'] != 'startup_error'):
                # A bare traceback keeps the time it was first seen: the exit grace runs from there.
                seen_at = self.failure_seen_at if self.failure is not None and found['signature'] == 'startup_error' \
                    else now
                self.failure, self.failure_seen_at = found, seen_at

    def add_gpu_memory(self, now, used_mib):
        if used_mib is None:
            return
        self.gpu_samples += 1
        if self.gpu_mark is None or used_mib > self.gpu_mark + self.gpu_growth_mib:
            if self.gpu_mark is not None:
                self.last_activity = max(self.last_activity, now)
            self.gpu_mark = used_mib
        elif used_mib < self.gpu_mark:
            self.gpu_mark = used_mib

    @property
    def in_parallel_window(self):
        return self.begins > self.ends

    def verdict(self, now, process_alive=True):
        """None while starting; else a diagnosis dict (signature, summary, likely_cause, fix, evidence_lines)."""
        if self.failure is not None:
            specific = self.failure['signature'] != 'startup_error'
            if specific or not process_alive or now - self.failure_seen_at >= self.exit_grace_seconds:
                again = classify(self.lines)
                return again or self.failure
        if not process_alive:
            found = classify(self.lines)
            if found:
                return found
            return dict(signature='exited', summary='the server process exited during start-up',
                        likely_cause='The process ended without a message this classifier knows.',
                        fix='Read the evidence lines (the end of the journal of this start).',
                        evidence_lines=self.lines[-15:], line_index=None)
        if self.in_parallel_window and now - self.last_activity >= self.stall_seconds:
            quiet = now - self.last_activity
            evidence = [line for line in self.lines if MILESTONES[0][1].search(line)][-4:] + self.lines[-3:]
            seen = []
            for line in evidence:
                if line not in seen:
                    seen.append(line)
            gpu = ('no GPU memory growth above %d MiB' % self.gpu_growth_mib if self.gpu_samples
                   else 'GPU memory not observable (no nvidia-smi)')
            return dict(signature='nccl_init_stall',
                        summary='start-up stalled in parallel (NCCL) initialisation: no new log line for %.0f s and '
                                '%s after "Init ... begin"' % (quiet, gpu),
                        likely_cause=STALL_CAUSE, fix=STALL_FIX, evidence_lines=seen, line_index=None,
                        quiet_seconds=round(quiet, 1))
        return None
