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
  - Reports the start-up progress - the milestones of the pinned release (parallel init, weights loading with the
    shard percentage, weights loaded, KV cache allocated, each CUDA graph capture, ready; the log catalogue's
    C(PROGRESS)) - as RV(progress) lines, each with the time since the unit started and the expected total from
    the last measured start (O(previous_record)). The action plugin of the same name runs the module as an async job
    and prints each new line on the controller as it arrives (within O(progress_interval) seconds).
  - Read-only (besides O(progress_file)). Secrets (O(api_key)) are removed from every returned line.
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
  previous_record:
    description:
      - The deployment record of the last healthy start on this host (C(<state dir>/<instance>/deployed.json), written
        by the sglang_server role). Its C(startup_progress.seconds) is the expected total in the progress lines. A
        missing or unreadable file means no previous start is known.
    type: path
  progress_file:
    description:
      - Where the module keeps RV(progress) while it waits (JSON, rewritten atomically at each new milestone). The
        action plugin sets it to a file in the async directory, reads it at each poll and removes it at the end.
    type: path
  progress_interval:
    description:
      - Seconds between the action plugin's polls of the job (each poll prints the new progress lines; at least one
        line every 30 s). The module itself does not use it.
    type: int
    default: 5
notes:
  - The journal is read from the start of the unit's current main process (C(ExecMainStartTimestamp)), so run the
    module right after (re)starting the unit; a unit that restarts by its restart policy is followed across restarts.
    Entries of the unit's other processes (SGLang's TP schedulers log with their own C(_PID)) count when journald
    wrote them after that start (C(__MONOTONIC_TIMESTAMP) against C(ExecMainStartTimestampMonotonic)).
  - The shard bar is tqdm's - each update begins with a carriage return and only the end of the bar has a newline.
    journald stores a line at a newline, or when another process of the unit writes in between (a PID change), so the
    percentages can arrive together at the end of the loading; the progress then shows the latest one.
  - With the task keyword C(async) or in check mode the action plugin runs the module directly (no progress lines).
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
    # The expected total in the progress lines: the last healthy start on this host.
    previous_record: /var/lib/llmops/sglang/qwen/deployed.json
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
progress:
  description:
    - The start-up progress (docs/sglang_server.md, "Start-up progress") - C(lines) (what the wait printed, one per
      new milestone - C(<milestone> - <time> since start, expected ~<total> (last start)>)), C(milestones) (per
      milestone C(name), C(text), C(at_s) - seconds after the unit's start - and its figures - C(percent), C(done),
      C(total) of the shard bar, C(graph), C(model_type), C(gib), C(tokens)), C(seconds) (how long this start took
      to ready, from the ready line; null while not ready), C(expected_seconds) (the last measured start's, null
      without O(previous_record)), C(started_at) (the unit's start, epoch seconds), C(pid) (its main PID, which
      start it is).
  returned: always
  type: dict
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
      C(seconds_after_signature) (how long after the line arrived the module reported it), C(last_progress) (the last
      start-up milestone reached and when), C(log) (the command that shows the journal of this start).
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
wait_seconds:
  description: Seconds the action plugin waited for the job (not in check mode nor with the task keyword C(async)).
  returned: when the action plugin ran the module as a job
  type: float
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url

from ansible_collections.llmops.inference.plugins.module_utils.sglang.logs import (
    StartupWatch,
    redact,
)
from ansible_collections.llmops.inference.plugins.module_utils.sglang import progress as sglang_progress
from ansible_collections.llmops.inference.plugins.module_utils.sglang import startup as sglang_startup

STATE_PROPS = ('ActiveState', 'SubState', 'NRestarts', 'ExecMainStatus', 'ExecMainPID', 'ExecMainStartTimestamp',
               'ExecMainStartTimestampMonotonic')


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


def _number(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


class Journal(object):
    """Incremental reader of one unit's journal (json output, cursor-based).

    ``--since`` has whole seconds, so the first read also returns the last words of the process this start replaced
    (a shutdown traceback would read as a failed start). Entries of the main processes of this wait count, and those
    of any other process of the unit (SGLang's schedulers: journald gives a forked writer its own _PID) that journald
    wrote after this start (``__MONOTONIC_TIMESTAMP`` against the start's ``ExecMainStartTimestampMonotonic``).
    """

    def __init__(self, module, unit, since, monotonic_start=None):
        self.module = module
        self.unit = unit
        self.since = since
        self.monotonic_start = _number(monotonic_start) or None
        self.cursor = None
        self.pids = set()

    def follow_pid(self, pid):
        if pid and pid != '0':
            self.pids.add(str(pid))

    def _this_start(self, entry):
        if not self.pids or entry.get('_PID') is None or str(entry['_PID']) in self.pids:
            return True
        stamp = _number(entry.get('__MONOTONIC_TIMESTAMP'))
        return self.monotonic_start is not None and stamp is not None and stamp >= self.monotonic_start

    def read_entries(self):
        """New (time, line) pairs: the entry's journal time (epoch seconds, None when not given) and each line of it
        (a message is split at newlines and carriage returns)."""
        cmd = ['journalctl', '--no-pager', '-o', 'json', '-u', self.unit]
        if self.cursor:
            cmd += ['--after-cursor', self.cursor]
        elif self.since is not None:
            cmd += ['--since', '@%d' % self.since]
        rc, out, err = self.module.run_command(cmd)
        pairs = []
        for raw in out.splitlines():
            try:
                entry = json.loads(raw)
            except ValueError:
                continue
            self.cursor = entry.get('__CURSOR', self.cursor)
            if not self._this_start(entry):
                continue
            message = entry.get('MESSAGE')
            if isinstance(message, list):
                message = bytes(bytearray(b & 0xff for b in message)).decode('utf-8', 'replace')
            if message is None:
                continue
            stamp = _number(entry.get('__REALTIME_TIMESTAMP'))
            at = stamp / 1e6 if stamp else None
            pairs.extend((at, line) for line in (str(message).splitlines() or ['']))
        return pairs

    def read(self):
        return [line for dummy, line in self.read_entries()]


def read_record(path):
    """The deployment record (deployed.json) at ``path``, or None (no path, missing, unreadable, not JSON)."""
    if not path:
        return None
    try:
        with open(path) as handle:
            return json.load(handle)
    except (IOError, OSError, ValueError):
        return None


class ProgressReport(object):
    """The start-up progress of this wait: milestones from the journal, the lines printed for them, kept in
    ``path`` (JSON, tmp file + rename) for the action plugin to read while the job runs."""

    def __init__(self, path, since, expected):
        self.path = path
        self.since = since
        self.expected = expected
        self.tracker = sglang_progress.Tracker()
        self.lines = []
        self.pid = None

    def add(self, pairs, now):
        new = []
        for at, line in pairs:
            new.extend(self.tracker.add(line, at if at is not None else now))
        if new:
            self.lines.extend(sglang_progress.report_lines(new, self.since, self.expected))
            self.write()

    def ready(self, now):
        """The server answered ready: its ready line, or, when it is not in the journal yet, this moment."""
        if not any(m['name'] in ('ready', 'follower_ready') for m in self.tracker.milestones):
            item = dict(name='ready', label='ready', text='ready (/health and /v1/models answer)', at=now)
            self.tracker.milestones.append(item)
            self.lines.extend(sglang_progress.report_lines([item], self.since, self.expected))
        self.write()

    def last(self):
        return sglang_progress.last_reached(self.tracker.milestones, self.since)

    def result(self):
        milestones = []
        for item in self.tracker.milestones:
            entry = dict((k, v) for k, v in item.items() if k not in ('at', 'label'))
            entry['at_s'] = round(item['at'] - self.since, 1) if item.get('at') and self.since else None
            milestones.append(entry)
        ready = [m['at_s'] for m in milestones if m['name'] in ('ready', 'follower_ready') and m['at_s'] is not None]
        return dict(lines=list(self.lines), milestones=milestones, seconds=ready[-1] if ready else None,
                    expected_seconds=self.expected, started_at=self.since, pid=self.pid)

    def write(self, done=False):
        if not self.path:
            return
        data = dict(self.result(), done=done, updated=time.time())
        tmp = '%s.tmp-%d' % (self.path, os.getpid())
        try:
            with open(tmp, 'w') as handle:
                json.dump(data, handle)
            os.rename(tmp, self.path)
        except (IOError, OSError):
            pass  # progress is best effort; the wait must not fail for it


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


def argument_spec():
    return dict(
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
        previous_record=dict(type='path'),
        progress_file=dict(type='path'),
        progress_interval=dict(type='int', default=5),
    )


def read_journal(journal, watch, report, secrets, now):
    """New journal lines (secrets removed) into the failure watch and the progress report."""
    pairs = [(at, redact(line, secrets)) for at, line in journal.read_entries()]
    watch.add_lines(now, [line for dummy, line in pairs])
    report.add(pairs, now)


def probe_http(base, p):
    """(ready, models): /health answers 200 and /v1/models lists the served model."""
    code, dummy = http_get(base + '/health')
    if code != 200:
        return False, []
    code, body = http_get(base + '/v1/models', p['api_key'])
    if code != 200:
        return False, []
    try:
        models = [m.get('id') for m in json.loads(body).get('data', [])]
    except (ValueError, AttributeError):
        models = []
    return not p['served_model_name'] or p['served_model_name'] in models, models


def timeout_diagnosis(timeout, watch, report, log_cmd):
    reached = watch.reached[-1] if watch.reached else 'none'
    return dict(signature='timeout', summary='not ready after %d s (last milestone: %s; last progress: %s; log: %s)'
                % (timeout, reached, report.last(), log_cmd),
                likely_cause='Start-up is slower than the timeout (weights loading from slow storage, CUDA graph '
                             'capture, a first-time Triton/DeepGEMM compile) or stuck after the last milestone.',
                fix='Read the journal tail; raise sglang_server_ready_timeout if it was still progressing.',
                evidence_lines=watch.lines[-10:], line_index=None)


def fail_not_ready(module, unit, diagnosis, watch, report, log_cmd, result):
    if watch.failure_seen_at is not None and diagnosis.get('signature') not in ('timeout', 'nccl_init_stall'):
        diagnosis['seconds_after_signature'] = round(time.time() - watch.failure_seen_at, 1)
    diagnosis.pop('line_index', None)
    diagnosis.update(last_progress=report.last(), log=log_cmd)
    msg = ('%s did not become ready: %s. Likely cause: %s Fix: %s Evidence: %s Last milestone: %s. Log: %s'
           % (unit, diagnosis['summary'], diagnosis['likely_cause'], diagnosis['fix'],
              ' | '.join(diagnosis['evidence_lines'][-6:]), diagnosis['last_progress'], log_cmd))
    module.fail_json(msg=msg, diagnosis=diagnosis, **result)


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    p = module.params
    unit = p['unit'] if '.' in p['unit'] else p['unit'] + '.service'
    secrets = [p['api_key']] if p['api_key'] else []
    if module.check_mode:
        module.exit_json(changed=False, ready=False, elapsed=0.0, milestones=[], journal_tail=[], unit_state={},
                         progress=dict(lines=[], milestones=[], seconds=None, expected_seconds=None, started_at=None,
                                       pid=None),
                         skipped_reason='check mode: the server is not waited for')
    base = p['url'].rstrip('/')
    began = time.time()
    state = unit_state(module, unit)
    restarts0 = int(state.get('NRestarts') or 0)
    since = start_epoch(state)
    journal = Journal(module, unit, since - 1 if since else int(began) - 5, state.get('ExecMainStartTimestampMonotonic'))
    journal.follow_pid(state.get('ExecMainPID'))
    watch = StartupWatch(began, stall_seconds=p['stall_timeout'])
    report = ProgressReport(p['progress_file'], since,
                            sglang_progress.expected_seconds(read_record(p['previous_record'])))
    report.write()
    log_cmd = 'journalctl -u %s --since @%d' % (unit, since) if since else 'journalctl -u %s' % unit
    smi = module.get_bin_path('nvidia-smi')
    models = []
    diagnosis = None
    ready = False
    while True:
        now = time.time()
        read_journal(journal, watch, report, secrets, now)
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
            ready, models = probe_http(base, p)
            if ready:
                break
        if not alive:
            # Collect the process's last words (systemd may log them a moment after the state changes).
            time.sleep(min(1.0, p['interval']))
            read_journal(journal, watch, report, secrets, time.time())
        diagnosis = watch.verdict(time.time(), process_alive=alive)
        if diagnosis is not None:
            break
        if time.time() - began >= p['timeout']:
            diagnosis = timeout_diagnosis(p['timeout'], watch, report, log_cmd)
            break
        time.sleep(p['interval'])

    if ready:
        # The ready line follows the readiness SGLang answers with (http_server.py logs it after the warm-up).
        time.sleep(min(1.0, p['interval']))
        read_journal(journal, watch, report, secrets, time.time())
        report.ready(time.time())
    report.pid = state.get('ExecMainPID')
    elapsed = round(time.time() - began, 1)
    tail = watch.lines[-p['journal_lines']:]
    result = dict(changed=False, ready=ready, elapsed=elapsed, milestones=watch.reached, journal_tail=tail,
                  since_unit_start=round(time.time() - since, 1) if since else None,
                  unit_state=dict((k, state.get(k)) for k in STATE_PROPS[:4]), progress=report.result())
    report.write(done=True)
    if ready:
        if p['plan']:
            context = dict(p['plan_context'], start=dict(started_at=since, pid=state.get('ExecMainPID')))
            record = sglang_startup.compare(p['plan'], sglang_startup.parse(watch.lines), context)
            record['markdown'] = sglang_startup.markdown(record)
            for warning in record['warnings']:
                module.warn('%s: plan vs. start-up log: %s' % (unit, warning))
            result['startup'] = record
        module.exit_json(models=models, **result)
    fail_not_ready(module, unit, diagnosis, watch, report, log_cmd, result)


if __name__ == '__main__':
    main()
