# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The bytes make plan renders, for every inventory under inventories/, against a stored reference (docs/ci.md).

    python tests/tools/render_reference.py check                      # make render-check (CI)
    python tests/tools/render_reference.py update --reason "why"      # record the current bytes as the reference
    python tests/tools/render_reference.py compare --base REV         # REV's bytes beside the working tree's

A refactoring must not change one byte of what the collection renders (issue #28). `check` renders playbooks/plan.yml
for each inventory (offline, the same run as the plan gate's) into build/render-reference/<inventory>/ and compares
every file it wrote (the unit, the EnvironmentFile, argv, plan.md/json, deployment.json, the split and LXC lines, the
monitoring files) with tests/fixtures/render_reference.json: the SHA-256 and size of each file after the volatile
strings are replaced (the checkout's path, the home directory, the controller's host name, ISO timestamps; the same
placeholders as the gate). The reference changes only through `update`, which records the reason and the commit it
was taken at. `compare` renders a commit (a temporary git worktree) and the working tree and prints, per inventory,
the files that differ with their unified diff: the before/after proof of a refactoring. Exit status: 0 identical,
1 different, 3 could not run.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plan_gate  # noqa: E402  (the gate's render and normalisation: one definition of a volatile string)

ROOT = plan_gate.ROOT
REFERENCE = os.path.join('tests', 'fixtures', 'render_reference.json')
# Written by the render itself (the gate's log of the playbook run), not by the collection.
NOT_RENDERED = ('plan.log',)
# The lab inventory reads the per-run values molecule's prepare writes (<ephemeral>/deploy-lab/lab.json: mirror URL,
# port, API key, lab cache paths); the reference renders it with fixed placeholders of the same shape.
INVENTORY_ENV = {'lab': {'MOLECULE_EPHEMERAL_DIRECTORY': os.path.join('tests', 'fixtures', 'render_reference')}}


def inventories(repo_root):
    """Every inventory directory under inventories/, by name."""
    base = os.path.join(repo_root, 'inventories')
    return sorted(name for name in os.listdir(base) if os.path.isdir(os.path.join(base, name)))


def rendered_files(out_dir, replacements):
    """{relative path: normalised text} of every file the plan wrote under out_dir."""
    files = {}
    for dirpath, dirnames, filenames in os.walk(out_dir):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, out_dir)
            if rel in NOT_RENDERED or os.path.islink(path):
                continue
            with open(path, 'rb') as handle:
                text = handle.read().decode('utf-8', 'surrogateescape')
            files[rel] = plan_gate.normalise(text, replacements)
    return files


def render_inventory(repo_root, name, out_root):
    """(files, seconds, error) of one inventory rendered by repo_root's playbooks/plan.yml."""
    inventory = os.path.join(repo_root, 'inventories', name)
    out_dir = os.path.join(out_root, name)
    # This checkout's collection and ansible.cfg, whatever the caller's environment says (make exports its own).
    os.environ['ANSIBLE_CONFIG'] = os.path.join(repo_root, 'ansible.cfg')
    os.environ['ANSIBLE_COLLECTIONS_PATH'] = os.path.join(repo_root, '.collections')
    for key, value in INVENTORY_ENV.get(name, {}).items():
        os.environ[key] = os.path.join(ROOT, value)
    started = time.monotonic()
    try:
        _listing, rc, log = plan_gate.render(repo_root, inventory, out_dir)
    except plan_gate.GateError as exc:
        return {}, time.monotonic() - started, str(exc)
    took = time.monotonic() - started
    replacements = plan_gate.volatile_replacements(root=repo_root, out_dir=out_dir, inventory_dir=inventory)
    files = rendered_files(out_dir, replacements)
    error = None
    if rc != 0 and not files:
        with open(log, encoding='utf-8', errors='replace') as handle:
            error = 'playbooks/plan.yml failed (rc %d); the end of %s:\n%s' % (rc, log, ''.join(handle.readlines()[-20:]))
    return files, took, error


def digest(files):
    return {rel: dict(sha256=hashlib.sha256(text.encode('utf-8', 'surrogateescape')).hexdigest(),
                      bytes=len(text.encode('utf-8', 'surrogateescape'))) for rel, text in sorted(files.items())}


def render_all(repo_root, out_root, names=None):
    """{inventory: (files, seconds, error)}, with a progress line per inventory on stderr."""
    result = {}
    for name in names or inventories(repo_root):
        files, took, error = render_inventory(repo_root, name, out_root)
        sys.stderr.write('render_reference: %s rendered in %.1f s (%d files)%s\n'
                         % (name, took, len(files), ' - FAILED' if error else ''))
        result[name] = (files, took, error)
    return result


def compare_digests(old, new):
    """(changed, only_old, only_new) relative paths."""
    changed = sorted(rel for rel in set(old) & set(new) if old[rel]['sha256'] != new[rel]['sha256'])
    return changed, sorted(set(old) - set(new)), sorted(set(new) - set(old))


def table(rows):
    """A plain-text table: a header row, then the rows, columns padded."""
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    lines = ['  '.join(str(cell).ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    lines.insert(1, '  '.join('-' * w for w in widths))
    return '\n'.join(lines)


def text_diff(old, new, rel, limit=40):
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), 'before/' + rel, 'after/' + rel, lineterm=''))
    more = len(lines) - limit
    return '\n'.join(lines[:limit] + (['... %d more diff lines' % more] if more > 0 else []))


def load_reference(repo_root):
    path = os.path.join(repo_root, REFERENCE)
    if not os.path.exists(path):
        return None
    with open(path, encoding='utf-8') as handle:
        return json.load(handle)


def git_head(repo_root):
    run = subprocess.run(['git', 'rev-parse', '--short=12', 'HEAD'], cwd=repo_root, capture_output=True, text=True,
                         check=False)
    return run.stdout.strip() or 'unknown'


def cmd_check(args):
    reference = load_reference(args.root)
    if reference is None:
        print('render_reference: no reference at %s; record one with: python tests/tools/render_reference.py update '
              '--reason "first reference"' % REFERENCE)
        return 3
    rendered = render_all(args.root, args.out)
    rows, failed, details = [('inventory', 'files', 'identical', 'changed', 'gone', 'new', 'seconds')], False, []
    for name, (files, took, error) in sorted(rendered.items()):
        if error:
            print('render_reference: %s could not be rendered:\n%s' % (name, error))
            return 3
        old = reference['inventories'].get(name, {})
        new = digest(files)
        changed, gone, added = compare_digests(old, new)
        same = len(new) - len(changed) - len(added)
        rows.append((name, len(new), same, len(changed), len(gone), len(added), '%.1f' % took))
        for label, rels in (('changed', changed), ('gone', gone), ('new', added)):
            details += ['  %s %s: %s' % (name, label, rel) for rel in rels]
        failed = failed or bool(changed or gone or added)
    gone_inventories = sorted(set(reference['inventories']) - set(rendered))
    details += ['  inventory %s is in the reference but not under inventories/' % n for n in gone_inventories]
    failed = failed or bool(gone_inventories)
    print(table(rows))
    if failed:
        print('render_reference: the rendered bytes differ from %s (taken at %s: %s):'
              % (REFERENCE, reference.get('commit'), reference.get('reason')))
        print('\n'.join(details))
        print('See the difference: python tests/tools/render_reference.py compare --base %s\n'
              'Intended? Record it: python tests/tools/render_reference.py update --reason "<why the bytes changed>"'
              % (reference.get('commit') or 'HEAD'))
        return 1
    print('render_reference: every file of every inventory is byte-identical to the reference (%s)' % REFERENCE)
    return 0


def cmd_update(args):
    if not args.reason.strip():
        print('render_reference: update needs --reason "<why the bytes changed>"')
        return 3
    rendered = render_all(args.root, args.out)
    for name, (_files, _took, error) in rendered.items():
        if error:
            print('render_reference: %s could not be rendered; nothing recorded:\n%s' % (name, error))
            return 3
    old = load_reference(args.root) or {}
    history = ([dict(commit=old.get('commit'), reason=old.get('reason'))] if old else []) + old.get('history', [])
    data = dict(commit=git_head(args.root), reason=args.reason.strip(), history=history[:20],
                inventories={name: digest(files) for name, (files, _took, _error) in sorted(rendered.items())})
    path = os.path.join(args.root, REFERENCE)
    with open(path + '.tmp', 'w', encoding='utf-8') as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
        handle.write('\n')
    os.rename(path + '.tmp', path)
    print('render_reference: %s recorded (%d inventories, %d files) at %s: %s'
          % (REFERENCE, len(rendered), sum(len(v[0]) for v in rendered.values()), data['commit'], data['reason']))
    return 0


def cmd_compare(args):
    worktree = tempfile.mkdtemp(prefix='render-reference-base.')
    try:
        add = subprocess.run(['git', 'worktree', 'add', '--detach', worktree, args.base], cwd=args.root,
                             capture_output=True, text=True, check=False)
        if add.returncode != 0:
            print('render_reference: git worktree add %s failed: %s' % (args.base, add.stderr.strip()))
            return 3
        before = render_all(worktree, os.path.join(args.out, 'before'))
        after = render_all(args.root, os.path.join(args.out, 'after'))
    finally:
        subprocess.run(['git', 'worktree', 'remove', '--force', worktree], cwd=args.root, capture_output=True,
                       check=False)
        shutil.rmtree(worktree, ignore_errors=True)
    rows, diffs = [('inventory', 'files before', 'files after', 'identical', 'different')], []
    for name in sorted(set(before) | set(after)):
        old_files, _t, _e = before.get(name, ({}, 0, None))
        new_files, _t, _e = after.get(name, ({}, 0, None))
        rels = sorted(set(old_files) | set(new_files))
        different = [rel for rel in rels if old_files.get(rel) != new_files.get(rel)]
        rows.append((name, len(old_files), len(new_files), len(rels) - len(different), len(different)))
        diffs += ['%s: %s' % (name, text_diff(old_files.get(rel, ''), new_files.get(rel, ''), rel)) for rel in different]
    print('make plan of every inventory at %s (before) and in the working tree (after):' % args.base)
    print(table(rows))
    if diffs:
        print('\n'.join(diffs))
        return 1
    print('render_reference: before and after are byte-identical')
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--root', default=ROOT, help='the collection checkout (default: this one)')
    parser.add_argument('--out', default=None, help='where to render (default: <root>/build/render-reference)')
    sub = parser.add_subparsers(dest='command', required=True)
    sub.add_parser('check', help='compare the rendered bytes with the reference')
    update = sub.add_parser('update', help='record the rendered bytes as the reference')
    update.add_argument('--reason', required=True, help='why the rendered bytes changed')
    compare = sub.add_parser('compare', help='render a commit and the working tree and show the difference')
    compare.add_argument('--base', required=True, help='the commit to compare with (a git revision)')
    args = parser.parse_args(argv)
    args.root = os.path.abspath(args.root)
    args.out = os.path.abspath(args.out or os.path.join(args.root, 'build', 'render-reference'))
    return dict(check=cmd_check, update=cmd_update, compare=cmd_compare)[args.command](args)


if __name__ == '__main__':
    sys.exit(main())
