# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu_partition and lxc_gpu_config run in the controller's worker (plugins/plugin_utils/actions/in_process.py) give
what the module run gives, through a real ansible-playbook: each task runs twice, once with the controller's own
Python as interpreter (in the worker) and once through a symlink to it (another path, so the normal AnsiballZ module
run), and the two registered results must be equal - a plan, a refusal (fail_json) and check mode off (never in the
worker). -vvv shows which way each ran, so a test that compared two module runs would fail too."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from collection_paths import ROOT

PROC_DEVICES = os.path.join(ROOT, 'tests', 'fixtures', 'proc_devices', 'pve_seed.txt')
SEED = 'seed_pve_8x_rtx6000'

PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  vars:
    ansible_connection: local
    here: "{{ ansible_playbook_python }}"
    cases:
      split: {module: gpu_partition, check: true, args: {root: "%(root)s", vendor_device: ['10de:2bb5'], persistence: driverctl,
              devices: [{numa_node: 1, count: 4, driver: vfio-pci}, {numa_node: 0, driver: nvidia}]}}
      split_refused: {module: gpu_partition, check: true, args: {root: "%(root)s", vendor_device: ['10de:2bb5'],
                      devices: [{address: '0000:ff:00.0', driver: vfio-pci}]}}
      lxc: {module: lxc_gpu_config, check: true, args: {path: "%(out)s/101.conf", create: true, check_device_nodes: false,
            numa_node: 0, root: "%(root)s", proc_devices_path: "%(proc)s"}}
      lxc_refused: {module: lxc_gpu_config, check: true, args: {path: "%(out)s/101.conf", create: true, numa_node: 7,
                    check_device_nodes: false, root: "%(root)s", proc_devices_path: "%(proc)s"}}
      lxc_written: {module: lxc_gpu_config, check: false, args: {path: "%(out)s/{{ item.1 }}.conf", create: true,
                    check_device_nodes: false, numa_node: 0, root: "%(root)s", proc_devices_path: "%(proc)s"}}
  tasks:
    - name: "{{ item.0 }} via {{ item.1 }}"
      ansible.builtin.include_tasks: one.yml
      loop: "{{ cases | list | product(['worker', 'module']) | list }}"
"""

ONE = """
- name: "{{ item.0 }} {{ item.1 }}"
  llmops.inference.%(module)s: "{{ cases[item.0].args }}"
  check_mode: "{{ cases[item.0].check }}"
  vars:
    ansible_python_interpreter: "{{ here if item.1 == 'worker' else '%(link)s' }}"
  register: result
  ignore_errors: true

- name: Keep it
  llmops.inference.plan_files:
    dest: "%(out)s/results"
    files: "{{ {item.0 ~ '.' ~ item.1 ~ '.json': result} }}"
"""


@pytest.fixture(scope='module')
def played(sysfs_roots, tmp_path_factory):
    out = str(tmp_path_factory.mktemp('in_process'))
    link = os.path.join(out, 'python')
    os.symlink(sys.executable, link)
    values = dict(root=sysfs_roots[SEED], out=out, proc=PROC_DEVICES, link=link)
    with open(os.path.join(out, 'play.yml'), 'w', encoding='utf-8') as handle:
        handle.write(PLAYBOOK % values)
    # one.yml: the two tasks once per module, each for the cases of its module
    with open(os.path.join(out, 'one.yml'), 'w', encoding='utf-8') as handle:
        handle.write('\n'.join(
            (ONE % dict(values, module=module)).replace('- name: "{{ item.0 }} {{ item.1 }}"',
                                                        '- name: "{{ item.0 }} {{ item.1 }}"\n  when: cases[item.0].module == %r' % module)
            .replace('- name: Keep it', '- name: Keep it\n  when: cases[item.0].module == %r' % module)
            for module in ('gpu_partition', 'lxc_gpu_config')))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.collections'), ANSIBLE_NOCOLOR='1')
    run = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-vvv', '-i', 'localhost,',
                          os.path.join(out, 'play.yml')], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    results = {}
    for name in os.listdir(os.path.join(out, 'results')):
        with open(os.path.join(out, 'results', name), encoding='utf-8') as handle:
            results[name[:-len('.json')]] = json.load(handle)
    return results, run.stdout


@pytest.mark.parametrize('case', ['split', 'split_refused', 'lxc', 'lxc_refused', 'lxc_written'])
def test_the_worker_gives_what_the_module_run_gives(played, case):
    results, _log = played
    worker, module = results[case + '.worker'], results[case + '.module']
    if case == 'lxc_written':  # written for real (a module run both times), each to its own file
        assert worker['path'].endswith('/worker.conf') and module['path'].endswith('/module.conf')
        worker['path'] = module['path'] = None
    assert worker == module
    if case.endswith('_refused'):
        assert worker['failed'] and worker['msg']
    else:
        assert not worker.get('failed') and (worker.get('plan_lines') or worker.get('lines'))


def test_each_way_ran_as_named(played):
    _results, log = played
    # _execute_module logs the module file it runs, for module runs only: the four cases named module, and
    # lxc_written both times (check mode off never runs in the worker).
    assert log.count('Using module file') == 6, log[-3000:]
