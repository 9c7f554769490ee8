#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: lxc_gpu_config
short_description: Give a Proxmox VE container exactly its NVIDIA GPUs (devN entries or raw LXC device lines)
version_added: 0.1.0
description:
  - Resolves the container's GPUs (by PCI address, NUMA node or minor) to their C(/dev/nvidiaN) minors as the nvidia
    driver reports them in C(/proc/driver/nvidia/gpus/<address>/information); minors follow probe order, not slots.
  - Renders the device lines for those GPUs plus C(/dev/nvidiactl), C(/dev/nvidia-uvm) and C(/dev/nvidia-uvm-tools),
    either C(devN) entries (pve-container 8.1 and later; PVE derives the cgroup rules itself) or
    C(lxc.cgroup2.devices.allow) + C(lxc.mount.entry) lines with the dynamic nvidia-uvm major read from
    C(/proc/devices).
  - Merges them into the main section of C(/etc/pve/lxc/<vmid>.conf), replacing the NVIDIA device lines that are
    there and keeping every other line, other C(devN) entries (their indices are never reused) and the
    C([snapshot]) / C([pve:pending]) sections untouched.
  - With O(cpuset), also pins the container to the CPUs and memory of its GPUs' NUMA node, where
    C(lxc.cgroup2.cpuset.cpus) is the union of the GPUs' C(/sys/bus/pci/devices/<address>/local_cpulist) and
    C(lxc.cgroup2.cpuset.mems) their NUMA nodes, replacing any cpuset lines of the main section.
  - The task reports a change when the file changed; a running container only sees new devices and a new cpuset after
    a restart, which the C(llmops.inference.lxc_gpu) role does through a handler.
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
    details: A Proxmox VE host (or any file in the PVE container config format).
options:
  path:
    description: The container config, for example C(/etc/pve/lxc/101.conf).
    type: path
    required: true
  state:
    description: V(present) writes the GPU lines, V(absent) removes every NVIDIA device line.
    type: str
    choices: [present, absent]
    default: present
  addresses:
    description: PCI addresses of the container's GPUs (must be bound to nvidia).
    type: list
    elements: str
    default: []
  numa_node:
    description: Every GPU on this NUMA node that is bound to nvidia (added to O(addresses)).
    type: int
  minors:
    description: C(/dev/nvidiaN) minors given directly (added to the resolved ones).
    type: list
    elements: int
    default: []
  mode:
    description: V(dev) for C(devN) entries (PVE 8.1+), V(raw) for cgroup allow + bind mount lines.
    type: str
    choices: [dev, raw]
    default: dev
  gid:
    description: C(gid=) option of C(devN) entries (for example the container's C(video) group).
    type: int
  uid:
    description: C(uid=) option of C(devN) entries.
    type: int
  dev_mode:
    description: C(mode=) option of C(devN) entries, for example V(0666).
    type: str
  include_uvm_tools:
    description: Also pass C(/dev/nvidia-uvm-tools) (profilers need it).
    type: bool
    default: true
  include_modeset:
    description: Also pass C(/dev/nvidia-modeset) (display only; compute does not need it).
    type: bool
    default: false
  root:
    description: Where C(sys/) and C(proc/driver/nvidia) are read to resolve GPUs (a fixture tree in tests and plans).
    type: path
    default: /
  proc_devices_path:
    description: The C(/proc/devices) file to read the nvidia-uvm major from (a fixture in tests and plans).
    type: path
    default: /proc/devices
  device_nodes_root:
    description: Where the device nodes are checked for existence (PVE refuses to start a container whose C(devN)
      node is missing); RV(missing_device_nodes) lists those that are not there.
    type: path
    default: /
  check_device_nodes:
    description: Check that the device nodes exist (and warn in V(dev) mode when they do not). Off for offline plans.
    type: bool
    default: true
  state_file:
    description:
      - A file (outside C(/etc/pve)) recording the lines written, so the next run removes them even when the
        nvidia-uvm major changed in between. Without it, allow lines are recognised by major (195 and majors of
        nvidia drivers in C(/proc/devices)).
    type: path
  create:
    description: Create O(path) when it does not exist (otherwise that fails, the container does not exist).
    type: bool
    default: false
  cpuset:
    description:
      - The container's C(lxc.cgroup2.cpuset.cpus) and C(lxc.cgroup2.cpuset.mems) lines. Omitted, cpuset lines are
        left as they are; given, the module owns them and replaces every such line of the main section.
      - V(auto) takes the union of the GPUs' C(local_cpulist) (read below O(root)) as C(cpus) and their NUMA nodes as
        C(mems). When a GPU has no readable C(local_cpulist), a NUMA node of V(-1) (unknown) or was given only by its
        minor, no cpuset line is written (earlier ones are removed) and a warning names the GPU; the run does not fail.
      - An empty string removes the cpuset lines (no pinning).
      - Any other value is a CPU list in the kernel's format, for example V(0-31,64-95) (decimal numbers and C(lo-hi)
        ranges, comma-separated); it is written as given after its syntax is checked, with no C(mems) line (the
        kernel's default, all memory nodes).
      - With O(state=absent) a given O(cpuset) removes the cpuset lines whatever its value.
    type: str
  cpuset_mems:
    description:
      - The C(lxc.cgroup2.cpuset.mems) value written with a CPU list in O(cpuset), for example V(0) (NUMA nodes in
        the same list format). Omitted or empty, no C(mems) line is written. Only with a CPU list in O(cpuset).
    type: str
  cpuset_verify:
    description:
      - With a CPU list in O(cpuset) (and O(cpuset_mems)) decided elsewhere, for example by the resolver from the
        inventory's topology, fail before anything is written unless they are exactly what V(auto) finds below
        O(root) for these GPUs (the union of their C(local_cpulist) and their NUMA nodes). The message names both
        and O(cpuset_origin).
    type: bool
    default: false
  cpuset_origin:
    description: Where the CPU list in O(cpuset) was decided (for example the inventory variable), named in the
      refusal of O(cpuset_verify) as the value to correct.
    type: str
notes:
  - Comment lines in a PVE config are the container's description, so the managed lines carry no marker comment.
  - Proxmox's pvestatd leaves the CPUs of a container with its own C(lxc.cgroup2.cpuset.cpus) alone (it no longer picks
    C(cores) CPUs for it), so the container may use every CPU of the list; C(cores) still tells the guest its count.
seealso:
  - module: llmops.inference.gpu_info
  - name: pct.conf(5)
    description: The container configuration format and C(devN) entries.
    link: https://pve.proxmox.com/pve-docs/pct.conf.5.html
"""

EXAMPLES = r"""
- name: Container 101 gets the GPUs of NUMA node 0 as devN entries
  llmops.inference.lxc_gpu_config:
    path: /etc/pve/lxc/101.conf
    numa_node: 0
    gid: 44
  register: ct101_gpus

- name: Classic raw lines instead (PVE before 8.1)
  llmops.inference.lxc_gpu_config:
    path: /etc/pve/lxc/101.conf
    addresses: ["0000:01:00.0", "0000:21:00.0"]
    mode: raw
    state_file: /var/lib/llmops-inference/lxc_gpu/101.json

- name: Container 101 on the CPUs and memory of its GPUs' NUMA node (lxc.cgroup2.cpuset.cpus / .mems)
  llmops.inference.lxc_gpu_config:
    path: /etc/pve/lxc/101.conf
    numa_node: 0
    cpuset: auto

- name: A cpuset decided from the inventory, refused when the host's GPUs are local to other CPUs
  llmops.inference.lxc_gpu_config:
    path: /etc/pve/lxc/101.conf
    numa_node: 0
    cpuset: 0-63,128-191
    cpuset_mems: "0"
    cpuset_verify: true
    cpuset_origin: "llmops_host_numa_cpus of pve1 (node 0: 0-63,128-191)"

- name: Render offline from fixtures (plan)
  llmops.inference.lxc_gpu_config:
    path: /tmp/plan/101.conf
    root: /tmp/sysfs_roots/seed_pve_8x_rtx6000
    proc_devices_path: /tmp/fixtures/proc_devices
    numa_node: 0
    mode: raw
  check_mode: true
"""

RETURN = r"""
lines:
  description: The NVIDIA device lines the main section holds after the run (as written, with devN indices), then the
    cpuset lines when O(cpuset) is given.
  returned: always
  type: list
  elements: str
  sample: ["dev1: /dev/nvidia0", "dev2: /dev/nvidia1", "dev3: /dev/nvidiactl", "dev4: /dev/nvidia-uvm",
           "lxc.cgroup2.cpuset.cpus: 0-63,128-191", "lxc.cgroup2.cpuset.mems: 0"]
cpuset:
  description: The cpuset the module rendered.
  returned: always
  type: dict
  contains:
    source:
      description: V(auto), V(explicit) (a CPU list given), V(none) (O(cpuset) empty, or O(state=absent)) or
        V(unmanaged) (O(cpuset) omitted, lines left as they were).
      type: str
      returned: always
      sample: auto
    cpus:
      description: The C(lxc.cgroup2.cpuset.cpus) value written; null when none was written.
      type: str
      returned: always
      sample: 0-63,128-191
    mems:
      description: The C(lxc.cgroup2.cpuset.mems) value written; null when none was written.
      type: str
      returned: always
      sample: "0"
    reason:
      description: Why V(auto) wrote nothing (the GPUs without a NUMA node or CPU list); null otherwise.
      type: str
      returned: always
      sample: "0000:00:06.0 has no NUMA node (numa_node -1: the firmware reports no affinity)"
    verified:
      description: Whether O(cpuset_verify) compared the given CPU list with the GPUs' C(local_cpulist) and NUMA
        nodes (and found them equal; a difference fails).
      type: bool
      returned: always
      sample: true
gpus:
  description: The container's GPUs, sorted by minor.
  returned: always
  type: list
  elements: dict
  contains:
    address:
      description: PCI address (null for a minor given directly).
      type: str
      returned: always
      sample: "0000:21:00.0"
    minor:
      description: C(/dev/nvidiaN) minor.
      type: int
      returned: always
      sample: 0
    device_node:
      description: C(/dev/nvidia<minor>).
      type: str
      returned: always
      sample: /dev/nvidia0
    numa_node:
      description: NUMA node (null for a minor given directly).
      type: int
      returned: always
      sample: 0
uvm_major:
  description: Major of nvidia-uvm in O(proc_devices_path); null when the module is not loaded.
  returned: always
  type: int
  sample: 511
host_nvidia_minors:
  description: Minors of every GPU bound to nvidia on the host (for a unit that creates their nodes at boot).
  returned: always
  type: list
  elements: int
  sample: [0, 1, 2, 3]
missing_device_nodes:
  description: Device nodes of RV(lines) that do not exist below O(device_nodes_root).
  returned: always
  type: list
  elements: str
  sample: ["/dev/nvidia-uvm"]
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils.host.cpulist import (
    CpuListError,
    format_cpulist,
    gpu_cpuset,
    parse_cpulist,
)
from ansible_collections.llmops.inference.plugins.module_utils.host.lxc_config import (
    LxcConfigError,
    device_nodes,
    merge,
    nvidia_majors,
    parse_proc_devices,
    render_cpuset,
    render_lines,
)
from ansible_collections.llmops.inference.plugins.module_utils.host.pci_sysfs import (
    NVIDIA_VENDOR_ID,
    PciAddressError,
    PciSysfs,
    normalize_pci_address,
)


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def _write(path, content):
    """Temporary file in the same directory, then rename: what PVE itself does inside /etc/pve (pmxcfs has no
    chmod/chown, so nothing else is attempted)."""
    tmp = '%s.tmp.%d' % (path, os.getpid())
    with open(tmp, 'w') as handle:
        handle.write(content)
    os.rename(tmp, path)


def resolve_gpus(sysfs, addresses, numa_node, minors):
    """[(address, minor, numa)] sorted by minor; raises ValueError with a clear text."""
    gpus = {}
    wanted = [normalize_pci_address(address) for address in addresses]
    if numa_node is not None:
        matched = []
        for address in sysfs.list_functions():
            info = sysfs.function_summary(address)
            if info['vendor_id'] == NVIDIA_VENDOR_ID and info['is_gpu'] and info['driver'] == 'nvidia' \
                    and sysfs.numa_node(address) == numa_node:
                matched.append(address)
        if not matched:
            raise ValueError('no GPU on NUMA node %d is bound to nvidia below %s' % (numa_node, sysfs.root))
        wanted.extend(matched)
    for address in wanted:
        if not sysfs.has_function(address):
            raise ValueError('no PCI function %s below %s' % (address, sysfs.root))
        driver = sysfs.driver(address)
        if driver != 'nvidia':
            raise ValueError('%s is bound to %s, not nvidia: a container cannot use it' % (address, driver or 'no driver'))
        information = sysfs.nvidia_gpu_information(address)
        if not information or information['device_minor'] is None:
            raise ValueError('%s is on nvidia but %s has no Device Minor' % (address, sysfs.nvidia_gpu_information_path(address)))
        gpus[address] = (address, information['device_minor'], sysfs.numa_node(address))
    result = sorted(gpus.values(), key=lambda gpu: gpu[1])
    known = set(gpu[1] for gpu in result)
    for minor in minors:
        if minor not in known:
            result.append((None, minor, None))
            known.add(minor)
    return sorted(result, key=lambda gpu: gpu[1])


def host_minors(sysfs):
    minors = []
    for address in sysfs.list_functions():
        if sysfs.driver(address) == 'nvidia':
            information = sysfs.nvidia_gpu_information(address)
            if information and information['device_minor'] is not None:
                minors.append(information['device_minor'])
    return sorted(minors)


def resolve_cpuset(sysfs, gpus, cpuset, mems=None):
    """The cpuset result dict for the resolved ``gpus`` and the O(cpuset) value (not None): source, cpus, mems, reason,
    verified (False; verify_cpuset() sets it).

    Raises CpuListError for an explicit value that is not a CPU list."""
    if cpuset == '':
        return {'source': 'none', 'cpus': None, 'mems': None, 'reason': None, 'verified': False}
    if cpuset != 'auto':
        parse_cpulist(cpuset)
        if mems:
            parse_cpulist(mems)
        return {'source': 'explicit', 'cpus': cpuset.strip(), 'mems': (mems or '').strip() or None, 'reason': None,
                'verified': False}
    described = []
    for address, minor, numa in gpus:
        if address is None:
            described.append({'name': '/dev/nvidia%d (given by minor)' % minor, 'numa_node': None, 'local_cpulist': None})
        else:
            # The one local_cpulist reader, shared with gpu_info.
            described.append({'name': address, 'numa_node': numa, 'local_cpulist': sysfs.local_cpulist(address)})
    implied = gpu_cpuset(described)
    reason = None
    if implied['problems']:
        reason = '; '.join(implied['problems'])
    return {'source': 'auto', 'cpus': implied['cpus'], 'mems': implied['mems'], 'reason': reason, 'verified': False}


def verify_cpuset(sysfs, gpus, given, origin, path):
    """None when the explicit cpuset ``given`` (resolve_cpuset's dict) is what the GPUs' local_cpulist and NUMA
    nodes below the sysfs root give; otherwise the refusal's text, naming both, where the given one came from and
    the fix."""
    found = resolve_cpuset(sysfs, gpus, 'auto')
    names = ', '.join(gpu[0] or '/dev/nvidia%d' % gpu[1] for gpu in gpus)
    where = origin or 'the cpuset option'
    if found['reason']:
        return ('cpuset_verify: %s says CPUs %s, memory node(s) %s, but the GPUs below %s cannot confirm it: %s. Nothing '
                'was changed in %s.' % (where, given['cpus'], given['mems'] or '(none)', sysfs.root, found['reason'], path))
    same_cpus = format_cpulist(parse_cpulist(given['cpus'])) == found['cpus']
    same_mems = given['mems'] is None or format_cpulist(parse_cpulist(given['mems'])) == found['mems']
    if same_cpus and same_mems:
        return None
    return ('cpuset_verify: %s says CPUs %s, memory node(s) %s, but the GPUs %s below %s are local to CPUs %s on NUMA '
            'node(s) %s (their local_cpulist and numa_node in sys/bus/pci/devices). Fix: correct %s to what the host '
            'has (or the GPU selection, if these are the wrong cards). Nothing was changed in %s.'
            % (where, given['cpus'], given['mems'] or '(none)', names, sysfs.root, found['cpus'], found['mems'],
               where, path))


def _new_module():
    return AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', required=True),
            state=dict(type='str', default='present', choices=['present', 'absent']),
            addresses=dict(type='list', elements='str', default=[]),
            numa_node=dict(type='int'),
            minors=dict(type='list', elements='int', default=[]),
            mode=dict(type='str', default='dev', choices=['dev', 'raw']),
            gid=dict(type='int'),
            uid=dict(type='int'),
            dev_mode=dict(type='str'),
            include_uvm_tools=dict(type='bool', default=True),
            include_modeset=dict(type='bool', default=False),
            root=dict(type='path', default='/'),
            proc_devices_path=dict(type='path', default='/proc/devices'),
            device_nodes_root=dict(type='path', default='/'),
            check_device_nodes=dict(type='bool', default=True),
            state_file=dict(type='path'),
            create=dict(type='bool', default=False),
            cpuset=dict(type='str'),
            cpuset_mems=dict(type='str'),
            cpuset_verify=dict(type='bool', default=False),
            cpuset_origin=dict(type='str'),
        ),
        supports_check_mode=True,
    )


def _check_cpuset_options(module, result):
    """Refuse a cpuset, cpuset_mems or cpuset_verify that cannot be used, before anything is read."""
    params = module.params
    path = params['path']
    cpuset = params['cpuset']
    if cpuset is not None and params['state'] == 'present' and cpuset not in ('', 'auto'):
        try:
            parse_cpulist(cpuset)
        except CpuListError as exc:
            module.fail_json(msg='cpuset: %s, or auto (the CPUs local to the GPUs) or an empty string (no cpuset). '
                             'Nothing was changed in %s.' % (exc, path), **result)
        try:
            parse_cpulist(params['cpuset_mems'] or '')
        except CpuListError as exc:
            module.fail_json(msg='cpuset_mems: %s (NUMA node numbers, e.g. 0 or 0-1). Nothing was changed in %s.'
                             % (exc, path), **result)
    elif params['cpuset_mems'] or params['cpuset_verify']:
        module.fail_json(msg='cpuset_mems and cpuset_verify go with a CPU list in cpuset (got cpuset %r)' % (cpuset,),
                         **result)


def _read_state(module, result):
    """(config text, nvidia majors, uvm major, the state file's previous lines) as the host has them now."""
    params = module.params
    path = params['path']
    text = _read(path)
    if text is None:
        if os.path.exists(path) or not (params['create'] or module.check_mode):
            module.fail_json(msg='%s cannot be read (does the container exist?); set create=true to start a new file'
                             % path, **result)
        text = ''

    devices_text = _read(params['proc_devices_path'])
    devices = parse_proc_devices(devices_text)
    if devices_text is None:
        module.warn('%s cannot be read: the nvidia-uvm major is unknown' % params['proc_devices_path'])
    uvm_major = devices['char'].get('nvidia-uvm')
    majors = nvidia_majors(devices)

    previous = set()
    state_file = params['state_file']
    if state_file:
        try:
            previous = set(tuple(pair) for pair in json.loads(_read(state_file) or '{}').get('lines', []))
        except (ValueError, AttributeError):
            module.warn('%s is not valid JSON; ignoring it' % state_file)
    return text, majors, uvm_major, previous


def _present_lines(module, sysfs, uvm_major, result):
    """The (key, value) lines state=present writes: the GPUs' device lines plus the cpuset lines; fills result's gpus,
    cpuset and missing_device_nodes."""
    params = module.params
    path = params['path']
    if not params['addresses'] and params['numa_node'] is None and not params['minors']:
        module.fail_json(msg='state=present needs addresses, numa_node or minors', **result)
    try:
        gpus = resolve_gpus(sysfs, params['addresses'], params['numa_node'], params['minors'])
        nodes = device_nodes([gpu[1] for gpu in gpus], uvm_major, include_uvm_tools=params['include_uvm_tools'],
                             include_modeset=params['include_modeset'])
        pairs = render_lines(nodes, params['mode'], gid=params['gid'], uid=params['uid'], dev_mode=params['dev_mode'])
        if params['cpuset'] is not None:
            result['cpuset'] = resolve_cpuset(sysfs, gpus, params['cpuset'], params['cpuset_mems'])
            pairs.extend(render_cpuset(result['cpuset']['cpus'], result['cpuset']['mems']))
    except (ValueError, PciAddressError, LxcConfigError) as exc:
        module.fail_json(msg=str(exc), **result)
    if params['cpuset_verify']:
        refusal = verify_cpuset(sysfs, gpus, result['cpuset'], params['cpuset_origin'], path)
        if refusal:
            module.fail_json(msg=refusal, **result)
        result['cpuset']['verified'] = True
    if result['cpuset']['reason']:
        module.warn('cpuset auto: %s, so no lxc.cgroup2.cpuset lines are written for %s (the container may run on '
                    'any CPU). Give cpuset as a CPU list to pin it anyway, or an empty string to opt out.'
                    % (result['cpuset']['reason'], path))
    result['gpus'] = [{'address': gpu[0], 'minor': gpu[1], 'device_node': '/dev/nvidia%d' % gpu[1], 'numa_node': gpu[2]}
                      for gpu in gpus]
    if params['check_device_nodes']:
        result['missing_device_nodes'] = [
            node['path'] for node in nodes
            if not os.path.exists(os.path.join(params['device_nodes_root'], node['path'].lstrip('/')))]
    if result['missing_device_nodes'] and params['mode'] == 'dev':
        module.warn('missing device nodes %s: PVE refuses to start the container until they exist (nvidia-modprobe '
                    '-u -c0 creates the uvm nodes; the lxc_gpu role installs a unit that does it at boot)'
                    % ', '.join(result['missing_device_nodes']))
    return pairs


def _write_changes(module, new_text, pairs, result):
    """Write the merged config (when it changed) and the state file, outside check mode."""
    path = module.params['path']
    state_file = module.params['state_file']
    if result['changed'] and not module.check_mode:
        if not os.path.isdir(os.path.dirname(path)):
            module.fail_json(msg='directory of %s does not exist' % path, **result)
        _write(path, new_text)
    if state_file and not module.check_mode:
        state = json.dumps({'path': path, 'lines': sorted(set(pairs))}, indent=1, sort_keys=True) + '\n'
        if _read(state_file) != state:
            directory = os.path.dirname(state_file)
            if not os.path.isdir(directory):
                os.makedirs(directory, 0o755)
            _write(state_file, state)


def main():
    module = _new_module()
    params = module.params
    path = params['path']
    manage_cpuset = params['cpuset'] is not None
    result = dict(changed=False, path=path, lines=[], gpus=[], uvm_major=None, host_nvidia_minors=[],
                  missing_device_nodes=[],
                  cpuset={'source': 'none' if manage_cpuset else 'unmanaged', 'cpus': None, 'mems': None, 'reason': None,
                          'verified': False})
    _check_cpuset_options(module, result)
    text, majors, uvm_major, previous = _read_state(module, result)
    result['uvm_major'] = uvm_major

    sysfs = PciSysfs(params['root'])
    result['host_nvidia_minors'] = host_minors(sysfs)
    pairs = []
    if params['state'] == 'present':
        pairs = _present_lines(module, sysfs, uvm_major, result)

    new_text, rendered = merge(text, pairs, majors, previous, manage_cpuset=manage_cpuset)
    result['lines'] = rendered
    result['changed'] = new_text != text
    if module._diff:
        result['diff'] = {'before': text, 'after': new_text, 'before_header': path, 'after_header': path}
    _write_changes(module, new_text, pairs, result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
