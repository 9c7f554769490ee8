#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_info
short_description: Inventory NVIDIA PCI functions from sysfs (drivers, IOMMU groups, NUMA, /dev/nvidiaN minors)
version_added: 0.1.0
description:
  - Reads C(/sys/bus/pci/devices), C(/sys/kernel/iommu_groups) and C(/proc/driver/nvidia/gpus/*/information) and
    returns one entry per GPU with its address, IDs, bound driver, C(driver_override), NUMA node, local CPUs, IOMMU
    group with every member, and the C(/dev/nvidiaN) minor, UUID and model the nvidia driver assigned.
  - Identical GPUs (same vendor:device) are told apart by address, minor, UUID and NUMA node.
  - When run against the live host (O(root=/)) and C(nvidia-smi) is installed, adds its index, name, total memory,
    compute capability, UUID and the compute processes of every GPU, joined by PCI bus id.
  - Bridges (class C(0x06xxxx), for example NVSwitch on HGX boards) are not inventoried. A non-GPU function in the
    same slot as a GPU (HDMI/DP audio C(.1), USB-C) is reported in that GPU's RV(gpus[].companion_functions)
    instead of as an entry of its own. Other functions of O(vendor_ids) (for example a NIC used as a stand-in for a
    GPU in a VM) are entries.
  - Missing or inconsistent data (NUMA node V(-1), no IOMMU groups, a GPU on nvidia without its procfs file,
    nvidia-smi errors) is reported as warnings; the module never fails for it.
  - This module is read-only.
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.attributes.read_only
attributes:
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: posix
    details: Linux sysfs layout.
options:
  root:
    description:
      - Directory under which C(sys/) and C(proc/) are read, for example a container root file system or a fixture
        tree. C(nvidia-smi) runs only when this is V(/).
    type: path
    default: /
  vendor_ids:
    description:
      - PCI vendor IDs to inventory, with or without C(0x), any case.
      - V(0x10de) is NVIDIA; add for example V(0x8086) to inventory an emulated e1000e NIC in a test VM.
    type: list
    elements: str
    default: ['0x10de']
  addresses:
    description:
      - Only report these PCI functions. Accepts C(0000:41:00.0), the nvidia-smi spelling C(00000000:41:00.0),
        C(41:00.0) (domain 0) and upper case; results always use the sysfs spelling C(0000:41:00.0).
      - Unknown addresses produce a warning. Omitted or empty means every function.
    type: list
    elements: str
  run_nvidia_smi:
    description:
      - Query C(nvidia-smi) (when installed, O(root=/) and V(0x10de) is in O(vendor_ids)) for names, memory,
        compute capability, indexes and compute processes.
    type: bool
    default: true
notes:
  - C(/dev/nvidiaN) minors follow the driver's probe order, not slot order, and can change when GPUs move between
    nvidia and vfio-pci; nvidia-smi's index is its own enumeration. Use RV(gpus[].device_minor) for device nodes.
  - O(root) other than V(/) follows relative symlinks inside the tree; absolute symlinks would point at the host.
seealso:
  - name: Linux PCI sysfs ABI
    description: Attributes under C(/sys/bus/pci/devices).
    link: https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-bus-pci
"""

EXAMPLES = r"""
- name: Inventory the GPUs of the host
  llmops.inference.gpu_info:
  register: gpu

- name: Show which GPUs are on the nvidia driver and their /dev nodes
  ansible.builtin.debug:
    msg: "{{ item.address }} -> {{ item.device_node }} (NUMA {{ item.numa_node }})"
  loop: "{{ gpu.gpus | selectattr('driver', 'equalto', 'nvidia') | list }}"
  loop_control:
    label: "{{ item.address }}"

- name: Look at two GPUs only, addressed the way nvidia-smi prints them
  llmops.inference.gpu_info:
    addresses:
      - 00000000:41:00.0
      - 00000000:61:00.0
  register: pair

- name: Inventory an emulated e1000e pair in a test VM (stand-in for identical GPUs)
  llmops.inference.gpu_info:
    vendor_ids: ['0x8086']
    run_nvidia_smi: false
  register: nics

- name: Inventory a container root file system from the host
  llmops.inference.gpu_info:
    root: /var/lib/lxc/101/rootfs
"""

RETURN = r"""
gpus:
  description:
    - One entry per GPU (or other non-bridge function of O(vendor_ids)), sorted by PCI address.
  returned: always
  type: list
  elements: dict
  contains:
    address:
      description: PCI address in sysfs spelling.
      type: str
      returned: always
      sample: "0000:41:00.0"
    slot:
      description: Domain, bus and device without the function (all functions of the card), as C(qm set -hostpci) takes it.
      type: str
      returned: always
      sample: "0000:41:00"
    vendor_id:
      description: PCI vendor ID.
      type: str
      returned: always
      sample: "0x10de"
    device_id:
      description: PCI device ID.
      type: str
      returned: always
      sample: "0x2bb5"
    pci_id:
      description: C(vendor:device) without C(0x), as lspci -nn prints it.
      type: str
      returned: always
      sample: "10de:2bb5"
    subsystem_vendor_id:
      description: PCI subsystem vendor ID; null when unreadable.
      type: str
      returned: always
      sample: "0x10de"
    subsystem_device_id:
      description: PCI subsystem device ID (tells board variants with the same device ID apart); null when unreadable.
      type: str
      returned: always
      sample: "0x204e"
    class:
      description: 24-bit PCI class code.
      type: str
      returned: always
      sample: "0x030200"
    is_gpu:
      description: Whether the class is a VGA (C(0x0300xx)) or 3D (C(0x0302xx)) controller.
      type: bool
      returned: always
      sample: true
    is_audio:
      description: Whether the class is an HD audio controller (C(0x0403xx)).
      type: bool
      returned: always
      sample: false
    driver:
      description: Name of the bound driver; null when no driver is bound.
      type: str
      returned: always
      sample: vfio-pci
    driver_override:
      description: Contents of C(driver_override); null when unset (sysfs shows C((null))).
      type: str
      returned: always
      sample: vfio-pci
    numa_node:
      description: NUMA node of the function; V(-1) when unknown (a warning says so).
      type: int
      returned: always
      sample: 0
    local_cpulist:
      description: CPUs local to the function (C(local_cpulist)); null when unreadable.
      type: str
      returned: always
      sample: "0-63,128-191"
    iommu_group:
      description: IOMMU group number; null when the IOMMU is off.
      type: int
      returned: always
      sample: 27
    iommu_group_members:
      description: Every function of the IOMMU group, this one included, sorted by address; empty without a group.
      type: list
      elements: dict
      returned: always
      contains: &function_summary
        address:
          description: PCI address.
          type: str
          returned: always
          sample: "0000:41:00.1"
        vendor_id:
          description: PCI vendor ID.
          type: str
          returned: always
          sample: "0x10de"
        device_id:
          description: PCI device ID.
          type: str
          returned: always
          sample: "0x22e8"
        pci_id:
          description: C(vendor:device).
          type: str
          returned: always
          sample: "10de:22e8"
        class:
          description: 24-bit PCI class code.
          type: str
          returned: always
          sample: "0x040300"
        is_gpu:
          description: Whether the class is a VGA or 3D controller.
          type: bool
          returned: always
          sample: false
        is_audio:
          description: Whether the class is an HD audio controller.
          type: bool
          returned: always
          sample: true
        is_bridge:
          description: Whether the function is a bridge (has a C(pci_bus) directory); bridges need no vfio binding.
          type: bool
          returned: always
          sample: false
        driver:
          description: Bound driver; null when unbound.
          type: str
          returned: always
          sample: snd_hda_intel
        driver_override:
          description: C(driver_override); null when unset.
          type: str
          returned: always
          sample: null
    companion_functions:
      description: The other functions in the same slot (for example the HDMI/DP audio function C(.1)), sorted by address.
      type: list
      elements: dict
      returned: always
      contains: *function_summary
    device_minor:
      description: Minor number of C(/dev/nvidiaN) from C(/proc/driver/nvidia/gpus/<address>/information); null unless bound to nvidia.
      type: int
      returned: always
      sample: 2
    device_node:
      description: C(/dev/nvidia<device_minor>); null unless bound to nvidia.
      type: str
      returned: always
      sample: /dev/nvidia2
    uuid:
      description: GPU UUID from the nvidia procfs file (or nvidia-smi); null when neither knows the GPU.
      type: str
      returned: always
      sample: GPU-80e13570-bcf1-2bda-d935-9bcfe797af99
    model:
      description: Model name from the nvidia procfs file; null unless bound to nvidia.
      type: str
      returned: always
      sample: NVIDIA H200
    nvidia_smi:
      description: What nvidia-smi reports for this GPU; null when nvidia-smi was not run or does not list it.
      type: dict
      returned: always
      contains:
        index:
          description: nvidia-smi index (NVML enumeration order, not the C(/dev) minor).
          type: int
          returned: success
          sample: 0
        name:
          description: Product name.
          type: str
          returned: success
          sample: NVIDIA H200
        uuid:
          description: GPU UUID.
          type: str
          returned: success
          sample: GPU-80e13570-bcf1-2bda-d935-9bcfe797af99
        memory_total_mib:
          description: Total memory in MiB (C(memory.total)).
          type: int
          returned: success
          sample: 143771
        compute_cap:
          description: CUDA compute capability; null when this nvidia-smi cannot report it.
          type: str
          returned: success
          sample: "9.0"
        processes:
          description: Compute processes on this GPU; null when the process query failed.
          type: list
          elements: dict
          returned: success
          contains:
            pid:
              description: Process ID (host PID namespace; LXC processes appear here too).
              type: int
              returned: success
              sample: 412233
            process_name:
              description: Process name or path.
              type: str
              returned: success
              sample: python3
            used_memory_mib:
              description: GPU memory used by the process in MiB; null when nvidia-smi cannot tell.
              type: int
              returned: success
              sample: 88630
count:
  description: Number of entries in RV(gpus).
  returned: always
  type: int
  sample: 2
by_numa_node:
  description: Addresses of RV(gpus) grouped by NUMA node; keys are strings, V(-1) collects unknown nodes.
  returned: always
  type: dict
  sample: {"0": ["0000:01:00.0", "0000:21:00.0"], "1": ["0000:81:00.0"]}
iommu_enabled:
  description: Whether C(/sys/kernel/iommu_groups) has any group.
  returned: always
  type: bool
  sample: true
nvidia_smi_available:
  description: Whether nvidia-smi ran and its GPU query succeeded.
  returned: always
  type: bool
  sample: false
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils.gpu.nvidia_smi import (
    NvidiaSmiParseError,
    GPU_QUERY_FIELDS,
    invalid_field,
    join_inventory,
    parse_compute_apps,
    parse_query_gpu,
    query_compute_apps_args,
    query_gpu_args,
)
from ansible_collections.llmops.inference.plugins.module_utils.host.pci_sysfs import (
    NVIDIA_VENDOR_ID,
    PciAddressError,
    PciSysfs,
    build_inventory,
    normalize_pci_address,
    normalize_vendor_id,
)


def is_host_root(root):
    """nvidia-smi describes the running host, so its output only belongs to an inventory of '/'."""
    return os.path.realpath(root) == '/'


def _first_line(text):
    lines = [line.strip() for line in (text or '').splitlines() if line.strip()]
    return lines[0] if lines else ''


def query_nvidia_smi(module, nvidia_smi, inventory, selected):
    """Run the GPU and process queries and join them into ``inventory['gpus']``; return availability."""
    warn = inventory['warnings'].append
    fields = GPU_QUERY_FIELDS
    rc, out, err = module.run_command([nvidia_smi] + query_gpu_args(fields))
    if rc != 0 and invalid_field(out + err) == 'compute_cap':
        # Drivers older than ~510 do not know compute_cap; keep the rest of the data.
        fields = tuple(field for field in fields if field != 'compute_cap')
        rc, out, err = module.run_command([nvidia_smi] + query_gpu_args(fields))
    if rc != 0:
        warn('nvidia-smi --query-gpu failed (rc=%d): %s' % (rc, _first_line(out) or _first_line(err)))
        return False
    try:
        smi_gpus = parse_query_gpu(out, fields)
    except NvidiaSmiParseError as exc:
        warn('nvidia-smi --query-gpu output not understood: %s' % exc)
        return False

    apps = None
    rc, out, err = module.run_command([nvidia_smi] + query_compute_apps_args())
    if rc != 0:
        warn('nvidia-smi --query-compute-apps failed (rc=%d): %s; processes are null'
             % (rc, _first_line(out) or _first_line(err)))
    else:
        try:
            apps = parse_compute_apps(out)
        except NvidiaSmiParseError as exc:
            warn('nvidia-smi --query-compute-apps output not understood: %s; processes are null' % exc)
    inventory['warnings'].extend(join_inventory(inventory['gpus'], smi_gpus, apps, selected))
    return True


def main():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type='path', default='/'),
            vendor_ids=dict(type='list', elements='str', default=['0x10de']),
            addresses=dict(type='list', elements='str'),
            run_nvidia_smi=dict(type='bool', default=True),
        ),
        supports_check_mode=True,
    )
    root = module.params['root']
    if not os.path.isdir(root):
        module.fail_json(msg='root %s is not a directory' % root, root=root)
    try:
        vendor_ids = [normalize_vendor_id(vendor) for vendor in module.params['vendor_ids']]
        addresses = [normalize_pci_address(address) for address in module.params['addresses'] or []]
    except (PciAddressError, ValueError) as exc:
        module.fail_json(msg='invalid parameter: %s' % exc, vendor_ids=module.params['vendor_ids'],
                         addresses=module.params['addresses'])

    inventory = build_inventory(PciSysfs(root), vendor_ids, addresses or None)

    nvidia_smi_available = False
    if module.params['run_nvidia_smi'] and NVIDIA_VENDOR_ID in vendor_ids and is_host_root(root):
        nvidia_smi = module.get_bin_path('nvidia-smi')
        if nvidia_smi:
            nvidia_smi_available = query_nvidia_smi(module, nvidia_smi, inventory, set(addresses) or None)
        elif any(entry['driver'] == 'nvidia' for entry in inventory['gpus']):
            inventory['warnings'].append('GPUs are bound to nvidia but nvidia-smi is not on PATH: nvidia_smi is null')

    for warning in inventory['warnings']:
        module.warn(warning)
    module.exit_json(
        changed=False,
        gpus=inventory['gpus'],
        count=inventory['count'],
        by_numa_node=inventory['by_numa_node'],
        iommu_enabled=inventory['iommu_enabled'],
        nvidia_smi_available=nvidia_smi_available,
    )


if __name__ == '__main__':
    main()
