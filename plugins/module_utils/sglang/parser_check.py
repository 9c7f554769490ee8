# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validate an SGLang command line with SGLang's own argument parser (run under a Python that has sglang).

PRIVATE to the collection. Imported by nothing at module load that is not stdlib; ``sglang`` is imported inside
``check()``. Used two ways:

* the ``sglang_server_args`` module writes this file's source to a temp file and runs it with
  ``validate_with_parser`` (the Python of a venv with ``sglang==<pin>``), passing the argv as JSON on stdin;
* ``tests/sglang/validate_args.py`` runs it from the checkout in the lab SGLang venv built by ``tests/bench/setup-bench-venv.sh``.

Two parses: SGLang's parser as SGLang builds it (``allow_abbrev=True``: what the server will accept), then the same
arguments with ``allow_abbrev=False``, which refuses prefixes such as ``--speculative-algo`` that only work by
accident and break when a release adds a second flag with the same prefix. ``ServerArgs.from_cli_args`` is tried
too; failures there that need the model directory or a GPU are reported as ``resolution_skipped``, not as errors.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import io
import json
import sys
from contextlib import redirect_stderr

# Exceptions from_cli_args raises when it wants things a CPU-only validator does not have (model files, CUDA).
_ENVIRONMENTAL = ('config.json', 'No such file', 'not a local folder', 'CUDA', 'cuda', 'nvidia', 'NVML',
                  'huggingface', 'HF_', 'libcuda', 'torch.cuda', 'Repo id', 'repo_id', 'device')


class _ParserError(Exception):
    pass


def _parser(server_args_cls, allow_abbrev):
    class Parser(argparse.ArgumentParser):
        def error(self, message):
            raise _ParserError('%s: error: %s' % (self.prog, message))

    parser = Parser(prog='sglang serve', allow_abbrev=allow_abbrev)
    server_args_cls.add_cli_args(parser)
    return parser


def check(argv):
    """dict(ok, version, error, abbreviation_error, resolution, values) for one SGLang argv (without the launcher)."""
    try:
        import sglang  # pylint: disable=import-error
        from sglang.srt.server_args import ServerArgs  # pylint: disable=import-error
    except Exception as exc:  # noqa: BLE001 -- any import failure means "no usable parser here"
        return dict(ok=False, version=None, error='cannot import sglang.srt.server_args: %s: %s'
                    % (type(exc).__name__, exc), kind='environment')
    version = getattr(sglang, '__version__', None)
    result = dict(ok=False, version=version, error=None, kind=None)
    try:
        namespace = _parser(ServerArgs, True).parse_args(argv)
    except _ParserError as exc:
        result.update(error=str(exc), kind='argparse')
        return result
    try:
        _parser(ServerArgs, False).parse_args(argv)
    except _ParserError as exc:
        result.update(error='%s (an abbreviated flag: SGLang accepts it only through argparse prefix matching; '
                      'use the full name)' % exc, kind='abbreviation')
        return result
    keys = ('model_path', 'served_model_name', 'host', 'port', 'tp_size', 'speculative_algorithm',
            'speculative_num_steps', 'speculative_eagle_topk', 'speculative_num_draft_tokens', 'max_running_requests',
            'mem_fraction_static', 'context_length', 'mamba_radix_cache_strategy', 'mamba_scheduler_strategy',
            'reasoning_parser', 'tool_call_parser', 'quantization', 'nnodes', 'node_rank', 'dist_init_addr')
    result['values'] = dict((k, getattr(namespace, k)) for k in keys if hasattr(namespace, k))
    sink = io.StringIO()
    try:
        with redirect_stderr(sink):
            ServerArgs.from_cli_args(namespace)
        result['resolution'] = 'ok'
    except Exception as exc:  # noqa: BLE001 -- classified below
        text = '%s: %s' % (type(exc).__name__, exc)
        if any(marker in text for marker in _ENVIRONMENTAL):
            result['resolution'] = 'skipped (needs the model or a GPU): %s' % text[:300]
        else:
            result.update(error=text, kind='validation')
            return result
    result['ok'] = True
    return result


def _rc(result):
    return 0 if result['ok'] else (2 if result.get('kind') in ('argparse', 'abbreviation', 'validation') else 3)


def main(args=None):
    """CLI: argv as JSON list on stdin (``-``) or as arguments after ``--``; prints the result as JSON.

    A JSON list of argv lists on stdin checks them all in this one process (importing SGLang takes seconds) and
    prints a JSON list of results in the same order; the exit status is the worst of theirs.
    """
    args = list(sys.argv[1:] if args is None else args)
    if args and args[0] == '--':
        argv = args[1:]
    else:
        argv = json.load(sys.stdin)
    if argv and all(isinstance(item, list) for item in argv):
        results = [check([str(a) for a in item]) for item in argv]
        sys.stdout.write(json.dumps(results, default=str) + '\n')
        return max(_rc(result) for result in results)
    result = check([str(a) for a in argv])
    sys.stdout.write(json.dumps(result, default=str) + '\n')
    return _rc(result)


if __name__ == '__main__':
    raise SystemExit(main())
