#!/usr/bin/env python
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The report of a gateway (smg) bump, from each release's own facts (issue #29 point 5).

  gateway_release.py argv VERSION FROM --out ARGV.json     the command lines the table entry renders
  gateway_release.py report OLD.json NEW.json [--out REPORT.md] [--draft ENTRY.yml] [--changes CHANGES.json]

OLD.json and NEW.json are tests/tools/gateway_facts.py run in each release's venv (`make gateway-release
VERSION=x.y.z [FROM=a.b.c]`, tests/tools/gateway-release.sh, builds the venvs and calls both). The report lists the
options added, removed and whose default changed, the --policy choices added and removed, whether every flag the
resolver renders (the entry's `flags`) and every reserved flag exists in the new release, and whether the new
release's parser takes the rendered command lines. The entry checked is the new release's in
profiles/sglang_gateway.yml, else the old one's (what the new release would inherit). Exit 1 while a rendered flag
is missing or a rendered command line is refused (the report is written either way), 2 on bad input.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLE = os.path.join(ROOT, 'profiles', 'sglang_gateway.yml')
UNVERIFIED = 'UNVERIFIED'


def table_entry(table, version, fallback=None):
    """(version whose entry it is, the entry) of ``version``, else of ``fallback``; (None, None) when neither."""
    releases = table.get('releases') or {}
    for name in (version, fallback):
        if name and name in releases:
            return name, releases[name]
    return None, None


def rendered_flags(entry):
    """[(key, option string)] of every flag the resolver renders (the `flag` and the `disable` of each)."""
    out = []
    for key, spec in sorted((entry.get('flags') or {}).items()):
        out += [(key, spec[k]) for k in ('flag', 'disable') if spec.get(k)]
    return out


def sample_argv(entry):
    """The command lines the entry renders: every value flag once with a value, then each off switch instead."""
    flags = entry.get('flags') or {}
    samples = dict(host='127.0.0.1', port='30080', worker_urls='http://127.0.0.1:30001', policy='cache_aware',
                   health_check_endpoint='/health', prometheus_host='127.0.0.1', log_level='info')
    argv = []
    for key, spec in sorted(flags.items()):
        value = samples.get(key, spec.get('default'))
        argv += [spec['flag'], str(value if value is not None else 1)]
    lines = [argv]
    for key, spec in sorted(flags.items()):
        if spec.get('disable'):
            i = argv.index(spec['flag'])
            lines.append(argv[:i] + [spec['disable']] + argv[i + 2:])
    return lines


def compare_options(old, new):
    both = sorted(set(old) & set(new))
    return dict(added=sorted(set(new) - set(old)), removed=sorted(set(old) - set(new)),
                defaults=[(n, old[n]['default'], new[n]['default']) for n in both if old[n]['default'] != new[n]['default']],
                choices=[(n, [c for c in new[n]['choices'] or [] if c not in (old[n]['choices'] or [])],
                          [c for c in old[n]['choices'] or [] if c not in (new[n]['choices'] or [])])
                         for n in both if (old[n]['choices'] or []) != (new[n]['choices'] or [])])


def check_entry(entry, facts):
    """Each rendered and reserved flag against the release's options; the table's defaults against the release's."""
    options = facts['options']
    rendered = []
    for key, flag in rendered_flags(entry):
        spec = entry['flags'][key]
        table_default = spec.get('default') if flag == spec['flag'] else None
        release_default = options[flag]['default'] if flag in options else None
        rendered.append(dict(key=key, flag=flag, present=flag in options, table_default=table_default,
                             release_default=release_default,
                             default_agrees=flag != spec['flag'] or 'default' not in spec or
                             (flag in options and options[flag]['default'] == spec['default'])))
    reserved = [dict(flag=f, present=f in options) for f in entry.get('reserved_flags') or []]
    policies = dict(table=list(entry.get('policies') or []), release=list(facts.get('policies') or []))
    return dict(rendered=rendered, reserved=reserved, policies=policies)


def blockers(report):
    out = ['rendered flag %s (%s) is not an option of smg %s' % (r['flag'], r['key'], report['new'])
           for r in report['entry']['rendered'] if not r['present']]
    out += ['smg %s refuses the rendered command line %s: %s' % (report['new'], ' '.join(p['argv']), p['error'])
            for p in report.get('parsed') or [] if not p['ok']]
    out += ['smg %s.launch_router has no %s (the role\'s smg-launch calls it)' % (report['new'], f)
            for f in report['launcher_missing']]
    return out


def compare(old, new, entry_version, entry):
    report = dict(old=old['version'], new=new['version'], entry_version=entry_version,
                  options=compare_options(old['options'], new['options']),
                  policies=dict(added=[p for p in new['policies'] if p not in old['policies']],
                                removed=[p for p in old['policies'] if p not in new['policies']]),
                  entry=check_entry(entry, new), parsed=new.get('parsed'),
                  launcher_missing=[f for f in ('parse_router_args', 'launch_router')
                                    if f not in new['launcher']['functions']])
    report['blockers'] = blockers(report)
    return report


def draft_entry(report, entry, facts):
    """The table entry of the new release: what its facts confirm, the rest copied and marked UNVERIFIED."""
    options = facts['options']
    flags = {}
    for key, spec in sorted((entry.get('flags') or {}).items()):
        spec = dict(spec)
        if spec['flag'] not in options:
            spec['flag'] = '%s %s: not an option of smg %s' % (UNVERIFIED, spec['flag'], facts['version'])
        elif 'default' in spec or options[spec['flag']]['default'] not in (None, []):
            spec['default'] = options[spec['flag']]['default']
        flags[key] = spec
    return {facts['version']: dict(
        lock='locks/smg-%s.txt' % facts['version'], policies=list(facts['policies']), flags=flags,
        reserved_flags=[f for f in entry.get('reserved_flags') or [] if f in options],
        api=dict(copy.deepcopy(entry.get('api') or {}), note='%s: the HTTP API is the Rust binary\'s; measure it '
                 '(tests/integration/targets/sglang_gateway) before trusting it' % UNVERIFIED),
        worker_inflight=copy.deepcopy(entry.get('worker_inflight') or {}))}


def _list(items):
    return ', '.join('`%s`' % i for i in items) if items else 'none'


def markdown(report):
    o, e = report['options'], report['entry']
    lines = ['# smg %s -> %s' % (report['old'], report['new']), '',
             'Written by `make gateway-release VERSION=%s FROM=%s` (tests/tools/gateway_release.py) from both '
             'releases\' own parsers (smg/router_args.py, walked by tests/tools/gateway_facts.py). The table entry '
             'checked is smg %s\'s of profiles/sglang_gateway.yml.' % (report['new'], report['old'],
                                                                       report['entry_version']), '',
             '## What blocks the move', '']
    lines += ['- %s' % b for b in report['blockers']] or ['Nothing: every rendered flag exists, the new parser takes '
                                                          'every rendered command line.']
    lines += ['', '## Flags the resolver renders', '', '| key | flag | in %s | table default | %s default |'
              % (report['new'], report['new']), '|---|---|---|---|---|']
    lines += ['| %s | `%s` | %s | %s | %s%s |' % (r['key'], r['flag'], 'yes' if r['present'] else '**no**',
                                                  r['table_default'], r['release_default'],
                                                  '' if r['default_agrees'] else ' (differs)') for r in e['rendered']]
    lines += ['', '## Reserved flags (refused in llmops_gateway_extra_args)', '',
              'Present: %s.' % _list([r['flag'] for r in e['reserved'] if r['present']]),
              'Missing from %s: %s.' % (report['new'], _list([r['flag'] for r in e['reserved'] if not r['present']])),
              '', '## Options', '', '- added (%d): %s' % (len(o['added']), _list(o['added'])),
              '- removed (%d): %s' % (len(o['removed']), _list(o['removed'])), '- default changed:']
    lines += ['  - `%s`: %r -> %r' % d for d in o['defaults']] or ['  none']
    lines += ['- choices changed:']
    lines += ['  - `%s`: added %s; removed %s' % (n, _list(a), _list(r)) for n, a, r in o['choices']] or ['  none']
    policies = report['policies']
    said = 'Added: %s. Removed: %s.' % (_list(policies['added']), _list(policies['removed']))
    lines += ['', '## --policy choices', '', said]
    lines += ['', '## Rendered command lines parsed by smg %s' % report['new'], '']
    lines += ['- %s: `%s`' % ('ok' if p['ok'] else 'REFUSED (%s)' % p['error'], ' '.join(p['argv']))
              for p in report.get('parsed') or []] or ['not parsed']
    return '\n'.join(lines) + '\n'


def changes(report):
    o = report['options']
    return dict(package='smg', old=report['old'], new=report['new'], added=o['added'], removed=o['removed'],
                defaults=[dict(flag=n, old=a, new=b) for n, a, b in o['defaults']],
                choices=[dict(flag=n, added=a, removed=r) for n, a, r in o['choices']],
                policies=report['policies'], blockers=report['blockers'],
                reserved_missing=[r['flag'] for r in report['entry']['reserved'] if not r['present']])


def _read(path):
    with open(path) as stream:
        return json.load(stream)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    sub = parser.add_subparsers(dest='action', required=True)
    arg = sub.add_parser('argv')
    arg.add_argument('version')
    arg.add_argument('old')
    arg.add_argument('--out', required=True)
    rep = sub.add_parser('report')
    rep.add_argument('old')
    rep.add_argument('new')
    rep.add_argument('--out')
    rep.add_argument('--draft')
    rep.add_argument('--changes')
    rep.add_argument('--table', default=TABLE)
    args = parser.parse_args(argv)
    with open(getattr(args, 'table', TABLE)) as stream:
        table = yaml.safe_load(stream)
    if args.action == 'argv':
        dummy, entry = table_entry(table, args.version, args.old)
        if entry is None:
            sys.stderr.write('gateway_release.py: neither %s nor %s has an entry under releases: of %s\n'
                             % (args.version, args.old, TABLE))
            return 2
        with open(args.out, 'w') as stream:
            json.dump(sample_argv(entry), stream, indent=1)
        return 0
    old, new = _read(args.old), _read(args.new)
    entry_version, entry = table_entry(table, new['version'], old['version'])
    if entry is None:
        sys.stderr.write('gateway_release.py: neither %s nor %s has an entry under releases: of %s\n'
                         % (new['version'], old['version'], args.table))
        return 2
    report = compare(old, new, entry_version, entry)
    text = markdown(report)
    if args.out:
        with open(args.out, 'w') as stream:
            stream.write(text)
    else:
        sys.stdout.write(text)
    if args.draft:
        with open(args.draft, 'w') as stream:
            yaml.safe_dump(draft_entry(report, entry, new), stream, sort_keys=False, width=118)
    if args.changes:
        with open(args.changes, 'w') as stream:
            json.dump(changes(report), stream, indent=1, sort_keys=True)
            stream.write('\n')
    for line in report['blockers']:
        sys.stderr.write('BLOCKS: %s\n' % line)
    return 1 if report['blockers'] else 0


if __name__ == '__main__':
    sys.exit(main())
