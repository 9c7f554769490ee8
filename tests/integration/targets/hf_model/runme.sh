#!/usr/bin/env bash
# The hf_model role end to end on localhost against a real Hub mirror: olah 0.5.4 (offline mode) on 127.0.0.1
# serving generated safetensors repos. Every case of issue #4 is in playbook.yml; this script sets up the mirror,
# the wheelhouse and the mounts, runs the playbook once with -vvv and checks that the token is nowhere in that log
# or in any file the role wrote.
# Runs under `ansible-test integration --local hf_model` (as root) and by hand: tests/integration/targets/hf_model/runme.sh
# Env: HF_IT_KEEP=1 keeps the state directory (printed at the end); HF_IT_LOG=FILE copies the full log there.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=tests/integration/targets/setup_collection_root/collection_root.sh
source "$here/../setup_collection_root/collection_root.sh"
export ANSIBLE_CONFIG="${ANSIBLE_CONFIG:-$root/ansible.cfg}"
command -v ansible-playbook >/dev/null 2>&1 || export PATH="$root/.venv/bin:$PATH"

# A private mount namespace: the small tmpfs (disk-space case) and the bind mount (forbidden mount case) exist only
# for this process tree and vanish with it, so the host's mount table is never touched.
if [ -z "${HF_IT_IN_NS:-}" ]; then
    exec unshare --mount --propagation private env HF_IT_IN_NS=1 "$0" "$@"
fi

log() { printf '[hf_model-it %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
started=${SECONDS}
state="$(mktemp -d "${TMPDIR:-/var/tmp}/hf_model_it.XXXXXX")"
hub="${state}/hub"
cd "${state}"
probe_pid=""
cleanup() {
    "${root}/tests/hub/olah.sh" stop "${hub}" || true
    [ -z "${probe_pid}" ] || kill "${probe_pid}" 2>/dev/null || true
    # The lazy unmounts only matter if the namespace outlives us (it does not); rm must not cross into them.
    umount -l "${state}/bindview" "${state}/fmount" "${state}/small" 2>/dev/null || true
    if [ "${HF_IT_KEEP:-0}" = 1 ]; then
        log "kept ${state}"
    else
        rm -rf --one-file-system "${state}"
    fi
}
trap cleanup EXIT

log "generating the test repos"
mk() { python3 "${root}/tests/hub/make_model_repo.py" --mirrors "${hub}/mirrors" --repos-path "${hub}/repos" "$@"; }
mk --repo llmops-test/tiny-model --shards 4 --shard-mb 2 --commits 2 >"${state}/tiny.json"
mk --repo llmops-test/big-model --shards 6 --shard-mb 12 --commits 1 --seed 7 >"${state}/big.json"
mk --repo llmops-test/bad-model --shards 2 --shard-mb 1 --commits 1 --seed 9 >"${state}/bad.json"
# The mirror of bad-model serves a corrupted shard: the listing keeps the true sha256, the bytes differ.
python3 - "${state}/bad.json" <<'PY'
import json, os, sys
manifest = json.load(open(sys.argv[1]))
sha = manifest['commits'][0]['files']['model-00001-of-00002.safetensors']['sha256']
obj = os.path.join(manifest['path'], '.git', 'lfs', 'objects', sha[0:2], sha[2:4], sha)
with open(obj, 'r+b') as handle:
    handle.seek(4096)
    byte = handle.read(1)
    handle.seek(4096)
    handle.write(bytes([byte[0] ^ 0xFF]))
PY
endpoint="$("${root}/tests/hub/olah.sh" start "${hub}" llmops-test/tiny-model)"

# The pinned client as a wheelhouse for the target's Python (built once per pin set, then the role installs offline
# from it, as an air-gapped site would).
target_python=/usr/bin/python3
wheels="$("${root}/tests/hub/wheelhouse.sh" "$("${target_python}" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" | tail -n 1)"
# The role's virtualenv, kept next to the wheelhouse (same key): a warm run reuses it, a cold one has the role create
# and fill it. The molecule scenario installs it on a fresh host every time.
venv="$(dirname "${wheels}")/hf-venv-${wheels##*hf-wheels-}"

mkdir -p "${state}/small" "${state}/fmount" "${state}/bindview" "${state}/forbidden" "${state}/srv"
mount -t tmpfs -o size=20m tmpfs "${state}/small"
mount -t tmpfs -o size=8m tmpfs "${state}/fmount"
mkdir -p "${state}/fmount/models"
mount --bind "${state}/fmount/models" "${state}/bindview"
ln -s "${state}/forbidden" "${state}/srv-link"

# Two variables as an operator types them on the command line (strings, not int/bool) to keep the role honest about
# types. The token: random, passed as extra vars from a 0600 file (not through the controller's environment, so the
# module process can only have it from the role).
token="hf_llmopsIT$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
(umask 077 && printf 'hf_model_token: %s\n' "${token}" >"${state}/secret.yml")
# A stand-in endpoint that only records whether requests carried exactly that token (the proof it is sent).
python3 "${root}/tests/hub/auth_probe.py" "${state}/secret.yml" "${state}/probe.record" "${state}/probe.port" &
probe_pid=$!
for _ in $(seq 1 50); do
    [ -s "${state}/probe.port" ] && break
    sleep 0.1
done
probe="http://127.0.0.1:$(cat "${state}/probe.port")"

log "running the cases against ${endpoint}"
set +e
HF_IT_STATE="${state}" HF_IT_ENDPOINT="${endpoint}" HF_IT_PROBE="${probe}" HF_IT_WHEELS="${wheels}" HF_IT_VENV="${venv}" \
    ANSIBLE_CALLBACKS_ENABLED=ansible.posix.profile_tasks ansible-playbook -i "${here}/inventory.ini" "${here}/playbook.yml" \
    -e "@${state}/secret.yml" -e hf_model_progress_interval=2 -e hf_model_manage_packages=false -vvv >"${state}/full.log" 2>&1
rc=$?
set -e
[ -z "${HF_IT_LOG:-}" ] || cp "${state}/full.log" "${HF_IT_LOG}"
# Progress lines and the case results, whatever the outcome.
grep -E '^\[localhost\] (download|verify|plan|finalize|done)|CASE |^PLAY RECAP|^localhost +:' "${state}/full.log" | cut -c1-220 || true
if [ "${rc}" -ne 0 ]; then
    log "playbook failed (rc ${rc}); last lines of the log:"
    grep -v '^<localhost>' "${state}/full.log" | tail -n 80
    exit "${rc}"
fi

log "checking that the token appears nowhere"
lines="$(wc -l <"${state}/full.log")"
if grep -q -F "${token}" "${state}/full.log"; then
    log "FAIL: the token is in the -vvv log"
    grep -n -F "${token}" "${state}/full.log" | cut -c1-200 | sed "s/${token}/<TOKEN>/g"
    exit 1
fi
# Files the role and the module wrote: models, staging areas, progress files, venv, async job results.
leaks="$(grep -r -l -F "${token}" "${state}" "${venv}" ~/.ansible_async 2>/dev/null | grep -v -x -e "${state}/secret.yml" -e "${state}/full.log" || true)"
if [ -n "${leaks}" ]; then
    log "FAIL: the token is in: ${leaks}"
    exit 1
fi
grep -q 'CASE token-argv: argv=no' "${state}/full.log" || {
    log "FAIL: the command-line check of the module process did not run"
    exit 1
}
log "ok: ${lines} log lines without the token; all cases passed in $((SECONDS - started)) s"
