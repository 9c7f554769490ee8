# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Proxmox VE's ``qm``: read ``qm config`` / ``qm status`` and plan the ``qm set --hostpciN`` that hands cards to a VM.

PRIVATE to the collection. Pure functions (no Ansible, no subprocess), shared by the module
llmops.inference.proxmox_vm_hostpci (against the VM's real config) and the resolver (against an empty config, for the
plan's ``qm set`` lines), so both say the same thing.

Formats mirrored from Proxmox's qemu-server (github.com/proxmox/qemu-server at e6352be6, 2026-08-17):

* ``qm config <vmid>`` (src/PVE/CLI/qm.pm, ``config``): one ``key: value`` line per key, sorted, the ``digest`` left
  out, the pending changes applied (src/PVE/API2/Qemu.pm ``vm_config``: "with pending configuration changes
  applied"). The config file /etc/pve/qemu-server/<vmid>.conf has the same lines, the description as leading
  ``#`` comments and snapshot / ``[PENDING]`` sections after the current ones; ``parse_config`` reads both.
* ``qm status <vmid>`` (qm.pm ``status``): ``status: <qmpstatus>`` (running, stopped, paused, ...).
* ``hostpciN`` (src/PVE/QemuServer/PCI.pm ``$hostpci_fmt``, N below ``$MAX_HOSTPCI_DEVICES`` = 16): a property
  string whose default key is ``host``, ``[domain:]bus:dev[.func]`` ids joined by ``;`` (an id without a function
  means every function of the device), or ``mapping=<id>``; ``pcie=1`` needs a q35 machine
  (``die "q35 machine model is not enabled"`` at VM start, PCI.pm ``parse_hostpci_devices``).
* ``machine`` (src/PVE/QemuServer/Machine.pm ``machine_type_is_q35``): q35 when the type contains ``q35``
  (``q35``, ``pc-q35-9.0+pve1``, ``type=q35,viommu=virtio``); none or ``pc``/``pc-i440fx-*`` is i440fx.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

MAX_HOSTPCI = 16
VMID_MIN, VMID_MAX = 100, 999999999
_KEY = re.compile(r'^(?P<key>[a-z][a-z0-9_-]*):\s?(?P<value>.*)$')
_HOSTPCI = re.compile(r'^hostpci(\d+)$')
_ID = re.compile(r'^(?:(?P<domain>[0-9a-f]{4,}):)?(?P<bus>[0-9a-f]{2}):(?P<device>[0-9a-f]{2})(?:\.(?P<fn>[0-7]))?$')


class QmError(ValueError):
    """Output of qm that is not in the format Proxmox prints, or a VM that cannot take the cards."""


def parse_config(text):
    """{key: value} of the VM's current settings (``qm config`` output or the .conf file's first section)."""
    config = {}
    for number, line in enumerate((text or '').splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith('#'):
            continue
        if stripped.startswith('['):
            break  # a snapshot or [PENDING] section of the config file
        match = _KEY.match(stripped)
        if not match:
            raise QmError('line %d of the VM config is not "key: value": %r' % (number, line))
        config[match.group('key')] = match.group('value').strip()
    return config


def parse_status(text):
    """The VM state of ``qm status <vmid>``: running, stopped, paused, ..."""
    for line in (text or '').splitlines():
        if line.startswith('status:'):
            state = line.split(':', 1)[1].strip()
            if state:
                return state
    raise QmError('qm status printed no "status: <state>" line: %r' % (text,))


def _property_string(value):
    """Proxmox property string: default key ``host`` for the first item without '='."""
    result = {}
    for index, part in enumerate(value.split(',')):
        part = part.strip()
        if not part:
            continue
        if '=' in part:
            key, item = part.split('=', 1)
            result[key.strip()] = item.strip()
        elif index == 0:
            result['host'] = part
        else:
            raise QmError('hostpci value %r: %r is not key=value' % (value, part))
    return result


def _host_id(text):
    """(domain, bus, device, function or None) of a hostpci id; Proxmox adds domain 0000 when none is given."""
    match = _ID.match(text.strip().lower())
    if not match:
        raise QmError('hostpci id %r is not [domain:]bus:dev[.func]' % (text,))
    fn = match.group('fn')
    return (int(match.group('domain') or '0', 16), int(match.group('bus'), 16), int(match.group('device'), 16),
            None if fn is None else int(fn))


def parse_hostpci(value):
    """{'ids': [(domain, bus, dev, fn|None)], 'mapping': str|None, 'options': {key: value}} of one hostpciN."""
    props = _property_string(value)
    host, mapping = props.pop('host', None), props.pop('mapping', None)
    ids = [_host_id(part) for part in host.split(';') if part.strip()] if host else []
    return dict(ids=ids, mapping=mapping, options=props)


def hostpci_entries(config):
    """{slot number: parsed entry (plus 'value')} of the VM's hostpci0..15."""
    entries = {}
    for key, value in config.items():
        match = _HOSTPCI.match(key)
        if match and int(match.group(1)) < MAX_HOSTPCI:
            entry = parse_hostpci(value)
            entry['value'] = value
            entries[int(match.group(1))] = entry
    return entries


def covers(entry, address):
    """Whether a parsed hostpci entry passes the function ``address`` (``0000:81:00.0``) through."""
    want = _host_id(address)
    return any(have[:3] == want[:3] and have[3] in (None, want[3]) for have in entry['ids'])


def is_q35(config):
    machine = config.get('machine') or ''
    kind = machine.split(',', 1)[0]
    if '=' in kind:
        kind = dict(p.split('=', 1) for p in machine.split(',') if '=' in p).get('type', '')
    return 'q35' in kind


def hostpci_value(address):
    """What the collection sets: the card's function with pcie=1 (needs q35)."""
    return '%s,pcie=1' % address


def wanted_settings(devices):
    """{'hostpciN': value} that hands ``devices`` ([{slot, address}]) to a VM with no hostpci entry yet."""
    return dict(('hostpci%d' % int(d['slot']), hostpci_value(d['address'])) for d in devices)


def _with_pcie(entry):
    options = dict(entry['options'])
    if options.get('pcie') in ('1', 'on', 'yes', 'true'):
        return None
    parts = [entry['value'].split(',', 1)[0]] + ['%s=%s' % (k, v) for k, v in options.items() if k != 'pcie']
    return ','.join(parts + ['pcie=1'])


def plan_vm(vmid, devices, config):
    """What ``qm set`` must change so that the VM passes ``devices`` ([{slot, address}]) through.

    Returns {set: {'hostpciN': value}, kept: [hostpci keys left as they are], already: [{slot, address, at}],
    errors: [why not]}. A card already passed through (in any slot, by a whole-device or a function id) is left
    where it is (pcie=1 added when missing); a planned slot that holds anything else is refused, never replaced.
    """
    entries = hostpci_entries(config)
    ours = set(d['address'] for d in devices)
    result = dict(set={}, kept=[], already=[], errors=[])
    for device in devices:
        slot, address = int(device['slot']), device['address']
        at = sorted(n for n, e in entries.items() if covers(e, address))
        if at:
            result['already'].append(dict(slot=slot, address=address, at='hostpci%d' % at[0]))
            value = _with_pcie(entries[at[0]])
            if value is not None:
                result['set']['hostpci%d' % at[0]] = value
            continue
        if slot not in entries:
            result['set']['hostpci%d' % slot] = hostpci_value(address)
            continue
        holder = entries[slot]
        mine = [a for a in ours if covers(holder, a)]
        what = 'card %s of this VM' % mine[0] if mine else (
            'mapping %s' % holder['mapping'] if holder['mapping'] else 'a device that is not one of its cards')
        result['errors'].append(
            'hostpci%d of VM %s holds %r (%s), so %s cannot go there: free it with `qm set %s --delete hostpci%d` '
            'or give this VM other slots (llmops_host_vfio_vms[].hostpci_slots)'
            % (slot, vmid, holder['value'], what, address, vmid, slot))
    result['kept'] = ['hostpci%d' % n for n in sorted(entries) if 'hostpci%d' % n not in result['set']]
    if devices and not is_q35(config):
        result['errors'].append(
            'VM %s has machine %r, not q35: pcie=1 needs it (Proxmox refuses the start with "q35 machine model is '
            'not enabled"); set `qm set %s --machine q35` (the guest then sees a new chipset) and run again'
            % (vmid, config.get('machine') or 'i440fx (the default)', vmid))
    return result


def set_argv(qm, vmid, settings):
    """argv of one ``qm set`` for {'hostpciN': value} (slots in numeric order), or None when nothing changes."""
    if not settings:
        return None
    argv = [qm, 'set', str(vmid)]
    for key in sorted(settings, key=lambda k: int(_HOSTPCI.match(k).group(1))):
        argv += ['--' + key, settings[key]]
    return argv


def command_line(vmid, settings):
    """The ``qm set`` line as the plan prints it (and an operator can run)."""
    argv = set_argv('qm', vmid, settings)
    return ' '.join(argv) if argv else None
