# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Generate docs/reference.md (every role's variables, every module and playbook) from the argument specs and the
module DOCUMENTATION, plus the files generated from the role contracts (tests/tools/role_contracts.py), and check
that each role's defaults/main.yml and meta/argument_specs.yml name the same variables and that every option has
a real description (not empty, not its own name).

    .venv/bin/python tests/tools/role_docs.py            # rewrite the generated files
    .venv/bin/python tests/tools/role_docs.py --check    # exit 1 if one is stale or a contract is incomplete (make test)
"""

from __future__ import annotations

import argparse
import ast
import glob
import os
import re
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import role_contracts  # noqa: E402  (a sibling file, not a package)

from collection_paths import ROOT  # noqa: E402  (a sibling file: ROOT, the pin, the release table)
OUTPUT = os.path.join(ROOT, 'docs', 'reference.md')


def ansible_markup(text):
    """O(x)/V(x)/C(x)/M(x)/RV(x) -> `x`; I(x) -> *x*; L(t,u) -> t; U(u) -> u."""
    text = re.sub(r'\b(?:O|V|C|M|RV|E|P)\(([^()]*)\)', r'`\1`', text)
    text = re.sub(r'\bI\(([^()]*)\)', r'*\1*', text)
    text = re.sub(r'\bL\(([^,()]*),[^()]*\)', r'\1', text)
    return re.sub(r'\bU\(([^()]*)\)', r'\1', text)


def cell(value):
    if isinstance(value, list):
        value = ' '.join(str(v) for v in value)
    return ansible_markup(str(value)).replace('|', '\\|').replace('\n', ' ')


def default_text(option):
    if 'default' not in option:
        return '*required*' if option.get('required') else ''
    value = option['default']
    text = yaml.safe_dump(value, default_flow_style=True, width=10000).strip()
    text = text[:-4].strip() if text.endswith('\n...') or text.endswith(' ...') else text
    return '`%s`' % text.replace('|', '\\|') if text != '' else '`""`'


def role_section(role, problems):
    with open(os.path.join(ROOT, 'roles', role, 'meta', 'argument_specs.yml')) as handle:
        entries = yaml.safe_load(handle)['argument_specs']
    spec = entries['main']
    defaults_path = os.path.join(ROOT, 'roles', role, 'defaults', 'main.yml')
    defaults = {}
    if os.path.exists(defaults_path):
        with open(defaults_path) as handle:
            defaults = yaml.safe_load(handle) or {}
    options = spec.get('options') or {}
    own = dict((k, v) for k, v in options.items() if k.startswith(role + '_'))
    for entry_name, entry in sorted(entries.items()):
        for name, option in sorted((entry.get('options') or {}).items()):
            problems.extend(description_problems(role, name, option))
    if role == 'deployment':
        return deployment_section(spec, own)
    for name in sorted(set(defaults) - set(options)):
        problems.append('roles/%s: %s is in defaults/main.yml but not in meta/argument_specs.yml' % (role, name))
    # Options without the role's prefix are collection-wide inputs (llmops_deployment, llmops_api_key): the
    # deployment role publishes them, so they have no default here.
    for name in sorted(set(own) - set(defaults)):
        if not options[name].get('required'):
            problems.append('roles/%s: %s is in meta/argument_specs.yml but has no default in defaults/main.yml'
                            % (role, name))
    lines = ['## Role `llmops.inference.%s`' % role, '', cell(spec.get('short_description', '')), '']
    lines += ['| variable | type | default | description |', '|---|---|---|---|']
    for name in sorted(options):
        option = options[name]
        kind = option.get('type', 'str')
        if option.get('elements'):
            kind += ' of ' + option['elements']
        if option.get('choices'):
            kind += ': ' + ', '.join(str(c) for c in option['choices'])
        row = (name, cell(kind), default_text(option), cell(option.get('description', '')))
        lines.append('| `%s` | %s | %s | %s |' % row)
    others = sorted(e for e in entries if e != 'main')
    if others:
        lines += ['', 'Other entry points (`tasks_from`):', '', '| entry point | what | options beyond `main` |',
                  '|---|---|---|']
        for entry_name in others:
            entry = entries[entry_name]
            extra = sorted(set(entry.get('options') or {}) - set(options))
            lines.append('| `%s` | %s | %s |' % (entry_name, cell(entry.get('short_description', '')),
                                                 ', '.join('`%s`' % n for n in extra) or '-'))
    return lines + ['']


def description_problems(role, name, option):
    """An option documented by its own name (or not at all) is not documented."""
    text = option.get('description')
    text = ' '.join(text) if isinstance(text, list) else str(text or '')
    words = re.sub(r'[^a-z0-9]+', ' ', text.lower()).split()
    bare = re.sub(r'[^a-z0-9]+', ' ', name.lower()).split()
    short = re.sub(r'[^a-z0-9]+', ' ', name[len(role) + 1:].lower()).split() if name.startswith(role + '_') else bare
    if not words:
        return ['roles/%s: option %s has no description' % (role, name)]
    if words in (bare, short) or len(words) < 3:
        return ['roles/%s: option %s is described only by its name (%r): say what it does and what its values mean'
                % (role, name, text)]
    return []


def deployment_section(spec, own):
    """The resolver's settings with their real types and defaults (plugin_utils/deployment/spec.py), not the raw spec types."""
    sys.path.insert(0, os.path.join(ROOT, '.collections'))
    from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import spec as deployment_spec
    lines = ['## Role `llmops.inference.deployment` and the collection-wide settings', '',
             cell(spec.get('short_description', '')) + '. Precedence and the `llmops_deployment` schema: '
             '[deployment_resolver.md](deployment_resolver.md).', '', '| variable | type | default | description |', '|---|---|---|---|']
    for name in sorted(own):
        lines.append('| `%s` | %s | %s | %s |' % (name, cell(own[name].get('type', 'str')), default_text(own[name]),
                                                  cell(own[name].get('description', ''))))
    lines += ['', '| setting | group | hosts | type | default | description |', '|---|---|---|---|---|---|']
    for entry in deployment_spec.VARIABLES:
        kind = entry['type'] + (' of ' + entry['elements'] if entry.get('elements') else '')
        if entry.get('required'):
            default = '*required*'
        else:
            default = default_text(dict(default=entry['default']))
        lines.append('| `%s` | %s | %s | %s | %s | %s |' % (
            entry['name'], entry['group'], entry['scope'], cell(kind), default, cell(entry['description'])))
    return lines + ['']


def module_doc(path):
    with open(path) as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], 'id', None) == 'DOCUMENTATION':
            return yaml.safe_load(node.value.value)
    return None


def playbook_line(path):
    comments = []
    with open(path) as handle:
        for line in handle.read().splitlines():
            if line.startswith('#'):
                comments.append(line.lstrip('#').strip())
            elif comments:
                break
    # the first sentence of the playbook's opening comment
    text = re.split(r'(?<=\.)\s', ' '.join(comments) + ' ', maxsplit=1)[0].rstrip(' .:')
    return '| `%s` | %s |' % (os.path.relpath(path, ROOT), cell(text))


def failure_catalogue():
    """The start-up failures sglang_server_wait names, from the signature table itself (sglang_logs.SIGNATURES)."""
    sys.path.insert(0, os.path.join(ROOT, '.collections'))
    from ansible_collections.llmops.inference.plugins.module_utils.sglang import logs as sglang_logs
    lines = ['## SGLang start-up failures the service role names', '',
             'Matched in the journal by `llmops.inference.sglang_server_wait` (first match wins, in this order), plus '
             'a stall: no new log line and no GPU memory growth for `sglang_server_stall_timeout` seconds after the '
             'parallel-init milestone.', '', '| signature | summary | likely cause | fix |', '|---|---|---|---|']
    for name, _patterns, summary, cause, fix in sglang_logs.SIGNATURES:
        lines.append('| `%s` | %s | %s | %s |' % (name, cell(summary), cell(cause), cell(fix)))
    return lines + ['']


def render():
    problems = []
    lines = ['# Reference', '',
             'Generated by `tests/tools/role_docs.py` from `roles/*/meta/argument_specs.yml` and the modules\'',
             '`DOCUMENTATION`; `make test` fails when it is stale. Full module docs: `ansible-doc llmops.inference.NAME`.',
             '', '## Modules', '', '| module | what it does |', '|---|---|']
    for path in sorted(glob.glob(os.path.join(ROOT, 'plugins', 'modules', '*.py'))):
        doc = module_doc(path)
        if doc:
            lines.append('| `llmops.inference.%s` | %s |' % (doc['module'], cell(doc.get('short_description', ''))))
    lines += ['', '## Playbooks', '', '| playbook | what it does |', '|---|---|']
    for path in sorted(glob.glob(os.path.join(ROOT, 'playbooks', '*.yml'))):
        if not path.endswith('.meta.yml'):
            lines.append(playbook_line(path))
    lines.append('')
    lines += failure_catalogue()
    for role in sorted(os.listdir(os.path.join(ROOT, 'roles'))):
        if os.path.exists(os.path.join(ROOT, 'roles', role, 'meta', 'argument_specs.yml')):
            lines += role_section(role, problems)
    return '\n'.join(lines), problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--check', action='store_true', help='fail when docs/reference.md is stale')
    args = parser.parse_args()
    stale = 0
    for path, build in role_contracts.GENERATED:
        stale += sync(path, build(), args.check)
    text, problems = render()
    for problem in problems:
        print('role_docs: %s' % problem, file=sys.stderr)
    stale += sync(OUTPUT, text, args.check)
    return 1 if problems or stale else 0


def sync(path, text, check):
    """Write a generated file, or (check) report it stale; returns 1 when stale."""
    current = open(path).read() if os.path.exists(path) else ''
    if current == text:
        return 0
    if check:
        print('role_docs: %s is stale: run tests/tools/role_docs.py' % os.path.relpath(path, ROOT), file=sys.stderr)
        return 1
    with open(path, 'w') as handle:
        handle.write(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
