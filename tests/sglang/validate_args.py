#!/usr/bin/env python
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validate an SGLang command line with the real parser of the installed sglang (run it with the venv's python).

  PY=$(tests/bench/setup-bench-venv.sh | tail -n 1) && "$PY" tests/sglang/validate_args.py -- --model-path /m --tp-size 4 ...
  echo '["--model-path", "/m"]' | "$PY" tests/sglang/validate_args.py

Prints one JSON object (ok, version, error, kind, values); exit 0 valid, 2 refused, 3 no usable sglang.
The logic is plugins/module_utils/sglang/parser_check.py, the same file the sglang_server_args module runs.
"""
import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, '..', '..', 'plugins', 'module_utils', 'sglang', 'parser_check.py')

if __name__ == '__main__':
    sys.exit(runpy.run_path(CHECK, run_name='sglang_parser_check')['main']())
