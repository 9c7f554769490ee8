# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Build and parse ``nvidia-smi --query-*`` CSV (``--format=csv,noheader,nounits``) and join it to a PCI inventory.

Banner and driver-version parsing live in module_utils/gpu/driver.py; this file only deals with the per-GPU CSV queries.
Rows are comma-space separated, one per GPU (or per process); ``pci.bus_id``/``gpu_bus_id`` carry an 8-digit domain
and upper-case hex (``00000000:41:00.0``) and are normalised to the sysfs form before joining.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.host.pci_sysfs import (
    PciAddressError,
    normalize_pci_address,
)

GPU_QUERY_FIELDS = ('index', 'pci.bus_id', 'uuid', 'name', 'memory.total', 'compute_cap')
APPS_QUERY_FIELDS = ('pid', 'process_name', 'used_memory', 'gpu_bus_id')
CSV_FORMAT = '--format=csv,noheader,nounits'

# Placeholders nvidia-smi prints instead of a value.
_UNAVAILABLE = ('', 'N/A', '[N/A]', '[Not Supported]', '[Insufficient Permissions]', '[Unknown Error]',
                '[GPU requires reset]', '[GPU is lost]')


class NvidiaSmiParseError(ValueError):
    """Raised for CSV output that does not have the shape the query asked for."""


def query_gpu_args(fields=GPU_QUERY_FIELDS):
    return ['--query-gpu=' + ','.join(fields), CSV_FORMAT]


def query_compute_apps_args(fields=APPS_QUERY_FIELDS):
    return ['--query-compute-apps=' + ','.join(fields), CSV_FORMAT]


def invalid_field(output):
    """Name of the field nvidia-smi rejected (``Field "compute_cap" is not a valid field to query.``), else None."""
    marker = 'is not a valid field to query'
    for line in (output or '').splitlines():
        if marker in line and '"' in line:
            return line.split('"')[1]
    return None


def _value(text):
    text = text.strip()
    return None if text in _UNAVAILABLE else text


def _int_value(text):
    """Integer out of ``143771`` or ``143771 MiB`` (a query without nounits); None for placeholders."""
    value = _value(text)
    if value is None:
        return None
    try:
        return int(value.split()[0])
    except ValueError:
        return None


def _bus_id(text, line):
    try:
        return normalize_pci_address(text)
    except PciAddressError:
        raise NvidiaSmiParseError('unparsable PCI bus id %r in nvidia-smi line %r' % (text.strip(), line))


def _data_lines(text, first_field):
    """Non-empty lines, minus a header row (present when ``noheader`` was not given)."""
    lines = [line for line in (text or '').splitlines() if line.strip()]
    if lines and lines[0].split(',')[0].strip().startswith(first_field):
        lines = lines[1:]
    return lines


def parse_query_gpu(text, fields=GPU_QUERY_FIELDS):
    """Parse ``--query-gpu`` CSV into dicts keyed by field name.

    ``index`` and ``memory.total`` (MiB) become int, ``pci.bus_id`` is normalised, placeholders become None;
    other fields stay strings. Raises NvidiaSmiParseError when a row has the wrong number of columns.
    """
    rows = []
    for line in _data_lines(text, fields[0]):
        values = [part.strip() for part in line.split(',')]
        if len(values) != len(fields):
            raise NvidiaSmiParseError('expected %d comma-separated values (%s) in nvidia-smi line %r'
                                      % (len(fields), ','.join(fields), line))
        row = {}
        for field, value in zip(fields, values):
            if field == 'pci.bus_id':
                row[field] = _bus_id(value, line)
            elif field in ('index', 'memory.total'):
                row[field] = _int_value(value)
            else:
                row[field] = _value(value)
        rows.append(row)
    return rows


def parse_compute_apps(text):
    """Parse ``--query-compute-apps=pid,process_name,used_memory,gpu_bus_id`` CSV.

    The process name may itself contain ", ", so pid is the first column, bus id the last and memory the one before.
    Returns dicts with ``pid`` (int), ``process_name``, ``used_memory_mib`` (int or None) and ``gpu_bus_id``.
    """
    apps = []
    for line in _data_lines(text, 'pid'):
        if line.strip().lower().startswith('no running'):
            continue
        values = line.split(',')
        if len(values) < 4:
            raise NvidiaSmiParseError('expected pid, process_name, used_memory, gpu_bus_id in nvidia-smi line %r' % line)
        pid = _int_value(values[0])
        if pid is None:
            raise NvidiaSmiParseError('unparsable pid in nvidia-smi line %r' % line)
        apps.append({
            'pid': pid,
            'process_name': _value(','.join(values[1:-2])),
            'used_memory_mib': _int_value(values[-2]),
            'gpu_bus_id': _bus_id(values[-1], line),
        })
    return apps


def join_inventory(gpus, smi_gpus, apps=None, selected=None):
    """Attach nvidia-smi data to inventory entries (matched by bus id) as ``entry['nvidia_smi']``.

    ``apps`` None means the process query was not available: ``processes`` is then None rather than [].
    ``selected`` (a set of addresses, when the inventory was filtered) silences rows for GPUs left out on purpose.
    Returns warnings for GPUs only one side knows about and for UUIDs that disagree with procfs.
    """
    warnings = []
    by_address = dict((entry['address'], entry) for entry in gpus)
    if selected:
        smi_gpus = [row for row in smi_gpus if row['pci.bus_id'] in selected]
        apps = None if apps is None else [app for app in apps if app['gpu_bus_id'] in selected]
    for row in smi_gpus:
        address = row['pci.bus_id']
        entry = by_address.get(address)
        if entry is None:
            warnings.append('nvidia-smi reports GPU %s (index %s) that is not in the PCI inventory'
                            % (address, row.get('index')))
            continue
        entry['nvidia_smi'] = {
            'index': row.get('index'),
            'name': row.get('name'),
            'uuid': row.get('uuid'),
            'memory_total_mib': row.get('memory.total'),
            'compute_cap': row.get('compute_cap'),
            'processes': None if apps is None else [],
        }
        if entry.get('uuid') is None:
            entry['uuid'] = row.get('uuid')
        elif row.get('uuid') and row['uuid'] != entry['uuid']:
            warnings.append('%s: nvidia-smi UUID %s differs from procfs UUID %s' % (address, row['uuid'], entry['uuid']))
    for app in apps or []:
        entry = by_address.get(app['gpu_bus_id'])
        if entry is None or entry['nvidia_smi'] is None:
            warnings.append('nvidia-smi reports process %d on %s, which is not a GPU in the inventory'
                            % (app['pid'], app['gpu_bus_id']))
            continue
        entry['nvidia_smi']['processes'].append(
            dict((key, app[key]) for key in ('pid', 'process_name', 'used_memory_mib')))
    for entry in gpus:
        if entry['driver'] == 'nvidia' and entry['is_gpu'] and entry['nvidia_smi'] is None:
            warnings.append('%s is bound to nvidia but nvidia-smi does not list it' % entry['address'])
    return warnings
