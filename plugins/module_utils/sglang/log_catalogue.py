# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every log line the collection recognises, as data: failure signatures, start-up milestones, memory lines.

PRIVATE to the collection. Pure, stdlib only. A *text* is a line (or part of one) as a program prints it, written as
pieces: plain strings are the program's own words, verbatim (tests/sglang/test_log_catalogue.py finds each one in the
installed source or library of ``origin``: the pinned SGLang, PyTorch, CUDA's runtime, NCCL, CPython ...);
``Field`` is a value the program formats in (a number, a name); ``Value`` is such a value that a signature needs to
be one particular value (an error number); ``OneOf`` is a choice of verbatim words; ``Raw`` is structure, not words
(the logger's prefix, an optional clause). A text's regex is built from its pieces, so what is matched is what is
looked up. ``example`` is a line the program prints (the unit tests match it); ``when`` says which SGLang releases
print an ``sglang`` text, from the release table (profiles/sglang_releases.yml), where not every one does:
``('flag', name)`` the releases whose ``flags.<name>`` is true, ``('wording', name)`` those whose ``flags.<name>`` is
this text.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re


class Field(object):
    """A value the program formats into the line; ``name`` makes it a named group of the regex."""

    def __init__(self, regex=r'.*?', name=None):
        self.regex = regex
        self.name = name


class Value(object):
    """A value the program formats in, matched literally (an error number, a file name); not looked up."""

    def __init__(self, text):
        self.text = text


class OneOf(object):
    """One of several verbatim words (each is looked up)."""

    def __init__(self, *texts):
        self.texts = texts


class Raw(object):
    """Line structure that is not the program's words (a logger prefix, an optional clause): a regex, not looked up."""

    def __init__(self, regex):
        self.regex = regex


ANY = Field()
WORD = Field(r'\S+')


def INT(name=None):  # noqa: N802 -- reads as a piece type in the tables below
    return Field(r'-?\d+', name)


def NUM(name=None):  # noqa: N802
    return Field(r'-?\d+(?:\.\d+)?', name)


def text(pieces, origin, example, when=None, source=None):
    """One text: pieces, origin (see ORIGINS), an example line, the SGLang releases that print it, a source note."""
    return dict(pieces=tuple(pieces), origin=origin, example=example, when=when, source=source)


# Where the verbatim pieces of a text come from (tests/sglang/test_log_catalogue.py looks each up there).
ORIGINS = {
    'sglang': 'the installed pinned SGLang package: its Python string literals (implicit concatenation joined)',
    'torch': "PyTorch's C++ libraries (torch/lib/libc10.so, libc10_cuda.so, libtorch_python.so, libtorch_cuda.so, "
             "libtorch_cpu.so: c10d and gloo)",
    'cudart': "the CUDA runtime library of SGLang's wheels (nvidia/*/lib/libcudart.so.*): cudaGetErrorString/Name",
    'nccl': "the NCCL library of SGLang's wheels (nvidia/nccl/lib/libnccl.so.*)",
    'pynvml': "nvidia-ml-py's pynvml.py (SGLang's NVML binding)",
    'transformers': "the transformers package's Python string literals",
    'uvicorn': "the uvicorn package's Python string literals (SGLang's HTTP server)",
    'python': "CPython's standard library (argparse, asyncio, traceback) and its builtin exception names",
    'libc': "the C library's strerror() texts (as asyncio prints them, lower-cased too) and the dynamic loader's "
            'dlerror() texts',
    'nvidia-driver': 'the NVIDIA driver (NVML error strings, nvidia-smi, kernel module messages): not installable '
                     'without the driver, so not looked up; each such text cites its source',
}

# Logger prefix SGLang puts in front of a line ("[2026-07-01 10:00:00 TP0] ").
_PREFIX = r'^(?:\[[^\]]*\] )?'
_EXCEPTIONS = ('ValueError', 'AssertionError', 'RuntimeError', 'TypeError', 'KeyError', 'ImportError',
               'ModuleNotFoundError', 'OSError')

_DRIVER_FIX = ('Run llmops.inference.nvidia_driver_info inside the container/host that runs SGLang (with '
               'expected_version = the host\'s /sys/module/nvidia/version) and install the user-space driver of '
               'exactly that version (in an LXC: NVIDIA-Linux-x86_64-<host version>.run --no-kernel-modules); '
               'after a host driver upgrade, reboot the host or reload the module.')

# (name, summary, likely cause, fix, texts). The first signature with a matching line wins, in this order: specific
# causes first, generic Python exceptions last.
FAILURES = (
    ('mtp_radix_cache', 'MTP + radix cache refused with the no_buffer mamba strategy',
     'Speculative decoding (MTP/NEXTN) on a hybrid GDN model with the radix cache needs the extra_buffer mamba '
     'strategy; the command line left it at no_buffer (auto resolves to no_buffer on SGLang <= 0.5.12).',
     'Render the strategy flag the release knows: --mamba-scheduler-strategy extra_buffer (<= 0.5.12, plus '
     'SGLANG_ENABLE_SPEC_V2=1 on 0.5.9/0.5.10) or --mamba-radix-cache-strategy extra_buffer (>= 0.5.15); the '
     'sglang_server role does this when llmops_mamba_strategy is auto. Or add --disable-radix-cache.',
     [text(['Speculative decoding for ', WORD, ' is not compatible with radix cache when using --mamba-', WORD,
            ' no_buffer'], 'sglang', when=('flag', 'spec_radix_no_buffer'),
           source='server_args.py _handle_mamba_radix_cache (PR #19391)',
           example='ValueError: Speculative decoding for Qwen3_5MoeForConditionalGeneration is not compatible with '
                   'radix cache when using --mamba-scheduler-strategy no_buffer.To use radix cache with speculative '
                   'decoding, please use --mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1.')]),
    ('mamba_strategy', 'the mamba radix-cache strategy conflicts with the other flags',
     'SGLang >= 0.5.15 validates the mamba strategy at start-up (arg_groups/mamba_hook.py): no_buffer needs the '
     'overlap schedule off, page size 1 and no trtllm_mha; extra_buffer needs an architecture that supports it.',
     'Leave llmops_mamba_strategy at auto (the role renders extra_buffer for MTP with the radix cache), or '
     'satisfy the quoted assertion; the role\'s pre-checks refuse these combinations before the start.',
     [text(['no_buffer do not support overlap schedule'], 'sglang', when=('flag', 'no_buffer_needs_no_overlap'),
           source='arg_groups/mamba_hook.py',
           example='AssertionError: no_buffer do not support overlap schedule. Try to set '
                   'disable_overlap_schedule=True.'),
      text(['no_buffer only supports page_size=1'], 'sglang', when=('flag', 'no_buffer_needs_no_overlap'),
           source='arg_groups/mamba_hook.py',
           example='AssertionError: no_buffer only supports page_size=1.'),
      text(['no_buffer do not support trtllm_mha attention backend'], 'sglang', when=('flag', 'no_buffer_needs_no_overlap'),
           source='arg_groups/mamba_hook.py',
           example='AssertionError: no_buffer do not support trtllm_mha attention backend.'),
      text(['extra_buffer is not supported for ', WORD, '; use no_buffer'], 'sglang',
           source='arg_groups/mamba_hook.py',
           example='AssertionError: extra_buffer is not supported for Qwen3NextForCausalLM; use no_buffer.'),
      text(['extra_buffer_lazy unsupported under PD disaggregation'], 'sglang',
           source='arg_groups/mamba_hook.py',
           example='AssertionError: extra_buffer_lazy unsupported under PD disaggregation')]),
    ('mamba_cache_memory', 'the mamba (GDN state) cache does not fit',
     'After weights (and MTP verify states) the budget left for the mamba/GDN state pool holds no slot for a '
     'running request.',
     'Raise --mem-fraction-static, use --mamba-ssm-dtype bfloat16, lower --max-running-requests, or use a larger '
     'TP size; re-plan with playbooks/plan.yml (llmops.inference.vram_plan_info) first.',
     [text(['Not enough GPU memory for hybrid (mamba/linear-attention) state cache'], 'sglang',
           source='mem_cache/kv_cache_configurator.py _handle_max_mamba_cache',
           example='RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache. Computed '
                   'max_mamba_cache_size=0 (total_rest_memory=0.02 GB, mamba_cache_per_req=36.63 MB).'),
      text(['Hybrid (mamba/linear-attention) state cache is too small to serve any requests'], 'sglang',
           source='mem_cache/kv_cache_configurator.py resolve_max_num_reqs',
           example='RuntimeError: Hybrid (mamba/linear-attention) state cache is too small to serve any requests. '
                   'max_mamba_cache_size=3, mamba_ratio=5, resulting max_num_reqs=0.')]),
    ('not_enough_memory', 'not enough GPU memory for the KV cache / activations',
     'The weights plus the static pools do not fit in --mem-fraction-static of the GPU memory, or another process '
     'holds GPU memory (nvidia-smi --query-compute-apps=pid,used_memory --format=csv).',
     'Re-plan with playbooks/plan.yml, then raise --mem-fraction-static (keep the headroom the plan asks for), lower '
     '--context-length / --max-running-requests, use FP8 KV cache or a larger TP size; stop other GPU processes.',
     [text(['Not enough memory. Please try to increase --mem-fraction-static'], 'sglang',
           source='model_executor/pool_configurator.py',
           example='RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: '
                   'mem_fraction_static=0.62'),
      text(['Loaded weights leave no GPU memory for the KV cache'], 'sglang', source='mem_cache/kv_cache_configurator.py',
           example='RuntimeError: Loaded weights leave no GPU memory for the KV cache (available -1.20 GB).'),
      text(['torch.OutOfMemoryError', ': ', 'CUDA out of memory'], 'torch',
           source='c10/cuda/CUDACachingAllocator.cpp, torch/csrc/Exceptions.cpp',
           example='torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total '
                   'capacity of 95.59 GiB of which 1.02 GiB is free.'),
      text(['CUDA out of memory. Tried to allocate'], 'torch', source='c10/cuda/CUDACachingAllocator.cpp',
           example='RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB'),
      text(['RuntimeError', ': ', 'CUDA error: ', 'out of memory'], ('python', 'torch', 'cudart'),
           source='c10/cuda/CUDAException.cpp + cudaGetErrorString(cudaErrorMemoryAllocation)',
           example='RuntimeError: CUDA error: out of memory')]),
    ('nvml_driver_mismatch', 'NVIDIA driver/library version mismatch (NVML)',
     'The user-space NVIDIA libraries (libnvidia-ml, libcuda) are not the version of the loaded kernel module: '
     'host driver upgraded without reboot, or an LXC/container whose user space was not updated with the host.',
     _DRIVER_FIX,
     [text(['Failed to initialize NVML: Driver/library version mismatch'], 'nvidia-driver',
           source='nvidia-smi (nvmlErrorString of NVML_ERROR_LIB_RM_VERSION_MISMATCH); reported by SGLang\'s '
                  'utils/common.py get_nvgpu_memory_capacity',
           example='RuntimeError: nvidia-smi failed (exit code 18: Failed to initialize NVML: Driver/library version '
                   'mismatch'),
      text(['RM has detected an NVML/RM version mismatch'], 'pynvml', source='pynvml.py _nvmlErrorString fallback',
           example='pynvml.NVMLError_LibRmVersionMismatch: RM has detected an NVML/RM version mismatch.'),
      text(['NVRM: API mismatch: the client has the version'], 'nvidia-driver',
           source='the nvidia kernel module (dmesg), echoed by the user-space driver',
           example='NVRM: API mismatch: the client has the version 565.57.01, but this kernel module has the '
                   'version 590.48.01.')]),
    ('cuda_driver_mismatch_803', 'CUDA error 803: libcuda does not match the kernel module',
     'libcuda.so.1 (user-mode driver) is a different version from the loaded nvidia kernel module, often a CUDA '
     'forward-compat libcuda (/usr/local/cuda-*/compat) put on the loader path on a host with a newer driver.',
     _DRIVER_FIX + ' Remove compat directories from LD_LIBRARY_PATH / ld.so.conf.d unless forward compat is intended.',
     [text(['Error ', Value('803'), ': ', 'system has unsupported display driver / cuda driver combination'],
           ('torch', 'cudart'), source='c10/cuda/CUDAFunctions.cpp device_count + cudaGetErrorString(803)',
           example='RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before '
                   'calling NumCudaDevices() that might have already set an error? Error 803: system has '
                   'unsupported display driver / cuda driver combination'),
      text(['cudaErrorSystemDriverMismatch'], 'cudart', source='cudaGetErrorName(803)',
           example='CUDA error: cudaErrorSystemDriverMismatch'),
      text(['CUDA error: ', 'system has unsupported display driver'], ('torch', 'cudart'),
           source='c10/cuda/CUDAException.cpp + cudaGetErrorString(803)',
           example='RuntimeError: CUDA error: system has unsupported display driver / cuda driver combination'),
      text(['CUDA driver error: ', 'system has unsupported display driver'], ('torch', 'cudart'),
           source='c10/cuda/driver_api.h C10_CUDA_DRIVER_CHECK + cuGetErrorString(803), the same words',
           example='RuntimeError: CUDA driver error: system has unsupported display driver / cuda driver '
                   'combination')]),
    ('cuda_driver_too_old_35', 'CUDA error 35: the driver is older than the CUDA runtime of the wheels',
     'The PyTorch/SGLang wheels were built for a newer CUDA than the installed driver supports (CUDA 13.x needs '
     'driver >= 580, 12.8 needs >= 570.26).',
     'Upgrade the host driver (and the container user space to the same version), or install wheels for an older '
     'CUDA; llmops.inference.nvidia_driver_info with cuda_runtime=<wheel CUDA> names the minimum driver.',
     [text(['Error ', Value('35'), ': ', 'CUDA driver version is insufficient for CUDA runtime version'],
           ('torch', 'cudart'), source='c10/cuda/CUDAFunctions.cpp device_count + cudaGetErrorString(35)',
           example='RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before '
                   'calling NumCudaDevices() that might have already set an error? Error 35: CUDA driver version is '
                   'insufficient for CUDA runtime version'),
      text(['cudaErrorInsufficientDriver'], 'cudart', source='cudaGetErrorName(35)',
           example='CUDA error: cudaErrorInsufficientDriver'),
      text(['CUDA driver version is insufficient for CUDA runtime version'], 'cudart', source='cudaGetErrorString(35)',
           example='RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version'),
      text(['The NVIDIA driver on your system is too old'], 'torch', source='torch/csrc/cuda/Module.cpp (_check_driver)',
           example='AssertionError: The NVIDIA driver on your system is too old (found version 12020).')]),
    # ---- multi-node TP groups (docs/multinode.md): the rendezvous at --dist-init-addr and the inter-node interface.
    # Lines captured from torch 2.14.1 (the pin's) with gloo on this machine; the NCCL ones are libnccl's formats.
    ('dist_init_port_in_use', 'the rendezvous port on the head is already in use',
     'Another process listens on llmops_dist_init_port of the head (an old server of the group that did not stop, a '
     'second instance, or an outgoing connection holding it when the port lies in the ephemeral range), so global '
     'rank 0 cannot open the TCPStore of --dist-init-addr.',
     'Find it on the head with `ss -ltnp "sport = :<port>"` and stop it, or choose an llmops_dist_init_port below '
     'net.ipv4.ip_local_port_range that nothing uses (the group preflight checks the port block).',
     [text(['The server socket has failed to listen on any local network address.', ANY, 'address already in use'],
           'torch', source='torch/csrc/distributed/c10d/socket.cpp (TCPStore server bind)',
           example='torch.distributed.DistNetworkError: The server socket has failed to listen on any local network '
                   'address. port: 29613, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in '
                   'use')]),
    ('dist_init_timeout', 'the other nodes did not reach the rendezvous within --dist-timeout',
     'Global rank 0 (the head) waited at --dist-init-addr for the ranks of the other nodes and not all came: a node '
     'was not started (or crashed before the rendezvous), a firewall drops the port between the nodes, or a node '
     'took longer than llmops_dist_timeout to get there.',
     'Start every node of the group together (the deploy does), read the other nodes\' journals, check that the '
     'head\'s llmops_dist_init_port is reachable from them (the group preflight probes it), or raise '
     'llmops_dist_timeout.',
     [text(['Timed out after ', INT(), ' seconds waiting for clients. ', INT('joined'), '/', INT('world'),
            ' clients joined.'], 'torch', source='torch/csrc/distributed/c10d/TCPStore.cpp (waitForWorkers)',
           example='torch.distributed.DistStoreError: Timed out after 6 seconds waiting for clients. 1/2 clients '
                   'joined.')]),
    ('dist_init_unreachable', 'this node cannot reach the rendezvous on the head',
     'A node of rank >= 1 could not connect to --dist-init-addr: the head is not running (or not yet), its address '
     'or port is wrong, or a firewall between the nodes drops or rejects the port.',
     'Check llmops_node_address of the head and llmops_dist_init_port, that the head\'s unit runs, and that the port '
     'is open between the nodes (the group preflight\'s TCP probe names the pair that fails).',
     [text(['The client socket has timed out after ', ANY, ' while trying to connect to (', ANY, ', ', INT(), ').'],
           'torch', source='torch/csrc/distributed/c10d/socket.cpp (TCPStore client connect)',
           example='torch.distributed.DistNetworkError: The client socket has timed out after 5000ms while trying to '
                   'connect to (127.0.0.1, 29612).'),
      text(['The client socket has failed to connect to any network address of (', ANY, ', ', INT(), ').'], 'torch',
           source='torch/csrc/distributed/c10d/socket.cpp',
           example='torch.distributed.DistNetworkError: The client socket has failed to connect to any network '
                   'address of (10.10.0.1, 20000).')]),
    ('gloo_interface', 'GLOO_SOCKET_IFNAME names an interface this node does not have',
     'llmops_nccl_socket_ifname (rendered as GLOO_SOCKET_IFNAME) is not an interface of this node, or it has no '
     'address: gloo, which SGLang uses for its CPU groups, cannot bind.',
     'Set llmops_nccl_socket_ifname of this node to its inter-node interface as `ip -br addr` shows it (interface '
     'names may differ between nodes: it is a per-node variable).',
     [text(['Unable to find address for: ', WORD], 'torch', source='third_party/gloo/gloo/transport/tcp/device.cc:84',
           example='RuntimeError: [enforce fail at /__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/'
                   'device.cc:84] ifa != nullptr. Unable to find address for: eth9')]),
    ('nccl_interface', 'NCCL_SOCKET_IFNAME matches no interface of this node',
     'llmops_nccl_socket_ifname (rendered as NCCL_SOCKET_IFNAME) is not an interface of this node, or it has no '
     'address: NCCL\'s bootstrap and socket transport cannot open a socket between the nodes.',
     'Set llmops_nccl_socket_ifname of this node to its inter-node interface as `ip -br addr` shows it.',
     [text(['Bootstrap : no socket interface found'], 'nccl', source='src/bootstrap.cc (bootstrapNetInit)',
           example='gpu-node-b:2211:2211 [0] NCCL WARN Bootstrap : no socket interface found'),
      text(['NET/Socket : no interface found'], 'nccl', source='src/transport/net_socket.cc',
           example='gpu-node-b:2211:2260 [0] NCCL WARN NET/Socket : no interface found')]),
    ('port_in_use', 'the port is already in use',
     'Another process (an old server not stopped, a second instance, another service) listens on the HTTP port '
     'or on one of the ports SGLang derives from it (port + 233 ... for ZMQ, the NCCL port).',
     'Find it with `ss -ltnp` (sport = :<port>) and stop it, or choose another llmops_http_port; two instances '
     'on one host need ports at least 300 apart.',
     [text([Value('[Errno 98] '), 'error while attempting to bind on address ', ANY, ': ', 'address already in use'],
           ('python', 'libc'), source='asyncio base_events.create_server (uvicorn logs the OSError) + strerror(98)',
           example="ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): address "
                   "already in use"),
      text(['Address already in use'], 'libc', source='strerror(EADDRINUSE)',
           example='OSError: [Errno 98] Address already in use'),
      text(['Port is already in use.'], 'sglang', source='server_args.py PortArgs',
           example='RuntimeError: Port is already in use. dist_init_port=30233 port_base=30234'),
      text([WORD, ' at ', INT(), ' is not available in ', INT(), ' seconds'], 'sglang', source='utils/network.py',
           example='ValueError: port_base at 30233 is not available in 30 seconds. x')]),
    ('invalid_argument', 'SGLang\'s argument parser rejected the command line',
     'A flag or value that this SGLang release does not know (flag renamed between releases, e.g. '
     '--mamba-scheduler-strategy -> --mamba-radix-cache-strategy in 0.5.15/0.5.20, or a choice list that differs).',
     'Validate the command line with the pinned release\'s parser (tests/sglang/validate_args.py, or the '
     'sglang_server_args module\'s validate_with_parser) and use the flag names of that release.',
     [text(['error: ', 'unrecognized arguments: ', Field('.*')], 'python', source='argparse.py',
           example='sglang serve: error: unrecognized arguments: --mamba-scheduler-strategy extra_buffer'),
      text(['error: ', 'argument ', Field(r'--\S+'), ': ', 'invalid choice: ', Field('.*')], 'python',
           source='argparse.py',
           example="launch_server.py: error: argument --reasoning-parser: invalid choice: 'qwen35' (choose from "
                   "auto, qwen3)"),
      text(['error: ', 'argument ', Field(r'--\S+'), ': ', 'invalid ', Field(r'\w+'), ' value: ', Field('.*')],
           'python', source='argparse.py',
           example="launch_server.py: error: argument --tp-size: invalid int value: 'four'"),
      text(['error: ', 'the following arguments are required: ', Field('.*')], 'python', source='argparse.py',
           example='launch_server.py: error: the following arguments are required: --model-path')]),
    ('nccl_shm', '/dev/shm too small for NCCL shared-memory transport',
     'With NCCL_P2P_DISABLE=1 NCCL moves data through /dev/shm, which is too small (LXC/containers default 64 MiB).',
     'Enlarge /dev/shm (LXC: a tmpfs mount entry; docker: --shm-size) to several GiB.',
     [text(['NCCL WARN ', 'Error: failed to extend ', '/dev/shm/nccl-'], 'nccl', source='src/misc/shmutils.cc',
           example='sglang-ct:1234:1290 [0] include/shm.h:28 NCCL WARN Error: failed to extend /dev/shm/nccl-9ma5 to '
                   '9637892 bytes'),
      text(['failed to extend ', '/dev/shm/nccl-'], 'nccl', source='src/misc/shmutils.cc',
           example='Error: failed to extend /dev/shm/nccl-9ma5 to 9637892 bytes, error: No space left on device (28)')]),
    ('nccl_error', 'NCCL failed during initialisation',
     'NCCL could not set up the TP group: broken P2P between the GPUs (IOMMU/ACS/SEV-SNP), /dev/shm, or a '
     'network interface problem between nodes.',
     'Run llmops.inference.gpu_p2p_check on the host; with verdict use_nccl_p2p_disable set '
     'llmops_nccl_p2p_disable: true (NCCL_P2P_DISABLE=1 and --disable-custom-all-reduce).',
     [text(['NCCL error'], 'sglang', source='distributed/device_communicators/pynccl_wrapper.py',
           example='RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)'),
      text([OneOf('ncclUnhandledCudaError', 'ncclSystemError', 'ncclInternalError', 'ncclInvalidUsage')], 'nccl',
           source='ncclResult_t names (nccl.h), as torch.distributed reports them',
           example='torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled cuda '
                   'error, NCCL version 2.27.3 ncclUnhandledCudaError: Call to CUDA function failed.'),
      text(['NCCL WARN'], 'nccl', source='NCCL\'s WARN log lines',
           example='sglang-ct:1234:1290 [1] transport/p2p.cc:275 NCCL WARN Cuda failure \'peer access is not '
                   'supported between these two devices\'')]),
    ('model_not_found', 'the model could not be loaded from --model-path',
     'The checkpoint directory is missing, incomplete or unreadable for the service user, and SGLang tried the '
     'Hub instead.',
     'Download it with the hf_model role (playbooks/hf_model.yml) and make llmops_model_path point at it; '
     'check that the service user can read it.',
     [text(['is not a local folder and is not a valid model identifier'], 'transformers', source='utils/hub.py',
           example='OSError: /srv/models/x is not a local folder and is not a valid model identifier listed on '
                   "'https://huggingface.co/models'"),
      text(["Can't load the configuration of"], 'transformers', source='configuration_utils.py',
           example="OSError: Can't load the configuration of '/srv/models/x'."),
      text(['does not appear to have a file named ', Value('config.json')], 'transformers', source='utils/hub.py',
           example='OSError: /srv/models/x does not appear to have a file named config.json. Checkout ...'),
      text(["We couldn't connect to '", Value('https://huggingface.co'), "'"], 'transformers', source='utils/hub.py',
           example="OSError: We couldn't connect to 'https://huggingface.co' to load the files")]),
    ('cuda_unavailable', 'no usable GPU in the service',
     'The service cannot open the GPUs: device nodes missing (/dev/nvidia-uvm is created on demand), not allowed '
     'by the unit\'s DevicePolicy/DeviceAllow or the LXC cgroup, or CUDA_VISIBLE_DEVICES lists absent indices.',
     'Check `ls -l /dev/nvidia*` inside the container, the LXC devN/cgroup lines and llmops_gpu_indices; '
     'create /dev/nvidia-uvm before start (nvidia-modprobe -c0 -u, or nvidia-persistenced).',
     [text(['Found no NVIDIA driver on your system'], 'torch', source='torch/csrc/cuda/Module.cpp (_check_driver)',
           example='AssertionError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU '
                   'and installed a driver'),
      text(['No CUDA GPUs are available'], 'torch', source='c10/cuda/CUDAFunctions.cpp',
           example='RuntimeError: No CUDA GPUs are available'),
      text([Value('libcuda.so.1'), ': ', 'cannot open shared'], 'libc', source='dlerror() of the dynamic loader',
           example='OSError: libcuda.so.1: cannot open shared object file: No such file or directory'),
      text(['CUDA driver initialization failed'], 'torch', source='c10/cuda/CUDAFunctions.cpp',
           example='RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu.'),
      text(['cudaErrorNoDevice'], 'cudart', source='cudaGetErrorName(100)',
           example='CUDA error: cudaErrorNoDevice'),
      text(['no CUDA-capable device is detected'], 'cudart', source='cudaGetErrorString(100)',
           example='RuntimeError: CUDA error: no CUDA-capable device is detected')]),
    ('warmup_failed', 'the warm-up request failed after the server started',
     'The server loaded but its first generation failed (see the traceback above the line).',
     'Read the traceback in the evidence; common causes are parser or chat-template errors and CUDA errors.',
     [text(['Initialization failed. warmup error'], 'sglang', source='entrypoints/http_server.py',
           example='[2026-07-01 10:00:00] Initialization failed. warmup error: Traceback (most recent call last):')]),
    ('startup_error', 'SGLang raised an error during start-up',
     'A start-up validation or an exception that has no specific signature here.',
     'Read the evidence lines; if this is a configuration error, add it to the pre-checks in module_utils/sglang/flags.py.',
     [text([Raw(_PREFIX), OneOf(*_EXCEPTIONS), ': ', Field('.+')], 'python', source='the builtin exceptions',
           example='KeyError: x'),
      text(['Traceback (most recent call last)'], 'python', source='traceback.py',
           example='Traceback (most recent call last):')]),
)

# Progress milestones: (name, texts). The parallel window (the stall detector's) opens and closes with the first
# pair; their wording is each rule family's (profiles/sglang_releases.yml flags.parallel_begin / parallel_end, which
# tests/sglang/test_log_catalogue.py compares with these). Each source is the log call in the pinned release (its
# python/sglang/srt/..., file:line of the logger call); the start-up progress (module_utils/sglang/progress.py, the
# lines sglang_server_wait prints) shows the ones PROGRESS names.
MILESTONES = (
    ('parallel_begin', [text(['Init parallel begin.'], 'sglang', when=('wording', 'parallel_begin'),
                             source='distributed/bootstrap.py:115',
                             example='[2026-11-30 01:21:00 TP0] Init parallel begin.'),
                        text(['Init torch distributed begin.'], 'sglang', when=('wording', 'parallel_begin'),
                             source='model_executor/model_runner.py init_torch_distributed (older releases)',
                             example='[2026-04-30 01:21:00 TP0] Init torch distributed begin.')]),
    ('parallel_end', [text(['Init parallel ends.'], 'sglang', when=('wording', 'parallel_end'),
                           source='distributed/bootstrap.py:190',
                           example='[2026-11-30 01:21:00 TP0] Init parallel ends. elapsed=1.52 s'),
                      text(['Init torch distributed ends.'], 'sglang', when=('wording', 'parallel_end'),
                           source='model_executor/model_runner.py init_torch_distributed (older releases)',
                           example='[2026-04-30 01:21:00 TP0] Init torch distributed ends. mem usage=0.41 GB')]),
    ('load_weight_begin', [text(['Load weight begin.'], 'sglang', source='model_executor/model_runner.py:1273 load_model',
                                example='[TP0] Load weight begin. avail mem=94.19 GB')]),
    # tqdm's bar on TP rank 0's stderr (tqdm.auto, bar_format utils/common.py:1414 BAR_FORMAT "{desc}:
    # {percentage:3.0f}% Completed | {n_fmt}/{total_fmt} ..."), one update per shard, each begun with a carriage
    # return and the bar ended by one newline: journald stores it as a line at that newline (or when another process
    # of the unit writes, journald-stream.c LINE_BREAK_PID_CHANGE), so the updates arrive in bursts.
    ('weight_shards', [text([OneOf('Loading safetensors checkpoint shards', 'Multi-thread loading shards',
                                   'Loading pt checkpoint shards', 'Multi-thread loading pt checkpoint shards'),
                             ': ', Raw(r' *'), INT('percent'), '% Completed | ', INT('done'), '/', INT('total')],
                            'sglang',
                            source='model_loader/weight_utils.py:1164 safetensors_weights_iterator (also :1369 '
                                   'multi-thread, :1410 and :1437 pt), bar_format utils/common.py:1414 BAR_FORMAT',
                            example='Loading safetensors checkpoint shards:  50% Completed | 2/4 [00:01<00:01,  '
                                    '1.73it/s]')]),
    ('load_weight_end', [text(['Load weight end.'], 'sglang', source='model_executor/model_runner.py:1372 load_model',
                              example='[TP0] Load weight end. elapsed=95.31 s, type=Qwen3_5MoeForConditionalGeneration, '
                                      'avail mem=37.05 GB, mem usage=57.14 GB.')]),
    ('mamba_cache', [text(['Mamba Cache is allocated.'], 'sglang', source='mem_cache/memory_pool.py:983 and :1004',
                          example='[TP0] Mamba Cache is allocated. max_mamba_cache_size: 111, conv_state size: 0.07GB, '
                                  'ssm_state size: 3.94GB ')]),
    ('kv_cache', [text(['KV Cache', ' ', 'is allocated', '.'], 'sglang',
                       source='mem_cache/memory_pool.py:2087 and :2095 _finalize_allocation_log ("{cache_name} is '
                              'allocated")',
                       example='[TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 715559, K size: 4.09 GB, '
                               'V size: 4.09 GB')]),
    ('memory_pool_end', [text(['Memory pool end.'], 'sglang', source='mem_cache/kv_cache_configurator.py:498',
                              example='[TP0] Memory pool end. avail mem=20.21 GB')]),
    # The graph's name ("target verify", "draft decode") in the pinned release; none in older ones ("Capture cuda graph
    # begin.").
    ('cuda_graph_begin', [text(['Capture ', Raw(r'(?:(?P<graph>.+?) )?'), OneOf('CUDA graph', 'cuda graph'), ' begin.'],
                               'sglang',
                               source='model_executor/model_runner_components/cuda_graph_setup.py:684 (prefill) and '
                                      ':758 (decode, verify), speculative/eagle_worker_v2.py:513 and :632',
                               example='[TP0] Capture target verify CUDA graph begin. backend=full, '
                                       'num_tokens_per_req=4, avail mem=19.53 GB')]),
    ('cuda_graph_end', [text(['Capture ', Raw(r'(?:(?P<graph>.+?) )?'), OneOf('CUDA graph', 'cuda graph'), ' end.'],
                             'sglang',
                             source='model_executor/model_runner_components/cuda_graph_setup.py:695 (prefill) and '
                                    ':787 (decode, verify), speculative/eagle_worker_v2.py:531 and :652',
                             example='[TP0] Capture target verify CUDA graph end. bs=[1, 2, 4, 8, 12, 16, 24], '
                                     'elapsed=21.33 s, mem usage=1.85 GB, avail mem=17.68 GB.')]),
    ('max_total_num_tokens', [text(['max_total_num_tokens=', INT()], 'sglang', source='managers/scheduler.py:1269',
                                   example='[TP0] max_total_num_tokens=715559, chunked_prefill_size=8192, '
                                           'max_prefill_tokens=16384, max_running_requests=22, context_len=262144, '
                                           'available_gpu_mem=17.20 GB')]),
    # The pinned release prints it itself (entrypoints/http_server.py:3072); earlier ones leave it to uvicorn's own
    # Server.startup (uvicorn/server.py), in the same words (make parser SGLANG_PIN=<release> finds it there).
    ('uvicorn_running', [text(['Uvicorn running on'], ('sglang', 'uvicorn'), source='entrypoints/http_server.py:3072',
                              example='INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)')]),
    ('ready', [text(['The server is fired up and ready to roll!'], 'sglang', source='entrypoints/http_server.py:2600',
                    example='[2026-11-30 01:21:01] The server is fired up and ready to roll!')]),
    # A node of rank >= 1 of a multi-node group: its schedulers are ready (weights loaded, graphs captured with the
    # whole group) and it starts its health stub, whose /health always answers 200 (entrypoints/engine.py:1234-1290).
    ('follower_ready', [text(['Dummy health check server started in background thread at ', WORD], 'sglang',
                             source='utils/common.py:3683 launch_dummy_health_check_server',
                             example='[2026-12-01 10:00:00] Dummy health check server started in background thread '
                                     'at 127.0.0.1:30000')]),
)

# The milestones the start-up progress reports (module_utils/sglang/progress.py), in start-up order, with the words
# it prints; a repeat by the other TP ranks is one milestone, the shard bar one line per new percentage.
PROGRESS = (
    ('parallel_begin', 'parallel init (NCCL)'),
    ('load_weight_begin', 'loading weights'),
    ('weight_shards', 'weights'),
    ('load_weight_end', 'weights loaded'),
    ('kv_cache', 'KV cache allocated'),
    ('cuda_graph_begin', 'capturing CUDA graph'),
    ('cuda_graph_end', 'CUDA graph captured'),
    ('ready', 'ready'),
    ('follower_ready', 'ready (node of a TP group)'),
)

# The start-up lines whose numbers are compared with the plan (module_utils/sglang/startup.py), with named fields.
# Formats: docs/dev/sglang-memory.md section 8 (the pinned release's, file:line).
_GB = ' GB'
STARTUP_LINES = (
    ('memory_baseline', text(['Memory baseline taken. mem usage=', NUM('usage'), _GB], 'sglang',
                             source='distributed/bootstrap.py', when=('flag', 'memory_baseline_line'),
                             example='[2026-11-30 01:21:00 TP0] Memory baseline taken. mem usage=1.41 GB')),
    ('load_weight_begin', text(['Load weight begin. avail mem=', NUM('avail'), _GB], 'sglang',
                               source='model_executor/model_runner.py load_model',
                               example='[2026-11-30 01:21:00 TP0] Load weight begin. avail mem=94.19 GB')),
    ('load_weight_end', text(['Load weight end. elapsed=', NUM(), ' s, type=', Field(r'[^,\s]+', 'model_type'), ', ',
                              Raw(r'(?:[^,]*, )?'), 'avail mem=', NUM('avail'), ' GB, mem usage=', NUM('usage'),
                              ' GB.'], 'sglang', source='model_executor/model_runner.py load_model',
                             example='[2026-11-30 01:22:35 TP0] Load weight end. elapsed=95.31 s, '
                                     'type=Qwen3_5MoeForConditionalGeneration, avail mem=37.05 GB, mem usage=57.14 GB.')),
    ('mamba_cache', text(['Mamba Cache is allocated. ', 'max_mamba_cache_size: ', INT('slots'), ', conv_state size: ',
                          NUM('conv'), 'GB, ssm_state size: ', NUM('ssm'), 'GB'], 'sglang',
                         source='mem_cache/memory_pool.py MambaPool',
                         example='[TP0] Mamba Cache is allocated. max_mamba_cache_size: 111, conv_state size: 0.07GB, '
                                 'ssm_state size: 3.94GB intermediate_ssm_state_cache size: 3.29GB '
                                 'intermediate_conv_window_cache size: 0.12GB ')),
    ('mamba_spec_states', text(['GB intermediate_ssm_state_cache size: ', NUM('ssm'),
                                'GB intermediate_conv_window_cache size: ', NUM('conv'), 'GB'], 'sglang',
                               source='mem_cache/memory_pool.py MambaPool (with speculative decoding)',
                               example='[TP0] Mamba Cache is allocated. max_mamba_cache_size: 111, conv_state size: '
                                       '0.07GB, ssm_state size: 3.94GB intermediate_ssm_state_cache size: 3.29GB '
                                       'intermediate_conv_window_cache size: 0.12GB ')),
    ('kv_cache', text([Raw(r'(?:(?P<label>Full|SWA) )?'), 'KV Cache', ' ', 'is allocated', '. dtype: ',
                       Field(r'[^,]+', 'dtype'), ', #tokens: ', INT('tokens'), ', ',
                       Raw(r'(?:K size: (?P<k>\d+(?:\.\d+)?) GB, V size: (?P<v>\d+(?:\.\d+)?) GB'
                           r'|KV size: (?P<kv>\d+(?:\.\d+)?) GB)')], 'sglang',
                      source='mem_cache/memory_pool.py _finalize_allocation_log',
                      example='[TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 715559, K size: 4.09 GB, '
                              'V size: 4.09 GB')),
    ('memory_pool_end', text(['Memory pool end. avail mem=', NUM('avail'), _GB], 'sglang',
                             source='mem_cache/kv_cache_configurator.py',
                             example='[TP0] Memory pool end. avail mem=20.21 GB')),
    ('cuda_graph_end', text(['Capture ', Field(r'.+?', 'graph'), ' ', OneOf('CUDA graph', 'cuda graph'), ' end. ',
                             Raw(r'(?:bs=\[[^\]]*\], )?'), 'elapsed=', NUM(), ' s, ', 'mem usage=', NUM('usage'),
                             ' GB, avail mem=', NUM('avail'), ' GB.'], 'sglang',
                            source='model_executor/model_runner_components/cuda_graph_setup.py, '
                                   'speculative/eagle_worker_v2.py',
                            example='[TP0] Capture target verify CUDA graph end. bs=[1, 2, 4, 8, 12, 16, 24], '
                                    'elapsed=21.33 s, mem usage=1.85 GB, avail mem=17.68 GB.')),
    ('mamba_cap', text(['max_running_requests is capped to ', INT('running'), ' by the mamba state cache ',
                        '(max_mamba_cache_size=', INT('slots'), ', ', INT('ratio'), ' state slots per request)'],
                       'sglang', source='mem_cache/kv_cache_configurator.py resolve_max_num_reqs',
                       example='[TP0] max_running_requests is capped to 22 by the mamba state cache '
                               '(max_mamba_cache_size=111, 5 state slots per request). To raise it: increase '
                               '--mamba-full-memory-ratio or --max-mamba-cache-size, or halve the state size with '
                               '--mamba-ssm-dtype bfloat16.')),
    ('scheduler', text(['max_total_num_tokens=', INT('tokens'), ', chunked_prefill_size=', INT('chunk'),
                        ', max_prefill_tokens=', INT(), ', max_running_requests=', INT('running'), ', context_len=',
                        INT('context'), ', ', OneOf('available_gpu_mem', 'available_cpu_mem'), '=', NUM('avail'), _GB],
                       'sglang', source='managers/scheduler.py',
                       example='[TP0] max_total_num_tokens=715559, chunked_prefill_size=8192, max_prefill_tokens=16384, '
                               'max_running_requests=22, context_len=262144, available_gpu_mem=17.20 GB')),
)


def regex(pieces):
    """The regex source of a text's pieces (plain strings and Values escaped, Fields as their regex)."""
    out = []
    for piece in pieces:
        if isinstance(piece, Field):
            out.append('(?P<%s>%s)' % (piece.name, piece.regex) if piece.name else '(?:%s)' % piece.regex)
        elif isinstance(piece, Value):
            out.append(re.escape(piece.text))
        elif isinstance(piece, OneOf):
            out.append('(?:%s)' % '|'.join(re.escape(t) for t in piece.texts))
        elif isinstance(piece, Raw):
            out.append(piece.regex)
        else:
            out.append(re.escape(piece))
    return ''.join(out)


def compile_text(entry):
    return re.compile(regex(entry['pieces']))


def verbatim(entry):
    """The program's own words of a text (what must be found in its origin): the plain strings and the OneOf
    choices that carry words (at least three characters besides blanks and punctuation)."""
    words = []
    for piece in entry['pieces']:
        for item in (piece.texts if isinstance(piece, OneOf) else (piece,) if isinstance(piece, str) else ()):
            if len(re.sub(r'[\W_]', '', item)) >= 3 and item not in words:
                words.append(item)
    return words


def origins(entry):
    """The origin(s) of a text as a tuple."""
    value = entry['origin']
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def every_text():
    """(kind, name, text) of every text the collection matches: failures, milestones, start-up lines."""
    out = []
    for name, _summary, _cause, _fix, texts in FAILURES:
        out.extend(('failure', name, entry) for entry in texts)
    for name, texts in MILESTONES:
        out.extend(('milestone', name, entry) for entry in texts)
    out.extend(('startup', name, entry) for name, entry in STARTUP_LINES)
    return out
