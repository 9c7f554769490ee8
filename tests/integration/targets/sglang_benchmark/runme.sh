#!/usr/bin/env bash
# The sglang_benchmark role for real on localhost: llama.cpp's server (xllamacpp) on the CPU with a tiny Qwen3-style
# model trained here, SGLang's own benchmark client (python -m sglang.benchmark.serving from a full sglang install),
# the report opened in headless Chromium. Cases:
#   main        the deployment resolved once by llmops.inference.deployment (with its A/B variants), smoke tests
#               6/6, an A/B sweep (MTP on vs off + 4 vs 1 running requests, each variant's resolved deployment served
#               by llama.cpp, the stand-in for SGLang), report.md/report.html/summary.json, passing gates, the
#               original deployment restored;
#   chromium    report.html rendered headless: inline SVG charts, a non-blank screenshot with the chart colours;
#               make plan's sample pictures (docs/samples/plan) too, with their colours and no console message;
#   gates       an impossible threshold and a 100x baseline fail the play with the numbers;
#   smoke-fail  the smoke entry point with a wrong served name fails, naming the feature and showing the answer;
#   no leak     the API key is in no log and no result file;
#   monitoring  (in main) the monitoring role installs its promtool-checked files into a real Prometheus (Debian's
#               package, lifecycle reload) that scrapes the SGLang stand-in's /metrics and llama.cpp every second during
#               the sweep; the report has the server-side view; (alerts) SGLangTargetDown fires once the stand-in stops.
# Runs under `ansible-test integration --local sglang_benchmark` and by hand:
#   tests/integration/targets/sglang_benchmark/runme.sh
# Cold (first run on a machine): ~9 min for the one SGLang venv (11 GB), ~15 s overlay, ~1 min tiny model, ~30 s chromium;
# warm: ~7 min on the shared 2-core machine at load 5-9 (see docs/sglang_benchmark.md, "Lab timings").
# Env: SGLANG_BENCH_IT_KEEP=1 keeps the state directory (printed at the end; report.html and screenshot.png inside).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=../setup_collection_root/collection_root.sh
source "$here/../setup_collection_root/collection_root.sh"
export ANSIBLE_CONFIG="${ANSIBLE_CONFIG:-$root/ansible.cfg}"
export ANSIBLE_ROLES_PATH="$here/roles"
command -v ansible-playbook >/dev/null 2>&1 || export PATH="$root/.venv/bin:$PATH"

log() { printf '[sglang_benchmark-it %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
started=${SECONDS}
state="$(mktemp -d "${TMPDIR:-/var/tmp}/sglang_bench_it.XXXXXX")"
cpu_s() {  # user+system CPU seconds of a running process (/proc/<pid>/stat fields 14 and 15, in clock ticks)
    awk -v hz="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / hz }' "/proc/$1/stat" 2>/dev/null || echo "?"
}
cleanup() {
    if [ -f "${state}/prometheus.pid" ]; then
        log "monitoring lab CPU: prometheus $(cpu_s "$(cat "${state}/prometheus.pid")") s"
    fi
    for pidfile in server.pid standin.pid prometheus.pid; do
        if [ -f "${state}/${pidfile}" ]; then
            kill "$(cat "${state}/${pidfile}")" 2>/dev/null || true
        fi
    done
    sleep 1
    if [ "${SGLANG_BENCH_IT_KEEP:-0}" = 1 ]; then
        log "kept ${state}"
    else
        rm -rf "${state}"
    fi
}
trap cleanup EXIT

if ! command -v chromium >/dev/null 2>&1; then
    log "installing Debian's chromium for the report check"
    apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 \
        || { apt-get update >/dev/null && apt-get install -y --no-install-recommends chromium >/dev/null; }
fi
# Debian's prometheus package: promtool checks the monitoring role's files, and a real Prometheus scrapes the lab.
if ! command -v prometheus >/dev/null 2>&1 || ! command -v promtool >/dev/null 2>&1; then
    log "installing Debian's prometheus for the monitoring case"
    apt-get install -y --no-install-recommends prometheus >/dev/null 2>&1 \
        || { apt-get update >/dev/null && apt-get install -y --no-install-recommends prometheus >/dev/null; }
fi
log "lab: the SGLang venv of the ${root}/profiles/sglang.yml pin (cached; cold ~11 GB), its llama.cpp overlay and the tiny model"
lab="$("${root}/tests/bench/setup-lab.sh")"
bench_python="$(sed -n 's/^BENCH_PYTHON=//p' <<<"${lab}")"
lab_python="$(sed -n 's/^LAB_PYTHON=//p' <<<"${lab}")"
tiny_model="$(sed -n 's/^TINY_MODEL=//p' <<<"${lab}")"
log "ready after $((SECONDS - started)) s: client ${bench_python}, lab ${lab_python}, model ${tiny_model}"

key="lab-$("${lab_python}" -c 'import secrets; print(secrets.token_hex(16))')"
port="$("${lab_python}" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
# The monitoring case: the SGLang stand-in (tests/sglang/standin_server.py, /metrics in the pinned release's names and
# format) stands in for the SGLang server's metrics endpoint while llama.cpp serves the benchmark, and a real
# Prometheus (started empty, with its lifecycle API; the monitoring role installs its files and reloads it) scrapes
# both every second during the benchmark.
free_port() { "${lab_python}" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
standin_port="$(free_port)"
prometheus_port="$(free_port)"
"${lab_python}" - "${root}/profiles/sglang_releases.yml" "${root}/profiles/sglang.yml" "${state}/standin-metrics.json" <<'PY'
import json, sys, yaml
table, pin = yaml.safe_load(open(sys.argv[1])), yaml.safe_load(open(sys.argv[2]))['version']
json.dump(table['releases'][pin]['metrics'], open(sys.argv[3], 'w'))
PY
SGLANG_STANDIN_DELAY=0 SGLANG_STANDIN_METRICS="${state}/standin-metrics.json" python3 "${root}/tests/sglang/standin_server.py" \
    --model-path "${tiny_model}" --served-model-name lab-standin --port "${standin_port}" --enable-metrics \
    --speculative-algorithm NEXTN >"${state}/standin.log" 2>&1 &
echo $! >"${state}/standin.pid"
mkdir -p "${state}/prometheus/rules" "${state}/grafana"
printf 'global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n' >"${state}/prometheus/prometheus.yml"
prometheus --config.file="${state}/prometheus/prometheus.yml" --storage.tsdb.path="${state}/prometheus/data" \
    --web.listen-address="127.0.0.1:${prometheus_port}" --web.enable-lifecycle --log.level=warn \
    >"${state}/prometheus.log" 2>&1 &
echo $! >"${state}/prometheus.pid"
# Modules on localhost run with the interpreter that runs ansible-playbook (the tool venv, or ansible-test's).
controller_python="$(dirname "$(command -v ansible-playbook)")/python"
[ -x "${controller_python}" ] || controller_python="$(command -v python3)"
# The deployment as an inventory would describe it (the seed profile: Qwen3.5-122B-A10B, TP4, MTP, 4x RTX PRO 6000
# behind SEV-SNP) with the tiny model's directory as the checkpoint, llama.cpp as the launcher and the lab SGLang venv
# as the server's virtualenv (its python is the benchmark client). llmops.inference.deployment resolves it once, and
# the A/B variants (MTP on vs off, 4 vs 1 running requests) with it; SGLang's own parser checks every command line.
bench_venv="$(dirname "$(dirname "${bench_python}")")"
[ "${bench_venv}/bin/python" = "${bench_python}" ] || { log "FAIL: ${bench_python} is not <venv>/bin/python"; exit 1; }
(umask 077 && cat >"${state}/lab.yml" <<EOF
lab_root: ${root}
lab_state: ${state}
lab_openai_server_python: ${lab_python}
lab_openai_server_script: ${root}/tests/bench/openai_server.py
lab_openai_server_state_dir: ${state}
llmops_model_profile: qwen3.5-122b-a10b
llmops_gpu_profile: rtx-pro-6000-blackwell-server
llmops_tp_size: 4
llmops_instance_name: lab
llmops_model_path: ${tiny_model}
llmops_http_port: ${port}
llmops_api_key: ${key}
llmops_host_sev_snp: true
llmops_sglang_venv: ${bench_venv}
llmops_sglang_launcher: [${lab_python}, ${root}/tests/bench/openai_server.py]
llmops_parser_python: ${bench_python}
llmops_record_dir: ${state}/records
lab_standin_port: ${standin_port}
lab_prometheus_url: http://127.0.0.1:${prometheus_port}
llmops_variants:
  - name: mtp
    description: as deployed (NEXTN 3/1/4, 4 llama.cpp slots)
    mtp: true
    overrides: {}
  - name: no-mtp
    description: MTP off, --max-running-requests 1 (1 llama.cpp slot)
    mtp: false
    overrides: {llmops_speculative_num_draft_tokens: 0, llmops_max_running_requests: 1}
EOF
)
# The resolver serves the hosts of the group sglang_servers.
printf '[sglang_servers]\nlocalhost ansible_connection=local ansible_python_interpreter=%s\n' "${controller_python}" >"${state}/inventory"
play() { ansible-playbook -i "${state}/inventory" -e "@${state}/lab.yml" "$@"; }

log "case main: smoke tests + A/B sweep with SGLang's client + report + gates + restore"
if ! play "${here}/playbook.yml" -v >"${state}/main.log" 2>&1; then
    grep -v '^<localhost>' "${state}/main.log" | tail -n 80
    log "FAIL: case main"
    exit 1
fi
grep -E '^\[localhost\] run |CASE main|out tok/s, ' "${state}/main.log" | sed 's/^ *"msg": //' | cut -c1-220 || true
results="${state}/results/localhost/main"
for f in report.md report.html summary.json runs.jsonl smoke.json meta.json variants/no-mtp.yml variants/restore.yml \
         raw/mtp/mtp-c1.jsonl raw/no-mtp/no-mtp-c4.log; do
    [ -s "${results}/${f}" ] || { log "FAIL: ${results}/${f} is missing or empty"; exit 1; }
done
progress_lines="$(grep -c '^\[localhost\] run ' "${state}/main.log" || true)"
log "progress lines printed during the runs: ${progress_lines}"
sed -n '/^## Results/,/^TTFT =/p' "${results}/report.md" >&2
sed -n '/^## Server-side view/,/^$/{p}' "${results}/report.md" | head -n 4 >&2
grep -E '^\| [A-Za-z. ]+ .*\| `' "${results}/report.md" | cut -c1-200 >&2 || true

log "case alerts: the real Prometheus fires SGLangTargetDown once the stand-in stops"
alerts_started=${SECONDS}
log "stand-in CPU until now: $(cpu_s "$(cat "${state}/standin.pid")") s"
if ! /usr/bin/time -f 'alerts play: %e s wall, %U s user, %S s sys' -a -o "${state}/alerts.time" \
        ansible-playbook -i "${state}/inventory" -e "@${state}/lab.yml" "${here}/alerts.yml" -v >"${state}/alerts.log" 2>&1; then
    grep -v '^<localhost>' "${state}/alerts.log" | tail -n 40
    log "FAIL: case alerts"
    exit 1
fi
grep -o 'CASE alerts: [^"]*' "${state}/alerts.log" | head -n 1 >&2
log "case alerts took $((SECONDS - alerts_started)) s ($(cat "${state}/alerts.time"))"

log "case chromium: headless render of report.html"
"${lab_python}" "${root}/tests/bench/check_report_screenshot.py" "${results}/report.html" "${state}/screenshot.png" --min-charts 4
# make plan's committed pictures (docs/samples/plan, fresh by tests/unit/test_plan_console.py) in the same browser:
# each colour is a part of the picture (plugins/plugin_utils/views/plan_pictures.py), no console message, well-formed SVG.
log "case chromium: headless render of make plan's sample pictures (plan.html, topology.html)"
"${lab_python}" "${root}/tests/bench/check_report_screenshot.py" "${root}/docs/samples/plan/sglang-ct/plan.html" \
    "${state}/plan.png" --min-charts 1 --window 1280,720 --svg-xml --no-console --colour 1f77b4=weights \
    --colour 9467bd=mamba-state --colour 2ca02c=kv-cache --colour ff7f0e=activation-reserve
"${lab_python}" "${root}/tests/bench/check_report_screenshot.py" "${root}/docs/samples/plan/pve1/topology.html" \
    "${state}/topology.png" --min-charts 1 --window 1280,720 --svg-xml --no-console --colour 76b900=nvidia \
    --colour 9467bd=vfio-pci --colour 1f77b4=container

log "case gates: impossible threshold and a 100x baseline must fail with the numbers"
"${lab_python}" - "${state}/baseline.json" <<'PY'
import json, sys
rows = [{'variant': 'default', 'kind': 'concurrency', 'concurrency': 4, 'request_rate': None,
         'output_throughput': 1.0e6, 'p99_ttft_ms': 0.001}]
json.dump({'rows': rows}, open(sys.argv[1], 'w'))
PY
if play "${here}/gates.yml" >"${state}/gates.log" 2>&1; then
    log "FAIL: the gates play passed"
    exit 1
fi
if ! grep -q 'Benchmark gates failed on localhost: output tok/s >= 1,000,000: measured' "${state}/gates.log" \
    || ! grep -q 'vs baseline 1,000,000' "${state}/gates.log" || ! grep -q 'vs baseline 0.00' "${state}/gates.log"; then
    grep -v '^<localhost>' "${state}/gates.log" | tail -n 40
    log "FAIL: the gate failure lacks its numbers"
    exit 1
fi
grep -o 'Benchmark gates failed on localhost: [^"]*' "${state}/gates.log" | head -n 1 | cut -c1-400 >&2
[ -s "${state}/results/localhost/gates/report.html" ] || { log "FAIL: no report for the failed gates"; exit 1; }

log "case smoke-fail: a wrong served name must fail, naming the feature and showing the answer"
if play "${here}/smoke_fail.yml" >"${state}/smoke_fail.log" 2>&1; then
    log "FAIL: the smoke play passed with a wrong model name"
    exit 1
fi
grep -q '\[models\] served name \\\?"no-such-model\\\?" is not in /v1/models (qwen3.5-122b) -- server answer: {' "${state}/smoke_fail.log" \
    || { grep -v '^<localhost>' "${state}/smoke_fail.log" | tail -n 30; log "FAIL: the smoke failure message"; exit 1; }

log "case no-leak: the API key must not appear in logs, results, async job files or command lines"
# Only the two 0600 files that hold it on purpose (the server's key file and the extra vars) may contain it.
leaks="$(grep -r -l -F "${key}" "${state}" "${HOME}/.ansible_async" 2>/dev/null \
         | grep -v -x -e "${state}/api.key" -e "${state}/lab.yml" || true)"
if [ -n "${leaks}" ]; then
    log "FAIL: the API key is in: ${leaks}"
    exit 1
fi
for f in "${state}/api.key" "${state}/lab.yml"; do
    [ "$(stat -c %a "${f}")" = 600 ] || { log "FAIL: ${f} is mode $(stat -c %a "${f}"), not 0600"; exit 1; }
done
if tr '\0' ' ' <"/proc/$(cat "${state}/server.pid")/cmdline" | grep -q -F "${key}"; then
    log "FAIL: the API key is on the server's command line"
    exit 1
fi
log "ok: all cases passed in $((SECONDS - started)) s (report: ${results}/report.html)"
