# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter llmops.inference.plan_topology_html: make plan's topology.html of a Proxmox host from its split plan."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
name: plan_topology_html
short_description: The GPUs of a Proxmox host by NUMA node and PCI address, with their split, as an HTML page
description:
  - Takes a Proxmox host's resolved C(llmops_deployment) and the gpu_partition role's C(gpu_partition_plan) and
    returns C(topology.html) as C(make plan) writes it under C(build/plan/<host>/) - the GPUs by NUMA node and PCI
    address, their IOMMU group and other functions, the driver now and after the split (nvidia or vfio-pci), and
    their destination (the LXC container that gets them, the VM and its hostpci slot, or the VMs through vfio-pci when
    no VM is named); a card the split cannot move
    is marked with its error.
  - Inline SVG only, no script and no external asset; the same inputs give the same bytes.
  - The destinations are the resolver's (C(containers), C(vfio_vms), C(vfio_addresses)), the drivers and groups the
    split plan's;
    nothing is planned again (plugins/plugin_utils/views/plan_pictures.py).
options:
  _input:
    description: The Proxmox host's C(llmops_deployment).
    type: dict
    required: true
  split:
    description: C(gpu_partition_plan), the result of the llmops.inference.gpu_partition module in check mode.
    type: dict
    required: true
  source:
    description: What the split was planned against, for the page (a sysfs fixture's name or a sysfs root).
    type: str
  host:
    description: The host name for the page's titles (default C(llmops_deployment.host)).
    type: str
'''

EXAMPLES = r'''
- name: Write topology.html beside gpu_partition.txt
  llmops.inference.plan_files:
    dest: "{{ playbook_dir }}/build/plan/{{ inventory_hostname }}"
    files:
      topology.html: "{{ llmops_deployment | llmops.inference.plan_topology_html(gpu_partition_plan, source='/') }}"
'''

RETURN = r'''
_value:
  description: The HTML page.
  type: str
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.llmops.inference.plugins.plugin_utils.views import plan_pictures


def plan_topology_html(deployment, split, source=None, host=None):
    if not isinstance(deployment, dict):
        raise AnsibleFilterError('plan_topology_html: the input is an llmops_deployment (a dict), not %s'
                                 % type(deployment).__name__)
    try:
        return plan_pictures.topology_html(host or deployment.get('host') or '?', deployment, split, source)
    except plan_pictures.PictureError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {'plan_topology_html': plan_topology_html}
