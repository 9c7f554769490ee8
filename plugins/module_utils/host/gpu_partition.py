# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Planning for the split of identical GPUs between ``vfio-pci`` (VM passthrough) and their host driver.

Binding by ``vendor:device`` (``vfio-pci.ids=``) claims every identical card, so the split is decided per PCI
address. Everything here is pure except :func:`snapshot` (reads sysfs/procfs below a root through PciSysfs) and
:func:`read_persisted` / :func:`scan_open_handles` (read files below the same root), so the whole plan can be made
and tested against fixture trees.

Vocabulary:

* *card*: one physical device = its primary function (the GPU, or the stand-in device matched by ``vendor_device``)
  plus the other non-bridge functions of the same slot (the HDMI/DP audio ``.1``, USB-C ``.2`` ...).
* *entry*: one item of the desired state, ``{address: ..., driver: ...}`` or a selector
  ``{numa_node: 1, count: 4, driver: vfio-pci}``.
* *target*: the driver a card must end up on: the vfio driver or the keep (host) driver.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import re

from ansible_collections.llmops.inference.plugins.module_utils.host.pci_sysfs import (
    NVIDIA_VENDOR_ID,
    PciAddressError,
    normalize_pci_address,
    pci_address_sort_key,
    pci_slot,
)

VFIO_DRIVER = 'vfio-pci'
DRIVERCTL_DIR = 'etc/driverctl.d'
UDEV_RULES_FILE = 'etc/udev/rules.d/05-llmops-gpu-partition.rules'
UDEV_MODULES_LOAD_FILE = 'etc/modules-load.d/llmops-gpu-partition.conf'
PERSISTENCED_COMM = 'nvidia-persiste'  # /proc/<pid>/comm is cut at 15 characters

ENTRY_KEYS = frozenset(('name', 'address', 'numa_node', 'count', 'vendor_device', 'driver'))
_VENDOR_DEVICE_RE = re.compile(r'^(?:0x)?([0-9a-f]{4}):(?:0x)?([0-9a-f]{4})$', re.IGNORECASE)
_UDEV_LINE_RE = re.compile(r'KERNEL=="(?P<address>[^"]+)".*ATTR\{driver_override\}="(?P<driver>[^"]*)"')
IFF_UP = 0x1


class PartitionError(ValueError):
    """Invalid desired state (bad entry, unknown address, selector that cannot be satisfied)."""


def parse_vendor_device(value):
    """``10de:2bb5`` / ``0x10DE:0x2BB5`` -> ``10de:2bb5``; PartitionError otherwise."""
    match = _VENDOR_DEVICE_RE.match(str(value).strip())
    if not match:
        raise PartitionError('invalid vendor_device %r: expected VENDOR:DEVICE in hex, e.g. 10de:2bb5' % (value,))
    return '%s:%s' % (match.group(1).lower(), match.group(2).lower())


# ---- desired state -------------------------------------------------------------------------------------------

def normalize_entries(entries, vfio_driver=VFIO_DRIVER, keep_driver='nvidia'):
    """Validate the desired-state entries; return a list of clean dicts (``index`` = position, 1-based).

    An entry names exactly one of: ``address`` (any spelling pci_sysfs accepts), or a selector made of
    ``numa_node`` / ``count`` / ``vendor_device`` (at least one of them). ``driver`` must be the vfio driver or the
    keep driver. ``name`` is a free label (DebOps style) shown in the plan.
    """
    allowed = (vfio_driver, keep_driver)
    clean = []
    for index, entry in enumerate(entries or [], 1):
        where = 'entry %d' % index
        if not isinstance(entry, dict):
            raise PartitionError('%s: expected a dict such as {address: 0000:81:00.0, driver: %s}, got %r'
                                 % (where, vfio_driver, entry))
        unknown = sorted(set(entry) - ENTRY_KEYS)
        if unknown:
            raise PartitionError('%s: unknown key(s) %s (known: %s)' % (where, ', '.join(unknown), ', '.join(sorted(ENTRY_KEYS))))
        if entry.get('name'):
            where = '%s (%s)' % (where, entry['name'])
        driver = entry.get('driver')
        if driver not in allowed:
            raise PartitionError('%s: driver must be %s or %s, got %r' % (where, vfio_driver, keep_driver, driver))
        item = {'index': index, 'name': entry.get('name'), 'driver': driver, 'label': where}
        has_selector = any(entry.get(key) is not None for key in ('numa_node', 'count', 'vendor_device'))
        if entry.get('address') is not None:
            if has_selector:
                raise PartitionError('%s: give either address or selector keys (numa_node, count, vendor_device), '
                                     'not both' % where)
            try:
                item['address'] = normalize_pci_address(entry['address'])
            except PciAddressError as exc:
                raise PartitionError('%s: %s' % (where, exc))
        elif has_selector:
            item['numa_node'] = _optional_int(entry.get('numa_node'), where, 'numa_node', minimum=-1)
            item['count'] = _optional_int(entry.get('count'), where, 'count', minimum=1)
            item['vendor_device'] = parse_vendor_device(entry['vendor_device']) if entry.get('vendor_device') else None
        else:
            raise PartitionError('%s: needs an address or a selector (numa_node, count, vendor_device)' % where)
        clean.append(item)
    return clean


def _optional_int(value, where, key, minimum):
    if value is None:
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise PartitionError('%s: %s must be an integer, got %r' % (where, key, value))
    if number < minimum:
        raise PartitionError('%s: %s must be >= %d, got %d' % (where, key, minimum, number))
    return number


# ---- topology snapshot (reads below root) --------------------------------------------------------------------

def snapshot(sysfs):
    """Everything the planner needs about the PCI functions below ``sysfs.root`` as plain data.

    ``functions``: address -> dict (summary of pci_sysfs + slot, numa_node, iommu_group, device_minor, sysfs_path:
    the device's real directory as the kernel names it, e.g. ``/sys/devices/pci0000:00/0000:00:02.0``, and
    ``netdevs``: [{name, up}]); ``groups``: group -> member addresses; ``iommu_enabled``; ``drivers``: names under
    sys/bus/pci/drivers (loaded PCI drivers).
    """
    functions = {}
    groups = {}
    for address in sysfs.list_functions():
        info = sysfs.function_summary(address)
        info['slot'] = pci_slot(address)
        numa = sysfs.numa_node(address)
        info['numa_node'] = -1 if numa is None else numa
        info['iommu_group'] = sysfs.iommu_group(address)
        information = sysfs.nvidia_gpu_information(address) if info['driver'] == 'nvidia' else None
        info['device_minor'] = information['device_minor'] if information else None
        info['uuid'] = information['uuid'] if information else None
        info['sysfs_path'] = _kernel_path(sysfs, address)
        info['netdevs'] = _netdevs(sysfs, address)
        functions[address] = info
        if info['iommu_group'] is not None and info['iommu_group'] not in groups:
            groups[info['iommu_group']] = sysfs.iommu_group_devices(info['iommu_group'])
    drivers_dir = sysfs.path('sys/bus/pci/drivers')
    try:
        drivers = sorted(os.listdir(drivers_dir))
    except OSError:
        drivers = []
    return {'functions': functions, 'groups': groups, 'iommu_enabled': sysfs.iommu_enabled(), 'drivers': drivers}


def _kernel_path(sysfs, address):
    """Real path of the device directory as seen from inside the root ("/sys/devices/...")."""
    real = os.path.realpath(sysfs.device_path(address))
    root = os.path.realpath(sysfs.root)
    if root != '/' and (real == root or real.startswith(root + os.sep)):
        real = real[len(root):] or '/'
    return real


def _netdevs(sysfs, address):
    result = []
    net_dir = sysfs.device_path(address, 'net')
    try:
        names = sorted(os.listdir(net_dir))
    except OSError:
        return result
    for name in names:
        flags = _read(os.path.join(net_dir, name, 'flags'))
        try:
            up = bool(int(flags, 16) & IFF_UP) if flags else False
        except ValueError:
            up = False
        result.append({'name': name, 'up': up, 'operstate': _read(os.path.join(net_dir, name, 'operstate'))})
    return result


def _read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (IOError, OSError):
        return None


# ---- which card does an address belong to ----------------------------------------------------------------------

def _is_primary(info, vendor_devices):
    """Primary function of a card: matches vendor_devices when given, else an NVIDIA GPU-class function."""
    if info['is_bridge']:
        return False
    if vendor_devices:
        return info['pci_id'] in vendor_devices
    return info['vendor_id'] == NVIDIA_VENDOR_ID and info['is_gpu']


def cards(topology, vendor_devices=None):
    """primary address -> sorted list of the card's functions (primary first, then same-slot non-bridges)."""
    functions = topology['functions']
    slots = {}
    for address, info in functions.items():
        if not info['is_bridge']:
            slots.setdefault(info['slot'], []).append(address)
    result = {}
    for address, info in functions.items():
        if _is_primary(info, vendor_devices):
            others = sorted((addr for addr in slots.get(info['slot'], []) if addr != address), key=pci_address_sort_key)
            # A second primary in the same slot (multi-GPU boards are rare) forms its own card.
            others = [addr for addr in others if not _is_primary(functions[addr], vendor_devices)]
            result[address] = [address] + others
    return result


def card_of(topology, address, vendor_devices=None):
    """Primary address of the card that ``address`` belongs to, or None."""
    for primary, members in cards(topology, vendor_devices).items():
        if address in members:
            return primary
    return None


# ---- resolve entries to targets ------------------------------------------------------------------------------

def resolve_targets(topology, entries, vendor_devices=None):
    """Map every entry to cards. Returns ``(targets, notes)``; ``targets``: primary -> {driver, source}.

    Address entries come first, a later one overriding an earlier one for the same card. Selectors then pick,
    in entry order, from the matching cards no entry has claimed yet: cards already on the selector's driver
    first (a re-run or a reduced count moves nothing), then by address. Raises PartitionError for an address that
    does not exist, is a bridge, is not one of ``vendor_devices``, or a selector that finds fewer cards than ``count``.
    """
    functions = topology['functions']
    card_map = cards(topology, vendor_devices)
    member_of = {}
    for primary, members in card_map.items():
        for member in members:
            member_of[member] = primary
    targets = {}
    notes = []

    for entry in entries:
        if 'address' not in entry:
            continue
        address = entry['address']
        if address not in functions:
            raise PartitionError('%s: no PCI function %s on this host' % (entry['label'], address))
        info = functions[address]
        if info['is_bridge']:
            raise PartitionError('%s: %s is a bridge (%s); bridges are never bound to a driver by this role'
                                 % (entry['label'], address, info['pci_id']))
        primary = member_of.get(address)
        if primary is None:
            wanted = ', '.join(sorted(vendor_devices)) if vendor_devices else 'an NVIDIA GPU (class 0x0300/0x0302)'
            raise PartitionError('%s: %s is %s (class %s, driver %s), not %s; refusing to touch it'
                                 % (entry['label'], address, info['pci_id'], info['class'], info['driver'], wanted))
        if primary != address:
            notes.append('%s: %s is a companion function of %s; the whole card moves' % (entry['label'], address, primary))
        if primary in targets and targets[primary]['driver'] != entry['driver']:
            notes.append('%s overrides %s for %s (%s -> %s)' % (entry['label'], targets[primary]['source'], primary,
                                                                targets[primary]['driver'], entry['driver']))
        targets[primary] = {'driver': entry['driver'], 'source': entry['label']}

    for entry in entries:
        if 'address' in entry:
            continue
        wanted_ids = set([entry['vendor_device']]) if entry.get('vendor_device') else None
        candidates = []
        for primary in card_map:
            info = functions[primary]
            if primary in targets:
                continue
            if wanted_ids is not None and info['pci_id'] not in wanted_ids:
                continue
            if entry.get('numa_node') is not None and info['numa_node'] != entry['numa_node']:
                continue
            candidates.append(primary)
        candidates.sort(key=lambda addr: (functions[addr]['driver'] != entry['driver'], pci_address_sort_key(addr)))
        count = entry.get('count')
        if count is not None and len(candidates) < count:
            raise PartitionError('%s: selector %s asks for %d card(s) but only %d unclaimed one(s) match: %s'
                                 % (entry['label'], describe_selector(entry), count, len(candidates),
                                    ', '.join(sorted(candidates, key=pci_address_sort_key)) or 'none'))
        chosen = candidates if count is None else candidates[:count]
        if not chosen:
            raise PartitionError('%s: selector %s matches no card' % (entry['label'], describe_selector(entry)))
        for primary in chosen:
            targets[primary] = {'driver': entry['driver'], 'source': entry['label']}
    return targets, notes


def describe_selector(entry):
    parts = []
    for key in ('numa_node', 'count', 'vendor_device'):
        if entry.get(key) is not None:
            parts.append('%s=%s' % (key, entry[key]))
    return '{%s}' % ', '.join(parts)


# ---- the plan --------------------------------------------------------------------------------------------------

def plan_partition(topology, targets, vfio_driver=VFIO_DRIVER, keep_driver='nvidia', vendor_devices=None,
                   persisted=None, persistence='driverctl'):
    """One plan item per targeted card (sorted by address).

    Item: address, slot, pci_id, numa_node, iommu_group, target, source, functions (each: address, pci_id, driver,
    driver_override, want_override, rebind, unbind, set_override, persist_now, persist_want), action (``none``,
    ``bind``: drivers change; ``override``: only driver_override changes; ``persist``: only the boot-time
    persistence changes), errors (group completeness, unexpected drivers) and notes.
    """
    persisted = persisted or {}
    functions = topology['functions']
    card_map = cards(topology, vendor_devices)
    vfio_members = set()
    for primary, target in targets.items():
        if target['driver'] == vfio_driver:
            vfio_members.update(card_map[primary])

    plan = []
    for primary in sorted(targets, key=pci_address_sort_key):
        target = targets[primary]
        to_vfio = target['driver'] == vfio_driver
        info = functions[primary]
        item = {
            'address': primary,
            'slot': info['slot'],
            'pci_id': info['pci_id'],
            'numa_node': info['numa_node'],
            'iommu_group': info['iommu_group'],
            'device_minor': info.get('device_minor'),
            'target': target['driver'],
            'source': target['source'],
            'functions': [],
            'errors': [],
            'notes': [],
        }
        for address in card_map[primary]:
            fn = functions[address]
            is_primary = address == primary
            step = {'address': address, 'pci_id': fn['pci_id'], 'class': fn['class'], 'primary': is_primary,
                    'driver': fn['driver'], 'driver_override': fn['driver_override']}
            if to_vfio:
                step['want_override'] = vfio_driver
                step['want_driver'] = vfio_driver
                step['set_override'] = fn['driver_override'] != vfio_driver
                step['rebind'] = fn['driver'] != vfio_driver
                step['persist_want'] = vfio_driver if persistence != 'none' else persisted.get(address)
            else:
                # Back to the host: clear a vfio override (an override naming another driver is the operator's).
                step['want_override'] = None if fn['driver_override'] == vfio_driver else fn['driver_override']
                step['set_override'] = fn['driver_override'] == vfio_driver
                step['want_driver'] = keep_driver if is_primary else None
                if is_primary:
                    step['rebind'] = fn['driver'] != keep_driver
                    if fn['driver'] not in (None, keep_driver, vfio_driver):
                        item['errors'].append(
                            '%s is bound to %s, not %s: refusing to unbind it (blacklist %s or unbind it first)'
                            % (address, fn['driver'], keep_driver, fn['driver']))
                else:
                    step['rebind'] = fn['driver'] == vfio_driver
                step['persist_want'] = None if persisted.get(address) == vfio_driver else persisted.get(address)
            step['persist_now'] = persisted.get(address)
            step['unbind'] = step['rebind'] and fn['driver'] is not None
            item['functions'].append(step)

        if to_vfio:
            item['errors'].extend(group_errors(topology, card_map[primary], vfio_members, vfio_driver))
        if any(step['rebind'] for step in item['functions']):
            item['action'] = 'bind'
        elif any(step['set_override'] for step in item['functions']):
            item['action'] = 'override'
        elif any(step['persist_now'] != step['persist_want'] for step in item['functions']):
            item['action'] = 'persist'
        else:
            item['action'] = 'none'
        plan.append(item)
    return plan


def group_errors(topology, card_functions, vfio_members, vfio_driver=VFIO_DRIVER):
    """Every non-bridge member of each IOMMU group of the card must move to vfio with it (vfio.rst: otherwise the
    group is "not viable"). Allowed members: functions of cards that go to vfio in the same plan. Anything else
    (a NIC behind the same switch without ACS, a GPU that stays on the host) is refused: fail closed."""
    functions = topology['functions']
    errors = []
    seen = set()
    for address in card_functions:
        group = functions[address]['iommu_group']
        if group is None:
            errors.append('%s has no IOMMU group (IOMMU off?): it cannot be passed through' % address)
            continue
        if group in seen:
            continue
        seen.add(group)
        foreign = []
        for member in topology['groups'].get(group, []):
            info = functions.get(member)
            # Bridges (PCI-to-PCI with a secondary bus, and host/other bridges of class 0x06) need no vfio binding.
            if info is None or info['is_bridge'] or _is_bridge_class(info) or member in vfio_members:
                continue
            foreign.append('%s [%s, class %s, driver %s]' % (member, info['pci_id'], info['class'], info['driver'] or 'none'))
        if foreign:
            errors.append('IOMMU group %d of %s also holds %s: every endpoint of a group must go to %s together '
                          '(move it too or fix the topology; ACS override is not an option for a partial split)'
                          % (group, address, '; '.join(foreign), vfio_driver))
    return errors


def _is_bridge_class(info):
    return bool(info.get('class')) and info['class'].startswith('0x06')


# ---- busy checks -----------------------------------------------------------------------------------------------

def device_nodes_of(fn, vfio_driver=VFIO_DRIVER):
    """Device nodes through which a process uses the function right now."""
    nodes = []
    if fn.get('driver') == 'nvidia' and fn.get('device_minor') is not None:
        nodes.append('/dev/nvidia%d' % fn['device_minor'])
    if fn.get('driver') == vfio_driver and fn.get('iommu_group') is not None:
        # A running VM (QEMU) holds its group open; so does any other vfio user.
        nodes.append('/dev/vfio/%d' % fn['iommu_group'])
    return nodes


def busy_reasons(plan, topology, handles=None, compute_apps=None, ignore_comms=(PERSISTENCED_COMM,),
                 vfio_driver=VFIO_DRIVER):
    """Why the functions that are about to be unbound are in use; [] when none is.

    ``handles``: list of (pid, comm, target) for every open file descriptor (target as readlink prints it).
    ``compute_apps``: nvidia-smi --query-compute-apps rows (dicts with gpu_bus_id/pid/process_name), bus ids
    normalised. Handles of processes in ``ignore_comms`` (nvidia-persistenced, stopped around the binds) do not count.
    An interface of the function that is administratively UP counts: it carries traffic.
    """
    reasons = []
    functions = topology['functions']
    handles = handles or []
    for item in plan:
        for step in item['functions']:
            if not step['unbind']:
                continue
            fn = functions[step['address']]
            nodes = device_nodes_of(fn, vfio_driver)
            sysfs_dir = fn.get('sysfs_path')
            holders = []
            for pid, comm, target in handles:
                if comm in ignore_comms:
                    continue
                if target in nodes:
                    holders.append('pid %s (%s) has %s open' % (pid, comm, target))
                elif sysfs_dir and target.startswith(sysfs_dir + '/'):
                    holders.append('pid %s (%s) has %s open' % (pid, comm, target))
            for app in compute_apps or []:
                if app.get('gpu_bus_id') == step['address']:
                    holders.append('nvidia-smi lists compute process pid %s (%s)' % (app.get('pid'), app.get('process_name')))
            for netdev in fn.get('netdevs') or []:
                if netdev['up']:
                    holders.append('network interface %s is UP (ip link set %s down first)' % (netdev['name'], netdev['name']))
            for holder in sorted(set(holders)):
                reasons.append('%s (%s, driver %s): %s' % (step['address'], fn['pci_id'], fn['driver'], holder))
    return reasons


def scan_open_handles(root='/', proc_dir='proc'):
    """(handles, unreadable) below ``root``/proc: handles are (pid, comm, link target) for every fd of every process;
    unreadable lists the PIDs whose fds could not be read for lack of permission (not root, hidepid, another user
    namespace). A process that exits during the scan is not unreadable, only gone."""
    base = os.path.join(root, proc_dir)
    result = []
    unreadable = []
    try:
        pids = [name for name in os.listdir(base) if name.isdigit()]
    except OSError:
        return result, unreadable
    for pid in pids:
        fd_dir = os.path.join(base, pid, 'fd')
        try:
            fds = os.listdir(fd_dir)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM):
                unreadable.append(int(pid))
            continue
        comm = _read(os.path.join(base, pid, 'comm')) or '?'
        for fd in fds:
            try:
                target = os.readlink(os.path.join(fd_dir, fd))
            except OSError as exc:
                if exc.errno in (errno.EACCES, errno.EPERM):
                    unreadable.append(int(pid))
                continue
            result.append((int(pid), comm, target))
    return result, sorted(set(unreadable))


def persistenced_pids(root='/'):
    """PIDs whose comm is nvidia-persistenced (from /proc below root)."""
    base = os.path.join(root, 'proc')
    pids = []
    try:
        names = os.listdir(base)
    except OSError:
        return pids
    for name in names:
        if name.isdigit() and _read(os.path.join(base, name, 'comm')) == PERSISTENCED_COMM:
            pids.append(int(name))
    return sorted(pids)


# ---- persistence -----------------------------------------------------------------------------------------------

def driverctl_file(address):
    """driverctl's state file for a PCI function (what `driverctl set-override` saves), relative to the root."""
    return '%s/pci-%s' % (DRIVERCTL_DIR, normalize_pci_address(address))


def parse_udev_rules(text):
    """address -> driver of the driver_override rules in our udev rules file."""
    result = {}
    for line in (text or '').splitlines():
        match = _UDEV_LINE_RE.search(line)
        if match and not line.lstrip().startswith('#'):
            result[match.group('address')] = match.group('driver')
    return result


def render_udev_rules(overrides):
    """The udev rules file for ``overrides`` (address -> driver); "" when empty (the file is then removed)."""
    if not overrides:
        return ''
    lines = ['# Managed by llmops.inference.gpu_partition: per-address driver_override, set when the device is added',
             '# (before 80-drivers.rules loads a driver), so identical cards keep their split across reboots.']
    for address in sorted(overrides, key=pci_address_sort_key):
        lines.append('ACTION=="add", SUBSYSTEM=="pci", KERNEL=="%s", ATTR{driver_override}="%s"'
                     % (address, overrides[address]))
    return '\n'.join(lines) + '\n'


def read_persisted(root='/'):
    """{'driverctl': {address: driver}, 'udev': {address: driver}} of what is persisted below root."""
    result = {'driverctl': {}, 'udev': {}}
    directory = os.path.join(root, DRIVERCTL_DIR)
    try:
        names = os.listdir(directory)
    except OSError:
        names = []
    for name in names:
        if not name.startswith('pci-'):
            continue
        try:
            address = normalize_pci_address(name[4:])
        except PciAddressError:
            continue
        driver = _read(os.path.join(directory, name))
        if driver:
            result['driverctl'][address] = driver
    result['udev'] = parse_udev_rules(_read(os.path.join(root, UDEV_RULES_FILE)))
    return result


# ---- IOMMU -----------------------------------------------------------------------------------------------------

def iommu_remediation(cpu_vendor, proc_cmdline, grub_default=None, kernel_cmdline=None):
    """What to change when there are no IOMMU groups. Returns dict: params (to add), remove (to drop), file, commands,
    message. Nothing is changed here; the caller reports it (or edits the file when asked to)."""
    tokens = (proc_cmdline or '').split()
    params = []
    remove = [token for token in tokens if token in ('intel_iommu=off', 'amd_iommu=off', 'iommu=off')]
    firmware = 'enable VT-d/IOMMU in the firmware setup'
    if cpu_vendor == 'GenuineIntel':
        if 'intel_iommu=on' not in tokens:
            params.append('intel_iommu=on')
        firmware = 'enable VT-d in the firmware setup'
    elif cpu_vendor in ('AuthenticAMD', 'HygonGenuine'):
        # AMD-Vi is on by default when the firmware exposes it; there is no amd_iommu=on.
        firmware = 'enable IOMMU / AMD-Vi (and SVM) in the firmware setup'
    if 'iommu=pt' not in tokens:
        params.append('iommu=pt')
    if kernel_cmdline is not None:
        where = '/etc/kernel/cmdline'
        commands = ['proxmox-boot-tool refresh', 'reboot']
    elif grub_default is not None:
        where = '/etc/default/grub (GRUB_CMDLINE_LINUX_DEFAULT)'
        commands = ['update-grub', 'reboot']
    else:
        where = 'the boot loader configuration'
        commands = ['reboot']
    message = 'IOMMU is not enabled (no groups under /sys/kernel/iommu_groups): %s' % firmware
    if params or remove:
        message += '; in %s %s%s' % (where, ('add ' + ' '.join(params)) if params else '',
                                     ('%sremove %s' % ('; ' if params else '', ' '.join(remove))) if remove else '')
    message += '; then run: %s' % ' && '.join(commands)
    return {'params': params, 'remove': remove, 'file': where, 'commands': commands, 'message': message}


def acs_override_warning(proc_cmdline):
    tokens = (proc_cmdline or '').split()
    bad = [token for token in tokens if token.startswith('pcie_acs_override') or token == 'pci=noacs']
    if bad:
        return ('%s on the kernel command line merges or fakes IOMMU groups: group isolation cannot be trusted for a '
                'partial passthrough split' % ' '.join(bad))
    return None


def edit_grub_default(text, add, remove=()):
    """Add/remove parameters in GRUB_CMDLINE_LINUX_DEFAULT; returns the new text (unchanged if nothing to do)."""
    lines = (text or '').splitlines(True)
    pattern = re.compile(r'^(\s*GRUB_CMDLINE_LINUX_DEFAULT=)(["\']?)(.*?)(\2)\s*$')
    for index, line in enumerate(lines):
        match = pattern.match(line.rstrip('\n'))
        if match:
            new = _edit_tokens(match.group(3), add, remove)
            quote = match.group(2) or '"'
            lines[index] = '%s%s%s%s\n' % (match.group(1), quote, new, quote)
            return ''.join(lines)
    suffix = '' if not lines or lines[-1].endswith('\n') else '\n'
    return ''.join(lines) + suffix + 'GRUB_CMDLINE_LINUX_DEFAULT="%s"\n' % _edit_tokens('', add, remove)


def edit_kernel_cmdline(text, add, remove=()):
    """/etc/kernel/cmdline is a single line (proxmox-boot-tool)."""
    first = (text or '').splitlines()[0] if (text or '').strip() else ''
    return _edit_tokens(first, add, remove) + '\n'


def _edit_tokens(value, add, remove):
    tokens = [token for token in value.split() if token not in remove]
    for param in add:
        key = param.split('=', 1)[0]
        tokens = [token for token in tokens if token.split('=', 1)[0] != key]
        tokens.append(param)
    return ' '.join(tokens)


# ---- presentation ----------------------------------------------------------------------------------------------

def plan_lines(plan, persistence='driverctl'):
    """Human-readable plan: one line per card, then indented lines for errors and notes."""
    lines = []
    for item in plan:
        primary = item['functions'][0]
        head = '%s [%s] NUMA %s, IOMMU group %s: ' % (item['address'], item['pci_id'], item['numa_node'],
                                                      item['iommu_group'] if item['iommu_group'] is not None else '-')
        before = primary['driver'] or 'unbound'
        node = '/dev/nvidia%d' % item['device_minor'] if item['device_minor'] is not None else None
        if item['action'] == 'none':
            text = 'stays on %s' % before
        elif item['action'] == 'bind':
            # The card's /dev/nvidiaN belongs to the driver it leaves: it goes with it.
            text = '%s%s -> %s' % (before, ' (%s)' % node if node else '', item['target'])
            node = None
        elif item['action'] == 'override':
            text = 'on %s, set driver_override=%s' % (before, primary['want_override'])
        else:
            text = 'on %s, boot-time driver (%s): %s -> %s' % (before, persistence, primary['persist_now'] or 'none',
                                                               primary['persist_want'] or 'none')
        if node:
            text += ', ' + node
        companions = ['%s %s%s' % (step['address'][-1:], step['driver'] or 'unbound',
                                   (' -> %s' % (step['want_driver'] or 'host driver')) if step['rebind'] else '')
                      for step in item['functions'][1:]]
        if companions:
            text += ' (+ .%s)' % ', .'.join(companions)
        text += ' [%s]' % item['source']
        lines.append(head + text)
        for error in item['errors']:
            lines.append('  REFUSED: ' + error)
        for note in item['notes']:
            lines.append('  note: ' + note)
    return lines


def final_map(topology, targets, vfio_driver=VFIO_DRIVER, vendor_devices=None, persisted=None):
    """The driver map after the run: one entry per card (targeted or not), sorted by address."""
    persisted = persisted or {}
    functions = topology['functions']
    result = []
    for primary, members in sorted(cards(topology, vendor_devices).items(), key=lambda kv: pci_address_sort_key(kv[0])):
        fn = functions[primary]
        target = targets.get(primary)
        minor = fn.get('device_minor')
        result.append({
            'address': primary,
            'slot': fn['slot'],
            'pci_id': fn['pci_id'],
            'driver': fn['driver'],
            'driver_override': fn['driver_override'],
            'numa_node': fn['numa_node'],
            'iommu_group': fn['iommu_group'],
            'device_minor': minor,
            'device_node': None if minor is None else '/dev/nvidia%d' % minor,
            'uuid': fn.get('uuid'),
            'target': target['driver'] if target else None,
            'managed': target is not None,
            'persisted': persisted.get(primary),
            'functions': [{'address': addr, 'pci_id': functions[addr]['pci_id'], 'driver': functions[addr]['driver'],
                           'driver_override': functions[addr]['driver_override'], 'iommu_group': functions[addr]['iommu_group']}
                          for addr in members],
        })
    return result


def driver_map_text(topology, vendor_devices=None, persisted=None):
    """"address driver" lines for diff mode (every function of every card); with ``persisted`` ({address: driver}
    of the chosen mechanism) also the driver each function gets at the next boot (``boot=``)."""
    functions = topology['functions']
    lines = []
    for primary, members in sorted(cards(topology, vendor_devices).items(), key=lambda kv: pci_address_sort_key(kv[0])):
        for address in members:
            fn = functions[address]
            extra = ''
            if fn['driver_override']:
                extra += ' override=%s' % fn['driver_override']
            if fn.get('device_minor') is not None:
                extra += ' /dev/nvidia%d' % fn['device_minor']
            if persisted is not None and persisted.get(address):
                extra += ' boot=%s' % persisted[address]
            lines.append('%s %s%s' % (address, fn['driver'] or 'unbound', extra))
    return '\n'.join(lines) + ('\n' if lines else '')
