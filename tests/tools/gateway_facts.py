#!/usr/bin/env python
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The facts of one smg release, read from its own code: run it with the Python of a venv that has smg installed.

  <smg venv>/bin/python gateway_facts.py --out FACTS.json [--argv ARGV.json]

It builds the parser `smg launch` builds (smg/launch_router.py parse_router_args: an ArgumentParser given to
smg.router_args.RouterArgs.add_cli_args(parser, use_router_prefix=False)) and walks its actions: every option string,
its dest, default, choices and nargs. It also records the --policy choices (router_args.COMMON_POLICY_CHOICES),
whether the launcher module has the two functions the role's smg-launch calls (parse_router_args, launch_router),
and, with --argv (a JSON list of command lines), whether the release's own parser takes each one (parse_args only:
nothing is started). No flag is grepped from text. Standard library and smg only (tests/tools/gateway_release.py
compares two of these files).
"""

import argparse
import importlib
import importlib.metadata
import json
import sys


def _plain(value):
    """A JSON-safe default (argparse.SUPPRESS and callables as their repr)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return repr(value)


class _Refusal(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """smg's parser as parse_router_args builds it, raising its refusal instead of exiting."""

    def error(self, message):
        raise _Refusal(message)


def build_parser(router_args):
    parser = _Parser(prog='smg launch', add_help=False)
    router_args.RouterArgs.add_cli_args(parser, use_router_prefix=False)
    return parser


def options(parser):
    out = {}
    for action in parser._actions:  # pylint: disable=protected-access
        longs = [s for s in action.option_strings if s.startswith('--')]
        if not longs:
            continue
        name = longs[0]
        out[name] = dict(aliases=[s for s in action.option_strings if s != name], dest=action.dest,
                         default=_plain(action.default), choices=_plain(list(action.choices))
                         if action.choices is not None else None,
                         nargs=_plain(action.nargs), takes_value=action.nargs != 0,
                         kind=type(action).__name__)
    return out


def parse_lines(parser, router_args, lines):
    """What smg-launch --check does for each line: parse_router_args (parse_args, then RouterArgs.from_cli_args)."""
    results = []
    for argv in lines:
        try:
            router_args.RouterArgs.from_cli_args(parser.parse_args(argv), use_router_prefix=False)
            results.append(dict(argv=argv, ok=True, error=None))
        except (_Refusal, ValueError, TypeError) as exc:
            results.append(dict(argv=argv, ok=False, error='%s: %s' % (type(exc).__name__, exc)))
    return results


def main():
    cli = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    cli.add_argument('--out', required=True)
    cli.add_argument('--argv', help='a JSON list of command lines to parse with the release\'s own parser')
    args = cli.parse_args()
    router_args = importlib.import_module('smg.router_args')
    launcher = importlib.import_module('smg.launch_router')
    parser = build_parser(router_args)
    facts = dict(package='smg', version=importlib.metadata.version('smg'),
                 python='%d.%d' % sys.version_info[:2], source=router_args.__file__,
                 options=options(parser),
                 policies=list(router_args.COMMON_POLICY_CHOICES),
                 launcher=dict(module='smg.launch_router',
                               functions=[f for f in ('parse_router_args', 'launch_router')
                                          if callable(getattr(launcher, f, None))]))
    if args.argv:
        with open(args.argv) as stream:
            facts['parsed'] = parse_lines(parser, router_args, json.load(stream))
    with open(args.out, 'w') as stream:
        json.dump(facts, stream, indent=1, sort_keys=True)
        stream.write('\n')


if __name__ == '__main__':
    main()
