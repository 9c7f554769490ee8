#!/usr/bin/env python
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The report of an SGLang bump: what changed between two releases, from each release's own facts (issue #29).

  sglang_release.py report OLD.json NEW.json [--out REPORT.md]

OLD.json and NEW.json are tests/sglang/release_facts.py run in each release's lab venv (`make sglang-release
VERSION=x.y.z [FROM=a.b.c]` builds the venvs, writes both and calls this). The report lists server arguments added,
removed, renamed (the old name an alias of the new one, or the same dest under a new name) and newly deprecated,
changed defaults and choices, the command lines the collection renders as the new release's parser takes them, the
memory defaults of the fixed cases, the metric families, and every log text and pre-check wording the collection
matches. It ends with what blocks the bump: a rendered command line the new release refuses, a metric the release
table reads (the alert rules and the dashboard are generated from it) that the new
release's collectors do not expose, or a text the collection matches that the new release cannot print. Exit 1 while
anything blocks (the report is written either way), 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

from collection_paths import PIN, release_table_data

from ansible_collections.llmops.inference.plugins.module_utils.sglang import release as sglang_release  # noqa: E402

# The choice sets the collection renders values from (parsers, backends, dtypes, quantization, mamba strategy).
WATCHED = ('--reasoning-parser', '--tool-call-parser', '--attention-backend', '--quantization', '--kv-cache-dtype',
           '--mamba-ssm-dtype', '--moe-runner-backend', '--mamba-radix-cache-strategy', '--mamba-scheduler-strategy',
           '--speculative-algorithm')


def used_metrics(release_entry):
    """The metric names the collection reads (the release table's families: rules, dashboard, benchmark, stand-in)."""
    families = ((release_entry or {}).get('metrics') or {}).get('families') or {}
    return dict((key, family['name']) for key, family in families.items())


def _names(args):
    """Every option string of a server_args fact -> its long name."""
    out = {}
    for name, fact in args.items():
        out[name] = name
        for alias in fact.get('aliases') or []:
            out[alias] = name
    return out


def compare_args(old, new):
    new_names = _names(new)
    by_dest = dict((fact['dest'], name) for name, fact in new.items())
    removed, renamed, aliased = [], [], []
    for name, fact in sorted(old.items()):
        if name in new:
            continue
        if name in new_names:
            aliased.append((name, new_names[name]))
        elif fact['dest'] in by_dest and by_dest[fact['dest']] not in old:
            renamed.append((name, by_dest[fact['dest']]))
        else:
            removed.append(name)
    taken = set(pair[1] for pair in renamed + aliased)
    added = sorted(n for n in new if n not in old and n not in taken and not set(new[n]['aliases']) & set(old))
    both = sorted(set(old) & set(new))
    defaults = [(n, old[n]['default'], new[n]['default']) for n in both if old[n]['default'] != new[n]['default']]
    deprecated = [n for n in both if new[n]['deprecated'] and not old[n]['deprecated']]
    choices = []
    for name in both:
        was, now = old[name]['choices'] or [], new[name]['choices'] or []
        if was != now:
            choices.append((name, [c for c in now if c not in was], [c for c in was if c not in now]))
    return dict(added=added, removed=removed, renamed=renamed, aliased=aliased, defaults=defaults,
                deprecated=deprecated, choices=choices)


def compare_memory(old, new):
    rows = []
    for case in sorted(set(old) | set(new)):
        if case == 'error':
            continue
        was, now = old.get(case) or {}, new.get(case) or {}
        for key in sorted(set(was) | set(now)):
            rows.append((case, key, was.get(key), now.get(key)))
    return rows


def compare_metrics(old, new, used):
    was, now = old.get('families') or {}, new.get('families') or {}
    missing = sorted('%s (%s)' % (name, key) for key, name in used.items() if name not in now)
    return dict(added=sorted(set(now) - set(was)), removed=sorted(set(was) - set(now)),
                retyped=sorted((n, was[n], now[n]) for n in set(was) & set(now) if was[n] != now[n]),
                missing_used=missing, error=new.get('error') or old.get('error'))


def compare_texts(old, new):
    was, now = old.get('results') or {}, new.get('results') or {}
    failing = sorted((label, now[label][1]) for label in now if now[label][0] == 'FAIL')
    lost = sorted(item[0] for item in failing if (was.get(item[0]) or ['?'])[0] == 'PASS')
    return dict(failing=failing, lost=lost, checked=len(now), entry=new.get('entry'), error=new.get('error'))


def compare_rendered(old, new):
    """The command lines the collection renders, parsed by the new release: the refused ones and the flags that
    were rendered for the old release and are no option of the new one."""
    lines = new.get('lines') or {}
    refused = sorted((name, line['error']) for name, line in lines.items() if not line['ok'])
    flags = set(f for line in lines.values() for f in line['flags'])
    old_flags = set(f for line in (old.get('lines') or {}).values() for f in line['flags'])
    return dict(entry=new.get('entry'), checked=len(lines), refused=refused, flags=sorted(flags),
                dropped=sorted(old_flags - flags), error=new.get('error'))


def compare(old, new, used):
    """Every section of the report and what blocks the bump."""
    args = compare_args(old['server_args'], new['server_args'])
    metrics = compare_metrics(old.get('metrics') or {}, new.get('metrics') or {}, used)
    texts = compare_texts(old.get('texts') or {}, new.get('texts') or {})
    rendered = compare_rendered(old.get('rendered') or {}, new.get('rendered') or {})
    blockers = ['%s refuses the command line the collection renders for %s: %s' % (new['version'], name, error)
                for name, error in rendered['refused']]
    blockers += ['the release table reads the metric %s, which %s does not expose' % (m, new['version'])
                 for m in metrics['missing_used']]
    blockers += ['%s cannot print the text the collection matches: %s (%s)' % (new['version'], label, detail)
                 for label, detail in texts['failing']]
    for section, err in (('metrics', metrics['error']), ('texts', texts['error']), ('rendered', rendered['error'])):
        if err:
            blockers.append('%s could not be read: %s' % (section, err))
    return dict(old=old['version'], new=new['version'], args=args, metrics=metrics, texts=texts, rendered=rendered,
                memory=compare_memory(old.get('memory') or {}, new.get('memory') or {}),
                memory_error=(new.get('memory') or {}).get('error'), blockers=blockers)


def _list(items, empty='none'):
    return ', '.join('`%s`' % i for i in items) if items else empty


def _args_lines(args, watched):
    lines = ['## Server arguments', '',
             '| change | arguments |', '|---|---|',
             '| added | %s |' % _list(args['added']),
             '| removed | %s |' % _list(args['removed']),
             '| renamed | %s |' % (', '.join('`%s` -> `%s`' % p for p in args['renamed']) or 'none'),
             '| kept as an alias | %s |' % (', '.join('`%s` of `%s`' % p for p in args['aliased']) or 'none'),
             '| newly deprecated | %s |' % _list(args['deprecated']), '']
    if args['defaults']:
        lines += ['Changed defaults:', '', '| argument | %s | %s |' % ('old', 'new'), '|---|---|---|']
        lines += ['| `%s` | `%s` | `%s` |' % (n, json.dumps(a), json.dumps(b)) for n, a, b in args['defaults']]
        lines.append('')
    if args['choices']:
        hit = ', '.join('`%s`' % w for w in watched if any(w == c[0] for c in args['choices'])) or 'none'
        lines += ['Changed choices (%s watched: the collection renders values from them):' % hit, '',
                  '| argument | added | removed |', '|---|---|---|']
        lines += ['| `%s`%s | %s | %s |' % (n, ' (watched)' if n in watched else '', _list(a), _list(r))
                  for n, a, r in args['choices']]
        lines.append('')
    return lines


def _memory_lines(report):
    lines = ['## Memory defaults (SGLang\'s own resolution, tests/oracle/sglang_oracle.py)', '']
    if report['memory_error']:
        return lines + ['Not read: %s' % report['memory_error'], '']
    lines += ['| case | value | %s | %s | |' % (report['old'], report['new']), '|---|---|---|---|---|']
    for case, key, was, now in report['memory']:
        lines.append('| %s | %s | %s | %s | %s |' % (case, key, was, now, 'changed' if was != now else ''))
    return lines + ['']


def markdown(report):
    metrics, texts = report['metrics'], report['texts']
    lines = ['# SGLang %s -> %s' % (report['old'], report['new']), '',
             'Generated by `make sglang-release VERSION=%s FROM=%s` (tests/tools/sglang_release.py) from each '
             'release\'s own parser, resolution, collectors and source; do not edit.' % (report['new'], report['old']),
             '',
             '**%s**' % ('BLOCKED: %d finding(s) below must be fixed before the pin moves' % len(report['blockers'])
                         if report['blockers'] else 'Nothing blocks the bump'), '']
    lines += _args_lines(report['args'], WATCHED)
    rendered = report['rendered']
    lines += ['## Command lines the collection renders', '',
              '%d rendered with the rules of %s and parsed by %s\'s own parser: %d refused. Flags rendered: %s.'
              % (rendered['checked'], rendered['entry'], report['new'], len(rendered['refused']),
                 _list(rendered['flags'])), '']
    if rendered['dropped']:
        lines += ['Rendered for %s, not for %s: %s.' % (report['old'], report['new'], _list(rendered['dropped'])), '']
    deprecated = sorted(set(report['args']['deprecated']) & set(rendered['flags']))
    if deprecated:
        lines += ['**Rendered by the collection and newly deprecated in %s** (accepted today; find what replaces '
                  'it before a release removes it): %s.' % (report['new'], _list(deprecated)), '']
    lines += _memory_lines(report)
    lines += ['## Metrics', '', '| change | families |', '|---|---|',
              '| added | %s |' % _list(metrics['added']), '| removed | %s |' % _list(metrics['removed']),
              '| type changed | %s |' % (', '.join('`%s` %s -> %s' % t for t in metrics['retyped']) or 'none'),
              '| read by the collection, missing | %s |' % _list(metrics['missing_used']), '']
    lines += ['## Log texts and pre-check wording', '',
              '%d checked against %s (release table entry: %s); %d the new release cannot print, %d of them printed '
              'by %s.' % (texts['checked'], report['new'], texts['entry'], len(texts['failing']), len(texts['lost']),
                          report['old']), '']
    lines += ['## What blocks the bump', '']
    lines += ['- %s' % b for b in report['blockers']] or ['Nothing.']
    return '\n'.join(lines) + '\n'


def _flow(items, column):
    """A YAML flow list's items wrapped at 118 columns, continuation lines starting at ``column``."""
    lines, line = [], ''
    for item in items:
        word = json.dumps(item) if not re.match(r'^[A-Za-z_][A-Za-z0-9_.-]*$', item) else item
        if line and column + len(line) + len(word) + 3 > 118:
            lines.append(line + ',')
            line = word
        else:
            line = '%s, %s' % (line, word) if line else word
    lines.append(line)
    return ('\n' + ' ' * column).join(lines)


def changes(report):
    """The server-argument changes of a report as data: what the sglang_server role names when a host moves from
    ``from`` to ``to`` (the flags of its own command line among them)."""
    args = report['args']
    return dict(generated_by='make sglang-release VERSION=%s FROM=%s (never edit by hand)' % (report['new'], report['old']),
                from_version=report['old'], to_version=report['new'], removed=args['removed'],
                renamed=dict(args['renamed']), deprecated=args['deprecated'],
                defaults=dict((name, dict(old=old, new=new)) for name, old, new in args['defaults']),
                choices=dict((name, dict(added=added, removed=gone)) for name, added, gone in args['choices']),
                blockers=report['blockers'])


def draft_entry(new, pin_entry, known):
    """The release-table entry drafted from the new release's own facts, as YAML text: its parser's choices, its model
    registry, the pin's metric families and host programs it has (the rest marked UNVERIFIED), and the rules no fact
    here can confirm (planner, flags, defaults) carried from the table or the pin, marked so."""
    version = new['version']
    own = known.get(version) or {}
    out = ['  "%s":' % version,
           '    # DRAFT by make sglang-release from %s\'s own facts; every UNVERIFIED line needs reading in its wheel.'
           % version,
           '    source: wheel ...  # UNVERIFIED: name the files read']
    for key in ('planner', 'flags', 'defaults', 'install_overrides'):
        if key in own:
            out.append('    # %s: kept from the table\'s entry of %s' % (key, version))
        elif key in pin_entry:
            out.append('    # %s: UNVERIFIED, the pin\'s (%s) until that release\'s code is read' % (key, PIN))
    programs = new.get('host_programs') or {}
    kept = [name for name, found in sorted(programs.items()) if found]
    lost = [name for name, found in sorted(programs.items()) if not found]
    if kept:
        out.append('    # host_programs: the pin\'s %s (its message is in this release\'s source)' % ', '.join(kept))
    for name in lost:
        out.append('    # host_programs: %s UNVERIFIED (the pin\'s message is not in this release\'s source)' % name)
    families = (new.get('metrics') or {}).get('families') or {}
    used = ((pin_entry.get('metrics') or {}).get('families')) or {}
    missing = sorted(k for k, f in used.items() if families.get(f['name']) != f['type'])
    out.append('    metrics:')
    out.append('      source: ...  # UNVERIFIED: the collectors read')
    out.append('      <<: *metrics_sglang%s' % (
        '  # UNVERIFIED: %s not exposed with that name and type' % ', '.join(missing) if missing else
        '  # every family the pin reads is exposed with the same name and type'))
    out.append('    choices:')
    args = dict((fact['dest'], fact) for fact in new['server_args'].values())
    for dest in sglang_release.CHOICE_OPTIONS:
        if (args.get(dest) or {}).get('choices'):
            out.append('      %s: [%s]' % (dest, _flow(args[dest]['choices'], len(dest) + 9)))
    registry = new.get('registry') or []
    if registry:
        out.append('    # under architectures.served:')
        out.append('    "%s": [%s]' % (version, _flow(registry, len(version) + 7)))
    return '\n'.join(out) + '\n'


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    sub = parser.add_subparsers(dest='command', required=True)
    rep = sub.add_parser('report')
    rep.add_argument('old')
    rep.add_argument('new')
    rep.add_argument('--out')
    rep.add_argument('--draft', help='write the drafted release-table entry here')
    rep.add_argument('--changes', help='write the server-argument changes as JSON here (the sglang_server role '
                                       'reads them to say what a move between the two releases changes)')
    args = parser.parse_args(argv)
    try:
        with open(args.old, encoding='utf-8') as handle:
            old = json.load(handle)
        with open(args.new, encoding='utf-8') as handle:
            new = json.load(handle)
    except (OSError, ValueError) as exc:
        print('sglang_release: %s' % exc, file=sys.stderr)
        return 2
    # The metrics the collection reads for the new release: its entry's where read, else the pin's (the rules and the
    # dashboard are generated from the entry of the release a deployment runs).
    releases = release_table_data()['releases']
    entry = releases.get(new['version']) if 'metrics' in (releases.get(new['version']) or {}) else releases.get(PIN)
    report = compare(old, new, used_metrics(entry))
    text = markdown(report)
    if args.changes:
        with open(args.changes, 'w', encoding='utf-8') as handle:
            handle.write(json.dumps(changes(report), indent=1, sort_keys=True) + '\n')
    if args.draft:
        with open(args.draft, 'w', encoding='utf-8') as handle:
            handle.write(draft_entry(new, releases.get(PIN) or {}, releases))
        text += ('\nThe drafted release-table entry (its choices, served architectures, metrics and host programs '
                 'from %s\'s own facts; what no fact confirms marked UNVERIFIED): `%s`.\n'
                 % (report['new'], os.path.relpath(args.draft)))
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, 'w', encoding='utf-8') as handle:
            handle.write(text)
        verdict = 'BLOCKED' if report['blockers'] else 'nothing blocks'
        print('sglang_release: %s -> %s: %s (%s)' % (report['old'], report['new'], verdict, args.out))
    else:
        sys.stdout.write(text)
    for blocker in report['blockers']:
        print('BLOCKS: %s' % blocker, file=sys.stderr)
    return 1 if report['blockers'] else 0


if __name__ == '__main__':
    sys.exit(main())
