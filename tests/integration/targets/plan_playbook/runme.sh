#!/usr/bin/env bash
# playbooks/plan.yml end to end (`make plan`): the example inventory passes and writes its reports and the exact
# artefacts the deploy would write (the SGLang unit, its EnvironmentFile with secrets redacted, the GPU split plan,
# the LXC lines, the Prometheus scrape config, rules and Grafana dashboard); for every host of the example (also with
# the H200 profile) and of inventory_layers (a setting on every layer: profile, group, host, extra vars) the plan and
# the rendered unit describe the same server (check_consistency.py); an override that cannot load (122B BF16 at TP2)
# fails with a report and no unit. The refusals of bad inputs are the bad_inputs target's.
# Runs under `ansible-test integration --local plan_playbook` and by hand.
set -eux
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=../setup_collection_root/collection_root.sh
source "$here/../setup_collection_root/collection_root.sh"
root="${root:?}"  # set by collection_root.sh (shellcheck cannot see it)
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
python="$(dirname "$(command -v ansible-playbook)")/python"
[ -x "$python" ] || python=python3

# The seed lab fits (tightly) and gets plan.json + plan.md + the rendered files. An API key in the controller's
# environment (the sglang_server role's default source) must show up nowhere: not in the files, not in the log.
secret="plan-it-$$-Zx81secret"
SGLANG_API_KEY="$secret" ansible-playbook "$root/playbooks/plan.yml" -i "$root/inventories/example" \
  -e "llmops_plan_output_dir=$out/ok" >"$out/ok.log" 2>&1 || { tail -n 60 "$out/ok.log"; exit 1; }
test -s "$out/ok/sglang-ct/plan.md"
if grep -rq "$secret" "$out/ok" "$out/ok.log"; then
  echo "the API key leaked into the plan output" >&2
  exit 1
fi
"$python" - "$out/ok" <<'PY'
import json, os, re, sys
top = sys.argv[1]
ct = os.path.join(top, 'sglang-ct')
plan = json.load(open(os.path.join(ct, 'plan.json')))
assert plan['error'] is None and plan['plan']['fits'] is True and plan['problems'] == [], plan
assert plan['plan']['max_running_requests'] == 21, plan['plan']['max_running_requests']

# The unit the sglang_server role would write (its own template), for the seed: MTP with full flag names, the mamba
# strategy of 0.5.23, no running-request flag (SGLang's own choice, 21, bound by the mamba slots, as the plan
# computes it), indices in CUDA_VISIBLE_DEVICES, P2P off behind SEV-SNP.
unit = open(os.path.join(ct, 'files/etc/systemd/system/sglang-qwen3.5-122b-a10b.service')).read()
exec_start = [line for line in unit.splitlines() if line.startswith('ExecStart=')]
assert len(exec_start) == 1, unit
argv = exec_start[0].split()
for flags in (['--speculative-algorithm', 'NEXTN'], ['--speculative-num-steps', '3'], ['--speculative-eagle-topk', '1'],
              ['--speculative-num-draft-tokens', '4'], ['--mamba-radix-cache-strategy', 'extra_buffer'],
              ['--tp-size', '4'], ['--model-path', '/shared/models/Qwen3.5-122B-A10B@main'],
              ['--reasoning-parser', 'qwen3'], ['--tool-call-parser', 'qwen3_coder']):
    i = argv.index(flags[0])
    assert argv[i:i + len(flags)] == flags, (flags, exec_start)
assert '--max-running-requests' not in argv, exec_start
assert '--disable-custom-all-reduce' in argv, exec_start
assert not any(a.startswith('--speculative-algo') and a != '--speculative-algorithm' for a in argv), exec_start
assert '--api-key' not in argv and 'SGLANG_ENABLE_SPEC_V2' not in unit, unit
assert '/data' not in exec_start[0], exec_start
env_lines = [line for line in unit.splitlines() if line.startswith('Environment=')]
assert 'Environment=NCCL_P2P_DISABLE=1' in env_lines and 'Environment=CUDA_VISIBLE_DEVICES=0,1,2,3' in env_lines, env_lines
assert 'Environment=CUDA_DEVICE_ORDER=PCI_BUS_ID' in env_lines, env_lines
assert 'EnvironmentFile=/etc/sglang/qwen3.5-122b-a10b.env' in unit, unit

# Its EnvironmentFile: the key is there (SGLANG_API_KEY was set), its value is not.
env = open(os.path.join(ct, 'files/etc/sglang/qwen3.5-122b-a10b.env')).read()
values = [line for line in env.splitlines() if line and not line.startswith('#')]
assert values == ['SGLANG_API_KEY=<redacted>'], env
argv_json = json.load(open(os.path.join(ct, 'sglang_argv.json')))
assert argv == argv[:len(argv) - len(argv_json['argv'])] + argv_json['argv'], (argv_json['argv'], argv)
assert argv_json['command'][-len(argv_json['argv']):] == argv_json['argv'], argv_json
deployment = json.load(open(os.path.join(ct, 'deployment.json')))
assert deployment['argv'] == argv_json['argv'] and deployment['plan']['max_running_requests'] == 21, deployment['argv']
assert deployment['settings']['max_running_requests'] == {
    'value': 21, 'source': 'sglang default (no flag; the plan: bound by mamba slots)'}, deployment['settings']
assert deployment['settings']['speculative_num_draft_tokens'] == {'value': 4, 'source': 'profile'}, deployment['settings']
assert argv_json['environment']['NCCL_P2P_DISABLE'] == '1', argv_json

# The split: exactly the four NUMA-1 cards (and their audio functions) move to vfio-pci, the NUMA-0 ones stay.
lines = [line for line in open(os.path.join(top, 'pve1/gpu_partition.txt')).read().splitlines() if not line.startswith('#')]
split = [line for line in lines if not line.startswith('qm set ')]
assert len(split) == 8, split
moved = sorted(line.split()[0] for line in split if re.search(r': nvidia \(/dev/nvidia\d\) -> vfio-pci', line))
stays = sorted(line.split()[0] for line in split if 'stays on nvidia' in line)
numa = dict((line.split()[0], int(re.search(r'NUMA (\d+)', line).group(1))) for line in split)
assert moved == sorted(a for a, n in numa.items() if n == 1) and len(moved) == 4, split
assert stays == sorted(a for a, n in numa.items() if n == 0) and len(stays) == 4, split
assert all('snd_hda_intel -> vfio-pci' in line for line in split if '-> vfio-pci' in line), split
# Then the VM side: VM 200 of the inventory takes the four moved cards, in hostpci0..3 (llmops_deployment.vfio_vms).
assert lines[8:] == ['qm set 200 ' + ' '.join('--hostpci%d %s,pcie=1' % (n, a) for n, a in enumerate(moved))], lines

# The container gets the four NUMA-0 GPUs plus the control and UVM nodes.
lxc = [line for line in open(os.path.join(ct, 'lxc_gpu.conf')).read().splitlines() if not line.startswith('#')]
nodes = [line.split(': ', 1)[1] for line in lxc]
assert nodes[:4] == ['/dev/nvidia%d' % i for i in range(4)] and '/dev/nvidiactl' in nodes and '/dev/nvidia-uvm' in nodes, lxc
assert not any(n in nodes for n in ('/dev/nvidia4', '/dev/nvidia5', '/dev/nvidia6', '/dev/nvidia7')), lxc
PY

"$python" "$here/check_consistency.py" "$out/ok"

# The monitoring files of the same run (the monitoring role's render): promtool accepts the rules, and the alerts
# state the plan's numbers (queue depth = the planned max_running_requests, the MTP floor = half the profile's
# expected accept length).
command -v promtool >/dev/null || apt-get install -y -q --no-install-recommends prometheus >/dev/null
promtool check rules "$out/ok/monitoring/prometheus/rules/llmops-sglang.rules.yml"
"$python" - "$out/ok" <<'PY'
import json, os, sys
top = sys.argv[1]
plan = json.load(open(os.path.join(top, 'sglang-ct', 'plan.json')))['plan']
rules = open(os.path.join(top, 'monitoring', 'prometheus', 'rules', 'llmops-sglang.rules.yml')).read()
assert 'sglang:num_queue_reqs{job="sglang",llmops_host="sglang-ct"}) > %d' % plan['max_running_requests'] in rules, rules
assert 'llmops:sglang_accept_length:rate5m{llmops_host="sglang-ct"} < 1.55' in rules, rules
config = open(os.path.join(top, 'monitoring', 'prometheus', 'prometheus.yml')).read()
assert '127.0.0.1:30000' in config and 'llmops_host: sglang-ct' in config, config
board = json.load(open(os.path.join(top, 'monitoring', 'grafana', 'llmops-sglang.json')))
assert board['uid'] == 'llmops-sglang' and len(board['panels']) == 9, board['panels']
summary = open(os.path.join(top, 'monitoring', 'monitoring.md')).read()
assert '| sglang-ct | 127.0.0.1:30000 | SGLangQueueDepthHigh | %d | plan max_running_requests | 5m |' % plan['max_running_requests'] in summary, summary
PY

# The symptom of issue #13: on H200 the plan said 48 running requests (SGLang's speculative default) and the unit 83.
# One resolution: the plan and the unit agree. Nothing asks for a cap, so the unit renders no flag and the plan says
# what SGLang then does (the speculative reset to 48, issue #26). Its recommendation names the cap the mamba pool holds.
ansible-playbook "$root/playbooks/plan.yml" -i "$root/inventories/example" -e llmops_gpu_profile=h200 \
  -e "llmops_plan_output_dir=$out/h200" >"$out/h200.log" 2>&1 || { tail -n 60 "$out/h200.log"; exit 1; }
"$python" "$here/check_consistency.py" "$out/h200"
"$python" - "$out/h200/sglang-ct/plan.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))['plan']
assert plan['max_running_requests_bound_by'] == 'speculative_default' and plan['max_running_requests'] == 48, plan
caps = [int(r['flags'][1]) for r in plan['recommendations'] if r['flags'][0] == '--max-running-requests']
assert len(caps) == 1 and caps[0] > 48, plan['recommendations']
argv = json.load(open(sys.argv[1].replace('plan.json', 'sglang_argv.json')))['argv']
assert '--max-running-requests' not in argv, argv
PY

# 122B BF16 does not load on two 96 GB GPUs: the run fails, the report says why, and no unit is rendered for it
# (also none left over from the passing run in the same directory).
cp -a "$out/ok" "$out/tp2"
if ansible-playbook "$root/playbooks/plan.yml" -i "$root/inventories/example" \
    -e "llmops_plan_output_dir=$out/tp2" -e llmops_tp_size=2 -e '{"llmops_gpu_indices": [0, 1]}' >"$out/tp2.log" 2>&1; then
  echo "plan.yml passed a host that cannot load" >&2
  exit 1
fi
grep -q 'DOES NOT START' "$out/tp2/sglang-ct/plan.md"
test ! -e "$out/tp2/sglang-ct/files" && test ! -e "$out/tp2/sglang-ct/sglang_argv.json"
# Nor its picture (plan.html): the passing run drew one, the refused host keeps none.
test -s "$out/ok/sglang-ct/plan.html" && test ! -e "$out/tp2/sglang-ct/plan.html"
"$python" - "$out/tp2/sglang-ct/plan.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
assert [p['kind'] for p in plan['problems']] == ['plan_weights'] and 'cannot load' in plan['error'], plan
PY
# The split and the LXC lines do not depend on the TP size: byte-identical (the artefacts are diffable).
cmp "$out/ok/sglang-ct/lxc_gpu.conf" "$out/tp2/sglang-ct/lxc_gpu.conf"
cmp "$out/ok/pve1/topology.html" "$out/tp2/pve1/topology.html"
diff <(grep -v '^#' "$out/ok/pve1/gpu_partition.txt") <(grep -v '^#' "$out/tp2/pve1/gpu_partition.txt")

# A second inventory with a setting on every layer; the profile layer is a profiles directory of its own.
cp -a "$root/profiles" "$out/profiles"
"$python" - "$out/profiles/models" <<'PY'
import sys, yaml
base = sys.argv[1] + '/'
profile = yaml.safe_load(open(base + 'qwen3.5-122b-a10b.yml'))
profile.update(name='layered-qwen', served_model_name='qwen-layers')
profile['serving']['tp_size'] = 2
profile['serving']['speculative'].update(num_steps=2, num_draft_tokens=3)
yaml.safe_dump(profile, open(base + 'layered-qwen.yml', 'w'), sort_keys=False)
PY
ansible-playbook "$root/playbooks/plan.yml" -i "$here/inventory_layers" -e "llmops_profiles_dir=$out/profiles" \
  -e llmops_context_length=131072 -e "llmops_plan_output_dir=$out/layers" >"$out/layers.log" 2>&1 \
  || { tail -n 60 "$out/layers.log"; exit 1; }
"$python" "$here/check_consistency.py" "$out/layers" "$here/inventory_layers/expect.yml"
echo "plan_playbook: all cases passed"
