#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: sglang_server_args
short_description: Render and pre-check the SGLang command line and environment for a model profile and SGLang release
version_added: 0.1.0
description:
  - Turns a model profile (C(profiles/models/*.yml)), the VRAM plan (M(llmops.inference.vram_plan_info) output), host
    facts (GPU indices, the P2P verdict of M(llmops.inference.gpu_p2p_check), the host profile) and serving settings
    into the SGLang argv and environment, with the rules of the SGLang release O(sglang_version) of the release
    table O(sglang_releases).
  - Full flag names only (C(--speculative-algorithm), never the prefix C(--speculative-algo)); MTP as NEXTN with the
    profile's steps/topk/draft tokens; on hybrid GDN models with the radix cache the mamba strategy the release
    resolves (the same resolution M(llmops.inference.vram_plan_info) plans with), always explicit, under the name the
    release uses (C(--mamba-scheduler-strategy) up to 0.5.12, C(--mamba-radix-cache-strategy) from 0.5.15), plus
    C(--disable-overlap-schedule) when that resolution turns the overlap schedule off; C(SGLANG_ENABLE_SPEC_V2=1) only
    on releases whose default is off (0.5.9, 0.5.10); an explicit
    C(--max-running-requests) so speculative decoding does not reset it to 48; C(CUDA_VISIBLE_DEVICES) as numeric
    indices; C(NCCL_P2P_DISABLE=1) plus C(--disable-custom-all-reduce) when the P2P verdict or the host says so.
  - Checks every value with argparse choices (parsers, quantization, KV and SSM dtypes, attention backend, mamba
    strategy) against the release's own choices in C(profiles/sglang_releases.yml).
  - Pre-checks the start-up validations SGLang runs without a GPU (tp vs nnodes, chunked prefill vs page size, served
    name without C(:), MTP + radix + mamba strategy, context length vs the model maximum, backend rules) and, with
    O(validate_with_parser), parses the command line with the real parser of the installed release. A refused
    combination fails the task with SGLang's own wording and the fix.
  - The API key never enters the argv; see the C(sglang_server) role for how it reaches SGLang.
  - Pure computation (plus one parser run with O(validate_with_parser)); changes nothing.
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.attributes.read_only
options:
  sglang_releases:
    description:
      - The SGLang release table, C(profiles/sglang_releases.yml) parsed
        (C(lookup('ansible.builtin.file', 'profiles/sglang_releases.yml') | from_yaml)).
      - Its entry for O(sglang_version) gives the flag rules, the argparse choices and the defaults; a release without
        planner or flag rules there is refused with what to read and where to add it.
      - Required unless O(argv) is given.
    type: dict
  sglang_version:
    description: SGLang release whose rules apply; pass the collection's pin (C(version) of C(profiles/sglang.yml)).
    type: str
    required: true
  argv:
    description:
      - An already rendered argv (RV(argv) of an earlier run) to check with O(validate_with_parser) only; nothing is
        rendered and the other options are ignored. Used to re-check on the host with the installed release.
    type: list
    elements: str
  model_profile:
    description:
      - A model profile (C(profiles/models/<name>.yml) parsed) - C(serving) and C(config) are read.
      - Required unless O(argv) is given.
    type: dict
  plan:
    description:
      - VRAM plan values. C(mem_fraction_static), C(max_running_requests), C(context_length) become flags;
        C(chunked_prefill_size) is used by the pre-checks. The return value of M(llmops.inference.vram_plan_info)
        works as is (C(details.context_length) is read when C(context_length) is absent).
    type: dict
    default: {}
  model_path:
    description: The checkpoint directory on the server (C(--model-path)). Required unless O(argv) is given.
    type: str
  served_model_name:
    description: C(--served-model-name); defaults to the profile's C(served_model_name).
    type: str
  host:
    description: C(--host) the HTTP server binds.
    type: str
    default: 127.0.0.1
  port:
    description: C(--port).
    type: int
    default: 30000
  tp_size:
    description: C(--tp-size); defaults to the profile's C(serving.tp_size).
    type: int
  nnodes:
    description: Nodes the server spans; above 1 renders C(--nnodes), C(--node-rank), C(--dist-init-addr).
    type: int
    default: 1
  node_rank:
    description: This node's rank (0 on the node that serves HTTP).
    type: int
  dist_init_addr:
    description: C(host:port) of rank 0 for C(torch.distributed) init.
    type: str
  gpu_indices:
    description: GPU indices for C(CUDA_VISIBLE_DEVICES) (numbers only; SGLang int()s each entry).
    type: list
    elements: str
    default: []
  compute_capability:
    description: Compute capability of the GPUs (C(12.0), C(9.0)), for backend pre-checks.
    type: str
  p2p_verdict:
    description: RV(llmops.inference.gpu_p2p_check#module:verdict) of the host, if it was run.
    type: str
    choices: [p2p_ok, use_nccl_p2p_disable, nccl_broken]
  nccl_p2p_trusted:
    description: The host profile's C(llmops_nccl_p2p_trusted); V(false) disables NCCL P2P when there is no verdict.
    type: bool
  sev_snp:
    description: The host has SEV-SNP enabled (GPU P2P DMA is corrupted there); disables NCCL P2P without a verdict.
    type: bool
  nccl_p2p_disable:
    description: Force C(NCCL_P2P_DISABLE=1) (V(true)) or its absence (V(false)); omit to decide from the verdict/host.
    type: bool
  speculative_num_draft_tokens:
    description: MTP draft tokens; V(0) disables MTP; omit for the profile's.
    type: int
  speculative_num_steps:
    description: MTP steps; omit for the profile's.
    type: int
  radix_cache:
    description: V(false) renders C(--disable-radix-cache).
    type: bool
    default: true
  mamba_strategy:
    description:
      - Mamba radix-cache strategy; one of the release's choices in C(profiles/sglang_releases.yml)
        (C(flags.mamba_choices)).
      - V(auto) renders what the release resolves it to for this model, overlap schedule, page size and MTP
        (RV(mamba_strategy)); on releases whose own auto is V(no_buffer), which refuse MTP with the radix cache and
        V(no_buffer), V(auto) with MTP renders V(extra_buffer), the fix SGLang's message names.
    type: str
    default: auto
  disable_overlap_schedule:
    description: Render C(--disable-overlap-schedule).
    type: bool
    default: false
  page_size:
    description: C(--page-size).
    type: int
  chunked_prefill_size:
    description: C(--chunked-prefill-size).
    type: int
  max_running_requests:
    description: C(--max-running-requests); overrides the plan's.
    type: int
  mem_fraction_static:
    description: C(--mem-fraction-static); overrides the plan's.
    type: float
  context_length:
    description: C(--context-length); overrides the plan's.
    type: int
  kv_cache_dtype:
    description: C(--kv-cache-dtype) (V(auto) renders nothing); one of the release's choices in C(profiles/sglang_releases.yml).
    type: str
  mamba_ssm_dtype:
    description: C(--mamba-ssm-dtype) (V(auto) renders nothing); one of the release's choices in C(profiles/sglang_releases.yml).
    type: str
  attention_backend:
    description: C(--attention-backend); one of the release's choices in C(profiles/sglang_releases.yml).
    type: str
  watchdog_timeout:
    description: C(--watchdog-timeout) seconds.
    type: int
  enable_metrics:
    description: Render C(--enable-metrics) (C(/metrics) on the same port).
    type: bool
    default: false
  extra_args:
    description: More SGLang arguments, appended after the profile's C(serving.extra_args). Full flag names only.
    type: list
    elements: str
    default: []
  environment:
    description: More environment variables for the server (not secrets).
    type: dict
    default: {}
  launcher:
    description: The command that starts SGLang, prepended to the argv in RV(command) and RV(exec_start).
    type: list
    elements: str
    default: [python3, -m, sglang.launch_server]
  validate_with_parser:
    description:
      - Python interpreter of a virtualenv with the SGLang release installed. The rendered argv is parsed with that
        release's C(ServerArgs.add_cli_args) parser (and once more without prefix matching); a refusal fails the task.
    type: path
  fail_on_preflight:
    description: Fail the task when a pre-check or the parser refuses the configuration.
    type: bool
    default: true
notes:
  - Only releases with both flag and planner rules in C(profiles/sglang_releases.yml) are rendered; any other is
    refused with the message of the release table (what is missing and where to add it).
seealso:
  - module: llmops.inference.vram_plan_info
  - module: llmops.inference.gpu_p2p_check
  - module: llmops.inference.sglang_server_wait
"""

EXAMPLES = r"""
- name: Render the SGLang command line for Qwen3.5-122B-A10B on four GPUs
  llmops.inference.sglang_server_args:
    sglang_releases: "{{ lookup('ansible.builtin.file', 'profiles/sglang_releases.yml') | from_yaml }}"
    sglang_version: "{{ sglang_pin.version }}"
    model_profile: "{{ lookup('ansible.builtin.file', 'profiles/models/qwen3.5-122b-a10b.yml') | from_yaml }}"
    plan: "{{ plan }}"
    model_path: /shared/models/Qwen3.5-122B-A10B
    host: 0.0.0.0
    gpu_indices: ["0", "1", "2", "3"]
    p2p_verdict: use_nccl_p2p_disable
    launcher: ["/opt/sglang/venv-{{ sglang_pin.version }}/bin/python", -m, sglang.launch_server]
    validate_with_parser: "/opt/sglang/venv-{{ sglang_pin.version }}/bin/python"
  vars:
    sglang_pin: "{{ lookup('ansible.builtin.file', 'profiles/sglang.yml') | from_yaml }}"
  delegate_to: localhost
  register: sglang_cmd
"""

RETURN = r"""
argv:
  description: SGLang arguments (without the launcher).
  returned: success
  type: list
  elements: str
  sample: ["--model-path", "/shared/models/Qwen3.5-122B-A10B", "--tp-size", "4", "--speculative-algorithm", "NEXTN"]
command:
  description: O(launcher) + RV(argv).
  returned: success
  type: list
  elements: str
exec_start:
  description: RV(command) quoted for a systemd C(ExecStart=) line.
  returned: success
  type: str
environment:
  description: Environment of the server (C(CUDA_VISIBLE_DEVICES), C(NCCL_P2P_DISABLE), ...), no secrets.
  returned: success
  type: dict
  sample: {"CUDA_VISIBLE_DEVICES": "0,1,2,3", "NCCL_P2P_DISABLE": "1", "PYTHONUNBUFFERED": "1"}
environment_lines:
  description: RV(environment) as quoted C(Environment=) values for a unit.
  returned: success
  type: list
  elements: str
preflight:
  description: Refused combinations - C(check), C(message) (SGLang's wording) and C(fix). Empty when all pass.
  returned: always
  type: list
  elements: dict
parser:
  description: Result of the real parser (C(ok), C(version), C(error), C(kind), C(values)) with O(validate_with_parser).
  returned: when validate_with_parser is set
  type: dict
notes:
  description: What the rules decided and why (for example why NCCL P2P is off).
  returned: success
  type: list
  elements: str
speculative:
  description: The MTP settings rendered, or null.
  returned: success
  type: dict
mamba_strategy:
  description:
    - The mamba strategy SGLang will run with, as rendered (the release's resolution of O(mamba_strategy)); null for
      non-hybrid models and with the radix cache off.
  returned: success
  type: str
nccl_p2p_disable:
  description: Whether C(NCCL_P2P_DISABLE=1) is set, and RV(nccl_p2p_reason) why.
  returned: success
  type: bool
nccl_p2p_reason:
  description: Why NCCL P2P is on or off.
  returned: success
  type: str
rules:
  description: The release's rules applied (flag names, C(SGLANG_ENABLE_SPEC_V2) handling, log milestones).
  returned: success
  type: dict
"""

import json
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils.sglang import parser_check as sglang_parser_check
from ansible_collections.llmops.inference.plugins.module_utils.sglang.flags import (
    FlagError,
    exec_start,
    format_preflight,
    render,
    systemd_quote,
)
from ansible_collections.llmops.inference.plugins.module_utils.sglang.release import ReleaseError, release

SERVER_KEYS = ('model_path', 'served_model_name', 'host', 'port', 'tp_size', 'speculative_num_draft_tokens',
               'speculative_num_steps', 'radix_cache', 'mamba_strategy', 'disable_overlap_schedule', 'page_size',
               'chunked_prefill_size', 'max_running_requests', 'mem_fraction_static', 'context_length',
               'kv_cache_dtype', 'mamba_ssm_dtype', 'attention_backend', 'watchdog_timeout', 'enable_metrics',
               'nccl_p2p_disable', 'extra_args')


def argument_spec():
    return dict(
        sglang_releases=dict(type='dict'),
        sglang_version=dict(type='str', required=True),
        argv=dict(type='list', elements='str'),
        model_profile=dict(type='dict'),
        plan=dict(type='dict', default={}),
        model_path=dict(type='str'),
        served_model_name=dict(type='str'),
        host=dict(type='str', default='127.0.0.1'),
        port=dict(type='int', default=30000),
        tp_size=dict(type='int'),
        nnodes=dict(type='int', default=1),
        node_rank=dict(type='int'),
        dist_init_addr=dict(type='str'),
        gpu_indices=dict(type='list', elements='str', default=[]),
        compute_capability=dict(type='str'),
        p2p_verdict=dict(type='str', choices=['p2p_ok', 'use_nccl_p2p_disable', 'nccl_broken']),
        nccl_p2p_trusted=dict(type='bool'),
        sev_snp=dict(type='bool'),
        nccl_p2p_disable=dict(type='bool'),
        speculative_num_draft_tokens=dict(type='int', no_log=False),
        speculative_num_steps=dict(type='int'),
        radix_cache=dict(type='bool', default=True),
        mamba_strategy=dict(type='str', default='auto'),
        disable_overlap_schedule=dict(type='bool', default=False),
        page_size=dict(type='int'),
        chunked_prefill_size=dict(type='int'),
        max_running_requests=dict(type='int'),
        mem_fraction_static=dict(type='float'),
        context_length=dict(type='int'),
        kv_cache_dtype=dict(type='str'),
        mamba_ssm_dtype=dict(type='str'),
        attention_backend=dict(type='str'),
        watchdog_timeout=dict(type='int'),
        enable_metrics=dict(type='bool', default=False),
        extra_args=dict(type='list', elements='str', default=[]),
        environment=dict(type='dict', default={}),
        launcher=dict(type='list', elements='str', default=['python3', '-m', 'sglang.launch_server']),
        validate_with_parser=dict(type='path'),
        fail_on_preflight=dict(type='bool', default=True),
    )


def plan_values(plan):
    """The plan keys the renderer reads, from a vram_plan_info result or a plain dict."""
    details = plan.get('details') or {}
    out = {}
    for key in ('mem_fraction_static', 'max_running_requests', 'context_length', 'chunked_prefill_size'):
        value = plan.get(key, details.get(key))
        if value is not None:
            out[key] = value
    return out


def parser_source():
    """Text of module_utils/sglang/parser_check.py, also when AnsiballZ imported it from its zip."""
    loader = getattr(sglang_parser_check, '__loader__', None)
    source = None
    if loader is not None and hasattr(loader, 'get_source'):
        source = loader.get_source(sglang_parser_check.__name__)
    if not source:
        import inspect
        source = inspect.getsource(sglang_parser_check)
    return source


def run_parser(module, python, argv):
    """Parse argv with the real SGLang parser under `python`; returns the checker's JSON result."""
    if not os.access(python, os.X_OK):
        module.fail_json(msg='validate_with_parser: %s is not an executable Python' % python)
    handle, path = tempfile.mkstemp(prefix='sglang_parser_check_', suffix='.py', dir=module.tmpdir)
    with os.fdopen(handle, 'w') as stream:
        stream.write(parser_source())
    rc, out, err = module.run_command([python, path], data=json.dumps(argv), binary_data=True)
    try:
        result = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        module.fail_json(msg='validate_with_parser: %s printed no result (rc=%d): %s' % (python, rc, (err or out)[-2000:]))
    if result.get('kind') == 'environment':
        module.fail_json(msg='validate_with_parser: %s cannot import SGLang: %s' % (python, result.get('error')),
                         parser=result)
    return result


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True,
                           required_by={'argv': ('validate_with_parser',)})
    p = module.params
    if p['argv'] is not None:
        parsed = run_parser(module, p['validate_with_parser'], p['argv'])
        if not parsed.get('ok'):
            module.fail_json(msg='SGLang %s refuses the command line: %s' % (parsed.get('version'), parsed.get('error')),
                             parser=parsed, preflight=[])
        module.exit_json(changed=False, argv=p['argv'], parser=parsed, preflight=[])
    if not p['model_profile'] or not p['model_path'] or not p['sglang_releases']:
        module.fail_json(msg='sglang_releases, model_profile and model_path are required unless argv is given',
                         preflight=[])
    try:
        rel = release(p['sglang_releases'], p['sglang_version'])
    except ReleaseError as exc:
        module.fail_json(msg=str(exc), preflight=[])
    server = dict((key, p[key]) for key in SERVER_KEYS)
    server['extra_env'] = p['environment']
    host = dict(gpu_indices=p['gpu_indices'], compute_capability=p['compute_capability'],
                p2p_verdict=p['p2p_verdict'], p2p_trusted=p['nccl_p2p_trusted'], sev_snp=p['sev_snp'],
                nnodes=p['nnodes'], node_rank=p['node_rank'], dist_init_addr=p['dist_init_addr'])
    try:
        result = render(rel, p['model_profile'], plan_values(p['plan']), host, server)
    except FlagError as exc:
        module.fail_json(msg=str(exc), preflight=[])
    command = list(p['launcher']) + result['argv']
    out = dict(changed=False, argv=result['argv'], command=command, exec_start=exec_start(command),
               environment=result['env'],
               environment_lines=[systemd_quote('%s=%s' % (k, v)) for k, v in sorted(result['env'].items())],
               preflight=result['preflight'], notes=result['notes'],
               speculative=result['speculative'], mamba_strategy=result['mamba_strategy'],
               nccl_p2p_disable=result['nccl_p2p_disable'], nccl_p2p_reason=result['nccl_p2p_reason'],
               rules=result['rules'], sglang_version=result['version'])
    for warning in result['warnings']:  # things that will run but are probably not meant
        module.warn(warning)
    if p['validate_with_parser']:
        out['parser'] = run_parser(module, p['validate_with_parser'], result['argv'])
        if not out['parser'].get('ok'):
            out['preflight'] = out['preflight'] + [dict(
                check='parser', message=out['parser'].get('error'),
                fix='Use flags and values the installed SGLang %s accepts (see `sglang serve --help`).'
                    % (out['parser'].get('version') or p['sglang_version']))]
        elif out['parser'].get('version') and out['parser']['version'] != result['version']:
            module.warn('validate_with_parser has sglang %s but the rules of %s were applied'
                        % (out['parser']['version'], result['version']))
    if out['preflight'] and p['fail_on_preflight']:
        module.fail_json(msg=format_preflight(result['version'], out['preflight']), **out)
    module.exit_json(**out)


if __name__ == '__main__':
    main()
