#!/usr/bin/env bash
# Run ansible-test from a copy of the checkout at .../ansible_collections/llmops/inference (ansible-test insists on
# that path) with the offline get-pip stand-in in place. Usage: tests/tools/ansible-test.sh sanity|units|integration ARGS
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
venv="${VENV:-$repo/.venv}"
# One copy per run, so runs at the same time (CI, several people on one machine) never delete each other's tree.
mkdir -p "$repo/build"
base="$(mktemp -d "$repo/build/ansible-test.XXXXXX")"
trap 'rm -rf "$base"' EXIT
work="$base/ansible_collections/llmops/inference"

pip_version="$("$venv/bin/python" - <<'PY'
import re, ansible_test, os
src = open(os.path.join(os.path.dirname(ansible_test.__file__), "_internal", "python_requirements.py")).read()
print(re.search(r"pip='([0-9.]+)'", src).group(1))
PY
)"
mkdir -p ~/.ansible/test/cache
# ansible-test makes its SSH key pair on first use, and two runs that start together on a fresh machine (make test runs
# the integration halves side by side) both find it missing: the second ssh-keygen stops at "Overwrite (y/n)?". The
# pair is made here once, under a lock, as ansible-test makes it (PEM, the RSA header paramiko reads), and the offline
# get-pip is put in place under the same lock.
(
    flock 9
    if [ ! -f ~/.ansible/test/id_rsa ] || [ ! -f ~/.ansible/test/id_rsa.pub ]; then
        rm -f ~/.ansible/test/id_rsa ~/.ansible/test/id_rsa.pub
        ssh-keygen -m PEM -q -t rsa -N '' -f ~/.ansible/test/id_rsa
        sed -i -E 's/(BEGIN|END) PRIVATE KEY/\1 RSA PRIVATE KEY/' ~/.ansible/test/id_rsa
    fi
    # Under the same lock: install(1) unlinks and re-creates its destination, so two runs installing at once race
    # ("cannot create regular file ...: File exists", seen in a cold make test); an unchanged file is left alone.
    get_pip=~/.ansible/test/cache/"get_pip_${pip_version//./_}.py"
    if ! cmp -s "$repo/tests/tools/offline_get_pip.py" "$get_pip"; then
        install -m 0644 "$repo/tests/tools/offline_get_pip.py" "$get_pip.tmp.$$" && mv -f "$get_pip.tmp.$$" "$get_pip"
    fi
) 9>~/.ansible/test/.keygen.lock

# Copy only what git would ship (tracked + untracked-not-ignored), so local venvs and build output never leak in.
mkdir -p "$work"
(cd "$repo" && git ls-files -z --cached --others --exclude-standard | grep -zv '^\.collections/' \
  | xargs -0 -I{} sh -c 'if test -e "{}"; then printf "%s\0" "{}"; fi' | tar --null -T - -cf -) | tar -C "$work" -xf -
# ansible-test sanity needs a git repo view of the tree to decide what is "in" the collection.
(cd "$work" && git init -q && git add -A && git -c user.email=ci@localhost -c user.name=ci commit -qm snapshot)
# ansible-test passes the targets only its own environment variables, so what the integration targets need from
# this machine goes into tests/integration/integration_config.yml (ansible-test's vars file for every role target):
# the lab SGLang venv's python, which has torch, for gpu_p2p_check's CPU-simulation runs (P2PCHECK_TEST_PYTHON set,
# even empty, is used as it is; setup-bench-venv.sh builds the venv once, under its lock), and whether the run must
# be complete (LLMOPS_REQUIRE_ALL, default 1 since the runtime is provided here: a missing one fails, not skips).
if [ "${1:-}" = integration ]; then
    p2p_python="${P2PCHECK_TEST_PYTHON-$("$repo/tests/bench/setup-bench-venv.sh" | tail -n 1)}"
    require_all="${LLMOPS_REQUIRE_ALL:-1}"
    "$venv/bin/python" - "$work/tests/integration/integration_config.yml" "$p2p_python" "$require_all" <<'PY'
import json, sys
path, python, require = sys.argv[1:]
if require not in ('0', '1'):
    sys.exit('ansible-test.sh: LLMOPS_REQUIRE_ALL=%r: the value must be 1 (a missing lab runtime fails) or 0 (it '
             'may skip). Fix: export LLMOPS_REQUIRE_ALL=1 or LLMOPS_REQUIRE_ALL=0' % require)
with open(path, 'w') as handle:
    json.dump({'llmops_test_p2p_python': python, 'llmops_test_require_all': require == '1'}, handle)
    handle.write('\n')
PY
fi
cd "$work"
export PATH="$venv/bin:$PATH"
ansible-test "$@"
