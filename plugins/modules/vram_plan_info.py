#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: vram_plan_info
short_description: Predict the memory plan SGLang will make for a hybrid GDN/attention model, before any download
version_added: 0.1.0
description:
  - Reproduces SGLang's own start-up memory planner for the release O(sglang_version) of the release table
    O(sglang_releases) (default mem-fraction
    heuristic including the multimodal factor, the mamba/GDN state pool, MTP verification states, the KV cache of the
    full-attention layers only, the 48 running-request reset under speculative decoding) and returns the numbers
    SGLang logs as C(max_mamba_cache_size), C(#tokens) and C(max_running_requests).
  - Adds what the logs do not say - the longest context N concurrent requests can hold, the memory left for
    activations and CUDA graphs, what binds first, concrete flag changes (each re-planned) and a bandwidth-bound
    single-stream decode ceiling.
  - Fails with a precise message when SGLang would refuse to start - weights larger than the memory, no KV budget
    left (the message SGLang prints, with the minimum C(--mem-fraction-static)), a tensor-parallel size that does
    not divide the attention, KV or linear-attention heads, an empty mamba pool, MTP on a checkpoint without MTP
    layers.
  - Pure computation on the controller; contacts nothing.
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.attributes.read_only
options:
  model_config:
    description:
      - The model's C(config.json) as a dict, or the C(config) block of a model profile. Multimodal Qwen3.5 configs
        with a nested C(text_config) and C(vision_config) are read as SGLang reads them.
      - One of O(model_config), O(model_config_path) or O(model_path) is required.
    type: dict
  model_config_path:
    description: Path to a C(config.json) on the controller.
    type: path
  model_path:
    description:
      - A local checkpoint directory. Its C(config.json) is used when no O(model_config) is given, the C(metadata.total_size)
        of C(model.safetensors.index.json) becomes O(weights_bytes), and MTP is refused when the index has no C(mtp.*) tensors.
    type: path
  gpu_memory_mib:
    description: Per-GPU C(nvidia-smi --query-gpu=memory.total) in MiB (SGLang uses the minimum over GPUs).
    type: int
  gpu_profile:
    description:
      - A hardware profile (C(profiles/hardware/<name>.yml) parsed). Uses C(memory_total_mib) unless
        O(gpu_memory_mib) is set, C(memory_bandwidth_gbs) for the roofline, C(compute_capability) for SM100 page-size
        defaults and C(startup_overhead_gib) for the memory gone before weights load.
    type: dict
  tp_size:
    description: Tensor-parallel size (GPUs per server).
    type: int
    required: true
  sglang_releases:
    description:
      - The SGLang release table, C(profiles/sglang_releases.yml) parsed
        (C(lookup('ansible.builtin.file', 'profiles/sglang_releases.yml') | from_yaml)).
      - Its entry for O(sglang_version) gives the planner rules, the argparse choices and the defaults; a release
        without planner or flag rules there is refused with what to read and where to add it.
    type: dict
    required: true
  sglang_version:
    description:
      - The SGLang release whose rules apply; pass the collection's pin (C(version) of C(profiles/sglang.yml)).
    type: str
    required: true
  mem_fraction_static:
    description: C(--mem-fraction-static). Omit for SGLang's own default for this GPU, TP size and model.
    type: float
  context_length:
    description:
      - C(--context-length). Defaults to SGLang's derived context length (the first of max_sequence_length,
        seq_length, max_seq_len, model_max_length, max_position_embeddings, times rope_scaling.factor where it applies).
    type: int
  max_running_requests:
    description: C(--max-running-requests). Omit for SGLang's default (48 under speculative decoding).
    type: int
  speculative_num_draft_tokens:
    description:
      - C(--speculative-num-draft-tokens); V(0) (or omitted without O(speculative_algorithm)) means no speculative
        decoding. With topk 1 SGLang forces it to steps + 1.
      - Omitted with O(speculative_algorithm) set, steps, topk and draft tokens are SGLang's auto choice for the target
        architecture (5/4/8 for LlamaForCausalLM, 3/1/4 otherwise).
    type: int
  speculative_num_steps:
    description: C(--speculative-num-steps). Defaults to draft tokens - 1.
    type: int
  speculative_eagle_topk:
    description: C(--speculative-eagle-topk). Defaults to 1 (or the auto choice).
    type: int
  speculative_algorithm:
    description:
      - C(--speculative-algorithm). V(NEXTN)/V(EAGLE) use the checkpoint's MTP head; V(EAGLE3) needs
        O(draft_model_config) (the draft checkpoint of C(--speculative-draft-model-path)). Default V(NEXTN).
    type: str
  draft_model_config:
    description:
      - The EAGLE-3 draft checkpoint's C(config.json) (architecture C(LlamaForCausalLMEagle3)). Its weights count
        before sizing, its layers join the KV cell at the target's per-layer size, and its own pool is sized at the
        target's token count.
    type: dict
  dp_size:
    description: C(--dp-size) with O(enable_dp_attention); attention runs on tp_size / dp_size GPUs per DP worker.
    type: int
    default: 1
  enable_dp_attention:
    description: C(--enable-dp-attention). Requires O(dp_size) > 1 dividing O(tp_size).
    type: bool
    default: false
  max_mamba_cache_size:
    description: C(--max-mamba-cache-size) of a hybrid model (split over the DP workers). Omit to size from memory.
    type: int
  mamba_full_memory_ratio:
    description: C(--mamba-full-memory-ratio) of a hybrid model (the mamba pool's share r / (1 + r); SGLang's default 0.9).
    type: float
  attention_backend:
    description: C(--attention-backend); decides the page size SGLang forces on SM100 (omit for SGLang's default).
    type: str
  environment:
    description:
      - The server's environment variables (no secrets). Read for C(SGLANG_ENABLE_EMBED_REPLICATION), which
        replicates a DeepSeek-family MTP draft's own embedding on every GPU (counted when the pools are sized).
    type: dict
  mamba_ssm_dtype:
    description:
      - C(--mamba-ssm-dtype). Defaults to the model config's C(mamba_ssm_dtype).
      - One of the release's choices in C(profiles/sglang_releases.yml) that the planner can size (V(float32),
        V(bfloat16), V(float16)).
    type: str
  kv_cache_dtype:
    description:
      - C(--kv-cache-dtype). V(auto) follows the checkpoint (fp8 when it declares an FP8 KV quantization).
      - One of the release's choices in C(profiles/sglang_releases.yml) that the planner can size (V(auto),
        V(bfloat16)/V(bf16), V(fp8_e4m3), V(fp8_e5m2)).
    type: str
    default: auto
  page_size:
    description: C(--page-size). Omit for SGLang's default (1; 64 where SGLang's SM100 backend or DeepSeek DSA forces it).
    type: int
  radix_cache:
    description: V(false) plans C(--disable-radix-cache) (one mamba slot per request).
    type: bool
    default: true
  mamba_strategy:
    description:
      - C(--mamba-radix-cache-strategy) (C(--mamba-scheduler-strategy) before 0.5.15); one of the release's choices
        in C(profiles/sglang_releases.yml) (C(flags.mamba_choices)).
      - Resolved as M(llmops.inference.sglang_server_args) resolves it (the same function), so the plan sizes the
        pools of the server that command line starts. V(extra_buffer_lazy) is planned like V(extra_buffer).
    type: str
    default: auto
  disable_overlap_schedule:
    description:
      - C(--disable-overlap-schedule). SGLang requires it for an explicit V(no_buffer) strategy, and turns it on
        itself when V(auto) resolves to V(no_buffer) (C(details.disable_overlap_schedule) says which).
    type: bool
    default: false
  chunked_prefill_size:
    description: C(--chunked-prefill-size). Omit for SGLang's GPU-memory default.
    type: int
  weights_bytes:
    description:
      - Checkpoint size in bytes (all shards, MTP and vision included). Otherwise taken from O(model_path)'s safetensors
        index, else computed - from the config's parameter count x dtype, or for a quantized checkpoint from its
        C(quantization_config) and tensor layout (FP8 block, MXFP4, NVFP4, compressed-tensors INT4/INT8, GPTQ, AWQ;
        C(weights_detail.source) of the plan says which and whether that format was validated). Another
        C(quant_method) is refused.
    type: int
  free_memory_before_load_gib:
    description:
      - Calibration - the C(avail mem) of SGLang's C(Load weight begin) line on this host. Used as SGLang uses its
        pre-load measurement. Otherwise memory.total minus the profile's C(startup_overhead_gib).
    type: float
  free_memory_after_load_gib:
    description:
      - Calibration - the C(avail mem) of the last C(Load weight end) line (the MTP draft's, when MTP is on and the
        release loads the draft before sizing the pools). Otherwise the before value minus the computed weights.
    type: float
  runtime_overhead_gib:
    description:
      - Memory SGLang allocates between the last C(Load weight end) line and pool sizing (workspaces, buffers), which
        no log line shows. The two real start-up logs in the project notes imply 0.038 and 0.058 GiB.
    type: float
    default: 0.05
  language_only:
    description: Plan C(--language-only) (encoder-disaggregated serving; no vision tower, no multimodal fraction cut).
    type: bool
    default: false
  concurrency:
    description: Concurrency levels of the RV(max_context_at_concurrency) table.
    type: list
    elements: int
    default: [1, 8, 32]
  min_headroom_gib:
    description: Per-GPU memory that must remain for activations, CUDA graphs and the MTP draft KV for RV(fits) to be true.
    type: float
    default: 4.0
  target_headroom_gib:
    description: Headroom the C(--mem-fraction-static) recommendation aims for.
    type: float
    default: 8.0
  mtp_accept_length:
    description: Expected MTP accept length for the roofline (default 3.1, the published figure for 3/1/4).
    type: float
  max_tp:
    description: GPUs available to one server; bounds the larger-TP recommendation.
    type: int
  title:
    description: Heading of RV(report_lines) and RV(report_markdown).
    type: str
    default: VRAM plan
notes:
  - Per-GPU figures assume identical GPUs; SGLang takes the minimum free memory over ranks.
  - Weights per GPU computed from a config assume an even TP split plus replicated router gates and KV heads; a
    calibration from a real start-up log replaces that estimate.
seealso:
  - name: SGLang server arguments
    description: The flags this module plans.
    link: https://docs.sglang.ai/advanced_features/server_arguments.html
"""

EXAMPLES = r"""
- name: Plan Qwen3.5-122B-A10B with MTP on 4x RTX PRO 6000
  llmops.inference.vram_plan_info:
    model_config: "{{ (lookup('ansible.builtin.file', 'profiles/models/qwen3.5-122b-a10b.yml') | from_yaml).config }}"
    gpu_profile: "{{ lookup('ansible.builtin.file', 'profiles/hardware/rtx-pro-6000-blackwell-server.yml') | from_yaml }}"
    tp_size: 4
    sglang_releases: "{{ lookup('ansible.builtin.file', 'profiles/sglang_releases.yml') | from_yaml }}"
    sglang_version: "{{ (lookup('ansible.builtin.file', 'profiles/sglang.yml') | from_yaml).version }}"
    speculative_num_draft_tokens: 4
    speculative_num_steps: 3
  register: plan

- name: Fail the play when the plan does not fit
  ansible.builtin.assert:
    that: plan.fits
    fail_msg: "{{ plan.limits | first }}"

- name: Re-plan with the free memory a real start-up log printed
  llmops.inference.vram_plan_info:
    model_path: /shared/models/Qwen3.5-122B-A10B
    gpu_memory_mib: 97887
    tp_size: 4
    sglang_releases: "{{ lookup('ansible.builtin.file', 'profiles/sglang_releases.yml') | from_yaml }}"
    sglang_version: "{{ (lookup('ansible.builtin.file', 'profiles/sglang.yml') | from_yaml).version }}"
    speculative_num_draft_tokens: 4
    free_memory_before_load_gib: 93.4
    free_memory_after_load_gib: 35.2
"""

RETURN = r"""
sglang_version:
  description: The SGLang release whose rules were applied (O(sglang_version), normalised).
  returned: success
  type: str
  sample: "0.5.18"
mem_fraction_static:
  description: The fraction used (SGLang's default when not given, including the multimodal factor).
  returned: success
  type: float
  sample: 0.7851
weights_gib_per_gpu:
  description:
    - Target plus draft weights one GPU holds when the pools are sized (or before - after load when calibrated).
    - A path-less MTP or EAGLE-3 draft counts its own embedding and lm_head here; they are freed after sizing and
      given back to RV(headroom_gib) (C(details.weights_detail.draft_freed_after_gib)).
  returned: success
  type: float
  sample: 59.029
kv_bytes_per_token:
  description: KV-cache bytes one token costs per GPU in the budget (full-attention layers only; KV heads replicated when tp > KV heads).
  returned: success
  type: int
  sample: 12288
mamba_bytes_per_slot:
  description: Conv + SSM state bytes of one request slot per GPU over all linear-attention layers.
  returned: success
  type: int
  sample: 38412288
mamba_slots_per_request:
  description: Mamba slots one running request holds (1 without radix cache, 3 no_buffer, 5 extra_buffer with overlap).
  returned: success
  type: int
  sample: 5
mamba_cache_slots:
  description: What SGLang logs as C(max_mamba_cache_size) (the pool allocates one more padding slot).
  returned: success
  type: int
  sample: 105
spec_state_gib:
  description: Memory reserved for MTP verification (intermediate) states per GPU.
  returned: success
  type: float
  sample: 3.148
kv_cache_tokens:
  description: What SGLang logs as C(#tokens) / C(max_total_num_tokens).
  returned: success
  type: int
  sample: 684739
max_running_requests:
  description: The max_running_requests SGLang will run with.
  returned: success
  type: int
  sample: 21
max_running_requests_bound_by:
  description: What set RV(max_running_requests) - V(mamba_slots), V(speculative_default), V(kv_tokens), V(estimate) or V(requested).
  returned: success
  type: str
  sample: mamba_slots
max_context_at_concurrency:
  description: Longest context each of N concurrent requests can hold at once.
  returned: success
  type: list
  elements: dict
  sample: [{"bound_by": "kv_cache", "concurrency": 8, "max_context_tokens": 85592}]
headroom_gib:
  description: Per-GPU memory left after weights and every static pool, for activations, CUDA graphs and NCCL.
  returned: success
  type: float
  sample: 20.28
fits:
  description: SGLang starts and RV(headroom_gib) >= O(min_headroom_gib).
  returned: success
  type: bool
  sample: true
verdict:
  description: V(FITS), V(FITS (tight)) or V(DOES NOT FIT).
  returned: success
  type: str
  sample: FITS (tight)
limits:
  description: What binds first, most binding first, as sentences.
  returned: success
  type: list
  elements: str
recommendations:
  description: Concrete flag changes, each with the re-planned effect (C(effect.<key>) is C([before, after])).
  returned: success
  type: list
  elements: dict
  sample: [{"flags": ["--mamba-ssm-dtype", "bfloat16"], "effect": {"max_running_requests": [22, 44]}}]
decode_roofline_tok_s:
  description:
    - Bandwidth-bound single-stream decode ceiling from the active parameters and the GPU bandwidth (C(no_mtp)), and
      with MTP verify/draft traffic and the expected accept length (C(mtp)). Real systems reach a fraction of it.
  returned: success
  type: dict
  sample: {"no_mtp": 349.0, "mtp": 446.0, "accept_length": 3.1}
report_lines:
  description: The plan as a readable table, one string per line.
  returned: success
  type: list
  elements: str
report_markdown:
  description: The plan as Markdown.
  returned: success
  type: str
details:
  description: Everything else the planner resolved (chunked prefill, CUDA-graph max bs, page size, strategy, K/V/SSM sizes, weights split).
  returned: success
  type: dict
kind:
  description:
    - On failure, why - V(tp), V(mtp), V(weights), V(sglang), V(input) (including a value that is not one of the
      release's choices) or V(release) (a malformed release table, or a release it lacks rules for).
  returned: failure
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils.sglang.release import ReleaseError, release
from ansible_collections.llmops.inference.plugins.module_utils.planner.vram_plan import (
    PlanError,
    load_json,
    plan_with_recommendations,
    read_model_path,
)
from ansible_collections.llmops.inference.plugins.module_utils.planner.vram_report import (
    render_markdown,
    render_text,
)

TOP_LEVEL = ('sglang_version', 'mem_fraction_static', 'weights_gib_per_gpu', 'kv_bytes_per_token',
             'mamba_bytes_per_slot', 'mamba_slots_per_request', 'mamba_cache_slots', 'spec_state_gib',
             'kv_cache_tokens', 'max_running_requests', 'max_running_requests_bound_by', 'max_context_at_concurrency',
             'headroom_gib', 'fits', 'verdict', 'limits', 'recommendations', 'decode_roofline_tok_s')
PASSED = ('gpu_memory_mib', 'gpu_profile', 'tp_size', 'mem_fraction_static', 'context_length',
          'max_running_requests', 'speculative_num_draft_tokens', 'speculative_num_steps', 'mamba_ssm_dtype',
          'kv_cache_dtype', 'page_size', 'radix_cache', 'mamba_strategy', 'disable_overlap_schedule',
          'chunked_prefill_size', 'weights_bytes', 'free_memory_before_load_gib', 'free_memory_after_load_gib',
          'runtime_overhead_gib', 'language_only', 'concurrency', 'min_headroom_gib', 'target_headroom_gib',
          'mtp_accept_length', 'max_tp', 'speculative_eagle_topk', 'speculative_algorithm', 'draft_model_config',
          'dp_size', 'enable_dp_attention', 'max_mamba_cache_size', 'mamba_full_memory_ratio', 'attention_backend',
          'environment')


def argument_spec():
    return dict(
        model_config=dict(type='dict'),
        model_config_path=dict(type='path'),
        model_path=dict(type='path'),
        gpu_memory_mib=dict(type='int'),
        gpu_profile=dict(type='dict'),
        tp_size=dict(type='int', required=True),
        sglang_releases=dict(type='dict', required=True),
        sglang_version=dict(type='str', required=True),
        mem_fraction_static=dict(type='float'),
        context_length=dict(type='int'),
        max_running_requests=dict(type='int'),
        speculative_num_draft_tokens=dict(type='int', no_log=False),
        speculative_num_steps=dict(type='int'),
        speculative_eagle_topk=dict(type='int'),
        speculative_algorithm=dict(type='str'),
        draft_model_config=dict(type='dict'),
        dp_size=dict(type='int', default=1),
        enable_dp_attention=dict(type='bool', default=False),
        max_mamba_cache_size=dict(type='int'),
        mamba_full_memory_ratio=dict(type='float'),
        attention_backend=dict(type='str'),
        environment=dict(type='dict'),
        mamba_ssm_dtype=dict(type='str'),
        kv_cache_dtype=dict(type='str', default='auto'),
        page_size=dict(type='int'),
        radix_cache=dict(type='bool', default=True),
        mamba_strategy=dict(type='str', default='auto'),
        disable_overlap_schedule=dict(type='bool', default=False),
        chunked_prefill_size=dict(type='int'),
        weights_bytes=dict(type='int'),
        free_memory_before_load_gib=dict(type='float'),
        free_memory_after_load_gib=dict(type='float'),
        runtime_overhead_gib=dict(type='float', default=0.05),
        language_only=dict(type='bool', default=False),
        concurrency=dict(type='list', elements='int', default=[1, 8, 32]),
        min_headroom_gib=dict(type='float', default=4.0),
        target_headroom_gib=dict(type='float', default=8.0),
        mtp_accept_length=dict(type='float'),
        max_tp=dict(type='int'),
        title=dict(type='str', default='VRAM plan'),
    )


def planner_inputs(params):
    """Map module parameters onto vram_plan.plan() inputs, reading config / index files as needed."""
    inputs = dict((key, params[key]) for key in PASSED if params.get(key) is not None)
    # The release first: a release the table cannot serve is refused before any file is read.
    inputs['release'] = release(params['sglang_releases'], params['sglang_version'])
    config = params.get('model_config')
    if config is None and params.get('model_config_path'):
        config = load_json(params['model_config_path'])
    if params.get('model_path'):
        path_config, total_size, names = read_model_path(params['model_path'])
        if config is None:
            config = path_config
        if params.get('weights_bytes') is None and total_size:
            inputs['weights_bytes'] = total_size
        if names is not None:
            inputs['weight_names'] = names
    if config is None:
        raise PlanError('give model_config, model_config_path or model_path')
    inputs['model_config'] = config
    return inputs


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(),
        required_one_of=[('model_config', 'model_config_path', 'model_path'), ('gpu_memory_mib', 'gpu_profile')],
        mutually_exclusive=[('model_config', 'model_config_path')],
        supports_check_mode=True,
    )
    try:
        inputs = planner_inputs(module.params)
        result = plan_with_recommendations(**inputs)
    except ReleaseError as exc:
        module.fail_json(msg=str(exc), kind='release')
    except PlanError as exc:
        module.fail_json(msg=str(exc), kind=exc.kind, **exc.details)
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        module.fail_json(msg='cannot plan with these inputs: %s: %s' % (type(exc).__name__, exc), kind='input')
    out = dict((key, result[key]) for key in TOP_LEVEL)
    out['details'] = dict((key, value) for key, value in result.items() if key not in TOP_LEVEL)
    out['report_lines'] = render_text(result, module.params['title'])
    out['report_markdown'] = render_markdown(result, module.params['title'])
    module.exit_json(changed=False, **out)


if __name__ == '__main__':
    main()
