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

from ansible_collections.llmops.inference.plugins.module_utils.sglang import log_catalogue as catalogue

# (name, [compiled regex...], summary, likely cause, fix), in the catalogue's order (first match wins). The texts and
# where each comes from are in module_utils/sglang/log_catalogue.py.
SIGNATURES = tuple((name, [catalogue.compile_text(entry) for entry in texts], summary, cause, fix)
                   for name, summary, cause, fix, texts in catalogue.FAILURES)
_COMPILED = SIGNATURES

# Progress milestones (every release's wording): name, one regex. The parallel window opens and closes with the first
# pair.
MILESTONES = tuple((name, re.compile('|'.join('(?:%s)' % catalogue.regex(entry['pieces']) for entry in texts)))
                   for name, texts in catalogue.MILESTONES)

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
