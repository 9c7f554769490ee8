# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The README a newcomer trusts: its install commands run as printed, offline, against a fresh collections path,
and what its Requirements and License say is read back from the files it cites.

The install test runs the fenced block of README.md that holds ``ansible-galaxy collection build`` as bash runs it,
from the checkout, with the venv's tools first on PATH, no ANSIBLE_* variable of the caller and HOME in a temporary
directory (ansible's defaults, ``~/.ansible/collections`` first, as on a fresh account); the block's ``/tmp`` is the
test's own directory. ansible-doc must answer from the installed copy, and that copy then resolves its own example
inventory with ``llmops.inference.deploy --tags always`` (the resolution and its summary, no host contacted), as the
Quick start says. The git install runs the README's ``git+file://`` line with this checkout as the clone. About 7 s.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import importlib.metadata
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from collection_paths import ROOT, pin_profile

BIN = os.path.dirname(sys.executable)


def read(path):
    with open(os.path.join(ROOT, path), encoding='utf-8') as handle:
        return handle.read()


def load(path):
    return yaml.safe_load(read(path))


README = read('README.md')
# The ansible-core release line of the pinned tool chain (2.19 for 2.19.14): the floors the README states are its.
PINNED_LINE = '.'.join(re.search(r'^ansible-core==(\S+)$', read('requirements/dev.txt'), re.M).group(1).split('.')[:2])


def fenced_blocks(text):
    return [m.group(1) for m in re.finditer(r'^```[a-z]*\n(.*?)^```', text, re.S | re.M)]


def commands(block):
    """The command lines of a fenced block, without their trailing comments."""
    out = []
    for line in block.splitlines():
        line = re.sub(r'\s+#.*$', '', line).strip()
        if line and not line.startswith('#'):
            out.append(line)
    return out


def clean_env(tmp_path):
    """No ANSIBLE_* of the caller (the Makefile exports the checkout's config and collections path), HOME in tmp_path:
    ansible's defaults (~/.ansible/collections first) as on a fresh account, the venv's tools first on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith('ANSIBLE_')}
    home = tmp_path / 'home'
    home.mkdir(exist_ok=True)
    env.update(HOME=str(home), PATH=BIN + os.pathsep + env.get('PATH', ''), ANSIBLE_NOCOLOR='1')
    return env


def run(script, env, cwd):
    """A README block (or one command) as bash runs it, the block's cd included; stops at the first failure."""
    result = subprocess.run(['bash', '-euo', 'pipefail', '-c', script], cwd=str(cwd), env=env, capture_output=True,
                            text=True, timeout=180, check=False)
    assert result.returncode == 0, '%s\n%s\n%s' % (script, result.stdout[-3000:], result.stderr[-3000:])
    return result.stdout


def installed(tmp_path):
    return tmp_path / 'home' / '.ansible' / 'collections' / 'ansible_collections' / 'llmops' / 'inference'


def test_the_readme_begins_with_make_plan_and_make_test():
    first = commands(fenced_blocks(README)[0])
    assert first == ['make plan', 'make test'], first
    assert README.index('```') < README.index('## '), 'the two commands come before the first section'


def test_the_tarball_install_of_the_readme_works_offline(tmp_path):
    block = [b for b in fenced_blocks(README) if 'ansible-galaxy collection build' in b]
    assert len(block) == 1, 'README.md: one block with the tarball install'
    lines = commands(block[0])
    version = load('galaxy.yml')['version']
    assert 'ansible-galaxy collection install --offline llmops-inference-%s.tar.gz' % version in lines, lines
    assert lines[-1].startswith('ansible-doc llmops.inference.'), lines
    # The block runs as printed from the checkout, its /tmp being this test's own directory.
    script = '\n'.join(re.sub(r'(?<![\w/])/tmp(?![\w/])', str(tmp_path), line) for line in lines)
    assert script != '\n'.join(lines), 'the block builds into /tmp and installs from there'
    env = clean_env(tmp_path)
    doc = run(script, env, ROOT)
    # The documentation came from the installed copy, not from the checkout.
    assert str(installed(tmp_path) / 'plugins' / 'modules') in doc, doc[:400]
    manifest = json.loads((installed(tmp_path) / 'MANIFEST.json').read_text())
    assert manifest['collection_info']['version'] == version
    assert manifest['collection_info']['license'] == load('galaxy.yml')['license']

    # The Quick start's resolution-only run, from the installed copy and its own example inventory.
    assert 'ansible-playbook llmops.inference.deploy -i <inventory> --tags always' in README
    env['SGLANG_API_KEY'] = 'readme-test-key'
    out = run('ansible-playbook llmops.inference.deploy -i %s --tags always'
              % (installed(tmp_path) / 'inventories' / 'example'), env, tmp_path)
    recap = out[out.index('PLAY RECAP'):]
    assert re.search(r'sglang-ct\s+: ok=\d+ .*failed=0', recap), recap
    assert 'readme-test-key' not in out


def test_the_git_install_of_the_readme_works(tmp_path):
    line = [c for b in fenced_blocks(README) for c in commands(b) if c.startswith('ansible-galaxy collection install git+file://')]
    assert line == ['ansible-galaxy collection install git+file:///path/to/a/clone'], line
    if not os.path.isdir(os.path.join(ROOT, '.git')):
        pytest.skip('not a git checkout: nothing to install from git')
    run(line[0].replace('/path/to/a/clone', ROOT), clean_env(tmp_path), tmp_path)
    manifest = json.loads((installed(tmp_path) / 'MANIFEST.json').read_text())
    assert manifest['collection_info']['version'] == load('galaxy.yml')['version']
    assert (installed(tmp_path) / 'plugins' / 'modules' / 'gpu_info.py').is_file()


def test_the_requirements_are_the_ones_the_files_state():
    python = importlib.metadata.metadata('ansible-core')['Requires-Python']
    assert 'Python %s (ansible-core %s\'s own floor' % (python.replace('>=', '>= '), PINNED_LINE) in README, python
    requires = load('meta/runtime.yml')['requires_ansible']
    assert 'ansible-core %s' % requires.replace('>=', '>= ') in README, requires
    pinned = re.search(r'^ansible-core==(\S+)$', read('requirements/dev.txt'), re.M).group(1)
    assert 'tested with ansible-core %s' % pinned in README, pinned
    assert load('galaxy.yml')['dependencies'] == {} and '`dependencies: {}`' in README
    sglang = pin_profile()
    assert 'SGLang %s on the serving host\'s Python %s' % (sglang['version'], sglang['python'].replace('>=', '>= ')) in README
    lock = 'profiles/locks/sglang-%s-py3.11.txt' % sglang['version']
    runtime = re.search(r'^nvidia-cuda-runtime==(\d+)\.(\d+)\.\S+', read(lock), re.M)
    assert '`%s`' % lock in README and '`%s`' % runtime.group(0) in README, runtime.group(0)
    from ansible_collections.llmops.inference.plugins.module_utils.gpu.cuda_compat import cuda_min_driver
    minimum = cuda_min_driver('%s.%s' % runtime.groups())['min_driver']
    assert 'CUDA %s.%s runtime wheels' % runtime.groups() in README and 'driver %s or newer' % minimum in README
    targets = [line for line in README.splitlines() if line.startswith('| targets |')]
    assert len(targets) == 1 and 'Debian 12 (bookworm) and Debian 13 (trixie)' in targets[0], targets
    for name in sorted(os.listdir(os.path.join(ROOT, 'roles'))):
        platforms = {p['name']: p['versions'] for p in load('roles/%s/meta/main.yml' % name)['galaxy_info']['platforms']}
        assert platforms['Debian'] == ['bookworm', 'trixie'], (name, platforms)
        assert set(platforms) <= {'Debian', 'Ubuntu'}, (name, platforms)
        if 'Ubuntu' in platforms:
            # The README names each role that lists Ubuntu, with its releases, and says no test runs there.
            said = re.search(r'`%s`[^`|]*?\(([a-z, ]+)[;)]' % name, targets[0])
            assert said and said.group(1).split(', ') == platforms['Ubuntu'], (name, platforms['Ubuntu'], targets[0])
    assert 'no test runs on Ubuntu' in targets[0]


def test_every_path_the_readme_cites_exists():
    cited = set(re.findall(r'`((?:[a-z_*]+/)+[A-Za-z0-9_.-]*|[a-z_]+\.(?:yml|txt|cfg))`', README))
    assert 'requirements/dev.txt' in cited and 'meta/runtime.yml' in cited, sorted(cited)
    missing = [p for p in sorted(cited) if not glob.glob(os.path.join(ROOT, p))
               and not p.startswith(('build/', 'inventories/prod'))]
    assert missing == [], missing


def test_the_license_is_the_one_galaxy_yml_declares():
    assert load('galaxy.yml')['license'] == ['GPL-3.0-or-later']
    assert '`GPL-3.0-or-later` in `galaxy.yml`' in README and '[COPYING](COPYING)' in README
    text = read('COPYING')
    assert 'GNU GENERAL PUBLIC LICENSE' in text and 'Version 3, 29 June 2007' in text
    # Every module says so too (its header points at COPYING).
    modules = os.path.join(ROOT, 'plugins', 'modules')
    for name in sorted(os.listdir(modules)):
        if name.endswith('.py') and name != '__init__.py':
            with open(os.path.join(modules, name), encoding='utf-8') as handle:
                assert 'SPDX-License-Identifier: GPL-3.0-or-later' in handle.read(2000), name
