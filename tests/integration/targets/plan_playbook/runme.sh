#!/usr/bin/env bash
# playbooks/plan.yml end to end: the example inventory passes and writes its reports; an override that cannot
# load (122B BF16 at TP2) and an override inventory with one bad host both make the run fail, with reports.
# Runs under `ansible-test integration --local plan_playbook` and by hand.
set -eux
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=../setup_collection_root/collection_root.sh
source "$here/../setup_collection_root/collection_root.sh"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

# The seed lab fits (tightly) and gets plan.json + plan.md.
ansible-playbook "$root/playbooks/plan.yml" -i "$root/inventories/example" -e "llmops_plan_output_dir=$out/ok"
test -s "$out/ok/sglang-ct/plan.md"
python3 - "$out/ok/sglang-ct/plan.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
assert plan['error'] is None and plan['plan']['fits'] is True, plan
assert plan['plan']['max_running_requests'] == 22, plan['plan']['max_running_requests']
PY

# 122B BF16 does not load on two 96 GB GPUs: the run fails, the report says why.
if ansible-playbook "$root/playbooks/plan.yml" -i "$root/inventories/example" \
    -e "llmops_plan_output_dir=$out/tp2" -e llmops_tp_size=2; then
  echo "plan.yml passed a host that cannot load" >&2
  exit 1
fi
grep -q 'DOES NOT START' "$out/tp2/sglang-ct/plan.md"
python3 - "$out/tp2/sglang-ct/plan.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
assert plan['error_kind'] == 'weights' and 'cannot load' in plan['error'], plan
PY

# An inventory whose host_vars override profiles: one host fits (H200), one does not (397B NVFP4 on 2 GPUs).
if ansible-playbook "$root/playbooks/plan.yml" -i "$here/inventory_override/hosts.yml" \
    -e "llmops_plan_output_dir=$out/override"; then
  echo "plan.yml passed an inventory with a host that cannot load" >&2
  exit 1
fi
python3 - "$out/override" <<'PY'
import json, os, sys
good = json.load(open(os.path.join(sys.argv[1], 'h200-ct', 'plan.json')))
bad = json.load(open(os.path.join(sys.argv[1], 'nvfp4-tp2-ct', 'plan.json')))
assert good['plan']['verdict'] == 'FITS', good
assert bad['error_kind'] == 'weights', bad
PY
