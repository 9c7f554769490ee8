#!/usr/bin/env bash
# Every bad input of tests/fixtures/bad_inputs.yml, through `make plan` (playbooks/plan.yml) AND the deploy's
# validation (playbooks/deploy.yml --tags always): one inventory host per case (a copy of the seed's container on
# its own copy of the Proxmox host), all in one run of each playbook. Each refused host must carry the case's
# expected text (the variable, the value, the rule) and a fix, in both runs, with the same message; no case may
# pass; the seed's hosts must not be refused; and no host may be contacted (every host has a tripwire connection
# that records any attempt). Runs under `ansible-test integration --local bad_inputs` and by hand.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=../setup_collection_root/collection_root.sh
source "$here/../setup_collection_root/collection_root.sh"
root="${root:?}"  # set by collection_root.sh (shellcheck cannot see it)
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
export ANSIBLE_CONNECTION_PLUGINS="$here/connection_plugins"
export TRIPWIRE_LOG="$out/tripwire.log"
export ANSIBLE_FORKS=10
python="$(dirname "$(command -v ansible-playbook)")/python"
[ -x "$python" ] || python=python3
inventory="$("$python" "$root/tests/fixtures/bad_inputs.py" "$out/inventory")"

started=$SECONDS
set +e
SGLANG_API_KEY=bad-inputs-key ansible-playbook "$root/playbooks/plan.yml" -i "$inventory" \
  -e "llmops_plan_output_dir=$out/plan" >"$out/plan.log" 2>&1
plan_rc=$?
SGLANG_API_KEY=bad-inputs-key ANSIBLE_STDOUT_CALLBACK=ansible.builtin.json \
  ansible-playbook "$root/playbooks/deploy.yml" -i "$inventory" --tags always >"$out/deploy.json" 2>"$out/deploy.err"
deploy_rc=$?
set -e
echo "bad_inputs: plan.yml rc=$plan_rc, deploy.yml --tags always rc=$deploy_rc, $((SECONDS - started)) s"
if [ "$plan_rc" = 0 ] || [ "$deploy_rc" = 0 ]; then
  echo "a playbook passed an inventory of bad inputs" >&2
  exit 1
fi
if [ -s "$TRIPWIRE_LOG" ]; then
  echo "hosts were contacted:" >&2
  cat "$TRIPWIRE_LOG" >&2
  exit 1
fi
"$python" "$here/check.py" "$root" "$out"
