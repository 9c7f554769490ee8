#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_partition
short_description: Split identical GPUs between vfio-pci and their host driver by PCI address, persistently
version_added: 0.1.0
description:
  - Moves whole cards (the GPU function and the other functions of its slot, such as the HDMI/DP audio C(.1)) to
    C(vfio-pci) for VM passthrough, or back to their host driver (O(keep_driver), C(nvidia)), chosen by PCI address
    or by selector (NUMA node, count, vendor:device). C(vfio-pci.ids=) cannot do this, it claims every identical card.
  - "Checks first and changes nothing when one fails: the IOMMU is on (otherwise it reports the kernel command line
    change for GRUB or C(/etc/kernel/cmdline) + C(proxmox-boot-tool refresh) and never reboots); every endpoint of each
    IOMMU group of a card that goes to vfio goes with it (a group shared with an unrelated device is refused); no
    function that is about to be unbound is in use (open handles on C(/dev/nvidiaN), C(/dev/vfio/<group>) or the
    device's sysfs files in any process, C(nvidia-smi) compute processes, a network interface that is UP); the
    vfio-pci driver is available."
  - "Binds per function: C(driver_override), then C(unbind) and C(drivers_probe), each write with a deadline
    (O(timeout)), then waits for the C(driver) link to name the wanted driver. C(nvidia-persistenced), which holds
    every C(/dev/nvidiaN) open, is stopped around the binds when it runs and started again afterwards, also after a
    failure."
  - Persists the split for the next boot with driverctl's own state files (C(/etc/driverctl.d/pci-<address>), loaded
    at device discovery by driverctl's udev rule), or with a udev rule that sets C(driver_override) when the device is
    added. Cards not named by any entry are left alone.
  - Idempotent. A second run with the same entries changes nothing. In check mode it returns the plan without writing;
    in diff mode it shows the driver map before and after.
  - Returns the final map (address, driver, NUMA node, IOMMU group, C(/dev/nvidiaN) minor read from the nvidia
    driver, never assumed from slot order, since minors are re-assigned when cards move).
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.attributes.changes
attributes:
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: posix
    details: Linux with PCI sysfs and C(driver_override) (kernel 3.16+).
options:
  devices:
    description:
      - The desired state, a list of entries. Each entry has a O(devices[].driver) and either an O(devices[].address)
        or selector keys (O(devices[].numa_node), O(devices[].count), O(devices[].vendor_device)).
      - Address entries are applied first; for the same card a later entry overrides an earlier one (so host_vars
        can override group_vars when the role concatenates the lists). Selectors then pick, in order, among the
        cards no entry claimed yet, those already on the wanted driver first, then by address.
      - An address of a companion function (the audio C(.1)) stands for its whole card.
    type: list
    elements: dict
    default: []
    suboptions:
      address:
        description: PCI address (C(0000:81:00.0); C(81:00.0) and the nvidia-smi spelling are accepted).
        type: str
      numa_node:
        description: Selector, cards on this NUMA node (V(-1) = unknown).
        type: int
      count:
        description: Selector, exactly this many cards (fails when fewer match). Omitted = every matching card.
        type: int
      vendor_device:
        description: Selector, only cards with this C(vendor:device), for example V(10de:2bb5).
        type: str
      driver:
        description: Where the card goes, O(vfio_driver) or O(keep_driver).
        type: str
        required: true
      name:
        description: A label shown in the plan.
        type: str
  vendor_device:
    description:
      - C(vendor:device) IDs a card's primary function may have. Addresses outside this list are refused, so a typo
        cannot unbind a disk controller.
      - Empty means NVIDIA GPU-class functions (class C(0x0300)/C(0x0302) of vendor C(0x10de)).
    type: list
    elements: str
    default: []
  vfio_driver:
    description: The passthrough driver.
    type: str
    default: vfio-pci
  keep_driver:
    description:
      - The host driver a card returns to. A card going back must end up on it.
      - Tests in a VM use an emulated NIC, for example V(e1000e), because the nvidia driver cannot bind emulated devices.
    type: str
    default: nvidia
  persistence:
    description:
      - How the split survives a reboot.
      - V(driverctl) writes C(/etc/driverctl.d/pci-<address>) (driverctl's own state file; its udev rule loads it
        when the device is discovered). The module does not call C(driverctl set-override), which unbinds with no
        deadline even with C(--noprobe).
      - V(udev) writes C(/etc/udev/rules.d/05-llmops-gpu-partition.rules) setting C(driver_override) on device add,
        and C(/etc/modules-load.d/llmops-gpu-partition.conf) loading the vfio driver.
      - V(auto) uses driverctl when C(/usr/sbin/driverctl) exists, else udev. V(none) changes only the running system.
      - Switching mechanism removes this module's entries of the other one for the cards it manages.
    type: str
    choices: [auto, driverctl, udev, none]
    default: auto
  timeout:
    description: Seconds each sysfs write and each wait for the driver link may take.
    type: float
    default: 10
  manage_persistenced:
    description: Stop the O(persistenced_service) unit around binds that involve the nvidia driver when it is active.
    type: bool
    default: true
  persistenced_service:
    description: The systemd unit of nvidia-persistenced.
    type: str
    default: nvidia-persistenced.service
  load_modules:
    description: C(modprobe) the vfio driver and the keep driver when they are needed and not loaded (O(root=/) only).
    type: bool
    default: true
  kernel_cmdline:
    description:
      - What to do when the IOMMU is off and a card must go to vfio.
      - V(report) fails with the parameters to add, the file to edit and the commands to run.
      - V(apply) edits C(/etc/kernel/cmdline) (systemd-boot, then runs C(proxmox-boot-tool refresh)) or
        C(GRUB_CMDLINE_LINUX_DEFAULT) in C(/etc/default/grub) (then C(update-grub)), binds nothing and returns
        RV(reboot_required=true). It never reboots.
    type: str
    choices: [report, apply]
    default: report
  root:
    description:
      - Directory under which C(sys/), C(proc/) and C(etc/) are used, for example a fixture tree for an offline plan
        (with check mode). Commands (modprobe, systemctl, nvidia-smi, update-grub) run only when this is V(/).
    type: path
    default: /
notes:
  - Proxmox binds by C(vendor device) through C(vfio-pci/new_id) when it starts a VM whose card is not yet on vfio-pci;
    a card pre-bound here is skipped by that code. When a card returns to the host, the module removes such a
    dynamic ID from vfio-pci first, so it cannot grab the card again.
  - A running VM holds C(/dev/vfio/<group>) open; returning its card is refused until the VM is stopped.
  - On the live system (O(root=/)) the module refuses to run as non-root, check mode included, and refuses when the
    open files of any process cannot be read (C(hidepid), another user namespace), because a GPU whose user cannot be
    seen would look idle.
seealso:
  - module: llmops.inference.gpu_info
  - name: VFIO documentation (group viability)
    description: Every device of an IOMMU group must be bound to vfio or unbound.
    link: https://docs.kernel.org/driver-api/vfio.html
"""

EXAMPLES = r"""
- name: NUMA node 1 to vfio-pci for VMs, NUMA node 0 stays on nvidia (seed host, 8x RTX PRO 6000)
  llmops.inference.gpu_partition:
    vendor_device: ["10de:2bb5"]
    devices:
      - {numa_node: 1, count: 4, driver: vfio-pci}
      - {numa_node: 0, driver: nvidia}
  register: split

- name: Show the /dev nodes of the GPUs that stayed (minors change after a split)
  ansible.builtin.debug:
    msg: "{{ split.gpus | selectattr('driver', 'equalto', 'nvidia') | map(attribute='device_node') | list }}"

- name: Give one card back to the host
  llmops.inference.gpu_partition:
    vendor_device: ["10de:2bb5"]
    devices:
      - {address: "0000:81:00.0", driver: nvidia}

- name: Plan offline against a sysfs fixture tree (no host involved)
  llmops.inference.gpu_partition:
    root: /tmp/sysfs_roots/seed_pve_8x_rtx6000
    vendor_device: ["10de:2bb5"]
    devices:
      - {numa_node: 1, count: 4, driver: vfio-pci}
  check_mode: true
  delegate_to: localhost

- name: Test VM - one of two identical e1000e to vfio-pci, its twin stays
  llmops.inference.gpu_partition:
    vendor_device: ["8086:10d3"]
    keep_driver: e1000e
    persistence: driverctl
    devices:
      - {address: "0000:00:03.0", driver: vfio-pci}
      - {address: "0000:00:02.0", driver: e1000e}
"""

RETURN = r"""
plan:
  description: One item per card an entry targets, sorted by address, as computed before any change.
  returned: always
  type: list
  elements: dict
  contains:
    address:
      description: Address of the card's primary function.
      type: str
      returned: always
      sample: "0000:81:00.0"
    target:
      description: The driver the card must end up on.
      type: str
      returned: always
      sample: vfio-pci
    action:
      description: V(none), V(bind) (drivers change), V(override) (only C(driver_override) changes) or V(persist)
        (only the boot-time persistence changes).
      type: str
      returned: always
      sample: bind
    source:
      description: The entry that decided the target.
      type: str
      returned: always
      sample: entry 1
    functions:
      description: The card's functions with their current driver, override and what changes.
      type: list
      elements: dict
      returned: always
    errors:
      description: Why the card cannot move (IOMMU group with foreign members, unexpected driver).
      type: list
      elements: str
      returned: always
plan_lines:
  description: The plan as text, one line per card.
  returned: always
  type: list
  elements: str
  sample: ["0000:81:00.0 [10de:2bb5] NUMA 1, IOMMU group 14: nvidia -> vfio-pci (with function 1 snd_hda_intel) [entry 1]"]
gpus:
  description: The driver map after the run (or as it is, in check mode), one entry per card of O(vendor_device).
  returned: always
  type: list
  elements: dict
  contains:
    address:
      description: Primary function address.
      type: str
      returned: always
      sample: "0000:01:00.0"
    driver:
      description: Bound driver; null when unbound.
      type: str
      returned: always
      sample: nvidia
    driver_override:
      description: C(driver_override); null when unset.
      type: str
      returned: always
      sample: null
    numa_node:
      description: NUMA node; V(-1) when unknown.
      type: int
      returned: always
      sample: 0
    iommu_group:
      description: IOMMU group; null when the IOMMU is off.
      type: int
      returned: always
      sample: 2
    device_minor:
      description: Minor of C(/dev/nvidiaN) as the nvidia driver reports it now; null unless on nvidia.
      type: int
      returned: always
      sample: 2
    device_node:
      description: C(/dev/nvidia<device_minor>); null unless on nvidia.
      type: str
      returned: always
      sample: /dev/nvidia2
    target:
      description: The driver an entry asked for; null for a card no entry names.
      type: str
      returned: always
      sample: nvidia
    managed:
      description: Whether an entry names this card.
      type: bool
      returned: always
      sample: true
    persisted:
      description: The driver persisted for the next boot by the chosen mechanism; null when none.
      type: str
      returned: always
      sample: vfio-pci
    functions:
      description: Every function of the card with its driver, override and group.
      type: list
      elements: dict
      returned: always
persistence:
  description: The persistence mechanism used (V(auto) resolved).
  returned: always
  type: str
  sample: driverctl
iommu_enabled:
  description: Whether the host has IOMMU groups.
  returned: always
  type: bool
  sample: true
reboot_required:
  description: True when O(kernel_cmdline=apply) changed the kernel command line; nothing was bound.
  returned: always
  type: bool
  sample: false
busy:
  description: Reasons a function that would be unbound is in use (the task fails when this is not empty).
  returned: always
  type: list
  elements: str
  sample: ["0000:01:00.0 (10de:2bb5, driver nvidia): pid 4242 (python3) has /dev/nvidia2 open"]
writes:
  description: Every sysfs write made, in order (path and value).
  returned: always
  type: list
  elements: dict
persistenced_restarted:
  description: Whether nvidia-persistenced was stopped around the binds and started again.
  returned: always
  type: bool
  sample: false
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils.host.gpu_partition import (
    PartitionError,
    UDEV_MODULES_LOAD_FILE,
    UDEV_RULES_FILE,
    acs_override_warning,
    busy_reasons,
    driver_map_text,
    driverctl_file,
    edit_grub_default,
    edit_kernel_cmdline,
    final_map,
    iommu_remediation,
    normalize_entries,
    parse_vendor_device,
    plan_lines,
    plan_partition,
    read_persisted,
    render_udev_rules,
    resolve_targets,
    scan_open_handles,
    snapshot,
)
from ansible_collections.llmops.inference.plugins.module_utils.gpu.nvidia_smi import (
    NvidiaSmiParseError,
    parse_compute_apps,
    query_compute_apps_args,
)
from ansible_collections.llmops.inference.plugins.module_utils.host.pci_sysfs import PciSysfs
from ansible_collections.llmops.inference.plugins.module_utils.host.sysfs_bind import BindError, SysfsBinder

# Tests replace this with a fake kernel that reacts to sysfs writes in a fixture tree.
WRITER = None


def build_module():
    return AnsibleModule(
        argument_spec=dict(
            devices=dict(type='list', elements='dict', default=[], options=dict(
                address=dict(type='str'),
                numa_node=dict(type='int'),
                count=dict(type='int'),
                vendor_device=dict(type='str'),
                driver=dict(type='str', required=True),
                name=dict(type='str'),
            )),
            vendor_device=dict(type='list', elements='str', default=[]),
            vfio_driver=dict(type='str', default='vfio-pci'),
            keep_driver=dict(type='str', default='nvidia'),
            persistence=dict(type='str', default='auto', choices=['auto', 'driverctl', 'udev', 'none']),
            timeout=dict(type='float', default=10.0),
            manage_persistenced=dict(type='bool', default=True),
            persistenced_service=dict(type='str', default='nvidia-persistenced.service'),
            load_modules=dict(type='bool', default=True),
            kernel_cmdline=dict(type='str', default='report', choices=['report', 'apply']),
            root=dict(type='path', default='/'),
        ),
        supports_check_mode=True,
    )


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def _write_file(path, content):
    """Write next to the destination and rename (atomic on the same file system)."""
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    tmp = '%s.tmp.%d' % (path, os.getpid())
    with open(tmp, 'w') as handle:
        handle.write(content)
    os.chmod(tmp, 0o644)
    os.rename(tmp, path)


class Partitioner(object):
    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.root = self.params['root']
        self.live = os.path.realpath(self.root) == '/'
        self.sysfs = PciSysfs(self.root)
        self.vfio = self.params['vfio_driver']
        self.keep = self.params['keep_driver']
        self.result = dict(changed=False, plan=[], plan_lines=[], gpus=[], busy=[], writes=[], iommu_enabled=False,
                           reboot_required=False, persistenced_restarted=False, persistence=None)

    # -- helpers -----------------------------------------------------------------------------------------------

    def fail(self, msg, **extra):
        result = dict(self.result)
        result.update(extra)
        self.module.fail_json(msg=msg, **result)

    def path(self, rel):
        return os.path.join(self.root, rel)

    def run(self, args, check_rc=True):
        rc, out, err = self.module.run_command(args, environ_update={'LANGUAGE': 'C', 'LC_ALL': 'C'})
        if check_rc and rc != 0:
            self.fail('%s failed (rc=%d): %s' % (' '.join(args), rc, (err or out).strip()), rc=rc, stdout=out, stderr=err)
        return rc, out, err

    def resolve_persistence(self):
        wanted = self.params['persistence']
        if wanted != 'auto':
            return wanted
        if os.path.exists(self.path('usr/sbin/driverctl')) or (self.live and self.module.get_bin_path('driverctl')):
            return 'driverctl'
        return 'udev'

    # -- main flow -----------------------------------------------------------------------------------------------

    def main(self):
        topology, targets, vendor_devices = self.read_desired_state()
        persisted_all = read_persisted(self.root)
        persisted = persisted_all.get(self.persistence, {}) if self.persistence != 'none' else {}
        plan = plan_partition(topology, targets, self.vfio, self.keep, vendor_devices, persisted, self.persistence)
        stale = self.stale_persistence(plan, persisted_all)
        self.result['plan'] = plan
        self.result['plan_lines'] = plan_lines(plan, self.persistence) + ['  stale: %s' % line for line in stale]
        self.result['gpus'] = final_map(topology, targets, self.vfio, vendor_devices, persisted)

        self.refuse_unsafe(plan, topology)

        # Loading a driver is the first change, so it comes after every refusal.
        binding = [item for item in plan if item['action'] in ('bind', 'override')]
        if any(item['target'] == self.vfio and item['action'] == 'bind' for item in plan):
            self.ensure_driver(topology, self.vfio)
        if any(item['target'] == self.keep and item['action'] == 'bind' for item in plan):
            self.ensure_driver(topology, self.keep)

        changing = bool(binding) or any(item['action'] == 'persist' for item in plan) or bool(stale)
        before_text = driver_map_text(topology, vendor_devices, persisted)
        if self.module.check_mode or not changing:
            self.result['changed'] = changing
            if self.module._diff:
                self.result['diff'] = {'before': before_text, 'after': self.predicted_map(topology, plan, persisted),
                                       'before_header': 'driver map', 'after_header': 'driver map (planned)'}
            return self.result

        self.apply(plan, topology)
        self.write_persistence(plan, persisted_all)
        self.verify_applied(targets, vendor_devices, before_text)
        return self.result

    def read_desired_state(self):
        """(topology, targets, vendor devices): the options checked, the persistence resolved and the entries resolved
        against the host's PCI topology now."""
        params = self.params
        if not os.path.isdir(self.root):
            self.fail('root %s is not a directory' % self.root)
        try:
            vendor_devices = set(parse_vendor_device(value) for value in params['vendor_device']) or None
            entries = normalize_entries(params['devices'], self.vfio, self.keep)
        except PartitionError as exc:
            self.fail('invalid desired state: %s' % exc)
        self.vendor_devices = vendor_devices
        self.persistence = self.resolve_persistence()
        self.result['persistence'] = self.persistence

        topology = snapshot(self.sysfs)
        self.result['iommu_enabled'] = topology['iommu_enabled']
        try:
            targets, notes = resolve_targets(topology, entries, vendor_devices)
        except PartitionError as exc:
            self.fail('invalid desired state: %s' % exc, gpus=final_map(topology, {}, self.vfio, vendor_devices))
        for note in notes:
            self.module.warn(note)
        self.targets = targets
        return topology, targets, vendor_devices

    def refuse_unsafe(self, plan, topology):
        """Every refusal, before any change (check mode included): no IOMMU for vfio, plan errors, not root, open
        files that cannot be read, functions in use."""
        proc_cmdline = _read(self.path('proc/cmdline'))
        acs = acs_override_warning(proc_cmdline)
        if acs:
            self.module.warn(acs)

        wants_vfio = any(item['target'] == self.vfio for item in plan)
        if wants_vfio and not topology['iommu_enabled']:
            self.iommu_off(proc_cmdline)

        errors = ['%s: %s' % (item['address'], error) for item in plan for error in item['errors']]
        if errors:
            self.fail('refusing to change anything: %s' % ' | '.join(errors))

        # A process whose fds cannot be read would look idle: refuse instead of guessing (check mode included).
        if self.live and os.geteuid() != 0:
            self.fail('gpu_partition must run as root (become: true): as uid %d it cannot read /proc/<pid>/fd of other '
                      'users\' processes, so a GPU in use would look idle. Nothing was changed.' % os.geteuid())
        handles, unreadable = scan_open_handles(self.root)
        if unreadable:
            self.fail('refusing to decide whether the GPUs are in use: the open files of %d process(es) cannot be read '
                      '(PIDs %s; /proc mounted with hidepid, or another user namespace). Run as root on the host '
                      'itself. Nothing was changed.' % (len(unreadable), ', '.join(str(p) for p in unreadable[:10])),
                      unreadable_pids=unreadable)
        apps = self.compute_apps(plan, topology)
        busy = busy_reasons(plan, topology, handles, apps, vfio_driver=self.vfio)
        self.result['busy'] = busy
        if busy:
            self.fail('refusing to unbind functions that are in use: %s' % ' | '.join(busy))

    def verify_applied(self, targets, vendor_devices, before_text):
        """After the binds: the driver map as the host has it now, and a second look at the plan proves the result:
        nothing may be left to do."""
        after = snapshot(self.sysfs)
        persisted_after = read_persisted(self.root).get(self.persistence, {}) if self.persistence != 'none' else {}
        self.result['gpus'] = final_map(after, targets, self.vfio, vendor_devices, persisted_after)
        self.result['changed'] = True
        if self.module._diff:
            self.result['diff'] = {'before': before_text,
                                   'after': driver_map_text(after, vendor_devices, persisted_after),
                                   'before_header': 'driver map', 'after_header': 'driver map'}
        replan = plan_partition(after, targets, self.vfio, self.keep, vendor_devices, persisted_after, self.persistence)
        leftover = [item['address'] for item in replan if item['action'] != 'none']
        if leftover:
            self.fail('after binding, %s still differ(s) from the desired state' % ', '.join(leftover))

    def predicted_map(self, topology, plan, persisted):
        """The driver map (and next-boot drivers) the plan leads to, for check mode's diff."""
        functions = dict((k, dict(v)) for k, v in topology['functions'].items())
        boot = dict(persisted)
        for item in plan:
            for step in item['functions']:
                boot[step['address']] = step['persist_want']
                fn = functions[step['address']]
                fn['driver_override'] = step['want_override']
                if step['rebind']:
                    fn['driver'] = step['want_driver'] or '(host driver)'
                    fn['device_minor'] = None
        predicted = dict(topology)
        predicted['functions'] = functions
        return driver_map_text(predicted, self.vendor_devices, boot)

    def stale_persistence(self, plan, persisted_all):
        """Entries of the mechanism not chosen that this run's cards have (left from a switch of mechanism)."""
        other = {'driverctl': 'udev', 'udev': 'driverctl'}.get(self.persistence)
        if other is None:
            return []
        managed = set(step['address'] for item in plan for step in item['functions'])
        return ['%s %s=%s' % (other, address, driver) for address, driver in sorted(persisted_all[other].items())
                if address in managed]

    # -- checks ----------------------------------------------------------------------------------------------------

    def iommu_off(self, proc_cmdline):
        cpu_vendor = None
        for line in (_read(self.path('proc/cpuinfo')) or '').splitlines():
            if line.startswith('vendor_id'):
                cpu_vendor = line.split(':', 1)[1].strip()
                break
        grub = _read(self.path('etc/default/grub'))
        kernel_cmdline = _read(self.path('etc/kernel/cmdline'))
        remedy = iommu_remediation(cpu_vendor, proc_cmdline, grub, kernel_cmdline)
        self.result['iommu_remediation'] = remedy
        if self.params['kernel_cmdline'] != 'apply' or not remedy['params'] and not remedy['remove']:
            self.fail(remedy['message'])
        if kernel_cmdline is not None:
            target, new = 'etc/kernel/cmdline', edit_kernel_cmdline(kernel_cmdline, remedy['params'], remedy['remove'])
            old, refresh = kernel_cmdline, ['proxmox-boot-tool', 'refresh']
        elif grub is not None:
            target, new = 'etc/default/grub', edit_grub_default(grub, remedy['params'], remedy['remove'])
            old, refresh = grub, ['update-grub']
        else:
            self.fail(remedy['message'] + ' (no /etc/kernel/cmdline or /etc/default/grub to edit)')
        changed = new != old
        if changed and not self.module.check_mode:
            _write_file(self.path(target), new)
            if self.live:
                self.run(refresh)
        self.result.update(changed=changed, reboot_required=True)
        if self.module._diff:
            self.result['diff'] = {'before': old, 'after': new, 'before_header': '/' + target, 'after_header': '/' + target}
        self.module.warn('%s; the kernel command line was changed: reboot the host, then run again' % remedy['message'])
        self.module.exit_json(**self.result)

    def ensure_driver(self, topology, driver):
        if driver in topology['drivers']:
            return
        if not self.live:
            self.fail('driver %s is not loaded below %s (no sys/bus/pci/drivers/%s)' % (driver, self.root, driver))
        if not self.params['load_modules']:
            self.fail('driver %s is not loaded and load_modules is false' % driver)
        if self.module.check_mode:
            rc, out, err = self.run(['modprobe', '--dry-run', driver], check_rc=False)
            if rc != 0:
                self.fail('kernel module %s is not available: %s' % (driver, (err or out).strip()))
            return
        self.run(['modprobe', driver])
        topology['drivers'].append(driver)

    def compute_apps(self, plan, topology):
        """nvidia-smi's compute processes, when a function on nvidia is about to be unbound on the live host."""
        involved = any(step['unbind'] and topology['functions'][step['address']]['driver'] == 'nvidia'
                       for item in plan for step in item['functions'])
        if not (involved and self.live):
            return []
        nvidia_smi = self.module.get_bin_path('nvidia-smi')
        if not nvidia_smi:
            self.module.warn('nvidia-smi not found: compute processes were not checked (open handles were)')
            return []
        rc, out, err = self.run([nvidia_smi] + query_compute_apps_args(), check_rc=False)
        if rc != 0:
            self.fail('nvidia-smi --query-compute-apps failed (rc=%d): %s; cannot prove the GPUs are idle'
                      % (rc, (out or err).strip()))
        try:
            return parse_compute_apps(out)
        except NvidiaSmiParseError as exc:
            self.fail('nvidia-smi --query-compute-apps output not understood: %s' % exc)

    # -- changes ---------------------------------------------------------------------------------------------------

    def persistenced_active(self):
        if not (self.live and self.params['manage_persistenced']):
            return False
        systemctl = self.module.get_bin_path('systemctl')
        if not systemctl:
            return False
        rc, out, err = self.run([systemctl, 'is-active', '--quiet', self.params['persistenced_service']], check_rc=False)
        return rc == 0

    def apply(self, plan, topology):
        binder = SysfsBinder(self.sysfs, timeout=self.params['timeout'], write=WRITER)
        involves_nvidia = any(
            item['action'] in ('bind', 'override') and (item['target'] == 'nvidia' or any(
                step['driver'] == 'nvidia' for step in item['functions'])) for item in plan)
        stop = involves_nvidia and self.persistenced_active()
        if stop:
            self.run(['systemctl', 'stop', self.params['persistenced_service']])
            self.result['persistenced_restarted'] = True
        error = None
        try:
            for item in plan:
                if item['action'] in ('bind', 'override'):
                    self.apply_card(binder, item, topology)
        except BindError as exc:
            error = str(exc)
        finally:
            self.result['writes'] = binder.log
            if stop:
                rc, out, err = self.run(['systemctl', 'start', self.params['persistenced_service']], check_rc=False)
                if rc != 0:
                    self.module.warn('could not start %s again: %s' % (self.params['persistenced_service'], err.strip()))
        if error:
            after = snapshot(self.sysfs)
            self.fail('binding failed: %s' % error,
                      gpus=final_map(after, self.targets, self.vfio, self.vendor_devices), changed=True)

    def apply_card(self, binder, item, topology):
        to_vfio = item['target'] == self.vfio
        steps = item['functions']
        # Companions (audio) go to vfio before the GPU and come back after it.
        order = list(reversed(steps)) if to_vfio else steps
        if not to_vfio:
            for pci_id in sorted(set(step['pci_id'] for step in steps if step['driver'] == self.vfio)):
                binder.remove_id(self.vfio, pci_id)
        for step in order:
            address = step['address']
            if not step['rebind']:
                if step['set_override']:
                    binder.set_override(address, step['want_override'])
                continue
            if to_vfio:
                binder.bind(address, self.vfio)
            elif step['primary']:
                binder.bind(address, step['want_override'], expect=lambda name: name == self.keep)
            else:
                # The companion's native driver (snd_hda_intel) may not be loaded: unbound is fine, vfio is not.
                binder.bind(address, step['want_override'], expect=lambda name: name != self.vfio)
        if to_vfio and self.live and item['iommu_group'] is not None:
            node = '/dev/vfio/%d' % item['iommu_group']
            deadline = time.time() + self.params['timeout']
            while not os.path.exists(node):
                if time.time() >= deadline:
                    raise BindError('%s is on %s but %s did not appear' % (item['address'], self.vfio, node))
                time.sleep(0.1)

    def write_persistence(self, plan, persisted_all):
        mechanism = self.persistence
        managed = dict((step['address'], step) for item in plan for step in item['functions'])
        if mechanism in ('udev', 'driverctl'):
            other = 'udev' if mechanism == 'driverctl' else 'driverctl'
            self.persist(other, dict((address, None) for address in managed if address in persisted_all[other]),
                         persisted_all[other])
        if mechanism == 'none':
            return
        wanted = dict((address, step['persist_want']) for address, step in managed.items())
        self.persist(mechanism, wanted, persisted_all[mechanism])

    def persist(self, mechanism, wanted, current):
        """Make ``mechanism`` persist wanted[address] (None = nothing) for the given addresses."""
        if not wanted:
            return
        if mechanism == 'driverctl':
            for address, driver in sorted(wanted.items()):
                path = self.path(driverctl_file(address))
                if driver is None and os.path.exists(path):
                    os.remove(path)
                elif driver is not None and current.get(address) != driver:
                    _write_file(path, driver + '\n')
            return
        overrides = dict(current)
        for address, driver in wanted.items():
            if driver is None:
                overrides.pop(address, None)
            else:
                overrides[address] = driver
        rules = self.path(UDEV_RULES_FILE)
        modules = self.path(UDEV_MODULES_LOAD_FILE)
        if overrides:
            text = render_udev_rules(overrides)
            if _read(rules) != text:
                _write_file(rules, text)
            drivers = sorted(set(overrides.values()))
            load = '# Managed by llmops.inference.gpu_partition: drivers named by driver_override rules\n%s\n' % '\n'.join(drivers)
            if _read(modules) != load:
                _write_file(modules, load)
        else:
            for path in (rules, modules):
                if os.path.exists(path):
                    os.remove(path)
        if self.live and self.module.get_bin_path('udevadm'):
            self.run(['udevadm', 'control', '--reload'], check_rc=False)


def main():
    module = build_module()
    partitioner = Partitioner(module)
    module.exit_json(**partitioner.main())


if __name__ == '__main__':
    main()
