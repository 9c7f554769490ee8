#!/usr/bin/env bash
# One model across hosts, the parts that run without GPUs (docs/multinode.md), on two real "nodes": two network
# namespaces joined by a veth pair, each with its own address and its own interface name. Each node is an inventory
# host whose Python runs inside its namespace (ip netns exec), so every module of the group preflight runs on its node:
#   1. make plan renders inventories/multinode: both nodes' units (ranks, --dist-init-addr, the head alone on HTTP,
#      NCCL/gloo interface environment) and the topology in plan.md;
#   2. the lab group (TP2, one rank per node): the deploy's group preflight passes (versions, interfaces, ports, a real
#      TCP probe between the nodes) and the deploy's multi-node all-reduce runs with the lab SGLang venv's torch, gloo
#      on CPU tensors, through the rendered --dist-init-addr (the head's veth address) and GLOO_SOCKET_IFNAME (each
#      node's own interface name): nodes_ok on both nodes;
#   3. unreachable port: the head's namespace drops the rendezvous port (iptables): the probe fails within its bound
#      and the refusal names the pair of nodes and the port;
#   4. version mismatch: node b sees another virtualenv at the venv path (a private mount namespace): the refusal
#      names node b, what it has and what the head has.
# Runs under `ansible-test integration --local tp_group_rendezvous` (root) and by hand. TP_IT_KEEP=1 keeps the state.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=../setup_collection_root/collection_root.sh
source "$here/../setup_collection_root/collection_root.sh"
root="${root:?}"  # set by collection_root.sh (shellcheck cannot see it)
export ANSIBLE_CONFIG="${ANSIBLE_CONFIG:-$root/ansible.cfg}"
command -v ansible-playbook >/dev/null 2>&1 || export PATH="$root/.venv/bin:$PATH"
python="$(dirname "$(command -v ansible-playbook)")/python"
[ -x "$python" ] || python=python3
log() { printf '[tp_group-it %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
started=$SECONDS

# Names with this run's id: nothing of another run (or of the host) is touched.
id=$$
ns_a="llmops-tpa-$id"
ns_b="llmops-tpb-$id"
if_a="tpa$id"
if_b="tpb$id"
addr_a=10.231.77.1
addr_b=10.231.77.2
port=20000
state="$(mktemp -d "${TMPDIR:-/var/tmp}/tp_group_it.XXXXXX")"
cleanup() {
    ip netns del "$ns_a" 2>/dev/null || true
    ip netns del "$ns_b" 2>/dev/null || true
    if [ "${TP_IT_KEEP:-0}" = 1 ]; then log "kept $state"; else rm -rf "$state"; fi
}
trap cleanup EXIT

# 1. The rendered units of inventories/multinode (controller only).
ansible-playbook "$root/playbooks/plan.yml" -i "$root/inventories/multinode" -e "llmops_plan_output_dir=$state/plan" \
    >"$state/plan.log" 2>&1 || { tail -n 40 "$state/plan.log"; exit 1; }
"$python" "$here/check_plan.py" "$state/plan"
log "1. make plan of inventories/multinode: units, ranks and topology checked ($((SECONDS - started)) s)"

log "the lab SGLang venv (its torch does the gloo all-reduce; cached)"
sglang_python="$("$root/tests/bench/setup-bench-venv.sh" | tail -n 1)"
venv="$(dirname "$(dirname "$sglang_python")")"

ip netns add "$ns_a"
ip netns add "$ns_b"
ip link add "$if_a" type veth peer name "$if_b"
ip link set "$if_a" netns "$ns_a"
ip link set "$if_b" netns "$ns_b"
ip -n "$ns_a" addr add "$addr_a/24" dev "$if_a"
ip -n "$ns_b" addr add "$addr_b/24" dev "$if_b"
for ns in "$ns_a" "$ns_b"; do ip -n "$ns" link set lo up; done
ip -n "$ns_a" link set "$if_a" up
ip -n "$ns_b" link set "$if_b" up

# Each node's Python runs in its namespace; node b's may also see another virtualenv at the venv path (case 4).
for node in a b; do
    ns_var="ns_$node"
    cat >"$state/python-$node" <<EOF
#!/bin/sh
if [ -n "\${TP_IT_OTHER_VENV:-}" ] && [ "$node" = b ]; then
    exec unshare --mount --propagation private sh -c 'mount --bind "\$0" "$venv" && exec ip netns exec ${!ns_var} /usr/bin/python3 "\$@"' "\$TP_IT_OTHER_VENV" "\$@"
fi
exec ip netns exec ${!ns_var} /usr/bin/python3 "\$@"
EOF
    chmod 0755 "$state/python-$node"
done

cat >"$state/hosts.yml" <<EOF
all:
  children:
    sglang_servers:
      children:
        tp_lab:
          hosts:
            tp-node-a:
              ansible_python_interpreter: $state/python-a
              llmops_node_rank: 0
              llmops_node_address: $addr_a
              llmops_nccl_socket_ifname: $if_a
            tp-node-b:
              ansible_python_interpreter: $state/python-b
              llmops_node_rank: 1
              llmops_node_address: $addr_b
              llmops_nccl_socket_ifname: $if_b
          vars:
            ansible_connection: local
            llmops_tp_group: tp_lab
            llmops_model_profile: qwen3-32b
            llmops_gpu_profile: h200
            llmops_tp_size: 2
            llmops_gpu_indices: [0]
            llmops_model_dir: /srv/models
            llmops_http_host: 0.0.0.0
            llmops_dist_init_port: $port
            llmops_dist_timeout: 60
            llmops_allow_no_api_key: true
            llmops_sglang_venv: $venv
            llmops_deploy_check_gpus: false
            llmops_record_dir: $state/records
            sglang_server_install: false
EOF

run() {  # run NAME TAGS: the playbook with the json callback; its rc, its log in $state/NAME.json
    local name=$1 tags=$2 t0=$SECONDS rc=0
    ANSIBLE_STDOUT_CALLBACK=ansible.builtin.json ansible-playbook "$here/playbook.yml" -i "$state/hosts.yml" \
        -e "lab_root=$root" --tags "$tags" >"$state/$name.json" 2>"$state/$name.err" || rc=$?
    log "$name: rc=$rc in $((SECONDS - t0)) s"
    return $rc
}

# 2. The group as it should be.
run good always,preflight,nccl || { cat "$state/good.err"; tail -c 4000 "$state/good.json"; exit 1; }
"$python" "$here/check_runs.py" good "$state/good.json" "$addr_a:$port" "$if_a" "$if_b"

# 3. The head drops the rendezvous port: the probe gives up within its bound and names the pair and the port.
ip netns exec "$ns_a" iptables -A INPUT -p tcp --dport "$port" -j DROP
if run unreachable always,preflight; then echo "the preflight passed with the rendezvous port dropped" >&2; exit 1; fi
"$python" "$here/check_runs.py" unreachable "$state/unreachable.json" "$addr_a:$port"
ip netns exec "$ns_a" iptables -D INPUT -p tcp --dport "$port" -j DROP

# 4. Node b has another virtualenv at the venv path (a real one, without SGLang): refused, naming node b.
"$python" -m venv --without-pip "$state/other-venv"
export TP_IT_OTHER_VENV="$state/other-venv"
if run mismatch always,preflight; then echo "the preflight passed with another virtualenv on node b" >&2; exit 1; fi
unset TP_IT_OTHER_VENV
"$python" "$here/check_runs.py" mismatch "$state/mismatch.json" "$root"

log "all cases passed in $((SECONDS - started)) s"
