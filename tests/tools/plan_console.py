# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""`make plan`: the offline plan of an inventory, with what-if knobs, a short console summary and the difference to
the previous plan (docs/plan.md, "Asking what if").

    make plan                                      # the inventory's plan in build/plan/
    make plan TP=2                                 # what if: build/plan-whatif/tp-2/ (build/plan/ untouched)
    make plan MODEL=qwen3-32b GPU=h200 TP=1 CONTEXT=32768 SPEC=off KV_DTYPE=fp8_e4m3
    make plan EXTRA='-e llmops_mem_fraction_static=0.85'
    make plan llmops_mem_fraction_static=0.85      # any llmops_* variable given to make is passed on as -e

The knobs are make's command-line variables (make exports them to this script; PLAN_CLI_VARS names the ones given
on make's command line, so a variable of the same name in the shell's environment is never picked up):

    MODEL     llmops_model_profile  (a file profiles/models/<MODEL>.yml)
    GPU       llmops_gpu_profile    (a file profiles/hardware/<GPU>.yml)
    TP        llmops_tp_size
    CONTEXT   llmops_context_length (tokens; 32k / 128K accepted)
    SPEC      off: llmops_speculative_num_draft_tokens=0; mtp / eagle3: the profile's own speculative settings
              (both variables null), refused when the profile has no MTP head / no EAGLE-3 draft
    KV_DTYPE  llmops_kv_cache_dtype
    EXTRA     passed to ansible-playbook as it is (e.g. '-e k=v -e k2=v2')

A run with any knob is a what-if: it writes build/plan-whatif/<knobs>/ and says so; it never replaces the inventory's
plan in build/plan/. Each run writes a fresh tree (the previous one is kept as <dir>.previous/), the full Ansible
log goes to <dir>.log, and the console gets the summary: per host the verdict and key numbers, the path of its
plan.md, what changed since the previous plan (a what-if: against the inventory's plan). The first refusal comes
first; the script's exit status is 0 when the deploy would start every host, 2 when it would refuse one, 3 when the
plan could not run (the end of the log is printed); make's own status is 2 for either failure.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plan_gate as gate  # noqa: E402  pylint: disable=wrong-import-position

sys.path.insert(0, os.path.join(gate.ROOT, '.collections'))
from ansible_collections.llmops.inference.plugins.plugin_utils.views import deployment_summary as summary_lib

ROOT = gate.ROOT
EXIT_OK, EXIT_REFUSED, EXIT_ERROR = 0, 2, 3

# make variable -> (inventory variable, what it takes). SPEC is handled apart (it depends on the profile).
KNOBS = (
    ('MODEL', 'llmops_model_profile', 'a model profile name (profiles/models/<name>.yml)'),
    ('GPU', 'llmops_gpu_profile', 'a hardware profile name (profiles/hardware/<name>.yml)'),
    ('TP', 'llmops_tp_size', 'a tensor-parallel size, a whole number >= 1'),
    ('CONTEXT', 'llmops_context_length', 'a context length in tokens (e.g. 131072 or 128k)'),
    ('KV_DTYPE', 'llmops_kv_cache_dtype', 'a --kv-cache-dtype value (auto, fp8_e4m3, fp8_e5m2, bfloat16 ...)'),
)
SPEC_CHOICES = ('off', 'mtp', 'eagle3')
KNOB_NAMES = tuple(k[0] for k in KNOBS) + ('SPEC', 'EXTRA')
PASS_PREFIX = 'llmops_'


class PlanRunError(Exception):
    """A knob or the inventory is wrong (exit 3, the message names the variable, the value and the fix)."""


# ---------------------------------------------------------------------------------------------------------------------
# The knobs


def _profile_names(kind):
    folder = os.path.join(ROOT, 'profiles', kind)
    return sorted(name[:-4] for name in os.listdir(folder) if name.endswith('.yml'))


def _closest(value, names):
    near = difflib.get_close_matches(value, names, n=1, cutoff=0.5)
    return (' (did you mean %s?)' % near[0]) if near else ''


def _profile(kind, name, knob):
    names = _profile_names(kind)
    if name not in names:
        raise PlanRunError('%s=%s: no profile profiles/%s/%s.yml%s. Known: %s. Fix: make plan %s=<one of them>'
                           % (knob, name, kind, name, _closest(name, names), ', '.join(names), knob))
    with open(os.path.join(ROOT, 'profiles', kind, name + '.yml'), encoding='utf-8') as handle:
        return yaml.safe_load(handle) or {}


def _context(value):
    match = re.match(r'^\s*(\d+)\s*([kK])?\s*$', value)
    if not match:
        raise PlanRunError('CONTEXT=%s: a context length is a number of tokens (131072, or 128k = 131072). '
                           'Fix: make plan CONTEXT=131072' % value)
    return int(match.group(1)) * (1024 if match.group(2) else 1)


def _tp(value):
    if not re.match(r'^\s*\d+\s*$', value) or int(value) < 1:
        raise PlanRunError('TP=%s: the tensor-parallel size is a whole number >= 1 (1, 2, 4, 8). Fix: make plan TP=4'
                           % value)
    return int(value)


def spec_vars(spec, model_profile, model_name):
    """The -e variables of SPEC=off|mtp|eagle3 for a model profile (its serving.speculative)."""
    if spec not in SPEC_CHOICES:
        raise PlanRunError('SPEC=%s: one of %s. Fix: make plan SPEC=off' % (spec, ', '.join(SPEC_CHOICES)))
    if spec == 'off':
        return {'llmops_speculative_num_draft_tokens': 0}
    speculative = ((model_profile or {}).get('serving') or {}).get('speculative') or {}
    algorithm = str(speculative.get('algorithm') or '').upper()
    has_draft = bool(speculative.get('draft'))
    if spec == 'eagle3' and not (algorithm == 'EAGLE3' and has_draft):
        raise PlanRunError(
            'SPEC=eagle3: the model profile %s has no EAGLE-3 draft (serving.speculative: algorithm %s%s). An EAGLE-3 '
            'draft is attached to its target profile under serving.speculative.draft (make profile on the draft '
            'prints the lines). Fix: make plan SPEC=%s, or a profile with a draft'
            % (model_name, algorithm or 'none', ', with a draft' if has_draft else '', 'mtp' if algorithm in
               ('NEXTN', 'EAGLE') else 'off'))
    if spec == 'mtp' and not (algorithm in ('NEXTN', 'EAGLE') and not has_draft):
        raise PlanRunError(
            'SPEC=mtp: the model profile %s has no built-in MTP head (serving.speculative: algorithm %s%s); MTP '
            '(NEXTN) needs a checkpoint with its MTP layers. Fix: make plan SPEC=%s'
            % (model_name, algorithm or 'none', ', an EAGLE-3 draft' if has_draft else '',
               'eagle3' if has_draft else 'off'))
    # null is the profile's own settings (or SGLang's auto choice where the profile gives none), whatever the
    # inventory set (e.g. llmops_speculative_num_draft_tokens: 0, MTP off).
    return {'llmops_speculative_num_draft_tokens': None, 'llmops_speculative_num_steps': None}


def knob_values(environ):
    """{make variable: value} of the knobs and llmops_* variables given on make's command line."""
    given = set((environ.get('PLAN_CLI_VARS') or '').split())
    out = {}
    for name in sorted(given):
        if name in KNOB_NAMES or name.startswith(PASS_PREFIX):
            value = environ.get(name)
            if value is not None and (value != '' or name.startswith(PASS_PREFIX)):
                out[name] = value
    return out


def extra_vars(knobs, inventory_model=None):
    """(the -e variables, the EXTRA arguments) of the knobs; PlanRunError names a wrong one."""
    evars = {}
    for knob, variable, _what in KNOBS:
        if knob not in knobs:
            continue
        value = knobs[knob].strip()
        # MODEL and GPU are not checked here: the resolver refuses an unknown profile itself, first, with the
        # nearest name as its fix (make plan prints that refusal before anything else).
        if knob == 'TP':
            value = _tp(value)
        elif knob == 'CONTEXT':
            value = _context(value)
        evars[variable] = value
    for name, value in knobs.items():
        if name.startswith(PASS_PREFIX):
            evars[name] = yaml.safe_load(value) if value.strip() else None
    if 'SPEC' in knobs:
        model_name = evars.get('llmops_model_profile') or inventory_model
        if not model_name:
            raise PlanRunError('SPEC=%s: no model profile to read the speculative settings from: the inventory sets '
                               'no llmops_model_profile. Fix: make plan MODEL=<profile> SPEC=%s'
                               % (knobs['SPEC'], knobs['SPEC']))
        evars.update(spec_vars(knobs['SPEC'].strip().lower(), _profile('models', model_name, 'MODEL'), model_name))
    extra = shlex.split(knobs.get('EXTRA', ''))
    return evars, extra


def tp_indices(evars, knobs, listing):
    """TP=<n> alone asks "does it fit at n GPUs?": the first n of the inventory's llmops_gpu_indices when every
    server lists at least n and they agree, so the what-if is not refused only for listing the other GPUs too; a
    note says so. Nothing when llmops_gpu_indices is given as well, or the servers list fewer (the refusal says so)."""
    tp = evars.get('llmops_tp_size')
    if tp is None or 'llmops_gpu_indices' in evars or 'TP' not in knobs:
        return None
    hostvars = (listing.get('_meta') or {}).get('hostvars') or {}
    servers = ((listing.get('sglang_servers') or {}).get('hosts')) or []
    firsts = set()
    for host in servers:
        indices = (hostvars.get(host) or {}).get('llmops_gpu_indices') or []
        if len(indices) < tp or len(indices) == tp:
            return None
        firsts.add(tuple(indices[:tp]))
    if len(firsts) != 1:
        return None
    evars['llmops_gpu_indices'] = list(firsts.pop())
    return 'TP=%d plans on GPUs %s, the first %d of the llmops_gpu_indices the inventory lists' % (
        tp, ','.join(str(i) for i in evars['llmops_gpu_indices']), tp)


def extra_assignments(extra):
    """The k=v pairs of EXTRA's -e / --extra-vars arguments (for the difference's causes; JSON and @file are
    passed on to ansible-playbook all the same, only not named as causes)."""
    out = {}
    for flag, value in zip(extra, extra[1:]):
        if flag in ('-e', '--extra-vars') and not value.lstrip().startswith(('{', '@')):
            for pair in shlex.split(value):
                if '=' in pair:
                    key, _sep, val = pair.partition('=')
                    out[key] = yaml.safe_load(val) if val.strip() else val
    return out


def whatif_slug(knobs):
    """build/plan-whatif/<this>: the knobs as given, e.g. model-qwen3-32b_tp-2; EXTRA by a short digest."""
    parts = []
    for name in KNOB_NAMES:
        if name in knobs and name != 'EXTRA':
            parts.append('%s-%s' % (name.lower().replace('_', '-'), knobs[name].strip()))
    for name in sorted(n for n in knobs if n.startswith(PASS_PREFIX)):
        parts.append('%s-%s' % (name[len(PASS_PREFIX):], knobs[name].strip()))
    if knobs.get('EXTRA'):
        parts.append('extra-' + hashlib.sha256(knobs['EXTRA'].encode()).hexdigest()[:8])
    return re.sub(r'[^A-Za-z0-9._-]+', '_', '_'.join(parts))[:120]


# ---------------------------------------------------------------------------------------------------------------------
# Running the playbook


def fresh_tree(out_dir):
    """Keep the last plan as <out>.previous and start an empty <out> (no stale file of an earlier run)."""
    previous = out_dir + '.previous'
    if os.path.isdir(out_dir):
        if os.path.isdir(previous):
            shutil.rmtree(previous)
        os.rename(out_dir, previous)
    os.makedirs(out_dir)
    return previous


def inventory_listing(inventory, env):
    inv = subprocess.run([gate._tool('ansible-inventory'), '-i', inventory, '--list'], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=False)
    if inv.returncode != 0:
        raise PlanRunError('INVENTORY=%s: ansible-inventory cannot read it (rc %d): %s'
                           % (inventory, inv.returncode, inv.stderr.strip()[-1500:]))
    return json.loads(inv.stdout)


def playbook_argv(inventory, out_dir, evars, extra):
    argv = [gate._tool('ansible-playbook'), os.path.join(ROOT, 'playbooks', 'plan.yml'), '-i', inventory,
            '-e', 'llmops_plan_output_dir=%s' % out_dir]
    if evars:
        argv += ['-e', json.dumps(evars, sort_keys=True)]
    return argv + list(extra)


def run_playbook(argv, log, env):
    with open(log, 'w', encoding='utf-8') as handle:
        handle.write('# %s\n' % ' '.join(shlex.quote(a) for a in argv))
        handle.flush()
        return subprocess.run(argv, cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT, check=False).returncode


# ---------------------------------------------------------------------------------------------------------------------
# The summary


def _rel(path):
    rel = os.path.relpath(path, os.getcwd())
    return path if rel.startswith('..') else rel


def host_lines(host, out_dir, first_refused=None):
    """The deploy's summary lines of a host (plugin_utils/views/deployment_summary.py), and where its plan files are."""
    hdir = os.path.join(out_dir, host)
    deployment = gate.read_json(os.path.join(hdir, 'deployment.json')) or {}
    lines = summary_lib.host_lines(host, deployment, shown_refusal=(host == first_refused))
    for name, picture in (('plan.md', 'plan.html'), ('gpu_partition.txt', 'topology.html')):
        path = os.path.join(hdir, name)
        if os.path.isfile(path) and not (name == 'plan.md' and deployment.get('kind') == 'proxmox_host'):
            # The picture beside it (plugins/plugin_utils/views/plan_pictures.py), on the same line.
            shown = os.path.isfile(os.path.join(hdir, picture))
            lines.append('  %s%s' % (_rel(path), ' (picture: %s)' % picture if shown else ''))
    return lines


def change_lines(old, new, against, whatif_vars):
    """What changed against `against` (a label), from two snapshots; [] when old is None."""
    if old is None:
        return ['No earlier plan to compare with: %s has none.' % against]
    if whatif_vars:
        # The what-if's -e variables are inputs of every host, as if the inventory set them.
        for host in new['inputs']['hosts']:
            new['inputs']['hosts'][host] = dict(new['inputs']['hosts'][host], **whatif_vars)
    result = gate.compare(old, new)
    if not gate.has_changes(result):
        return ['No change against %s.' % against]
    out = ['Changed against %s:' % against]
    for host, lines in result['hosts'].items():
        if new['hosts'].get(host, {}).get('refusal'):
            cause = gate.causes_for(host, result)
            out.append('  %s: now REFUSED%s' % (host, (' because ' + cause) if cause else ''))
            continue
        out.append('  ' + gate.headline(host, lines, result))
        argv = [line for line in lines if line.startswith('argv')][:4]
        out.extend('    ' + line for line in argv)
    if result['monitoring'] and not result['hosts']:
        out.append('  monitoring: %s' % result['monitoring'][0])
    return out


def summary(snapshot, out_dir, changes, log, whatif, refusals):
    out = []
    if refusals:
        host, text = refusals[0]
        out.append('REFUSED: the deploy would refuse %s' % ', '.join(h for h, _t in refusals))
        out.append(text if text.startswith(host + ':') else '%s: %s' % (host, text))
        out.append('')
    out.append('%s plan of %s: %s' % ('What-if' if whatif else 'The', snapshot['inventory'], _rel(out_dir)) +
               (' (the inventory\'s own plan is untouched)' if whatif else ''))
    for host in snapshot['hosts']:
        out.extend(host_lines(host, out_dir, refusals[0][0] if refusals else None))
    if os.path.isfile(os.path.join(out_dir, 'monitoring', 'monitoring.md')):
        out.append('monitoring  %s' % _rel(os.path.join(out_dir, 'monitoring', 'monitoring.md')))
    out.append('')
    out.extend(changes)
    out.append('Full log: %s' % _rel(log))
    return out


# ---------------------------------------------------------------------------------------------------------------------


def main(argv=None, environ=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--inventory', default='inventories/example')
    parser.add_argument('--build', default='build', help='where plan/ and plan-whatif/ go (make plan PLAN_BUILD=...)')
    parser.add_argument('--out', help='the plan directory (default: <build>/plan, or <build>/plan-whatif/<knobs>)')
    args = parser.parse_args(argv)
    environ = os.environ if environ is None else environ
    os.chdir(ROOT)
    env = gate.tool_env(ROOT)
    try:
        if not os.path.exists(args.inventory):
            raise PlanRunError('INVENTORY=%s: no such file or directory. Fix: make plan INVENTORY=inventories/example '
                               '(or a directory of inventories/)' % args.inventory)
        knobs = knob_values(environ)
        listing = inventory_listing(args.inventory, env)
        models = sorted({(hv or {}).get('llmops_model_profile') for hv in
                         ((listing.get('_meta') or {}).get('hostvars') or {}).values()} - {None})
        evars, extra = extra_vars(knobs, models[0] if len(models) == 1 else None)
        notes = [note for note in [tp_indices(evars, knobs, listing)] if note]
    except PlanRunError as err:
        print('make plan: %s' % err)
        return EXIT_ERROR
    whatif = bool(knobs)
    build = os.path.abspath(args.build)
    out_dir = os.path.abspath(args.out or (os.path.join(build, 'plan-whatif', whatif_slug(knobs)) if whatif
                                           else os.path.join(build, 'plan')))
    previous = fresh_tree(out_dir)
    log = out_dir + '.log'
    print('make plan: %s%s; the full log is %s' % (
        args.inventory, (' with ' + ' '.join('%s=%s' % kv for kv in sorted(knobs.items()))) if whatif else '',
        _rel(log)), flush=True)
    rc = run_playbook(playbook_argv(args.inventory, out_dir, evars, extra), log, env)
    snapshot = gate.build_snapshot(ROOT, args.inventory, listing, out_dir)
    refusals = gate.refusals_of(snapshot)
    if rc != 0 and not refusals:
        print('make plan: the playbook failed (rc %d) without a refusal; the end of %s:\n%s'
              % (rc, _rel(log), gate._log_tail(log)))
        return EXIT_ERROR
    gate.write_json(os.path.join(out_dir, 'plan-snapshot.json'), snapshot)
    if whatif:
        base = os.path.join(build, 'plan', 'plan-snapshot.json')
        against = 'the inventory\'s plan (%s%s)' % (_rel(os.path.dirname(base)), '' if os.path.isfile(base) else
                                                    ': run make plan first')
    else:
        base = os.path.join(previous, 'plan-snapshot.json')
        against = 'the previous plan (%s)' % _rel(previous)
    changes = change_lines(gate.read_json(base), snapshot, against, dict(extra_assignments(extra), **evars)
                           if whatif else None)
    print('\n'.join(summary(snapshot, out_dir, ['note: ' + n for n in notes] + changes, log, whatif, refusals)))
    return EXIT_REFUSED if refusals else EXIT_OK


if __name__ == '__main__':
    sys.exit(main())
