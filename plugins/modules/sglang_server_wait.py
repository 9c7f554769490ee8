#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: sglang_server_wait
short_description: Wait until an SGLang systemd service is ready, or say within seconds why it is not
version_added: 0.1.0
description:
  - Polls C(/health) and C(/v1/models) of the server every O(interval) seconds while following the unit's journal
    (C(journalctl -u <unit> -o json)) and its systemd state, until the server is ready or O(timeout) passes.
  - Every new journal line goes through a classifier of real SGLang, PyTorch, NVML, NCCL and uvicorn failure
    messages (MTP + radix cache C(ValueError), not enough memory / mamba cache, C(Failed to initialize NVML -
    Driver/library version mismatch), CUDA errors 803 and 35, port in use, argument errors, NCCL errors, ...). A
    match fails the task at once with RV(diagnosis) - the signature, the evidence lines, the likely cause and the fix.
  - Detects a stall in parallel (NCCL) initialisation - no new journal line and no GPU memory growth
    (C(nvidia-smi memory.used) of O(gpu_indices), when C(nvidia-smi) exists) for O(stall_timeout) seconds after
    C(Init torch distributed begin.) / C(Init parallel begin.) - instead of waiting for SGLang's watchdog.
  - With O(plan) (the deployment's VRAM plan), a ready server's start-up lines (free memory before and after the
    weights, C(Mamba Cache is allocated), C(KV Cache is allocated) with its token count, C(Memory pool end), the CUDA
    graph captures, the scheduler's C(max_total_num_tokens) line) are compared with the plan in RV(startup), and
    a drift beyond the thresholds (any difference in mamba slots, running requests or context length; KV tokens
    beyond 2 %) is a warning with both numbers and the planner input to check.
  - With O(follower) (a node of rank >= 1 of a multi-node TP group) C(/health) is never asked - SGLang's health
    stub on those nodes answers 200 whatever the group does (entrypoints/engine.py:1234-1290 of the pinned
    release). The node is ready when its unit runs and its journal shows the line the release prints when the node's
    schedulers are up (C(Dummy health check server started ...), after the weights loaded and the CUDA graphs were
    captured together with the whole group); the head's readiness, checked over HTTP, gates the group.
  - Read-only. Secrets (O(api_key)) are removed from every returned line.
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.attributes.read_only
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: Nothing is changed in either mode; in check mode the module does not wait and returns RV(skipped_reason).
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: posix
    details: systemd with journald.
options:
  unit:
    description: The systemd unit of the server, for example C(sglang-qwen.service).
    type: str
    required: true
  url:
    description: Base URL of the server as seen from the target, for example C(http://127.0.0.1:30000).
    type: str
    required: true
  api_key:
    description: The server's API key, sent as C(Authorization - Bearer) to C(/v1/models) (C(/health) is exempt).
    type: str
  served_model_name:
    description: Name C(/v1/models) must list for the server to count as ready.
    type: str
  timeout:
    description: Seconds to wait for readiness in total (a 122B checkpoint loads for minutes).
    type: int
    default: 1800
  stall_timeout:
    description: Seconds without a new log line and without GPU memory growth inside parallel init that count as a stall.
    type: int
    default: 45
  interval:
    description: Seconds between polls.
    type: float
    default: 1.0
  gpu_indices:
    description: GPUs whose memory.used is sampled for the stall criterion (empty - all).
    type: list
    elements: str
    default: []
  journal_lines:
    description: Journal lines of the start returned in RV(journal_tail).
    type: int
    default: 40
  plan:
    description:
      - The VRAM plan the unit was rendered from (C(llmops_deployment.plan)). When given, RV(startup) compares
        SGLang's start-up lines with it.
    type: dict
  follower:
    description:
      - This unit is a node of rank >= 1 of a multi-node TP group - ready on its journal's follower line, never on
        its C(/health) (see the description). O(url) is not asked then.
    type: bool
    default: false
  plan_context:
    description:
      - What the start-up record names - C(host), C(instance), C(gpu_profile), C(model_profile), C(tp_size),
        C(sglang_version). C(gpu_profile) and C(tp_size) key the measured free memory before load.
    type: dict
    default: {}
notes:
  - The journal is read from the start of the unit's current main process (C(ExecMainStartTimestamp)), so run the
    module right after (re)starting the unit; a unit that restarts by its restart policy is followed across restarts.
seealso:
  - module: llmops.inference.sglang_server_args
  - module: llmops.inference.nvidia_driver_info
  - module: llmops.inference.gpu_p2p_check
"""

EXAMPLES = r"""
- name: Wait for the server, diagnose a failed start
  llmops.inference.sglang_server_wait:
    unit: sglang-qwen.service
    url: http://127.0.0.1:30000
    api_key: "{{ sglang_api_key }}"
    served_model_name: qwen3.5-122b
    timeout: 1800
    stall_timeout: 45
  register: ready
"""

RETURN = r"""
ready:
  description: C(/health) answered 200 and C(/v1/models) listed the model (with O(follower) - the unit runs and its
    journal shows the follower line).
  returned: always
  type: bool
elapsed:
  description: Seconds waited.
  returned: always
  type: float
since_unit_start:
  description:
    - Seconds from the start of the unit's main process (C(ExecMainStartTimestamp), whole seconds) to the end of the
      wait, that is to the verdict; null when the unit has no start time.
  returned: always
  type: float
milestones:
  description: Start-up milestones seen in the journal, in order (C(parallel_begin), C(load_weight_end), C(kv_cache), C(ready), ...).
  returned: always
  type: list
  elements: str
models:
  description: Model ids C(/v1/models) listed.
  returned: success
  type: list
  elements: str
diagnosis:
  description:
    - Why the server did not become ready - C(signature) (for example C(mtp_radix_cache), C(not_enough_memory),
      C(nvml_driver_mismatch), C(cuda_driver_mismatch_803), C(cuda_driver_too_old_35), C(port_in_use),
      C(nccl_init_stall), C(exited), C(timeout)), C(summary), C(likely_cause), C(fix), C(evidence_lines),
      C(seconds_after_signature) (how long after the line arrived the module reported it).
  returned: failure
  type: dict
journal_tail:
  description: The last O(journal_lines) journal lines of this start, secrets removed.
  returned: always
  type: list
  elements: str
startup:
  description:
    - The start-up record (docs/sglang_server.md) - C(context) (what O(plan_context) gave, and C(start) with
      C(started_at), the unit's start in epoch seconds, and C(pid), which start it is), C(rows) (per value C(key),
      C(label), C(planned), C(logged), C(drift), C(drift_pct), C(rule), C(verdict) - C(ok), C(drift), C(differs),
      C(not logged), C(logged only)), C(verdict)
      (C(ok), C(drift), C(incomplete) when SGLang did not log the lines), C(warnings), C(inputs_to_check),
      C(measured) (the free memory before load of this GPU kind and TP size, for the next plan), C(logged) (every
      figure parsed), C(lines) (the lines they came from), C(markdown) (the table).
  returned: success, with O(plan)
  type: dict
unit_state:
  description: C(ActiveState), C(SubState), C(NRestarts), C(ExecMainStatus) of the unit at the end.
  returned: always
  type: dict
skipped_reason:
  description: Why nothing was waited for (check mode).
  returned: in check mode
  type: str
"""

import json
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url

from ansible_collections.llmops.inference.plugins.module_utils.sglang_logs import (
    StartupWatch,
    redact,
)
from ansible_collections.llmops.inference.plugins.module_utils import sglang_startup

STATE_PROPS = ('ActiveState', 'SubState', 'NRestarts', 'ExecMainStatus', 'ExecMainPID', 'ExecMainStartTimestamp')


def unit_state(module, unit):
    rc, out, err = module.run_command(['systemctl', 'show', '--timestamp=unix', '-p', ','.join(STATE_PROPS), unit])
    if rc != 0:
        module.fail_json(msg='systemctl show %s failed: %s' % (unit, err.strip()))
    state = {}
    for line in out.splitlines():
        key, dummy, value = line.partition('=')
        state[key] = value
    return state


def start_epoch(state):
    value = state.get('ExecMainStartTimestamp', '')
    if value.startswith('@'):
        try:
            return int(value[1:].split('.')[0])
        except ValueError:
            return None
    return None


class Journal(object):
    """Incremental reader of one unit's journal (json output, cursor-based).

    ``--since`` has whole seconds, so the first read also returns the last words of the process this start replaced
    (a shutdown traceback would read as a failed start). Only entries written by main processes of this wait count:
    a service's stdout/stderr stream carries the PID of the main process it was opened for (children inherit it).
    """

    def __init__(self, module, unit, since):
        self.module = module
        self.unit = unit
        self.since = since
        self.cursor = None
        self.pids = set()

    def follow_pid(self, pid):
        if pid and pid != '0':
            self.pids.add(str(pid))

    def read(self):
        cmd = ['journalctl', '--no-pager', '-o', 'json', '-u', self.unit]
        if self.cursor:
            cmd += ['--after-cursor', self.cursor]
        elif self.since is not None:
            cmd += ['--since', '@%d' % self.since]
        rc, out, err = self.module.run_command(cmd)
        lines = []
        for raw in out.splitlines():
            try:
                entry = json.loads(raw)
            except ValueError:
                continue
            self.cursor = entry.get('__CURSOR', self.cursor)
            if self.pids and entry.get('_PID') is not None and str(entry['_PID']) not in self.pids:
                continue
            message = entry.get('MESSAGE')
            if isinstance(message, list):
                message = bytes(bytearray(b & 0xff for b in message)).decode('utf-8', 'replace')
            if message is None:
                continue
            lines.extend(str(message).splitlines() or [''])
        return lines


def gpu_memory(module, smi, indices):
    if smi is None:
        return None
    cmd = [smi, '--query-gpu=memory.used', '--format=csv,noheader,nounits']
    if indices:
        cmd += ['-i', ','.join(indices)]
    rc, out, err = module.run_command(cmd)
    if rc != 0:
        return None
    try:
        return sum(int(float(v)) for v in out.split())
    except ValueError:
        return None


def http_get(url, api_key=None, timeout=5):
    headers = {}
    if api_key:
        headers['Authorization'] = 'Bearer %s' % api_key
    try:
        response = open_url(url, headers=headers, timeout=timeout, validate_certs=False, follow_redirects='none')
        return response.getcode(), response.read()
    except Exception as exc:  # noqa: BLE001 -- urllib raises many types; any error means "not ready"
        code = getattr(exc, 'code', None)
        return code, str(exc)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            unit=dict(type='str', required=True),
            url=dict(type='str', required=True),
            api_key=dict(type='str', no_log=True),
            served_model_name=dict(type='str'),
            timeout=dict(type='int', default=1800),
            stall_timeout=dict(type='int', default=45),
            interval=dict(type='float', default=1.0),
            gpu_indices=dict(type='list', elements='str', default=[]),
            journal_lines=dict(type='int', default=40),
            plan=dict(type='dict'),
            plan_context=dict(type='dict', default={}),
            follower=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    unit = p['unit'] if '.' in p['unit'] else p['unit'] + '.service'
    secrets = [p['api_key']] if p['api_key'] else []
    if module.check_mode:
        module.exit_json(changed=False, ready=False, elapsed=0.0, milestones=[], journal_tail=[], unit_state={},
                         skipped_reason='check mode: the server is not waited for')
    base = p['url'].rstrip('/')
    began = time.time()
    state = unit_state(module, unit)
    restarts0 = int(state.get('NRestarts') or 0)
    since = start_epoch(state)
    journal = Journal(module, unit, since - 1 if since else int(began) - 5)
    journal.follow_pid(state.get('ExecMainPID'))
    watch = StartupWatch(began, stall_seconds=p['stall_timeout'])
    smi = module.get_bin_path('nvidia-smi')
    models = []
    diagnosis = None
    ready = False
    while True:
        now = time.time()
        new = [redact(line, secrets) for line in journal.read()]
        watch.add_lines(now, new)
        watch.add_gpu_memory(now, gpu_memory(module, smi, p['gpu_indices']))
        state = unit_state(module, unit)
        journal.follow_pid(state.get('ExecMainPID'))
        alive = state.get('ActiveState') in ('active', 'activating', 'reloading') and \
            state.get('SubState') not in ('auto-restart', 'dead', 'failed') and int(state.get('NRestarts') or 0) == restarts0
        if alive and p['follower']:
            # Never /health: the stub answers 200 whatever the group does.
            if 'follower_ready' in watch.reached:
                ready = True
                break
        elif alive:
            code, dummy = http_get(base + '/health')
            if code == 200:
                code, body = http_get(base + '/v1/models', p['api_key'])
                if code == 200:
                    try:
                        models = [m.get('id') for m in json.loads(body).get('data', [])]
                    except (ValueError, AttributeError):
                        models = []
                    if not p['served_model_name'] or p['served_model_name'] in models:
                        ready = True
                        break
        if not alive:
            # Collect the process's last words (systemd may log them a moment after the state changes).
            time.sleep(min(1.0, p['interval']))
            watch.add_lines(time.time(), [redact(line, secrets) for line in journal.read()])
        diagnosis = watch.verdict(time.time(), process_alive=alive)
        if diagnosis is not None:
            break
        if time.time() - began >= p['timeout']:
            reached = watch.reached[-1] if watch.reached else 'none'
            diagnosis = dict(signature='timeout', summary='not ready after %d s (last milestone: %s)'
                             % (p['timeout'], reached),
                             likely_cause='Start-up is slower than the timeout (weights loading from slow storage, '
                                          'CUDA graph capture, a first-time Triton/DeepGEMM compile) or stuck after '
                                          'the last milestone.',
                             fix='Read the journal tail; raise sglang_server_ready_timeout if it was still progressing.',
                             evidence_lines=watch.lines[-10:], line_index=None)
            break
        time.sleep(p['interval'])

    elapsed = round(time.time() - began, 1)
    tail = watch.lines[-p['journal_lines']:]
    result = dict(changed=False, ready=ready, elapsed=elapsed, milestones=watch.reached, journal_tail=tail,
                  since_unit_start=round(time.time() - since, 1) if since else None,
                  unit_state=dict((k, state.get(k)) for k in STATE_PROPS[:4]))
    if ready:
        if p['plan']:
            context = dict(p['plan_context'], start=dict(started_at=since, pid=state.get('ExecMainPID')))
            record = sglang_startup.compare(p['plan'], sglang_startup.parse(watch.lines), context)
            record['markdown'] = sglang_startup.markdown(record)
            for warning in record['warnings']:
                module.warn('%s: plan vs. start-up log: %s' % (unit, warning))
            result['startup'] = record
        module.exit_json(models=models, **result)
    if watch.failure_seen_at is not None and diagnosis.get('signature') not in ('timeout', 'nccl_init_stall'):
        diagnosis['seconds_after_signature'] = round(time.time() - watch.failure_seen_at, 1)
    diagnosis.pop('line_index', None)
    msg = ('%s did not become ready: %s. Likely cause: %s Fix: %s Evidence: %s'
           % (unit, diagnosis['summary'], diagnosis['likely_cause'], diagnosis['fix'],
              ' | '.join(diagnosis['evidence_lines'][-6:])))
    module.fail_json(msg=msg, diagnosis=diagnosis, **result)


if __name__ == '__main__':
    main()
