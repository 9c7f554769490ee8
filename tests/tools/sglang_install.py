#!/usr/bin/env python
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""An SGLang release's install overrides (profiles/sglang_releases.yml, install_overrides) for the lab venv.

  sglang_install.py overrides VERSION               the overridden requirement names, one per line (none: nothing)
  sglang_install.py requirements VERSION VENV_PY    the requirements of the sglang wheel installed in VENV_PY (its own
                                                    Requires-Dist without extras), each override's name pinned to its
                                                    install version instead: the input of the resolution
  sglang_install.py check VERSION VENV_PY           pip check in VENV_PY; exit 1 on any line but the ones the
                                                    overrides make (release.pip_check_accepted), printing them

tests/bench/setup-bench-venv.sh calls it for a release with overrides: pip cannot override a requirement, so the
wheel goes in with --no-deps and its requirements are resolved here with the override applied.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from collection_paths import release_table_data
from sglang_lock import canonical

from ansible_collections.llmops.inference.plugins.module_utils.sglang import release as sglang_release

# Read in the venv: the installed sglang's requirements with markers evaluated for that venv and no extra.
_REQUIRES = r'''
import importlib.metadata, json
try:
    from packaging.requirements import Requirement
except ImportError:  # a venv that has only pip yet (the wheel went in with --no-deps)
    from pip._vendor.packaging.requirements import Requirement
out = []
for text in importlib.metadata.requires('sglang') or []:
    req = Requirement(text)
    if req.marker is not None and not req.marker.evaluate({'extra': ''}):
        continue
    out.append(text.split(';')[0].strip())
print(json.dumps(out))
'''


def overrides(version):
    entry = release_table_data()['releases'].get(version) or {}
    return entry.get('install_overrides') or {}


def requirement_name(text):
    for stop in '[=<>!~ ':
        text = text.split(stop)[0]
    return canonical(text)


def apply_overrides(version, wanted, overrides_of_version):
    """The wheel's requirements with each override's name pinned to its install version; SystemExit naming an
    override the wheel does not require."""
    over = dict((canonical(k), v) for k, v in overrides_of_version.items())
    out, seen = [], set()
    for text in wanted:
        name = requirement_name(text)
        if name in over:
            seen.add(name)
            out.append('%s==%s' % (name, over[name]['install']))
        else:
            out.append(text)
    unused = sorted(set(over) - seen)
    if unused:
        sys.exit('sglang %s does not require %s: remove it from install_overrides of profiles/sglang_releases.yml'
                 % (version, ', '.join(unused)))
    return out


def requirements(version, python):
    wanted = json.loads(subprocess.run([python, '-c', _REQUIRES], check=True, stdout=subprocess.PIPE,
                                       universal_newlines=True).stdout)
    return apply_overrides(version, wanted, overrides(version))


def unexplained(lines, accepted):
    """(pip check lines no override explains, accepted lines pip check did not print)."""
    lines = [line for line in lines if line.strip() and not line.startswith('No broken')]
    return [line for line in lines if line not in accepted], sorted(set(accepted) - set(lines))


def check(version, python):
    done = subprocess.run([python, '-m', 'pip', 'check', '--disable-pip-version-check'], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    accepted = set(sglang_release.pip_check_accepted(version, overrides(version)))
    other, missing = unexplained(done.stdout.splitlines(), accepted)
    for line in other:
        print('pip check: %s' % line, file=sys.stderr)
    for line in missing:
        print('pip check did not report the override %r: the override no longer applies (remove it)' % line,
              file=sys.stderr)
    return 1 if other or missing else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    sub = parser.add_subparsers(dest='command', required=True)
    sub.add_parser('overrides').add_argument('version')
    for name in ('requirements', 'check'):
        one = sub.add_parser(name)
        one.add_argument('version')
        one.add_argument('python')
    args = parser.parse_args(argv)
    if args.command == 'overrides':
        print('\n'.join(sorted(overrides(args.version))))
        return 0
    if args.command == 'requirements':
        print('\n'.join(requirements(args.version, args.python)))
        return 0
    return check(args.version, args.python)


if __name__ == '__main__':
    sys.exit(main())
