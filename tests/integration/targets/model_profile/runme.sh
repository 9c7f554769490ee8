#!/usr/bin/env bash
# make profile's playbook against a real Hub mirror: olah 0.5.4 offline on 127.0.0.1 serving config-only repos made
# from real config.json files (tests/fixtures/hf_configs, each with its source), read by the real huggingface_hub
# client of the hf_model role's lock. Cases:
#   families   a GQA (Llama-3.1-8B), an MLA (DeepSeek-V3) and a sliding-window (gpt-oss-120b) profile, each with the
#              commit the mirror resolved for main, its planner family and its guesses marked "# unverified:";
#   log        the generated Llama-3.1-8B profile, planned with the memory figures of a real start-up log
#              (tests/fixtures/sglang_logs/dense_gqa/llama-3.1-8b-instruct-tp1-docs-send-request.md), gives the token
#              count SGLang logged within what the log's rounded figures allow;
#   refusal    an architecture in no planner family (the Llama config renamed: a synthetic case) is refused with the
#              supported list, and nothing is written;
#   keep       an edited profile is not replaced without force; check mode writes nothing;
#   hints      from another directory, with a relative DEST and no endpoint but the inventory's hf_model_endpoint (the
#              hf_model role's): the repo is read through the mirror, and each command printed on the refusal to replace
#              an edited profile (see the difference, replace it, write it elsewhere) is run as printed; servers on
#              two mirrors are refused with a command per endpoint.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=../setup_collection_root/collection_root.sh
source "$here/../setup_collection_root/collection_root.sh"
export ANSIBLE_CONFIG="${ANSIBLE_CONFIG:-$root/ansible.cfg}"
command -v ansible-playbook >/dev/null 2>&1 || export PATH="$root/.venv/bin:$PATH"
log() { printf '[model_profile-it %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
fail() { log "FAIL: $*"; exit 1; }
state="$(mktemp -d "${TMPDIR:-/var/tmp}/model_profile_it.XXXXXX")"
hub="${state}/hub"
cleanup() {
    "${root}/tests/hub/olah.sh" stop "${hub}" 2>/dev/null || true
    rm -rf "${state}"
}
trap cleanup EXIT

fixtures="${root}/tests/fixtures/hf_configs"
mk() { python3 "${root}/tests/hub/make_model_repo.py" --mirrors "${hub}/mirrors" --repos-path "${hub}/repos" "$@" >/dev/null; }
mk --repo meta-llama/Meta-Llama-3.1-8B --config-dir "${fixtures}/meta-llama__Meta-Llama-3.1-8B"
mk --repo deepseek-ai/DeepSeek-V3 --config-dir "${fixtures}/deepseek-ai__DeepSeek-V3"
mk --repo openai/gpt-oss-120b --config-dir "${fixtures}/openai__gpt-oss-120b"
# gpt-oss-20b with its real chat template and tokenizer configuration (tests/fixtures/chat_templates): the parser
# detection reads them through the Hub client.
mkdir -p "${state}/gpt-oss-20b"
cp "${fixtures}/openai__gpt-oss-20b/config.json" "${root}/tests/fixtures/chat_templates/openai__gpt-oss-20b/"*.j* \
    "${state}/gpt-oss-20b/"
mk --repo openai/gpt-oss-20b --config-dir "${state}/gpt-oss-20b"
mkdir -p "${state}/unknown"
python3 - "${fixtures}/meta-llama__Meta-Llama-3.1-8B/config.json" "${state}/unknown/config.json" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config['architectures'] = ['Gemma3ForCausalLM']
json.dump(config, open(sys.argv[2], 'w'), indent=2)
PY
mk --repo llmops-test/unknown-arch --config-dir "${state}/unknown"
endpoint="$("${root}/tests/hub/olah.sh" start "${hub}" meta-llama/Meta-Llama-3.1-8B)"

# The Hub client from the hf_model role's lock (hashes), offline from the lab's wheelhouse; the same venv make profile
# builds (LAB_CACHE/hf-client-<lock sha>-py<ver>).
lock="$(find "${root}/profiles/locks" -name 'hf-client-*.txt' | sort | head -n 1)"
pyver="$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
client="${XDG_CACHE_HOME:-${HOME}/.cache}/llmops-inference/hf-client-$(sha256sum "${lock}" | cut -c1-12)-py${pyver}"
if [ ! -f "${client}/.installed" ]; then
    wheels="$("${root}/tests/hub/wheelhouse.sh" "${pyver}" | tail -n 1)"
    log "building ${client} from ${lock} (offline, ${wheels})"
    rm -rf "${client}" && python3 -m venv "${client}"
    "${client}/bin/python" -m pip install --quiet --disable-pip-version-check --no-index --find-links "${wheels}" \
        --require-hashes -r "${lock}"
    touch "${client}/.installed"
fi

out="${state}/profiles"
mkdir -p "${out}"
profile() { ansible-playbook "${root}/playbooks/profile.yml" -e profile_endpoint="${endpoint}" \
    -e profile_hub_python="${client}/bin/python" -e profile_dest="${out}" "$@"; }

log "case families: GQA, MLA and sliding-window profiles from the mirror"
for repo in meta-llama/Meta-Llama-3.1-8B deepseek-ai/DeepSeek-V3 openai/gpt-oss-120b; do
    profile -e profile_repo="${repo}" >"${state}/gen.log" 2>&1 || { tail -n 30 "${state}/gen.log"; fail "profile ${repo}"; }
done
python3 - "${out}" "${hub}/mirrors/models" <<'PY' || fail "the generated profiles"
import os, subprocess, sys, yaml
out, mirrors = sys.argv[1:3]
for name, repo, family in (('meta-llama-3.1-8b', 'meta-llama/Meta-Llama-3.1-8B', 'gqa'),
                           ('deepseek-v3', 'deepseek-ai/DeepSeek-V3', 'mla'),
                           ('gpt-oss-120b', 'openai/gpt-oss-120b', 'hybrid_swa')):
    path = os.path.join(out, name + '.yml')
    text = open(path).read()
    profile = yaml.safe_load(text)
    head = subprocess.run(['git', '-C', os.path.join(mirrors, repo), 'rev-parse', 'HEAD'], check=True,
                          stdout=subprocess.PIPE, universal_newlines=True).stdout.strip()
    assert profile['hf_repo'] == repo and profile['hf_revision'] == head, (name, profile['hf_revision'], head)
    assert 'Planner family %s.' % family in text, (name, text[:300])
    assert '# unverified:' in text and profile['config']['architectures'], name
    print('%s: %s at %s, family %s, %d unverified' % (name, repo, head[:12], family, text.count('# unverified:')))
spec = yaml.safe_load(open(os.path.join(out, 'deepseek-v3.yml')))['serving']['speculative']
assert spec['algorithm'] == 'NEXTN' and spec['num_draft_tokens'] > 0, spec
PY

log "case parsers: the chat template read from the mirror picks what the pinned SGLang's auto would"
profile -e profile_repo=openai/gpt-oss-20b >"${state}/gen.log" 2>&1 || { tail -n 30 "${state}/gen.log"; fail "profile gpt-oss-20b"; }
python3 - "${out}/gpt-oss-20b.yml" <<'PY' || fail "the parsers of gpt-oss-20b"
import re, sys, yaml
text = open(sys.argv[1]).read()
serving = yaml.safe_load(text)['serving']
# No tokenizer.json in the repository: a rule that tests the vocabulary stays open, so auto is kept and the comment
# names what the template gives.
assert serving['reasoning_parser'] == serving['tool_call_parser'] == 'auto', serving
flat = re.sub(r'\s*#\s+', ' ', text)
assert 'unverified: gpt-oss (chat template rule gpt_oss), unless the vocabulary tests of rules apertus2509' in flat, text
print('gpt-oss-20b: reasoning/tool parsers auto, the template gives gpt-oss (rule gpt_oss)')
PY

log "case log: the generated Llama-3.1-8B profile against a real start-up log"
PYTHONPATH="${ANSIBLE_COLLECTIONS_PATH}${PYTHONPATH:+:${PYTHONPATH}}" python3 - "${root}" "${out}/meta-llama-3.1-8b.yml" <<'PY' || fail "plan vs log"
import os, re, sys, yaml
root, path = sys.argv[1:3]
from ansible_collections.llmops.inference.plugins.module_utils.sglang import release as sr
from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan as vp
table = sr.load_table(yaml.safe_load(open(os.path.join(root, 'profiles', 'sglang_releases.yml'))))
release = sr.release(table, str(yaml.safe_load(open(os.path.join(root, 'profiles', 'sglang.yml')))['version']))
text = open(os.path.join(root, 'tests', 'fixtures', 'sglang_logs', 'dense_gqa',
                         'llama-3.1-8b-instruct-tp1-docs-send-request.md')).read()
before = float(re.search(r'Load weight begin\. avail mem=([\d.]+) GB', text).group(1))
after = float(re.search(r'Load weight end\..*?avail mem=([\d.]+) GB', text).group(1))
frac = float(re.search(r'mem_fraction_static=([\d.]+)', text).group(1))
logged = int(re.search(r'max_total_num_tokens=(\d+)', text).group(1))
profile = yaml.safe_load(open(path))
result = vp.plan(model_config=profile['config'], gpu_memory_mib=81559, tp_size=1, release=release,
                 mem_fraction_static=frac, free_memory_before_load_gib=before, free_memory_after_load_gib=after,
                 runtime_overhead_gib=0.0, context_length=8192)
bound = (0.005 + 0.005 * (1 - frac)) * (1 << 30) / result['kv_bytes_per_token']
error = result['kv_cache_tokens'] - logged
print('planned %d tokens, logged %d: %+d (%.4f %%), allowed +-%d' % (result['kv_cache_tokens'], logged, error,
                                                                     100.0 * error / logged, bound))
assert abs(error) <= bound
PY

log "case refusal: an architecture in no planner family"
if profile -e profile_repo=llmops-test/unknown-arch >"${state}/refusal.log" 2>&1; then fail "the unknown architecture was profiled"; fi
grep -q 'Gemma3ForCausalLM is not one the planner sizes' "${state}/refusal.log" || { tail -n 20 "${state}/refusal.log"; fail "refusal message"; }
grep -q 'DeepseekV3ForCausalLM' "${state}/refusal.log" || fail "the refusal lacks the supported list"
[ ! -e "${out}/unknown-arch.yml" ] || fail "a refused profile was written"

log "case keep: an edited profile is not replaced without force; check mode writes nothing"
printf '# edited by the operator\n' >>"${out}/gpt-oss-120b.yml"
before="$(sha256sum "${out}/gpt-oss-120b.yml")"
if profile -e profile_repo=openai/gpt-oss-120b >"${state}/keep.log" 2>&1; then fail "an edited profile was replaced"; fi
grep -q 'exists with other content; not replaced' "${state}/keep.log" || { tail -n 20 "${state}/keep.log"; fail "keep message"; }
profile -e profile_repo=openai/gpt-oss-120b -e profile_force=true --check >"${state}/check.log" 2>&1 || fail "check mode"
grep -q 'would write' "${state}/check.log" || fail "check mode did not say it would write"
[ "$(sha256sum "${out}/gpt-oss-120b.yml")" = "${before}" ] || fail "check mode changed the file"

log "case hints: from another directory, the endpoint of the inventory, every printed command run as printed"
mkdir -p "${state}/operator/inv/group_vars" "${state}/operator/mine"
printf 'all:\n  children:\n    sglang_servers:\n      hosts:\n        gpu1:\n' >"${state}/operator/inv/hosts.yml"
printf 'hf_model_endpoint: %s\n' "${endpoint}" >"${state}/operator/inv/group_vars/sglang_servers.yml"
# As an operator types it in a shell (its $PWD), no endpoint given and none in the environment.
here_profile() { (cd "${state}/operator" && PWD="${state}/operator" HF_ENDPOINT='' ansible-playbook \
    "${root}/playbooks/profile.yml" -i inv -e profile_hub_python="${client}/bin/python" "$@"); }
here_profile -e profile_repo=deepseek-ai/DeepSeek-V3 -e profile_dest=mine >"${state}/h1.log" 2>&1 ||
    { tail -n 30 "${state}/h1.log"; fail "profile from another directory"; }
grep -q "read through ${endpoint} (hf_model_endpoint of the inventory's sglang_servers)" "${state}/h1.log" ||
    { tail -n 30 "${state}/h1.log"; fail "the inventory's endpoint was not used"; }
[ -f "${state}/operator/mine/deepseek-v3.yml" ] || fail "DEST=mine is not relative to the operator's directory"
# DeepSeek-V3 has its MTP layer: the plan of the profile with and without it (they are run by tests/unit/test_make_profile.py).
grep -q "plan MODEL=deepseek-v3 TP=1 SPEC=off" "${state}/h1.log" || { tail -n 20 "${state}/h1.log"; fail "the SPEC=off plan"; }
printf '# edited by the operator\n' >>"${state}/operator/mine/deepseek-v3.yml"
edited="$(sha256sum <"${state}/operator/mine/deepseek-v3.yml")"
if here_profile -e profile_repo=deepseek-ai/DeepSeek-V3 -e profile_dest=mine >"${state}/h2.log" 2>&1; then
    fail "the edited profile was replaced"
fi
# The three commands, unwrapped from the YAML callback's lines, in the order printed.
python3 - "${state}/h2.log" "${state}/cmds" <<'PY' || { tail -n 30 "${state}/h2.log"; fail "the printed commands"; }
import re, sys, yaml
text = open(sys.argv[1]).read()
# The task's result as the callback prints it: YAML (this checkout's ansible.cfg) or JSON (ansible-test's own
# config); YAML reads both.
block = text.split('TASK [Say what is there and the commands that go on from here]', 1)[1].split('=>', 1)[1]
lines = yaml.safe_load(block.split('\n\n', 1)[0])['msg']
cmds = [re.split(r':\s{2,}', line, maxsplit=1)[1] for line in lines[1:]]
assert [re.split(r':\s{2,}', line)[0].strip() for line in lines[1:]] == [
    'see the difference (writes nothing)', 'replace it', 'write it elsewhere'], lines
open(sys.argv[2], 'w').write('\n'.join(cmds) + '\n')
PY
mapfile -t cmds <"${state}/cmds"
(cd "${state}/operator" && eval "${cmds[0]}") >"${state}/h3.log" 2>&1 || { tail -n 30 "${state}/h3.log"; fail "the diff command"; }
grep -q '^-# edited by the operator' "${state}/h3.log" || { tail -n 30 "${state}/h3.log"; fail "the diff command shows no diff"; }
[ "$(sha256sum <"${state}/operator/mine/deepseek-v3.yml")" = "${edited}" ] || fail "the diff command wrote"
(cd "${state}/operator" && eval "${cmds[2]}") >"${state}/h4.log" 2>&1 || { tail -n 30 "${state}/h4.log"; fail "the DEST command"; }
[ -f "${state}/operator/deepseek-v3.new.yml" ] || fail "the DEST command wrote elsewhere"
(cd "${state}/operator" && eval "${cmds[1]}") >"${state}/h5.log" 2>&1 || { tail -n 30 "${state}/h5.log"; fail "the FORCE command"; }
cmp -s "${state}/operator/mine/deepseek-v3.yml" "${state}/operator/deepseek-v3.new.yml" || fail "FORCE did not write the profile"
# Two servers on different mirrors: refused before any read, with the command for each (the first one is run).
printf '        gpu2:\n          hf_model_endpoint: http://127.0.0.1:9\n' >>"${state}/operator/inv/hosts.yml"
if here_profile -e profile_repo=deepseek-ai/DeepSeek-V3 -e profile_dest=elsewhere >"${state}/h6.log" 2>&1; then
    fail "servers with different endpoints were not refused"
fi
first="$(grep -o "  ansible-playbook [^']*-e profile_endpoint=${endpoint}" "${state}/h6.log" | head -n 1)"
if [ -z "${first}" ] || ! grep -q 'profile_endpoint=http://127.0.0.1:9' "${state}/h6.log"; then
    tail -n 20 "${state}/h6.log"
    fail "the different endpoints' commands"
fi
(cd "${state}/operator" && eval "${first}") >"${state}/h7.log" 2>&1 || { tail -n 30 "${state}/h7.log"; fail "the endpoint command"; }
grep -q "read through ${endpoint} (profile_endpoint)" "${state}/h7.log" || fail "the endpoint command read elsewhere"
log "ok: all cases passed"
