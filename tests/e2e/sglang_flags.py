#!/usr/bin/env python
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Dump the command-line flags of the installed SGLang (ServerArgs.add_cli_args) as JSON, for the lab launcher.

Run with the python of an SGLang virtualenv (tests/bench/setup-bench-venv.sh):
  "$PY" tests/e2e/sglang_flags.py OUT.json
OUT.json: {"version": ..., "actions": [{"flags": [...], "dest": ..., "takes_value": bool, "nargs": ..., "choices": [...]}]}
Importing sglang takes ~20 s on a loaded 2-core machine; tests/e2e/sglang_cpu_launcher.py then parses a command line
with exactly these flags in milliseconds, at every start of the lab service.
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import sys


def main():
    from sglang.srt.server_args import ServerArgs
    import sglang

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    actions = []
    for action in parser._actions:  # pylint: disable=protected-access
        if not action.option_strings or isinstance(action, argparse._HelpAction):  # pylint: disable=protected-access
            continue
        actions.append({
            'flags': list(action.option_strings),
            'dest': action.dest,
            'takes_value': action.nargs != 0,
            'nargs': action.nargs if action.nargs not in (None, 0) else None,
            'choices': [str(c) for c in action.choices] if action.choices else None,
        })
    with open(sys.argv[1], 'w') as handle:
        json.dump({'version': getattr(sglang, '__version__', None), 'actions': actions}, handle, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
