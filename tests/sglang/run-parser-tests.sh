#!/usr/bin/env bash
# make test entry for the SGLang parser check of the sglang_server role: take the lab SGLang venv (the full
# `pip install sglang==<pin>` of tests/bench/setup-bench-venv.sh, cached outside the checkout; ~11 GB and 6+ min
# only the first time), then parse every command line the flag rules render, and known-bad ones, with the pinned
# release's own ServerArgs parser. Warm: seconds (one interpreter importing sglang.srt.server_args), then ~10 s of
# CPU for test_log_catalogue.py (the catalogue's words and the pre-checks' wording in the installed source).
# The same venv is the real resolution behind the pin's pip lock (profiles/locks/sglang-<pin>-py<X.Y>.txt, which
# the role installs from with --require-hashes): the lock must pin exactly its packages, or this fails.
# Usage: tests/sglang/run-parser-tests.sh [VERSION]      (default: the pin in profiles/sglang.yml)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/../.." && pwd)"
py="$("${here}/../bench/setup-bench-venv.sh" "$@" | tail -n 1)"
version="${1:-$(sed -n -E 's/^version:[[:space:]]*"?([0-9][0-9.]*)"?.*/\1/p' "${root}/profiles/sglang.yml")}"
pyver="$("${py}" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
lock="${root}/profiles/locks/sglang-${version}-py${pyver}.txt"
if [ -f "${lock}" ]; then
    "${py}" "${root}/tests/tools/sglang_lock.py" check "${py}" "${lock}"
elif [ $# -eq 0 ]; then
    echo "run-parser-tests: the pin ${version} has no lock for Python ${pyver} (${lock}); generate it with" \
        "tests/tools/sglang_lock.py generate ${py} ${lock}" >&2
    exit 1
fi
"${py}" "${here}/test_parser.py"
# Prefill/decode disaggregation: pd_check's cited rules and facts against the installed source, the seed's PD worker
# command lines through the release's own parser and hooks (skipped, exit 0, under a release other than the pin).
"${py}" "${here}/test_pd_parser.py"
# The planner's architecture facts against ModelConfig for every real config, the served list against the registry.
"${py}" "${here}/test_planner_families_sglang.py"
# The quant_method the planner prices each fixture by, against SGLang's own _parse_quant_hf_config.
"${py}" "${here}/test_quant_method.py"
# The VRAM planner's oracle: SGLang's own resolution and pool sizing of the make-test subset must still give the
# committed tests/fixtures/oracle/reference.json (which tests/unit compares vram_plan.plan() with); ~10 s warm.
"${py}" "${root}/benchmarks/oracle_grid.py" --check-reference
# Every log line the collection matches and every pre-check that quotes SGLang, against the installed source.
exec "${py}" "${here}/test_log_catalogue.py"
