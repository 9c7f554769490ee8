# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter the deploy ends with: the same lines make plan prints, for the example's resolved deployments."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.llmops.inference.plugins.filter.deployment_summary import FilterModule
from ansible_collections.llmops.inference.plugins.plugin_utils.views import deployment_summary as ds

from collection_paths import ROOT

summary = FilterModule().filters()['deployment_summary']


def test_the_first_refusal_comes_first_and_failed_hosts_are_named():
    refusal = 'b: 1 problem, nothing was changed on any host:\n1. llmops_tp_size = 3: no. Fix: 4.'
    lines = summary({'a': {'kind': 'proxmox_host', 'nvidia_addresses': ['x'], 'vfio_addresses': []},
                     'b': {'refusal': refusal}, 'c': {'refusal': 'c: 1 problem\n1. other. Fix: y.'}},
                    ['a', 'b', 'c', 'd'], ['d'])
    assert lines == ['REFUSED: the deploy refused b', refusal, '',
                     'a  Proxmox host: 1 GPUs on nvidia, 0 on vfio-pci (VMs)',
                     'b  REFUSED (the message above)', 'c  REFUSED: other. Fix: y.',
                     'd  FAILED during the run (its error is above)']
    with pytest.raises(Exception, match='dict of host'):
        summary(['a'], ['a'])


def test_the_vms_that_take_the_vfio_cards_are_named():
    host = {'kind': 'proxmox_host', 'nvidia_addresses': [], 'vfio_addresses': ['x', 'y', 'z'],
            'vfio_vms': [{'vmid': 200, 'hostpci': [{'slot': 0, 'address': 'x'}, {'slot': 1, 'address': 'y'}]},
                         {'vmid': 201, 'hostpci': [{'slot': 4, 'address': 'z'}]}]}
    assert summary({'pve': host}, ['pve'], []) == [
        'pve  Proxmox host: 0 GPUs on nvidia, 3 on vfio-pci (VM 200 (2 GPUs), VM 201 (1 GPUs))']


def test_the_deploy_and_make_plan_print_the_same_lines(tmp_path):
    """make plan's console (tests/tools/plan_console.py) reads the deployment.json files make plan wrote; the deploy
    gives the filter llmops_deployment itself. Both go through deployment_summary.host_lines: rendered here from
    the deployment.json of a real make plan of the example, the console's lines are the filter's."""
    out = str(tmp_path / 'plan')
    env = dict(os.environ, SGLANG_API_KEY='', PLAN_CLI_VARS='')
    run = subprocess.run([sys.executable, os.path.join(ROOT, 'tests', 'tools', 'plan_console.py'),
                          '--inventory', 'inventories/example', '--out', out], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    hosts = ['pve1', 'sglang-ct']
    deployments = {}
    for host in hosts:
        with open(os.path.join(out, host, 'deployment.json')) as handle:
            deployments[host] = json.load(handle)
    for line in summary(deployments, hosts):
        assert line in run.stdout.splitlines(), (line, run.stdout)
    assert ds.host_lines('sglang-ct', deployments['sglang-ct'])[0].startswith('sglang-ct  FITS')
