# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection-wide ``llmops_*`` variables: one table, the resolver's whole interface.

PRIVATE to the collection. Each entry is a setting the operator gives in the inventory (or with ``-e``): its type,
its default (``None``: the next source of the precedence in docs/deployment_resolver.md decides), its rule and a real
description. ``roles/deployment/meta/argument_specs.yml`` and docs/reference.md are generated from this table
(tests/tools/role_docs.py); the resolver (plugin_utils/deployment/server.py) coerces and checks values against it.

``choices`` is either a tuple or ``'release:<key>'``: the choices of the pinned SGLang release in
profiles/sglang_releases.yml (plus the ``extra`` values that mean "SGLang's own choice", e.g. ``auto``).
``scope`` says which hosts read the variable: ``server`` (sglang_servers), ``proxmox`` (proxmox_hosts), ``gateway``
(sglang_gateways), ``any``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# Role variables the collection's playbooks pass from llmops_deployment: setting them in the inventory would be
# silently overridden, so the resolver refuses them and names the variable to set instead.
PASSED_BY_PLAYBOOKS = {
    'hf_model_repo_id': 'llmops_model_repo_id',
    'hf_model_revision': 'llmops_model_revision',
    'hf_model_dir': 'llmops_model_path (or llmops_model_dir)',
    'hf_model_forbidden_paths': 'llmops_forbidden_paths',
    'lxc_gpu_pve_host': 'llmops_lxc_host',
    'lxc_gpu_ctid': 'llmops_lxc_ctid',
    'lxc_gpu_numa_node': 'llmops_lxc_numa_node',
    'lxc_gpu_cpuset_mems': "lxc_gpu_cpuset (auto: from the Proxmox host's llmops_host_numa_cpus)",
    'lxc_gpu_cpuset_verify': "lxc_gpu_cpuset (auto: from the Proxmox host's llmops_host_numa_cpus)",
    'lxc_gpu_cpuset_origin': "lxc_gpu_cpuset (auto: from the Proxmox host's llmops_host_numa_cpus)",
    'gpu_partition_vfio_numa_nodes': 'llmops_host_vfio_numa_nodes',
    'gpu_partition_host_numa_nodes': 'llmops_host_nvidia_numa_nodes',
    'gpu_partition_vms': 'llmops_host_vfio_vms',
    'sglang_server_deployment': 'the llmops_* variables (it is the resolved llmops_deployment)',
    'sglang_benchmark_deployment': 'the llmops_* variables (it is the resolved llmops_deployment)',
    'sglang_gateway_deployment': 'the llmops_gateway_* variables (it is the resolved llmops_deployment)',
}

# Prefixes whose variables must be declared somewhere (this table, or a role's argument_specs).
COLLECTION_PREFIXES = ('llmops_', 'deployment_', 'sglang_server_', 'sglang_benchmark_', 'sglang_gateway_',
                       'hf_model_', 'gpu_partition_', 'lxc_gpu_', 'monitoring_')

# Names with the llmops_ prefix that are not settings: the published fact and the secret it does not carry.
RESULT_NAMES = ('llmops_deployment',)

PORT_MIN, PORT_MAX = 1, 65535
VMID_MIN, VMID_MAX = 100, 999999999


def _v(name, type_, default, description, **kw):
    entry = dict(name=name, type=type_, default=default, description=description, elements=None, choices=None,
                 min=None, max=None, secret=False, scope='server', group='', required=False, plan_only=False)
    entry.update(kw)
    return entry


_SELECTION = 'selection'
_MODEL = 'model'
_GPUS = 'GPUs'
_FLAGS = 'serving flags'
_HTTP = 'HTTP and auth'
_INSTALL = 'SGLang install'
_LXC = 'container'
_PVE = 'Proxmox host'
_STEPS = 'deploy steps'
_PLAN = 'plan'
_VARIANTS = 'variants'
_GATEWAY = 'gateway'
_MULTINODE = 'multi-node'

VARIABLES = [
    # ---- selection --------------------------------------------------------------------------------------------
    _v('llmops_profiles_dir', 'path', None,
       'Absolute path of a profiles directory (sglang.yml, sglang_releases.yml, models/, hardware/); null is the '
       "collection's own profiles/.", scope='any', group=_SELECTION),
    _v('llmops_model_profile', 'str', None,
       'Name of the model profile, a file profiles/models/<name>.yml (without .yml): repository, revision, parsers, '
       'MTP settings and the architecture facts of the checkpoint.', required=True, group=_SELECTION),
    _v('llmops_gpu_profile', 'str', None,
       "Name of the hardware profile of the server's GPUs, a file profiles/hardware/<name>.yml: memory.total, "
       'bandwidth and compute capability the VRAM plan and the backend checks use.', required=True, group=_SELECTION),
    _v('llmops_instance_name', 'str', None,
       'Instance name: the unit is sglang-<name>.service. Letters, digits, dot, dash and underscore; null is the '
       "model profile's name, so two profiles on one host are two instances.", group=_SELECTION),
    # ---- model ------------------------------------------------------------------------------------------------
    _v('llmops_model_repo_id', 'str', None,
       "Hugging Face repository to download, org/name; null is the model profile's hf_repo.", group=_MODEL),
    _v('llmops_model_revision', 'str', None,
       "A 40-hex commit, or a branch/tag that the first deploy locks to the commit it resolves to "
       "(llmops_model_lock_file); null is the profile's hf_revision, else main.", group=_MODEL),
    _v('llmops_model_dir', 'path', None,
       "Absolute directory holding the host's models; each revision goes to its own "
       "<dir>/<last part of the repository id>@<12 hex of the commit>. "
       'Required unless llmops_model_path is set.', group=_MODEL),
    _v('llmops_model_path', 'path', None,
       'The checkpoint directory itself (absolute), instead of the one derived from llmops_model_dir (then a new '
       'revision replaces the files in place: prefer llmops_model_dir).', group=_MODEL),
    _v('llmops_model_lock_file', 'path', None,
       'The lock of the model revisions (per host: repository, requested revision, the commit it resolved to), '
       'written by the deploy when it resolves a branch and read by every later run and by make plan; null is '
       'llmops-lock.yml next to the inventory. Commit it; delete a host\'s entry (or pin llmops_model_revision) to '
       'move to a new commit.', scope='any', group=_MODEL),
    _v('llmops_forbidden_paths', 'list', [],
       'No model, virtualenv or cache may live under these absolute paths (checked on the controller after '
       'normalising the path, and on the host after resolving symlinks and mount points).', elements='path',
       group=_MODEL),
    _v('llmops_served_model_name', 'str', None,
       "--served-model-name, the name clients ask for; null is the profile's served_model_name. No ':' (SGLang "
       'reserves it for LoRA adapters).', group=_MODEL),
    # ---- GPUs -------------------------------------------------------------------------------------------------
    _v('llmops_tp_size', 'int', None,
       "Tensor-parallel size (--tp-size), the GPUs one server uses; null is the profile's serving.tp_size.", min=1,
       group=_GPUS),
    _v('llmops_dp_size', 'int', 1,
       'Attention data-parallel groups inside the tp_size GPUs (--dp-size with --enable-dp-attention): attention and '
       'the KV cache run on tp/dp GPUs per group, each group a worker with its own requests and KV pool. Must divide '
       'llmops_tp_size and needs llmops_enable_dp_attention: true; 1 is no DP attention.', min=1, group=_GPUS),
    _v('llmops_enable_dp_attention', 'bool', False,
       'Render --enable-dp-attention with --dp-size llmops_dp_size (DP attention, for MLA models such as DeepSeek and '
       'hybrid models at large batch). Without it a --dp-size above 1 would start replicas of the whole server, which '
       'the collection does not deploy.', group=_GPUS),
    _v('llmops_gpu_indices', 'list', [],
       'nvidia-smi indices of the GPUs as the server sees them, for CUDA_VISIBLE_DEVICES (numbers, never UUIDs); '
       '[] is every GPU. When given, exactly tp_size distinct indices.', elements='int', group=_GPUS),
    _v('llmops_nccl_p2p_disable', 'bool', None,
       'Force NCCL_P2P_DISABLE=1 (true) or P2P on (false); null decides from the P2P check verdict, then the host '
       '(SEV-SNP or llmops_nccl_p2p_trusted: false disable P2P).', group=_GPUS),
    # ---- serving flags ----------------------------------------------------------------------------------------
    _v('llmops_mem_fraction_static', 'float', None,
       "--mem-fraction-static, the share of GPU memory for weights and the static pools; null is SGLang's own "
       'heuristic as the VRAM plan reproduces it.', min=0.0, max=1.0, exclusive=True, group=_FLAGS),
    _v('llmops_max_running_requests', 'int', None,
       "--max-running-requests; null renders no flag and leaves SGLang's own choice (its estimate from the KV pool, "
       'capped by the pools; 48 under speculative decoding), which the plan reports with what binds it. With DP '
       'attention it is the total: each worker gets value // llmops_dp_size.', min=1, group=_FLAGS),
    _v('llmops_context_length', 'int', None,
       "--context-length in tokens; null is the model's maximum (max_position_embeddings).", min=1, group=_FLAGS),
    _v('llmops_chunked_prefill_size', 'int', None,
       "--chunked-prefill-size in tokens (-1 disables chunking); null is SGLang's choice for the GPU memory.",
       min=-1, group=_FLAGS),
    _v('llmops_page_size', 'int', None, "--page-size in tokens; null is SGLang's default (1, or 64 where SGLang "
       'picks trtllm_mha).', min=1, group=_FLAGS),
    _v('llmops_radix_cache', 'bool', True, 'Prefix (radix) cache on; false renders --disable-radix-cache.',
       group=_FLAGS),
    _v('llmops_mamba_strategy', 'str', 'auto',
       'Mamba/GDN radix-cache strategy of a hybrid model under the flag name of the pinned release; auto is what '
       'the release resolves it to (rendered explicitly).', choices='release:mamba_strategy', extra=('auto',),
       group=_FLAGS),
    _v('llmops_max_mamba_cache_size', 'int', None,
       '--max-mamba-cache-size: mamba/GDN state slots of a hybrid model, split over the DP workers (each gets '
       'size // llmops_dp_size); null sizes the pool from memory with llmops_mamba_full_memory_ratio.', min=1,
       group=_FLAGS),
    _v('llmops_mamba_full_memory_ratio', 'float', None,
       "--mamba-full-memory-ratio r: the mamba state pool of a hybrid model gets r / (1 + r) of the memory left for "
       "the pools; null is SGLang's default (0.9). Ignored when llmops_max_mamba_cache_size is set.", min=0.0,
       exclusive=True, group=_FLAGS),
    _v('llmops_mamba_ssm_dtype', 'str', 'auto',
       "--mamba-ssm-dtype of the GDN recurrent state; auto is the checkpoint's (float32 for Qwen3.5).",
       choices='release:mamba_ssm_dtype', extra=('auto',), group=_FLAGS),
    _v('llmops_kv_cache_dtype', 'str', 'auto', "--kv-cache-dtype; auto is the checkpoint's dtype.",
       choices='release:kv_cache_dtype', extra=('auto',), group=_FLAGS),
    _v('llmops_disable_overlap_schedule', 'bool', False, 'Render --disable-overlap-schedule.', group=_FLAGS),
    _v('llmops_attention_backend', 'str', None, "--attention-backend; null is SGLang's choice for the GPU.",
       choices='release:attention_backend', group=_FLAGS),
    _v('llmops_speculative_num_draft_tokens', 'int', None,
       "MTP draft tokens (--speculative-num-draft-tokens); 0 turns MTP off; null is the profile's.", min=0,
       group=_FLAGS),
    _v('llmops_speculative_num_steps', 'int', None, "MTP steps (--speculative-num-steps); null is the profile's.",
       min=1, group=_FLAGS),
    _v('llmops_reasoning_parser', 'str', None,
       "--reasoning-parser (thinking separated into reasoning_content); null is the profile's, '' renders none.",
       choices='release:reasoning_parser', extra=('',), group=_FLAGS),
    _v('llmops_tool_call_parser', 'str', None,
       "--tool-call-parser (tool calls parsed into tool_calls); null is the profile's, '' renders none.",
       choices='release:tool_call_parser', extra=('',), group=_FLAGS),
    _v('llmops_watchdog_timeout', 'int', 1200,
       '--watchdog-timeout in seconds (SGLang 300; large MoE checkpoints need longer for the first batches).',
       min=1, group=_FLAGS),
    _v('llmops_enable_metrics', 'bool', True,
       'Render --enable-metrics: Prometheus /metrics on the server\'s port, exempt from the API key (what the '
       'monitoring role scrapes and the benchmark reads the per-run accept length from); false opts out.',
       group=_FLAGS),
    _v('llmops_extra_args', 'list', [],
       'More SGLang arguments with full flag names, e.g. ["--enable-flashinfer-allreduce-fusion"] (never --api-key).',
       elements='str', group=_FLAGS),
    _v('llmops_environment', 'dict', {},
       'More environment of the server, not secrets (e.g. {NCCL_DEBUG: INFO}); names are environment variable '
       'names.', group=_FLAGS),
    # ---- HTTP and auth ----------------------------------------------------------------------------------------
    _v('llmops_http_host', 'str', '127.0.0.1', 'Address the OpenAI-compatible HTTP server binds (--host).',
       group=_HTTP),
    _v('llmops_http_port', 'int', 30000,
       'HTTP port (--port). SGLang derives its ZMQ/NCCL ports from it, so two instances on one host need ports at '
       'least 300 apart.', min=PORT_MIN, max=PORT_MAX, group=_HTTP),
    _v('llmops_api_key', 'str', None,
       'API key clients send as "Authorization: Bearer <key>"; empty takes SGLANG_API_KEY from the controller\'s '
       'environment. Written only to a root-only 0600 file, never to a command line, the journal or a plan.',
       secret=True, group=_HTTP),
    _v('llmops_allow_no_api_key', 'bool', False, 'Serve without an API key (refused by default).', group=_HTTP),
    # ---- SGLang install ---------------------------------------------------------------------------------------
    _v('llmops_sglang_version', 'str', None,
       'The SGLang release this server runs: null is the pin of profiles/sglang.yml; another supported release '
       '(a release-table entry with planner and flag rules, and its lock in profiles/locks/) moves this server alone '
       '(docs/upgrade.md). Its own virtualenv is installed beside the old one.', group=_INSTALL),
    _v('llmops_sglang_venv', 'path', None,
       'Virtualenv of SGLang on the server; null is /opt/sglang/venv-<pinned version> (one per release, so a '
       'rollback gets its own SGLang back).', group=_INSTALL),
    _v('llmops_sglang_launcher', 'list', [],
       'The command that starts SGLang, before its arguments; [] is <venv>/bin/python -m sglang.launch_server.',
       elements='str', group=_INSTALL),
    _v('llmops_parser_python', 'path', None,
       'Python of a controller-side virtualenv with the pinned SGLang: the rendered command line is parsed by '
       "SGLang's own argument parser before any host is touched; null skips that (the host parses it after the "
       'install).', group=_INSTALL),
    # ---- container --------------------------------------------------------------------------------------------
    _v('llmops_lxc_host', 'str', None,
       'Inventory name of the Proxmox host (group proxmox_hosts) this LXC container runs on; null for a bare-metal '
       'server.', group=_LXC),
    _v('llmops_lxc_ctid', 'int', None, 'VMID of the container on llmops_lxc_host (/etc/pve/lxc/<id>.conf).',
       min=VMID_MIN, max=VMID_MAX, group=_LXC),
    _v('llmops_lxc_numa_node', 'int', None,
       'NUMA node of llmops_lxc_host whose nvidia GPUs the container gets.', min=0, group=_LXC),
    # ---- multi-node tensor parallelism (docs/multinode.md) ----------------------------------------------------
    _v('llmops_tp_group', 'str', None,
       'Name of the inventory group whose hosts (all of sglang_servers) serve one model together with tensor '
       'parallelism across them: --nnodes is their number, llmops_tp_size the total over all of them. Set it in '
       "that group's group_vars; null is a single-node server.", group=_MULTINODE),
    _v('llmops_node_rank', 'int', None,
       "This node's rank in its TP group (--node-rank): 0 is the head, the only node that serves HTTP to clients "
       'and the gateway; every rank 0..N-1 exactly once. Required in a group (the rank never comes from the '
       'inventory order).', min=0, group=_MULTINODE),
    _v('llmops_node_address', 'str', None,
       "This node's IP address on the inter-node network (an address of llmops_nccl_socket_ifname): the head's is "
       'the host of --dist-init-addr, and the preflight probes every node at its address. Required in a group.',
       group=_MULTINODE),
    _v('llmops_dist_init_port', 'int', 20000,
       "TCP port of the rendezvous on the head (--dist-init-addr <head address>:<port>, torch.distributed's "
       'TCPStore; with DP attention SGLang also binds the next 6 ports). Keep it below the nodes\' ephemeral range '
       '(net.ipv4.ip_local_port_range, 32768 by default) so no outgoing connection can hold it.',
       min=PORT_MIN, max=PORT_MAX, group=_MULTINODE),
    _v('llmops_dist_timeout', 'int', 600,
       '--dist-timeout in seconds: how long each rank waits at the rendezvous for the others (and torch.distributed '
       "waits for a collective); a node that does not come up within it fails the group's start with the "
       'rendezvous timeout.', min=1, group=_MULTINODE),
    _v('llmops_nccl_socket_ifname', 'str', None,
       'Network interface between the nodes: NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME (NCCL\'s bootstrap and socket '
       "transport, and the gloo CPU groups SGLang creates). Required in a group: left alone NCCL and gloo may pick "
       'a bridge, a VPN or the loopback interface.', group=_MULTINODE),
    _v('llmops_nccl_ib_hca', 'str', None,
       'InfiniBand/RoCE adapters NCCL may use between the nodes (NCCL_IB_HCA, e.g. mlx5_0,mlx5_1); null renders '
       'NCCL_IB_DISABLE=1, so NCCL uses TCP on llmops_nccl_socket_ifname. Further NCCL_IB_* settings go to '
       'llmops_environment.', group=_MULTINODE),
    # ---- Proxmox host -----------------------------------------------------------------------------------------
    _v('llmops_host_gpus', 'list', None,
       "The host's GPUs as llmops.inference.gpu_info reports them: [{address: '0000:81:00.0', numa_node: 1}, ...].",
       elements='dict', scope='proxmox', required=True, group=_PVE),
    _v('llmops_host_gpu_profile', 'str', None, "Hardware profile of the host's GPUs (profiles/hardware/<name>).",
       scope='proxmox', group=_PVE),
    _v('llmops_host_nvidia_numa_nodes', 'list', [],
       'NUMA nodes whose GPUs stay on (or return to) the nvidia driver, for the containers.', elements='int',
       scope='proxmox', group=_PVE),
    _v('llmops_host_vfio_numa_nodes', 'list', [],
       'NUMA nodes whose GPUs go to vfio-pci for VM passthrough.', elements='int', scope='proxmox', group=_PVE),
    _v('llmops_host_numa_cpus', 'dict', None,
       "The CPUs of each NUMA node that holds GPUs, in the kernel's CPU list format: {0: '0-63,128-191', 1: "
       "'64-127,192-255'}, as /sys/devices/system/node/node<N>/cpulist and each GPU's local_cpulist "
       '(llmops.inference.gpu_info) print them. A container with lxc_gpu_cpuset auto (the default) is pinned to the '
       "CPUs and memory of its GPUs' nodes from this map, in make plan and the deploy alike (the container's "
       'lxc.cgroup2.cpuset lines, the unit\'s CPUAffinity=/NUMAMask=), and the deploy refuses a host whose sysfs '
       "disagrees before anything changes. null: such a container is refused (lxc_gpu_cpuset: '' opts out).",
       scope='proxmox', group=_PVE),
    _v('llmops_host_vfio_vms', 'list', [],
       'The Proxmox VMs that take the cards bound to vfio-pci: [{vmid: 200}] gives one VM every such card; with '
       'several VMs each lists its addresses: [{vmid: 200, addresses: [0000:81:00.0, 0000:a1:00.0]}, ...]. Every '
       'vfio-pci card goes to exactly one VM. hostpci_slots: [..] picks the hostpciN slots (0-15, default 0, 1, ...), '
       'which must be free on the VM or hold that card already. The deploy (gpu_partition) runs qm set <vmid> '
       '--hostpciN <address>,pcie=1 for the missing ones, refusing a running VM unless '
       'gpu_partition_vm_allow_running is true; make plan prints the lines. [] hands no card to a VM.',
       elements='dict', scope='proxmox', group=_PVE),
    _v('llmops_host_sev_snp', 'bool', False,
       'SEV-SNP is on (a Proxmox host, or a bare-metal server): GPU peer-to-peer DMA is not trusted and '
       'NCCL_P2P_DISABLE=1 is rendered unless a P2P check verdict says otherwise.', scope='any', group=_PVE),
    _v('llmops_nccl_p2p_trusted', 'bool', None,
       'false forces NCCL_P2P_DISABLE=1 on this host\'s servers; null leaves it to the P2P check and SEV-SNP.',
       scope='any', group=_PVE),
    # ---- deploy steps -----------------------------------------------------------------------------------------
    _v('llmops_deploy_check_driver', 'bool', True,
       "Check the server's NVIDIA user space against the (Proxmox host's) kernel module before anything changes; "
       'false only for GPU-less test hosts.', group=_STEPS),
    _v('llmops_deploy_check_gpus', 'bool', True,
       'Check in the preflight that the server sees at least tp_size NVIDIA GPUs (nvidia-smi); false only for '
       'GPU-less test hosts.', group=_STEPS),
    _v('llmops_deploy_p2p_check', 'bool', True,
       'Run the P2P copy + NCCL all-reduce check before the first start (TP > 1) and feed its verdict to the '
       'service.', group=_STEPS),
    _v('llmops_p2p_recheck', 'bool', False,
       'Run the P2P check again although a verdict is recorded on the host (the service must be stopped).',
       group=_STEPS),
    _v('llmops_remove_previous_model', 'bool', False,
       'After a model swap, once the new service is healthy, remove the previous model and its unit.',
       group=_STEPS),
    # ---- plan -------------------------------------------------------------------------------------------------
    _v('llmops_plan_must_fit', 'bool', True,
       'Refuse a server whose VRAM plan does not fit (headroom below llmops_plan_min_headroom_gib).', group=_PLAN),
    _v('llmops_plan_min_headroom_gib', 'float', 4.0,
       'GiB per GPU that must stay free for activations and CUDA graphs for the plan to fit.', min=0.0,
       group=_PLAN),
    _v('llmops_plan_concurrency', 'list', [1, 8, 32],
       'Concurrency levels of the "longest context at N concurrent requests" table of the plan.', elements='int',
       min=1, group=_PLAN),
    _v('llmops_plan_free_memory_before_load_gib', 'float', None,
       'Calibration from a real start-up log: the avail mem of "Load weight begin" (GiB); null is the hardware '
       "profile's estimate.", min=0.0, exclusive=True, group=_PLAN),
    _v('llmops_plan_free_memory_after_load_gib', 'float', None,
       'Calibration: the avail mem of the last "Load weight end" (GiB).', min=0.0, exclusive=True, group=_PLAN),
    _v('llmops_plan_use_measured_memory', 'bool', True,
       'Plan with the free memory before load that an earlier start of this host logged for the same GPU profile, TP '
       'size and SGLang release (kept in llmops_record_dir) instead of the hardware profile\'s estimate; '
       'llmops_plan_free_memory_before_load_gib, when set, wins over both.', group=_PLAN),
    _v('llmops_record_dir', 'path', None,
       'Directory on the controller that keeps each serving host\'s deployment record, <dir>/<host>/: per instance '
       'the record of its last start (planned vs. logged values), and the free memory before load measured per GPU '
       'profile and TP size, which the next plan of the host uses; null is build/deploy beside the playbooks '
       'directory.', group=_PLAN),
    _v('llmops_plan_output_dir', 'path', None,
       'playbooks/plan.yml only: directory that receives <host>/plan.md and the rendered files; null is build/plan.',
       scope='any', plan_only=True, group=_PLAN),
    _v('llmops_plan_sysfs_root', 'path', None,
       'playbooks/plan.yml only, Proxmox hosts: a copy of the host\'s /sys and /proc to plan the GPU split against.',
       scope='proxmox', plan_only=True, group=_PLAN),
    _v('llmops_plan_sysfs_fixture', 'str', None,
       'playbooks/plan.yml only, Proxmox hosts: a case of tests/fixtures/build_sysfs_roots.py to plan against.',
       scope='proxmox', plan_only=True, group=_PLAN),
    _v('llmops_plan_proc_devices', 'path', None,
       'playbooks/plan.yml only, Proxmox hosts: a copy of /proc/devices for the nvidia-uvm major.',
       scope='proxmox', plan_only=True, group=_PLAN),
    _v('llmops_play_hosts', 'str', None,
       'Host pattern of the single-role playbooks (playbooks/<role>.yml); null is the role\'s group '
       '(sglang_servers, proxmox_hosts for gpu_partition.yml, prometheus_servers for monitoring.yml).', scope='any',
       group=_STEPS),
    # ---- gateway (hosts of sglang_gateways; docs/sglang_gateway.md) ---------------------------------------------
    _v('llmops_gateway_replicas', 'list', [],
       'Inventory names of the SGLang servers (hosts of sglang_servers) behind this gateway, one replica each (rank 0 '
       'of its TP group); [] is every host of sglang_servers.', elements='str', scope='gateway', group=_GATEWAY),
    _v('llmops_gateway_worker_address', 'str', None,
       'On a server: the address the gateway connects to for this replica (http://<address>:<llmops_http_port>); null '
       'is llmops_http_host, which must then not be a wildcard (0.0.0.0, ::).', group=_GATEWAY),
    _v('llmops_gateway_host', 'str', '127.0.0.1', "Address the gateway's OpenAI-compatible HTTP server binds (--host).",
       scope='gateway', group=_GATEWAY),
    _v('llmops_gateway_port', 'int', 30080, 'HTTP port of the gateway (--port), the one URL clients use.',
       min=PORT_MIN, max=PORT_MAX, scope='gateway', group=_GATEWAY),
    _v('llmops_gateway_policy', 'str', 'cache_aware',
       'Routing policy (--policy): cache_aware keeps requests with a shared prefix on the replica that has it cached '
       'and balances the rest. One of the --policy choices of the pinned gateway (profiles/sglang_gateway.yml).',
       scope='gateway', group=_GATEWAY),
    _v('llmops_gateway_health_check_interval', 'int', 10,
       'Seconds between health checks of each worker (--health-check-interval-secs; the release default 60 leaves a '
       'dead replica in rotation for minutes, retries hide it from clients meanwhile).', min=1, scope='gateway',
       group=_GATEWAY),
    _v('llmops_gateway_health_check_timeout', 'int', 5, 'Seconds a health check may take (--health-check-timeout-secs).',
       min=1, scope='gateway', group=_GATEWAY),
    _v('llmops_gateway_health_failure_threshold', 'int', 3,
       'Consecutive failed health checks before a worker is marked unhealthy (--health-failure-threshold).', min=1,
       scope='gateway', group=_GATEWAY),
    _v('llmops_gateway_health_success_threshold', 'int', 2,
       'Consecutive good health checks before an unhealthy worker is healthy again (--health-success-threshold).',
       min=1, scope='gateway', group=_GATEWAY),
    _v('llmops_gateway_retries', 'int', 5,
       'Retries of a failed request on another worker (--retry-max-retries); 0 renders --disable-retries.', min=0,
       scope='gateway', group=_GATEWAY),
    _v('llmops_gateway_cb_failure_threshold', 'int', 10,
       'Failures that open the circuit breaker of a worker (--cb-failure-threshold); 0 renders '
       '--disable-circuit-breaker.', min=0, scope='gateway', group=_GATEWAY),
    _v('llmops_gateway_cb_timeout', 'int', 60, 'Seconds an open circuit waits before it tries the worker again '
       '(--cb-timeout-duration-secs).', min=1, scope='gateway', group=_GATEWAY),
    _v('llmops_gateway_request_timeout', 'int', 1800, 'Seconds a request may take end to end (--request-timeout-secs).',
       min=1, scope='gateway', group=_GATEWAY),
    _v('llmops_gateway_shutdown_grace', 'int', 180,
       'Seconds the gateway waits for requests in flight when it stops (--shutdown-grace-period-secs); the unit\'s '
       'TimeoutStopSec is this plus 30 s, so systemd never kills it mid-drain.', min=1, scope='gateway',
       group=_GATEWAY),
    _v('llmops_gateway_prometheus_host', 'str', None,
       'Address of the Prometheus /metrics listener (--prometheus-host); null is llmops_gateway_host.',
       scope='gateway', group=_GATEWAY),
    _v('llmops_gateway_prometheus_port', 'int', 29000, 'Port of the Prometheus /metrics listener (--prometheus-port).',
       min=PORT_MIN, max=PORT_MAX, scope='gateway', group=_GATEWAY),
    _v('llmops_gateway_version', 'str', None,
       'The smg release this gateway runs: an entry under releases: of profiles/sglang_gateway.yml that has a lock '
       '(its flags, policies and lock are rendered and installed); null is the pin, version: of that file. Add a '
       'release with make gateway-release VERSION=x.y.z (docs/upgrade.md).', scope='gateway', group=_GATEWAY),
    _v('llmops_gateway_venv', 'path', None,
       'Virtualenv of the gateway on its host; null is /opt/smg/venv-<its smg version>.', scope='gateway',
       group=_GATEWAY),
    _v('llmops_gateway_swap_batch', 'int', 1,
       'Replicas the rolling swap takes out of rotation at once (playbooks/rolling_swap.yml); at least N - batch '
       'replicas keep serving, so 1 keeps N-1. Must be below the number of replicas.', min=1, scope='gateway',
       group=_GATEWAY),
    _v('llmops_gateway_extra_args', 'list', [],
       'More `smg launch` arguments with full flag names (never --api-key; the flags above are rendered by the '
       'resolver).', elements='str', scope='gateway', group=_GATEWAY),
    # ---- variants ---------------------------------------------------------------------------------------------
    _v('llmops_variants', 'list', [],
       'A/B variants the benchmark compares, each resolved like the deployment itself: [{name, description, '
       'overrides: {llmops_<setting>: value}, mtp: bool}]. [] benchmarks the deployment as it is.', elements='dict',
       group=_VARIANTS),
]

BY_NAME = dict((entry['name'], entry) for entry in VARIABLES)

# The serving settings whose value and source llmops_deployment.settings records.
SERVING_SETTINGS = (
    'tp_size', 'dp_size', 'enable_dp_attention', 'mem_fraction_static', 'max_running_requests', 'context_length',
    'chunked_prefill_size', 'page_size', 'radix_cache', 'mamba_strategy', 'max_mamba_cache_size',
    'mamba_full_memory_ratio', 'mamba_ssm_dtype', 'kv_cache_dtype', 'disable_overlap_schedule',
    'attention_backend', 'speculative_num_draft_tokens', 'speculative_num_steps', 'reasoning_parser',
    'tool_call_parser', 'watchdog_timeout', 'enable_metrics', 'served_model_name',
)


def defaults():
    """name -> default of every variable (None where the next source of the precedence decides)."""
    return dict((entry['name'], entry['default']) for entry in VARIABLES)
