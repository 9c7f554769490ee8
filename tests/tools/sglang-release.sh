#!/usr/bin/env bash
# make sglang-release VERSION=x.y.z [FROM=a.b.c]: the report of moving from FROM (default: the pin,
# profiles/sglang.yml) to VERSION, from both
# releases' own code (issue #29, point 1). Builds VERSION's lab venv beside FROM's (tests/bench/setup-bench-venv.sh;
# about 11 GB and 6+ min each, once; pip's cache shares the wheels the releases have in common), generates its hashed
# lock when it has none (tests/tools/sglang_lock.py), reads each release's facts (tests/sglang/release_facts.py:
# parser, memory defaults by SGLang's own resolution, metric families, the collection's log texts and pre-checks)
# and writes docs/releases/sglang-<FROM>-to-<VERSION>.md (tests/tools/sglang_release.py). Exit 1 while something the
# collection renders, reads or matches is missing from VERSION (the report says what); the pin is never changed here.
# The lab venvs are about 11 GB each: remove one with rm -rf ~/.cache/llmops-inference/sglang-bench-<release>-*.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/../.." && pwd)"
# shellcheck source=tests/tools/release_args.sh
source "${here}/release_args.sh"
release_args sglang-release "${root}/profiles/sglang.yml" 0.5.22 "$@"
tool="${root}/.venv/bin/python"
out="${root}/build/sglang-release"
mkdir -p "${out}" "${root}/docs/releases" "${root}/profiles/releases"
log() { echo "[sglang-release $(date +%H:%M:%S)] $*" >&2; }

log "the lab venv of ${from}"
py_old="$("${root}/tests/bench/setup-bench-venv.sh" "${from}" | tail -n 1)"
log "the lab venv of ${version}"
py_new="$("${root}/tests/bench/setup-bench-venv.sh" "${version}" | tail -n 1)"
pyver="$("${py_new}" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
lock="${root}/profiles/locks/sglang-${version}-py${pyver}.txt"
if [ -f "${lock}" ]; then
    "${py_new}" "${root}/tests/tools/sglang_lock.py" check "${py_new}" "${lock}"
else
    log "generating ${lock#"${root}"/} from the venv's resolution"
    "${tool}" "${root}/tests/tools/sglang_lock.py" generate "${py_new}" "${lock}"
fi
for pair in "${from}:${py_old}" "${version}:${py_new}"; do
    log "facts of ${pair%%:*}"
    # SGLang's import-time warnings (no CUDA here) go to a log beside the facts, shown when the facts fail.
    "${pair#*:}" "${root}/tests/sglang/release_facts.py" --out "${out}/facts-${pair%%:*}.json" \
        2>"${out}/facts-${pair%%:*}.log" || { tail -n 40 "${out}/facts-${pair%%:*}.log" >&2; exit 1; }
done
report="${root}/docs/releases/sglang-${from}-to-${version}.md"
set +e
"${tool}" "${root}/tests/tools/sglang_release.py" report "${out}/facts-${from}.json" "${out}/facts-${version}.json" \
    --out "${report}" --draft "${out}/entry-${version}.yml" \
    --changes "${root}/profiles/releases/sglang-${from}-to-${version}.json"
rc=$?
set -e
log "report: ${report#"${root}"/}"
exit "${rc}"
