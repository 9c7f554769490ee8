#!/usr/bin/env bash
# make test entry for the SGLang parser check of the sglang_server role: take the lab SGLang venv (the full
# `pip install sglang==<pin>` of tests/bench/setup-bench-venv.sh, cached outside the checkout; ~11 GB and 6+ min
# only the first time), then parse every command line the flag rules render, and known-bad ones, with the pinned
# release's own ServerArgs parser. Warm: seconds (one interpreter importing sglang.srt.server_args).
# Usage: tests/sglang/run-parser-tests.sh [VERSION]      (default: the pin in profiles/sglang.yml)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py="$("${here}/../bench/setup-bench-venv.sh" "$@" | tail -n 1)"
exec "${py}" "${here}/test_parser.py"
