# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Read-only helpers for Linux PCI sysfs (and the NVIDIA per-GPU procfs file), rooted anywhere.

Every path is resolved under ``root`` so that fixture trees and container root filesystems can be inspected the
same way as the live host (``root='/'``). Nothing here writes; a module that binds or unbinds drivers builds its
write paths with :meth:`PciSysfs.device_path` / :meth:`PciSysfs.path` so reads and writes agree on the layout.

Layout relied on (Documentation/ABI/testing/sysfs-bus-pci):

* ``sys/bus/pci/devices/<DDDD:BB:DD.F>`` symlinks into ``sys/devices/pci<DDDD:BB>/...``;
* per function: ``vendor``, ``device``, ``class``, ``subsystem_vendor``, ``subsystem_device``, ``numa_node``,
  ``local_cpulist``, ``driver_override`` ("(null)" when unset), ``driver`` -> ``.../bus/pci/drivers/<name>``,
  ``iommu_group`` -> ``.../kernel/iommu_groups/<N>``, and a ``pci_bus/`` directory on bridges;
* ``sys/kernel/iommu_groups/<N>/devices/<addr>`` for every group member;
* ``proc/driver/nvidia/gpus/<addr>/information`` (nvidia driver only) with ``Device Minor:`` etc.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

PCI_DEVICES_DIR = 'sys/bus/pci/devices'
PCI_DRIVERS_DIR = 'sys/bus/pci/drivers'
IOMMU_GROUPS_DIR = 'sys/kernel/iommu_groups'
NVIDIA_PROC_GPUS_DIR = 'proc/driver/nvidia/gpus'

NVIDIA_VENDOR_ID = '0x10de'

# PCI base class/subclass (upper 16 bits of the 24-bit class code).
GPU_CLASSES = (0x0300, 0x0302)  # VGA-compatible and 3D controllers; data-center GPUs report 0x0302
AUDIO_CLASSES = (0x0403,)  # HD audio: the HDMI/DP function next to a display GPU
BRIDGE_CLASSES = (0x0604, 0x0609)  # PCI-to-PCI bridges (normal and subtractive decode)
BRIDGE_BASE_CLASS = 0x06  # host/ISA/PCI bridges and "other" bridges such as NVSwitch (0x0680)

# Domain: sysfs prints %04x (VMD domains have 5 digits), nvidia-smi prints 8 digits.
_ADDRESS_RE = re.compile(
    r'^(?:(?P<domain>[0-9a-f]{1,8}):)?(?P<bus>[0-9a-f]{2}):(?P<device>[0-9a-f]{2})\.(?P<function>[0-7])$',
    re.IGNORECASE)
_VENDOR_RE = re.compile(r'^(?:0x)?([0-9a-f]{4})$', re.IGNORECASE)


class PciAddressError(ValueError):
    """Raised for a string that is not a PCI function address."""


def split_pci_address(value):
    """Return ``(domain, bus, device, function)`` as ints for any accepted address spelling.

    Accepted: ``0000:41:00.0`` (sysfs), ``00000000:41:00.0`` (nvidia-smi), ``41:00.0`` (lspci without -D; domain 0),
    any letter case, surrounding whitespace.
    """
    if not isinstance(value, str):
        raise PciAddressError('invalid PCI address %r: expected a string like 0000:41:00.0' % (value,))
    match = _ADDRESS_RE.match(value.strip())
    if not match:
        raise PciAddressError(
            'invalid PCI address %r: expected [DOMAIN:]BUS:DEVICE.FUNCTION in hex, e.g. 0000:41:00.0 '
            '(nvidia-smi style 00000000:41:00.0 is accepted too)' % (value,))
    device = int(match.group('device'), 16)
    if device > 0x1f:
        raise PciAddressError('invalid PCI address %r: device number 0x%02x is above 0x1f' % (value, device))
    domain = int(match.group('domain') or '0', 16)
    return domain, int(match.group('bus'), 16), device, int(match.group('function'), 16)


def format_pci_address(domain, bus, device, function):
    """Format as the kernel does (``%04x:%02x:%02x.%x``)."""
    return '%04x:%02x:%02x.%x' % (domain, bus, device, function)


def normalize_pci_address(value):
    """Return the sysfs spelling ``0000:41:00.0`` of an address; raise PciAddressError when it is not one."""
    return format_pci_address(*split_pci_address(value))


def pci_address_sort_key(address):
    """Numeric sort key, so that a 5-digit VMD domain sorts after domain ffff."""
    return split_pci_address(address)


def pci_slot(address):
    """Return ``DDDD:BB:DD`` (all functions of one physical device), the form ``qm set -hostpci0`` takes."""
    domain, bus, device, dummy = split_pci_address(address)
    return '%04x:%02x:%02x' % (domain, bus, device)


def normalize_vendor_id(value):
    """Return ``0x10de`` for ``10de``, ``0x10DE``, ``0x10de``; raise ValueError otherwise."""
    match = _VENDOR_RE.match(str(value).strip())
    if not match:
        raise ValueError('invalid PCI vendor id %r: expected 4 hex digits such as 0x10de' % (value,))
    return '0x' + match.group(1).lower()


def parse_hex(text):
    """Parse a sysfs hex attribute (``0x10de\\n``); None for a missing or malformed value."""
    if text is None:
        return None
    try:
        return int(text.strip(), 16)
    except ValueError:
        return None


def parse_driver_override(text):
    """``driver_override`` reads "(null)" when unset (and may be empty on some kernels): both mean None."""
    if text is None:
        return None
    value = text.strip()
    if value in ('', '(null)'):
        return None
    return value


def parse_numa_node(text):
    """Return the NUMA node as int; -1 means unknown (no NUMA affinity reported). None when unreadable."""
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        return None


def class_code(pci_class):
    """Base class + subclass (``0x0302``) of a 24-bit class code (``0x030200``)."""
    return None if pci_class is None else pci_class >> 8


def is_gpu_class(pci_class):
    return class_code(pci_class) in GPU_CLASSES


def is_audio_class(pci_class):
    return class_code(pci_class) in AUDIO_CLASSES


def is_bridge_class(pci_class):
    """Any bridge base class (host, ISA, PCI-to-PCI, NVSwitch "other bridge")."""
    return pci_class is not None and (pci_class >> 16) == BRIDGE_BASE_CLASS


def format_class(pci_class):
    return None if pci_class is None else '0x%06x' % pci_class


def format_id(value):
    return None if value is None else '0x%04x' % value


def parse_nvidia_gpu_information(text):
    """Parse ``/proc/driver/nvidia/gpus/<addr>/information`` ("Key: <tabs> value" lines, see nv-procfs.c).

    Returns a dict with ``model``, ``uuid``, ``bus_location`` (normalised), ``device_minor`` (int), ``gpu_excluded``
    (bool) and ``video_bios``; a field that is absent or unparsable is None. ``fields`` holds every raw key/value.
    """
    fields = {}
    for line in (text or '').splitlines():
        key, sep, value = line.partition(':')
        if sep:
            fields[key.strip()] = value.strip()

    minor = fields.get('Device Minor')
    try:
        minor = int(minor) if minor is not None else None
    except ValueError:
        minor = None

    bus_location = fields.get('Bus Location')
    if bus_location is not None:
        try:
            bus_location = normalize_pci_address(bus_location)
        except PciAddressError:
            bus_location = None

    excluded = fields.get('GPU Excluded')
    if excluded is not None:
        excluded = excluded.lower() == 'yes'

    return {
        'model': fields.get('Model') or None,
        'uuid': fields.get('GPU UUID') or None,
        'bus_location': bus_location,
        'device_minor': minor,
        'gpu_excluded': excluded,
        'video_bios': fields.get('Video BIOS') or None,
        'fields': fields,
    }


class PciSysfs(object):
    """Reader for the PCI sysfs tree below ``root``; every accessor takes any accepted address spelling."""

    def __init__(self, root='/'):
        self.root = root

    def path(self, *parts):
        """Absolute path of ``parts`` (relative, e.g. ``'sys/bus/pci/drivers_probe'``) below the root."""
        return os.path.join(self.root, *[part.lstrip('/') for part in parts])

    def device_path(self, address, *parts):
        return self.path(PCI_DEVICES_DIR, normalize_pci_address(address), *parts)

    # -- listing -------------------------------------------------------------------------------------------------

    def has_pci_bus(self):
        return os.path.isdir(self.path(PCI_DEVICES_DIR))

    def list_functions(self):
        """All PCI function addresses under sys/bus/pci/devices, sorted; [] when the directory is missing."""
        return _sorted_addresses(_listdir(self.path(PCI_DEVICES_DIR)))

    def has_function(self, address):
        return os.path.exists(self.device_path(address))

    def slot_functions(self, address):
        """Every function (including ``address``) in the same bus:device slot."""
        slot = pci_slot(address)
        return [addr for addr in self.list_functions() if pci_slot(addr) == slot]

    # -- attributes ----------------------------------------------------------------------------------------------

    def read_attr(self, address, name):
        """Stripped contents of one attribute file; None when it is missing or unreadable."""
        return _read(self.device_path(address, name))

    def vendor_id(self, address):
        return parse_hex(self.read_attr(address, 'vendor'))

    def device_id(self, address):
        return parse_hex(self.read_attr(address, 'device'))

    def pci_class(self, address):
        return parse_hex(self.read_attr(address, 'class'))

    def driver(self, address):
        """Name of the bound driver (basename of the ``driver`` link), None when unbound."""
        target = _readlink(self.device_path(address, 'driver'))
        return os.path.basename(target.rstrip('/')) if target else None

    def driver_override(self, address):
        return parse_driver_override(self.read_attr(address, 'driver_override'))

    def numa_node(self, address):
        """int, -1 when the firmware reports none; None when the attribute is missing (kernel without NUMA)."""
        return parse_numa_node(self.read_attr(address, 'numa_node'))

    def local_cpulist(self, address):
        return self.read_attr(address, 'local_cpulist') or None

    def is_bridge(self, address):
        """A function with a ``pci_bus/`` directory has a secondary bus, i.e. it is a bridge; the class code is the
        fallback for trees that lack the directory."""
        if os.path.isdir(self.device_path(address, 'pci_bus')):
            return True
        return class_code(self.pci_class(address)) in BRIDGE_CLASSES

    # -- IOMMU -----------------------------------------------------------------------------------------------------

    def iommu_groups(self):
        """Sorted group numbers under sys/kernel/iommu_groups ([] when the IOMMU is off or absent)."""
        return sorted(int(name) for name in _listdir(self.path(IOMMU_GROUPS_DIR)) if name.isdigit())

    def iommu_enabled(self):
        return bool(self.iommu_groups())

    def iommu_group(self, address):
        """Group number from the ``iommu_group`` link, None without one."""
        target = _readlink(self.device_path(address, 'iommu_group'))
        if not target:
            return None
        name = os.path.basename(target.rstrip('/'))
        return int(name) if name.isdigit() else None

    def iommu_group_devices(self, group):
        """Every member address of a group, sorted."""
        return _sorted_addresses(_listdir(self.path(IOMMU_GROUPS_DIR, str(group), 'devices')))

    # -- summaries ---------------------------------------------------------------------------------------------

    def function_summary(self, address):
        """Identity and binding of one function: what a group-viability check needs to know about a member."""
        address = normalize_pci_address(address)
        vendor = self.vendor_id(address)
        device = self.device_id(address)
        pci_class = self.pci_class(address)
        return {
            'address': address,
            'vendor_id': format_id(vendor),
            'device_id': format_id(device),
            'pci_id': None if vendor is None or device is None else '%04x:%04x' % (vendor, device),
            'class': format_class(pci_class),
            'is_gpu': is_gpu_class(pci_class),
            'is_audio': is_audio_class(pci_class),
            'is_bridge': self.is_bridge(address),
            'driver': self.driver(address),
            'driver_override': self.driver_override(address),
        }

    # -- NVIDIA procfs ---------------------------------------------------------------------------------------

    def nvidia_gpu_information_path(self, address):
        return self.path(NVIDIA_PROC_GPUS_DIR, normalize_pci_address(address), 'information')

    def nvidia_gpu_information(self, address):
        """Parsed information file of a GPU bound to nvidia; None when the file does not exist."""
        text = _read(self.nvidia_gpu_information_path(address), strip=False)
        return None if text is None else parse_nvidia_gpu_information(text)


def _read(path, strip=True):
    try:
        with open(path, 'rb') as handle:
            text = handle.read().decode('utf-8', 'replace')
    except (IOError, OSError):
        return None
    return text.strip() if strip else text


def _readlink(path):
    try:
        return os.readlink(path)
    except (IOError, OSError):
        return None


def _listdir(path):
    try:
        return os.listdir(path)
    except (IOError, OSError):
        return []


def _sorted_addresses(names):
    """Normalise directory entries that are PCI addresses, drop anything else, sort numerically."""
    addresses = set()
    for name in names:
        try:
            addresses.add(normalize_pci_address(name))
        except PciAddressError:
            continue
    return sorted(addresses, key=pci_address_sort_key)


def build_inventory(sysfs, vendor_ids=(NVIDIA_VENDOR_ID,), addresses=None):
    """Inventory the PCI functions of ``vendor_ids`` below ``sysfs.root``.

    One entry per card: bridges (class 0x06xxxx, e.g. NVSwitch) are skipped, and a non-GPU function that shares
    its slot with a GPU function (HDMI/DP audio, USB-C) is reported under that GPU's ``companion_functions``
    instead of as an entry of its own. ``addresses`` (normalised) restricts the entries.

    Returns a dict with ``gpus`` (sorted by address), ``count``, ``by_numa_node`` (str(node) -> addresses),
    ``iommu_enabled`` and ``warnings`` (list of str for data that is missing or inconsistent).
    """
    vendor_ids = set(vendor_ids)
    warnings = []
    if not sysfs.has_pci_bus():
        warnings.append('%s does not exist: no PCI sysfs below root %s' % (sysfs.path(PCI_DEVICES_DIR), sysfs.root))

    all_functions = sysfs.list_functions()
    summaries = {}
    matched = []
    for address in all_functions:
        if format_id(sysfs.vendor_id(address)) in vendor_ids:
            summaries[address] = sysfs.function_summary(address)
            matched.append(address)

    def summary(address):
        if address not in summaries:
            summaries[address] = sysfs.function_summary(address)
        return summaries[address]

    iommu_enabled = sysfs.iommu_enabled()
    wanted = set(addresses) if addresses else None
    entries, companions_of = _card_entries(sysfs, all_functions, matched, summary, wanted, warnings)
    if wanted is not None:
        _explain_not_inventoried(sysfs, wanted, entries, companions_of, summaries, all_functions, vendor_ids, warnings)

    numa_unknown = [entry['address'] for entry in entries if entry['numa_node'] == -1]
    if numa_unknown:
        warnings.append('numa_node is -1 (unknown: the firmware reports no NUMA affinity, typical of VMs and NPS1 '
                        'hosts) for %s' % ', '.join(numa_unknown))
    if entries and not iommu_enabled:
        warnings.append('no IOMMU groups under %s (IOMMU off or not supported): iommu_group is null, so vfio '
                        'passthrough is not possible' % sysfs.path(IOMMU_GROUPS_DIR))

    by_numa_node = {}
    for entry in entries:
        by_numa_node.setdefault(str(entry['numa_node']), []).append(entry['address'])

    return {
        'gpus': entries,
        'count': len(entries),
        'by_numa_node': by_numa_node,
        'iommu_enabled': iommu_enabled,
        'warnings': warnings,
    }


def _card_entries(sysfs, all_functions, matched, summary, wanted, warnings):
    """(entries, companions_of): one entry per matched card that ``wanted`` (None: all) names, bridges skipped; a
    non-GPU function in a GPU's slot is recorded in companions_of (address -> the GPU's address) instead."""
    slots = {}
    for address in all_functions:
        slots.setdefault(pci_slot(address), []).append(address)
    entries = []
    companions_of = {}
    for address in matched:
        info = summary(address)
        siblings = [addr for addr in slots[pci_slot(address)] if addr != address]
        if is_bridge_class(parse_hex(info['class'])):
            continue
        gpu_sibling = [addr for addr in siblings if summary(addr)['is_gpu']]
        if not info['is_gpu'] and gpu_sibling:
            companions_of[address] = gpu_sibling[0]
            continue
        if wanted is not None and address not in wanted:
            continue
        entries.append(_gpu_entry(sysfs, address, info, [summary(addr) for addr in siblings], summary, warnings))
    return entries, companions_of


def _explain_not_inventoried(sysfs, wanted, entries, companions_of, summaries, all_functions, vendor_ids, warnings):
    """A warning for each wanted address that has no entry, saying why."""
    found = set(entry['address'] for entry in entries)
    for address in sorted(wanted - found, key=pci_address_sort_key):
        if address in companions_of:
            warnings.append('%s is a companion function of %s: it is listed in that entry\'s companion_functions'
                            % (address, companions_of[address]))
        elif address in summaries:
            warnings.append('%s is a bridge, not inventoried' % address)
        elif address in all_functions:
            warnings.append('%s exists but its vendor is not one of %s' % (address, ', '.join(sorted(vendor_ids))))
        else:
            warnings.append('%s: no such PCI function below %s' % (address, sysfs.path(PCI_DEVICES_DIR)))


def _gpu_entry(sysfs, address, info, companions, summary, warnings):
    entry = dict(info)
    entry['slot'] = pci_slot(address)
    entry['subsystem_vendor_id'] = format_id(parse_hex(sysfs.read_attr(address, 'subsystem_vendor')))
    entry['subsystem_device_id'] = format_id(parse_hex(sysfs.read_attr(address, 'subsystem_device')))
    del entry['is_bridge']

    numa = sysfs.numa_node(address)
    if numa is None:
        warnings.append('%s: numa_node attribute missing or unreadable; reporting -1' % address)
        numa = -1
    entry['numa_node'] = numa
    entry['local_cpulist'] = sysfs.local_cpulist(address)
    if entry['local_cpulist'] is None:
        warnings.append('%s: local_cpulist attribute missing or unreadable' % address)

    group = sysfs.iommu_group(address)
    entry['iommu_group'] = group
    if group is None:
        entry['iommu_group_members'] = []
    else:
        members = sysfs.iommu_group_devices(group)
        if address not in members:
            warnings.append('%s links to IOMMU group %d, but %s does not list it'
                            % (address, group, sysfs.path(IOMMU_GROUPS_DIR, str(group), 'devices')))
        entry['iommu_group_members'] = [summary(member) for member in members]
    entry['companion_functions'] = companions

    entry['device_minor'] = None
    entry['device_node'] = None
    entry['uuid'] = None
    entry['model'] = None
    information = sysfs.nvidia_gpu_information(address)
    if information is not None:
        entry['device_minor'] = information['device_minor']
        entry['uuid'] = information['uuid']
        entry['model'] = information['model']
        if information['device_minor'] is not None:
            entry['device_node'] = '/dev/nvidia%d' % information['device_minor']
        else:
            warnings.append('%s: no parsable "Device Minor:" in %s' % (address, sysfs.nvidia_gpu_information_path(address)))
        if information['bus_location'] not in (None, address):
            warnings.append('%s: %s reports Bus Location %s' % (address, sysfs.nvidia_gpu_information_path(address),
                                                                information['bus_location']))
    elif entry['driver'] == 'nvidia':
        warnings.append('%s is bound to nvidia but %s is missing: device_minor, uuid and model unknown'
                        % (address, sysfs.nvidia_gpu_information_path(address)))
    entry['nvidia_smi'] = None
    return entry
