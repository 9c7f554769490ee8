# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The plan gate: `make plan` of an inventory compared with the plan approved for it (docs/ci.md).

    python tests/tools/plan_gate.py check  inventories/example [--summary FILE] [--junit FILE]   # make plan-check
    python tests/tools/plan_gate.py accept inventories/example                                   # make plan-accept
    python tests/tools/plan_gate.py diff OLD.json NEW.json                                       # two snapshots

`check` renders the plan (playbooks/plan.yml, offline, into build/plan-check/) and reduces it to a snapshot: per host
the key numbers, the SGLang command line, its environment, the rendered unit and EnvironmentFile, the container's
LXC lines and the Proxmox host's vfio split; the monitoring files; and the inputs that drive the plan (each host's
inventory variables as Ansible merges them, the model and GPU profiles it uses, the SGLang pin, the release table's
digest, the collection version). It compares the snapshot with the approved one, `.plan-approved.json` in the
inventory directory (hidden: Ansible reads every other file of an inventory directory as an inventory source), and
prints what changed and why. Exit status: 0 the plan is the approved one, 1 it changed, 2 the deploy would refuse a
host (the refusal is the message, first refusal first), 3 the gate could not run (no reference, the playbook broke).
`accept` renders the plan and records it as the reference (never a refused plan).

Volatile content never counts: the checkout's path, the home directory, the controller's host name and ISO
timestamps are replaced by placeholders before anything is compared, and the plan runs without SGLANG_API_KEY.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from xml.sax.saxutils import escape as xml_escape

import yaml

from collection_paths import ROOT  # noqa: E402  (a sibling file: ROOT, the pin, the release table)
SCHEMA = 1
REFERENCE_NAME = '.plan-approved.json'
EXIT_OK, EXIT_CHANGED, EXIT_REFUSED, EXIT_ERROR = 0, 1, 2, 3
# The plays of playbooks/plan.yml run on these groups, in this order: the order refusals are reported in.
PLAN_GROUPS = ('proxmox_hosts', 'sglang_servers', 'sglang_gateways')

# Key numbers of an SGLang server's plan (plan.json's plan), in the order they are shown, with their labels.
KEY_NUMBERS = (
    ('verdict', 'verdict'),
    ('kv_cache_tokens', 'KV tokens'),
    ('max_running_requests', 'max running requests'),
    ('max_running_requests_bound_by', 'max running requests bound by'),
    ('context_length', 'context length'),
    ('mem_fraction_static', 'mem fraction static'),
    ('headroom_gib', 'headroom per GPU (GiB)'),
    ('weights_gib_per_gpu', 'weights per GPU (GiB)'),
    ('static_budget_gib', 'static budget per GPU (GiB)'),
    ('free_before_load_gib', 'free before load (GiB)'),
    ('free_memory_source', 'free memory source'),
    ('mamba_cache_slots', 'mamba slots'),
    ('mamba_strategy', 'mamba strategy'),
    ('swa_kv_cache_tokens', 'SWA KV tokens'),
    ('kv_cache_dtype', 'KV cache dtype'),
    ('page_size', 'page size'),
    ('tp_size', 'TP size'),
    ('chunked_prefill_size', 'chunked prefill size'),
    ('cuda_graph_max_bs', 'CUDA graph max batch'),
)
# Inventory variables whose values are secrets: recorded as set or not, never their value.
SECRET_NAME = re.compile(r'(password|passwd|secret|token|api_key|private_key)', re.IGNORECASE)
ISO_TIME = re.compile(r'\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?\b')


class GateError(Exception):
    """The gate could not run (exit 3)."""


# ---------------------------------------------------------------------------------------------------------------------
# Normalisation and formatting


def volatile_replacements(root=ROOT, home=None, hostnames=None, out_dir=None, inventory_dir=None):
    """(text, placeholder) pairs, longest first: the plan's output directory, the inventory's directory, the checkout
    (as given and resolved), the home directory; and the controller's host names (replaced as whole words, when 4
    characters or more)."""
    pairs = []
    for path in sorted({inventory_dir, os.path.realpath(inventory_dir)}) if inventory_dir else ():
        pairs.append((path.rstrip('/'), '<inventory>'))
    for path in sorted({out_dir, os.path.realpath(out_dir)}) if out_dir else ():
        pairs.append((path.rstrip('/'), '<plan-dir>'))
    for path in sorted({root, os.path.realpath(root)}):
        pairs.append((path.rstrip('/'), '<checkout>'))
    home = home if home is not None else os.path.expanduser('~')
    if home and home not in ('/', '/root') and len(home) > 1:
        pairs.append((home.rstrip('/'), '<home>'))
    elif home:
        pairs.append((home.rstrip('/') + '/', '<home>/'))
    pairs.sort(key=lambda p: -len(p[0]))
    names = hostnames if hostnames is not None else controller_hostnames()
    return pairs, [n for n in names if len(n) >= 4]


def controller_hostnames():
    names = {socket.gethostname()}
    try:
        names.add(socket.getfqdn())
    except OSError:
        pass
    names |= {n.split('.')[0] for n in list(names)}
    return sorted((n for n in names if n and n != 'localhost'), key=len, reverse=True)


def normalise(value, replacements):
    """The value with every volatile string replaced (recursively through lists and dicts)."""
    pairs, hostnames = replacements
    if isinstance(value, str):
        for text, placeholder in pairs:
            value = value.replace(text, placeholder)
        for name in hostnames:
            value = re.sub(r'(?<![\w.-])%s(?![\w-])' % re.escape(name), '<controller>', value)
        return ISO_TIME.sub('<time>', value)
    if isinstance(value, list):
        return [normalise(v, replacements) for v in value]
    if isinstance(value, dict):
        return {k: normalise(v, replacements) for k, v in value.items()}
    return value


def fmt(value):
    """A value as the gate prints it: 684,739; 0.7851; null; true; "text" unquoted; lists as compact JSON."""
    if value is None:
        return 'null'
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, int):
        return '{:,}'.format(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return value if value else '""'
    return json.dumps(value, sort_keys=True, separators=(', ', ': '))


def flatten(value, prefix=''):
    """{dotted key: scalar or list of scalars} of a nested structure (list items of dicts as key[i])."""
    out = {}
    if isinstance(value, dict):
        if not value and prefix:
            out[prefix] = {}
        for key in sorted(value, key=str):
            out.update(flatten(value[key], '%s.%s' % (prefix, key) if prefix else str(key)))
    elif isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        for i, item in enumerate(value):
            out.update(flatten(item, '%s[%d]' % (prefix, i)))
    else:
        out[prefix] = value
    return out


def digest_text(text):
    return 'sha256:' + hashlib.sha256(text.encode('utf-8')).hexdigest()


def file_lines(path, replacements):
    with open(path, encoding='utf-8') as handle:
        return normalise(handle.read(), replacements).splitlines()


# ---------------------------------------------------------------------------------------------------------------------
# Snapshot: what the gate records of a rendered plan


def inventory_inputs(hostvars):
    """A host's inventory variables as recorded: secrets reduced to "<set>", vault values never stored."""
    out = {}
    for key in sorted(hostvars):
        value = hostvars[key]
        if isinstance(value, dict) and '__ansible_vault' in value:
            value = '<vault: set>'
        elif SECRET_NAME.search(key) and value not in (None, '', [], {}):
            value = '<secret: set>'
        out[key] = value
    return out


def profile_inputs(repo_root, relpath):
    """The flattened leaves of a profile file (its comments are not inputs), or None when it does not exist."""
    path = os.path.join(repo_root, relpath)
    if not os.path.isfile(path):
        return None
    with open(path, encoding='utf-8') as handle:
        return flatten(yaml.safe_load(handle) or {})


def file_digest(repo_root, relpath):
    """sha256 of a data file's parsed content (comments and layout do not count); None when it is missing."""
    path = os.path.join(repo_root, relpath)
    if not os.path.isfile(path):
        return None
    with open(path, encoding='utf-8') as handle:
        data = yaml.safe_load(handle)
    return digest_text(json.dumps(data, sort_keys=True, default=str))


def read_json(path):
    if not os.path.isfile(path):
        return None
    with open(path, encoding='utf-8') as handle:
        return json.load(handle)


def host_order(inventory_listing):
    """Hosts of the plan's groups in play order (proxmox_hosts, then sglang_servers, then sglang_gateways)."""
    order = []

    def visit(group, seen):
        if group in seen:
            return
        seen.add(group)
        entry = inventory_listing.get(group) or {}
        for host in entry.get('hosts', []):
            if host not in order:
                order.append(host)
        for child in entry.get('children', []):
            visit(child, seen)

    for group in PLAN_GROUPS:
        visit(group, set())
    return order


def _find_unit(files_dir):
    units = []
    for dirpath, _dirs, names in os.walk(files_dir):
        for name in sorted(names):
            units.append(os.path.join(dirpath, name))
    return sorted(units)


def host_snapshot(host, plan_dir, replacements):
    """What the gate compares of one host: its kind, refusal, key numbers, command, files (normalised)."""
    hdir = os.path.join(plan_dir, host)
    deployment = read_json(os.path.join(hdir, 'deployment.json')) or {}
    plan_json = read_json(os.path.join(hdir, 'plan.json')) or {}
    argv_json = read_json(os.path.join(hdir, 'sglang_argv.json')) or {}
    gateway_json = read_json(os.path.join(hdir, 'gateway.json')) or {}
    refusal = deployment.get('refusal', plan_json.get('error'))
    snap = {
        'kind': deployment.get('kind') or ('sglang_server' if plan_json else None),
        'refusal': refusal,
        'key_numbers': {},
        'command': argv_json.get('command') or gateway_json.get('command') or [],
        'environment': argv_json.get('environment') or {},
        'warnings': sorted(set(argv_json.get('warnings') or gateway_json.get('warnings') or [])),
        'files': {},
        'settings': {},
    }
    plan = plan_json.get('plan') or {}
    for key, _label in KEY_NUMBERS:
        if key in plan:
            snap['key_numbers'][key] = plan[key]
    for row in plan.get('max_context_at_concurrency') or []:
        snap['key_numbers']['max_context_at_%s' % row.get('concurrency')] = row.get('max_context_tokens')
    roofline = plan.get('decode_roofline_tok_s') or {}
    for key in ('mtp', 'no_mtp'):
        if key in roofline:
            snap['key_numbers']['decode_tok_s_' + key] = roofline[key]
    model = deployment.get('model') or {}
    for key in ('path', 'revision', 'served_model_name'):
        if model.get(key) is not None:
            snap['key_numbers']['model_' + key] = model[key]
    if deployment.get('unit'):
        snap['key_numbers']['unit'] = deployment['unit']
    gpus = deployment.get('gpus') or {}
    if isinstance(gpus, dict) and gpus.get('indices') is not None:
        snap['key_numbers']['gpu_indices'] = gpus['indices']
    for key in ('nvidia_addresses', 'vfio_addresses'):
        if key in deployment:
            snap['key_numbers'][key] = deployment[key]
    if gateway_json:
        snap['key_numbers']['gateway_workers'] = gateway_json.get('workers') or []
    for key, item in sorted((deployment.get('settings') or {}).items()):
        if isinstance(item, dict):
            snap['settings'][key] = {'value': item.get('value'), 'source': item.get('source')}
    files_dir = os.path.join(hdir, 'files')
    for path in _find_unit(files_dir):
        snap['files'][os.path.relpath(path, hdir)] = file_lines(path, replacements)
    for name in ('lxc_gpu.conf', 'gpu_partition.txt'):
        path = os.path.join(hdir, name)
        if os.path.isfile(path):
            snap['files'][name] = file_lines(path, replacements)
    return normalise(snap, replacements)


def monitoring_snapshot(plan_dir, replacements):
    """build/plan/monitoring: the scrape config and rules as lines, anything else (the dashboard) by digest."""
    mdir = os.path.join(plan_dir, 'monitoring')
    out = {}
    for path in _find_unit(mdir):
        rel = os.path.relpath(path, mdir)
        if rel.endswith(('.yml', '.yaml')):
            out[rel] = file_lines(path, replacements)
        else:
            with open(path, encoding='utf-8') as handle:
                out[rel] = digest_text(normalise(handle.read(), replacements))
    return out


def build_snapshot(repo_root, inventory, inventory_listing, plan_dir, replacements=None):
    """The snapshot of a rendered plan (plan_dir) of an inventory (inventory_listing: `ansible-inventory --list`)."""
    inventory_dir = os.path.abspath(inventory if os.path.isdir(inventory) else os.path.dirname(inventory) or '.')
    replacements = replacements or volatile_replacements(repo_root, out_dir=plan_dir, inventory_dir=inventory_dir)
    hosts = host_order(inventory_listing)
    hostvars = (inventory_listing.get('_meta') or {}).get('hostvars') or {}
    snap = {
        'schema': SCHEMA,
        'about': 'The approved plan of this inventory: make plan-accept writes it, make plan-check compares '
                 'make plan with it (docs/ci.md). Do not edit by hand.',
        'inventory': os.path.relpath(os.path.abspath(inventory), repo_root),
        'inputs': {'hosts': {}, 'profiles': {}, 'files': {}},
        'hosts': {},
        'monitoring': monitoring_snapshot(plan_dir, replacements),
    }
    galaxy = os.path.join(repo_root, 'galaxy.yml')
    if os.path.isfile(galaxy):
        with open(galaxy, encoding='utf-8') as handle:
            snap['inputs']['collection_version'] = (yaml.safe_load(handle) or {}).get('version')
    snap['inputs']['profiles']['profiles/sglang.yml'] = profile_inputs(repo_root, 'profiles/sglang.yml')
    snap['inputs']['files']['profiles/sglang_releases.yml'] = file_digest(repo_root, 'profiles/sglang_releases.yml')
    for host in hosts:
        hsnap = host_snapshot(host, plan_dir, replacements)
        snap['hosts'][host] = hsnap
        snap['inputs']['hosts'][host] = inventory_inputs(hostvars.get(host) or {})
        deployment = read_json(os.path.join(plan_dir, host, 'deployment.json')) or {}
        used = []
        profiles = deployment.get('profiles') or {}
        if profiles.get('model'):
            used.append('profiles/models/%s.yml' % profiles['model'])
        gpu = profiles.get('gpu') or deployment.get('gpu_profile')
        if gpu:
            used.append('profiles/hardware/%s.yml' % gpu)
        if hsnap['kind'] == 'sglang_gateway':
            used.append('profiles/sglang_gateway.yml')
        hsnap['profiles'] = used
        for rel in used:
            if rel not in snap['inputs']['profiles']:
                snap['inputs']['profiles'][rel] = profile_inputs(repo_root, rel)
    lock = os.path.join(os.path.abspath(inventory) if os.path.isdir(inventory) else os.path.dirname(inventory),
                        'llmops-lock.yml')
    if os.path.isfile(lock):
        snap['inputs']['profiles'][os.path.relpath(lock, repo_root)] = profile_inputs(repo_root, lock)
    return normalise(snap, replacements)


# ---------------------------------------------------------------------------------------------------------------------
# Comparison


def _dict_changes(old, new):
    """[(key, old, new)] of two flat dicts, sorted by key; a missing key is reported as <absent>."""
    out = []
    for key in sorted(set(old) | set(new), key=str):
        a, b = old.get(key, '<absent>'), new.get(key, '<absent>')
        if a != b:
            out.append((key, a, b))
    return out


def _change_text(a, b):
    return '%s -> %s' % ('<absent>' if a == '<absent>' else fmt(a), '<absent>' if b == '<absent>' else fmt(b))


def input_changes(old, new):
    """{host or '*': ['llmops_x 1 -> 2', ...]} of the recorded inputs (profiles charged to the hosts using them)."""
    old_in, new_in = old.get('inputs') or {}, new.get('inputs') or {}
    out = {}
    hosts = list(new_in.get('hosts') or {}) + [h for h in (old_in.get('hosts') or {}) if h not in (new_in.get('hosts') or {})]
    for host in hosts:
        a = flatten((old_in.get('hosts') or {}).get(host) or {})
        b = flatten((new_in.get('hosts') or {}).get(host) or {})
        settings = ((new.get('hosts') or {}).get(host) or {}).get('settings') or {}
        old_settings = ((old.get('hosts') or {}).get(host) or {}).get('settings') or {}
        for key, va, vb in _dict_changes(a, b):
            line = '%s %s' % (key, _change_text(va, vb))
            short = key[len('llmops_'):] if key.startswith('llmops_') else None
            sa, sb = old_settings.get(short), settings.get(short)
            if sa and sb and (sa != sb):
                line += ' (resolved: %s from %s -> %s from %s)' % (
                    fmt(sa.get('value')), sa.get('source'), fmt(sb.get('value')), sb.get('source'))
            out.setdefault(host, []).append(line)
    shared = []
    if old_in.get('collection_version') != new_in.get('collection_version'):
        shared.append('collection version (galaxy.yml) %s' % _change_text(
            old_in.get('collection_version'), new_in.get('collection_version')))
    for rel, va, vb in _dict_changes(old_in.get('files') or {}, new_in.get('files') or {}):
        shared.append('%s changed (%s)' % (rel, 'added' if va == '<absent>' else 'removed' if vb == '<absent>' else 'content'))
    old_prof, new_prof = old_in.get('profiles') or {}, new_in.get('profiles') or {}
    users = {}
    for host, hsnap in list((old.get('hosts') or {}).items()) + list((new.get('hosts') or {}).items()):
        for rel in hsnap.get('profiles') or []:
            users.setdefault(rel, [])
            if host not in users[rel]:
                users[rel].append(host)
    for rel in sorted(set(old_prof) | set(new_prof)):
        a, b = old_prof.get(rel), new_prof.get(rel)
        if a == b:
            continue
        if a is None or b is None:
            lines = ['%s %s' % (rel, 'added' if a is None else 'removed')]
        else:
            lines = ['%s: %s %s' % (rel, key, _change_text(va, vb)) for key, va, vb in _dict_changes(a, b)]
        for host in users.get(rel) or ['*']:
            out.setdefault(host, []).extend(lines)
    if shared:
        out.setdefault('*', []).extend(shared)
    return out


def _argv_pairs(command):
    """[(flag, value)] of a command line: the program and its positional words first, then --flag [value]."""
    pairs, i = [], 0
    head = []
    while i < len(command) and not str(command[i]).startswith('--'):
        head.append(command[i])
        i += 1
    if head:
        pairs.append(('program', ' '.join(head)))
    while i < len(command):
        flag = command[i]
        values = []
        i += 1
        while i < len(command) and not str(command[i]).startswith('--'):
            values.append(command[i])
            i += 1
        pairs.append((flag, ' '.join(values) if values else None))
    return pairs


def argv_changes(old, new):
    """['--context-length 262144 -> 131072', '+ --enable-foo', '- --disable-bar x'] of two command lines."""
    a, b = _argv_pairs(old or []), _argv_pairs(new or [])
    da, db = {}, {}
    for flag, value in a:
        da.setdefault(flag, []).append(value)
    for flag, value in b:
        db.setdefault(flag, []).append(value)
    out = []

    def show(vals):
        return ' '.join('' if v is None else v for v in vals).strip()

    for flag in [pair[0] for pair in b] + [pair[0] for pair in a if pair[0] not in db]:
        if flag in (done[0] for done in out):
            continue
        va, vb = da.get(flag), db.get(flag)
        if va == vb:
            continue
        if va is None:
            out.append((flag, '+ %s %s' % (flag, show(vb))))
        elif vb is None:
            out.append((flag, '- %s %s' % (flag, show(va))))
        else:
            out.append((flag, '%s %s -> %s' % (flag, show(va) or '(no value)', show(vb) or '(no value)')))
    if not out and list(old or []) != list(new or []):
        out.append(('order', 'the same flags in another order'))
    return [item[1].rstrip() for item in out]


def line_changes(old, new, limit=12, width=200):
    """'-'/'+' lines of two texts (as line lists), at most `limit`, each cut at `width` characters."""
    out = []
    for line in difflib.unified_diff(old or [], new or [], lineterm='', n=0):
        if line.startswith(('---', '+++', '@@')):
            continue
        out.append(line if len(line) <= width else line[:width - 3] + '...')
    if len(out) > limit:
        out = out[:limit] + ['... %d more changed lines' % (len(out) - limit)]
    return out


def host_changes(old, new):
    """['KV tokens 684,739 -> 512,000', 'argv: --context-length ...', ...] of one host's two snapshots."""
    old, new = old or {}, new or {}
    out = []
    if old.get('kind') != new.get('kind'):
        out.append('kind %s' % _change_text(old.get('kind', '<absent>'), new.get('kind', '<absent>')))
    if old.get('refusal') != new.get('refusal'):
        if new.get('refusal'):
            out.append('now REFUSED: %s' % new['refusal'].splitlines()[0])
        else:
            out.append('no longer refused (was: %s)' % str(old.get('refusal')).splitlines()[0])
    labels = dict(KEY_NUMBERS)
    ka, kb = old.get('key_numbers') or {}, new.get('key_numbers') or {}
    order = [item[0] for item in KEY_NUMBERS] + sorted((set(ka) | set(kb)) - set(labels))
    for key in order:
        a, b = ka.get(key, '<absent>'), kb.get(key, '<absent>')
        if a == b:
            continue
        label = labels.get(key) or key.replace('_', ' ')
        if key.startswith('max_context_at_'):
            label = 'max context at %s concurrent requests' % key[len('max_context_at_'):]
        elif key.startswith('decode_tok_s_'):
            label = 'decode roofline tok/s (%s)' % key[len('decode_tok_s_'):].replace('_', ' ')
        out.append('%s %s' % (label, _change_text(a, b)))
    for text in argv_changes(old.get('command'), new.get('command')):
        out.append('argv: %s' % text)
    for key, a, b in _dict_changes(old.get('environment') or {}, new.get('environment') or {}):
        out.append('environment: %s %s' % (key, _change_text(a, b)))
    fa, fb = old.get('files') or {}, new.get('files') or {}
    argv_changed = any(line.startswith('argv: ') for line in out)
    for name in sorted(set(fa) | set(fb)):
        if name not in fa:
            out.append('%s: new file (%d lines)' % (name, len(fb[name])))
            continue
        if name not in fb:
            out.append('%s: no longer written' % name)
            continue
        lines = line_changes(fa[name], fb[name])
        if lines and argv_changed and all(re.match(r'^[-+]ExecStart=', line) for line in lines):
            lines = ['ExecStart= follows the argv above']
        for line in lines:
            out.append('%s: %s' % (name, line))
    wa, wb = set(old.get('warnings') or []), set(new.get('warnings') or [])
    for w in sorted(wb - wa):
        out.append('new warning: %s' % w)
    for w in sorted(wa - wb):
        out.append('warning gone: %s' % w)
    return out


def compare(old, new):
    """The differences of two snapshots: {'inputs': {host: [...]}, 'hosts': {host: [...]}, 'monitoring': [...]}."""
    result = {'inputs': input_changes(old, new), 'hosts': {}, 'monitoring': []}
    oh, nh = old.get('hosts') or {}, new.get('hosts') or {}
    for host in list(nh) + [h for h in oh if h not in nh]:
        if host not in oh:
            lines = ['new host (%s)' % nh[host].get('kind')]
        elif host not in nh:
            lines = ['no longer in the inventory']
        else:
            lines = host_changes(oh[host], nh[host])
        if lines:
            result['hosts'][host] = lines
    om, nm = old.get('monitoring') or {}, new.get('monitoring') or {}
    for name in sorted(set(om) | set(nm)):
        a, b = om.get(name), nm.get(name)
        if a == b:
            continue
        if isinstance(a, list) and isinstance(b, list):
            result['monitoring'].extend('%s: %s' % (name, line) for line in line_changes(a, b))
        else:
            result['monitoring'].append('%s %s' % (name, 'added' if a is None else 'removed' if b is None else 'changed'))
    if old.get('schema') != new.get('schema'):
        result['monitoring'].insert(0, 'reference schema %s -> %s (re-approve)' % (old.get('schema'), new.get('schema')))
    return result


def has_changes(result):
    return bool(result['inputs'] or result['hosts'] or result['monitoring'])


def causes_for(host, result, limit=3):
    """The changed inputs a host's change is put down to: its own, else any host's, else none recorded."""
    inputs = result['inputs']
    own = list(inputs.get(host) or []) + list(inputs.get('*') or [])
    if not own:
        for other, lines in inputs.items():
            if other not in (host, '*'):
                own.extend('%s on %s' % (line, other) for line in lines)
    if not own:
        return None
    text = '; '.join(own[:limit])
    if len(own) > limit:
        text += '; and %d more input changes' % (len(own) - limit)
    return text


HEADLINE_ORDER = ('now REFUSED', 'no longer refused', 'KV tokens', 'max running requests', 'verdict')


def headline(host, lines, result):
    """One line for a host: its most telling change and what it is put down to."""
    first = None
    for prefix in HEADLINE_ORDER:
        first = next((line for line in lines if line.startswith(prefix + ' ') or line.startswith(prefix + ':')), None)
        if first:
            break
    first = first or lines[0]
    cause = causes_for(host, result)
    return '%s: %s %s' % (host, first, ('because ' + cause) if cause else
                          '(no recorded input changed: the collection itself changed, e.g. its planner)')


def report(result, reference, refusals=()):
    """The gate's text: refusals first, then the headline per host, the changed inputs, every changed output."""
    out = []
    if refusals:
        out.append('PLAN REFUSED: the deploy would refuse %s' % ', '.join(item[0] for item in refusals))
        for host, text in refusals:
            out.append(text if text.startswith(host + ':') else '%s: %s' % (host, text))
        refused = {item[0] for item in refusals}
        if result['inputs']:
            out.append('')
            out.append('Inputs changed against the approved plan %s:' % reference)
            for host, lines in result['inputs'].items():
                out.extend('  %s: %s' % ('all hosts' if host == '*' else host, line) for line in lines)
        others = [(h, lines) for h, lines in result['hosts'].items() if h not in refused]
        if others:
            out.append('')
            out.append('Other hosts changed:')
            out.extend('  ' + headline(h, lines, result) for h, lines in others)
        out.append('')
        out.append('A refused host has no plan to compare: fix the refusal, then run make plan-check again.')
        return '\n'.join(out)
    if not has_changes(result):
        if not refusals:
            out.append('plan unchanged: the plan is the approved one (%s)' % reference)
        return '\n'.join(out)
    out.append('PLAN CHANGED against the approved plan %s' % reference)
    for host, lines in result['hosts'].items():
        out.append('  ' + headline(host, lines, result))
    if result['monitoring'] and not result['hosts']:
        out.append('  monitoring: %s' % result['monitoring'][0])
    if result['inputs']:
        out.append('')
        out.append('Inputs changed:')
        for host, lines in result['inputs'].items():
            for line in lines:
                out.append('  %s: %s' % ('all hosts' if host == '*' else host, line))
    if not result['hosts'] and not result['monitoring']:
        out.append('  (the plan itself is the same; approving records the new inputs)')
    for host, lines in result['hosts'].items():
        out.append('')
        out.append('%s:' % host)
        out.extend('  ' + line for line in lines)
    if result['monitoring']:
        out.append('')
        out.append('monitoring (build/plan/monitoring):')
        out.extend('  ' + line for line in result['monitoring'])
    return '\n'.join(out)


# ---------------------------------------------------------------------------------------------------------------------
# Running the plan


def inventory_slug(inventory):
    """build/plan-check/<this>/ for an inventory: its directory's name (inventories/example -> example)."""
    base = inventory if os.path.isdir(inventory) else os.path.dirname(inventory) or '.'
    return re.sub(r'[^A-Za-z0-9._-]+', '_', os.path.basename(os.path.abspath(base))) or 'inventory'


def reference_path(inventory):
    base = inventory if os.path.isdir(inventory) else os.path.dirname(inventory) or '.'
    return os.path.join(base, REFERENCE_NAME)


def tool_env(repo_root):
    env = dict(os.environ)
    env.pop('SGLANG_API_KEY', None)
    env.setdefault('ANSIBLE_CONFIG', os.path.join(repo_root, 'ansible.cfg'))
    env.setdefault('ANSIBLE_COLLECTIONS_PATH', os.path.join(repo_root, '.collections'))
    env['ANSIBLE_NOCOLOR'] = '1'
    env['ANSIBLE_FORCE_COLOR'] = '0'
    bindir = os.path.dirname(sys.executable)
    env['PATH'] = bindir + os.pathsep + env.get('PATH', '')
    return env


def _tool(name):
    local = os.path.join(os.path.dirname(sys.executable), name)
    return local if os.path.exists(local) else name


def render(repo_root, inventory, out_dir):
    """Run ansible-inventory and playbooks/plan.yml into out_dir; (listing, plan rc, log path)."""
    env = tool_env(repo_root)
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    inv = subprocess.run([_tool('ansible-inventory'), '-i', inventory, '--list'], cwd=repo_root, env=env,
                         capture_output=True, text=True, check=False)
    if inv.returncode != 0:
        raise GateError('ansible-inventory -i %s --list failed (rc %d):\n%s'
                        % (inventory, inv.returncode, inv.stderr.strip()[-2000:]))
    listing = json.loads(inv.stdout)
    extra = ['-e', 'llmops_plan_output_dir=%s' % os.path.abspath(out_dir)]
    hostvars = (listing.get('_meta') or {}).get('hostvars') or {}
    if not any((hv or {}).get('llmops_record_dir') for hv in hostvars.values()):
        # The deploy's records (the free memory an earlier start logged) default to build/deploy of this checkout,
        # which is not committed: the gate plans from committed inputs only, as a fresh CI checkout does.
        extra += ['-e', 'llmops_record_dir=%s' % os.path.join(os.path.abspath(out_dir), '_no_records')]
    log = os.path.join(out_dir, 'plan.log')
    with open(log, 'w', encoding='utf-8') as handle:
        run = subprocess.run([_tool('ansible-playbook'), os.path.join(repo_root, 'playbooks', 'plan.yml'),
                              '-i', inventory] + extra,
                             cwd=repo_root, env=env, stdout=handle, stderr=subprocess.STDOUT, check=False)
    return listing, run.returncode, log


def refusals_of(snapshot):
    return [(host, h['refusal']) for host, h in snapshot['hosts'].items() if h.get('refusal')]


def _log_tail(log, lines=25):
    with open(log, encoding='utf-8', errors='replace') as handle:
        return ''.join(handle.readlines()[-lines:])


def snapshot_of_inventory(repo_root, inventory, out_dir):
    """Render the plan and reduce it to a snapshot; GateError when the playbook broke without a refusal."""
    listing, rc, log = render(repo_root, inventory, out_dir)
    snap = build_snapshot(repo_root, inventory, listing, out_dir)
    if rc != 0 and not refusals_of(snap):
        raise GateError('make plan failed (rc %d) before it wrote a plan; the end of %s:\n%s'
                        % (rc, os.path.relpath(log, repo_root), _log_tail(log)))
    if not snap['hosts']:
        raise GateError('the inventory %s has no host in %s' % (inventory, ', '.join(PLAN_GROUPS)))
    return snap


def write_json(path, data):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + '.tmp'
    with open(tmp, 'w', encoding='utf-8') as handle:
        json.dump(data, handle, indent=1, sort_keys=True, ensure_ascii=False)
        handle.write('\n')
    os.replace(tmp, path)


def summary_markdown(status, text, inventory, out_dir, repo_root):
    icon = {EXIT_OK: 'unchanged', EXIT_CHANGED: 'CHANGED (needs approval)', EXIT_REFUSED: 'REFUSED',
            EXIT_ERROR: 'ERROR'}[status]
    lines = ['## Plan gate: %s %s' % (inventory, icon), '', '```text', text.rstrip(), '```', '']
    reports = []
    for dirpath, _dirs, names in sorted(os.walk(out_dir)):
        if 'plan.md' in names:
            reports.append(os.path.relpath(os.path.join(dirpath, 'plan.md'), repo_root))
    if status == EXIT_CHANGED:
        lines += ['To approve: `make plan-accept INVENTORY=%s` and commit `%s`.'
                  % (inventory, reference_path(inventory)), '']
    if reports:
        lines += ['Plan reports (job artifacts): ' + ', '.join('`%s`' % r for r in sorted(reports)), '']
    return '\n'.join(lines)


def junit_xml(status, text, inventory, hosts):
    """One test case per host of the plan (GitLab shows failures in the merge request's test report)."""
    cases = []
    failed = 0
    for host, lines in hosts:
        if lines:
            failed += 1
            body = xml_escape('\n'.join(lines))
            cases.append('  <testcase classname="plan-gate.%s" name="%s"><failure message="%s">%s</failure>'
                         '</testcase>' % (xml_escape(inventory), xml_escape(host),
                                          xml_escape(lines[0], {'"': '&quot;'}), body))
        else:
            cases.append('  <testcase classname="plan-gate.%s" name="%s"/>' % (xml_escape(inventory), xml_escape(host)))
    if status == EXIT_ERROR:
        failed += 1
        cases.append('  <testcase classname="plan-gate.%s" name="gate"><error message="the gate could not run">%s'
                     '</error></testcase>' % (xml_escape(inventory), xml_escape(text)))
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="plan-gate" tests="%d" failures="%d">\n%s\n'
            '</testsuite>\n' % (len(cases), failed, '\n'.join(cases)))


def cmd_check(args):
    repo_root, inventory = args.root, args.inventory
    reference = args.reference or reference_path(inventory)
    out_dir = args.out
    status, text, per_host = EXIT_ERROR, '', []
    try:
        if not os.path.exists(os.path.join(repo_root, inventory)) and not os.path.exists(inventory):
            raise GateError('INVENTORY=%s: no such inventory; give a directory or file of inventories/' % inventory)
        new = snapshot_of_inventory(repo_root, inventory, out_dir)
        write_json(os.path.join(out_dir, 'plan-snapshot.json'), new)
        refusals = refusals_of(new)
        old = read_json(reference)
        if old is None:
            if refusals:
                status, text = EXIT_REFUSED, report({'inputs': {}, 'hosts': {}, 'monitoring': []}, reference, refusals)
            else:
                raise GateError('no approved plan at %s: review the plan.md files under build/plan-check/, then run '
                                'make plan-accept INVENTORY=%s and commit %s' % (reference, inventory, reference))
            per_host = [(h, ['REFUSED: ' + r]) for h, r in refusals]
        else:
            result = compare(old, new)
            text = report(result, reference, refusals)
            if refusals:
                status = EXIT_REFUSED
            elif has_changes(result):
                status = EXIT_CHANGED
                text += ('\n\nTo approve this change: make plan-accept INVENTORY=%s, then commit %s'
                         % (inventory, reference))
            else:
                status = EXIT_OK
            refused = dict(refusals)
            per_host = []
            for h in new['hosts']:
                lines = result['hosts'].get(h, [])
                if h in refused:
                    lines = ['REFUSED: ' + refused[h]]
                elif lines:
                    lines = [headline(h, lines, result).split(': ', 1)[1]] + lines
                per_host.append((h, lines))
    except GateError as err:
        status, text = EXIT_ERROR, 'PLAN GATE ERROR: %s' % err
    print(text)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, 'gate.txt'), 'w', encoding='utf-8') as handle:
        handle.write(text + '\n')
    summary = summary_markdown(status, text, inventory, out_dir, repo_root)
    with open(os.path.join(out_dir, 'summary.md'), 'w', encoding='utf-8') as handle:
        handle.write(summary)
    if args.summary:
        with open(args.summary, 'a', encoding='utf-8') as handle:
            handle.write(summary)
    for path in [os.path.join(out_dir, 'junit.xml')] + ([args.junit] if args.junit else []):
        with open(path, 'w', encoding='utf-8') as handle:
            handle.write(junit_xml(status, text, inventory, per_host))
    if args.annotate == 'github' and status != EXIT_OK:
        print(github_annotation(status, text, inventory))
    return status


def github_annotation(status, text, inventory):
    """A ::error:: workflow command: GitHub shows it on the run's summary page and in the pull request's checks."""
    title = {EXIT_CHANGED: 'plan changed', EXIT_REFUSED: 'plan refused', EXIT_ERROR: 'plan gate error'}[status]
    lines = text.split('\n')
    if status == EXIT_CHANGED:
        lines = [line.strip() for line in lines[1:] if line.startswith('  ') and not line.startswith('   ')]
        lines = lines[:lines.index('')] if '' in lines else lines
    body = '\n'.join(lines[:12]).replace('%', '%25').replace('\r', '%0D').replace('\n', '%0A')
    return '::error title=%s (%s)::%s' % (title, inventory.replace(',', '%2C').replace(':', '%3A'), body)


def cmd_accept(args):
    repo_root, inventory = args.root, args.inventory
    reference = args.reference or reference_path(inventory)
    try:
        new = snapshot_of_inventory(repo_root, inventory, args.out)
    except GateError as err:
        print('PLAN GATE ERROR: %s' % err)
        return EXIT_ERROR
    refusals = refusals_of(new)
    if refusals:
        print(report({'inputs': {}, 'hosts': {}, 'monitoring': []}, reference, refusals))
        print('\nnothing recorded: a plan the deploy refuses cannot be approved (%s is unchanged)' % reference)
        return EXIT_REFUSED
    old = read_json(reference)
    if old is not None:
        result = compare(old, new)
        if not has_changes(result):
            print('plan unchanged: %s already holds this plan' % reference)
            return EXIT_OK
        print(report(result, reference))
        print('')
    write_json(reference, new)
    print('approved: %s records the plan of %s (%d hosts); commit it' % (reference, inventory, len(new['hosts'])))
    return EXIT_OK


def cmd_diff(args):
    old, new = read_json(args.old), read_json(args.new)
    if old is None or new is None:
        print('PLAN GATE ERROR: %s not found' % (args.old if old is None else args.new))
        return EXIT_ERROR
    result = compare(old, new)
    refusals = refusals_of(new)
    print(report(result, args.old, refusals))
    return EXIT_REFUSED if refusals else EXIT_CHANGED if has_changes(result) else EXIT_OK


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--root', default=ROOT, help='the checkout (default: the one this script is in)')
    sub = parser.add_subparsers(dest='command', required=True)
    for name in ('check', 'accept'):
        p = sub.add_parser(name)
        p.add_argument('inventory')
        p.add_argument('--reference', help='the approved plan (default: <inventory dir>/%s)' % REFERENCE_NAME)
        p.add_argument('--out', default=None, help='where the plan is rendered (default: build/plan-check/<inventory directory name>)')
        if name == 'check':
            p.add_argument('--summary', help='append the Markdown summary here (e.g. $GITHUB_STEP_SUMMARY)')
            p.add_argument('--junit', help='also write the JUnit report (one test case per host) here')
            p.add_argument('--annotate', choices=['github'], help='print the failure as a GitHub ::error:: annotation')
    p = sub.add_parser('diff')
    p.add_argument('old')
    p.add_argument('new')
    args = parser.parse_args(argv)
    args.root = os.path.abspath(args.root)
    if args.command == 'diff':
        return cmd_diff(args)
    os.chdir(args.root)
    args.out = os.path.abspath(args.out or os.path.join(args.root, 'build', 'plan-check', inventory_slug(args.inventory)))
    if getattr(args, 'summary', None) == '':
        args.summary = None
    return cmd_check(args) if args.command == 'check' else cmd_accept(args)


if __name__ == '__main__':
    sys.exit(main())
