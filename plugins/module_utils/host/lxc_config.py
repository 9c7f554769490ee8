# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""NVIDIA device lines of a Proxmox VE container config (``/etc/pve/lxc/<vmid>.conf``), rendered and merged.

Two styles (host.md section 4):

* ``dev``: ``devN: /dev/nvidia2`` entries (pve-container >= 8.1). PVE stats each node when the container starts and
  emits the cgroup allow lines itself, so no major number is written; a missing node stops the start.
* ``raw``: ``lxc.cgroup2.devices.allow: c <major>:<minor> rwm`` plus ``lxc.mount.entry`` bind mounts. nvidia uses
  major 195 (GPUs at their minor, nvidiactl 255, nvidia-modeset 254); nvidia-uvm has a *dynamic* major, read from
  ``/proc/devices``.

Only the main section is edited (``[snapshot]`` and ``[pve:pending]`` sections stay byte for byte). A ``#`` line is the
container's description to PVE, so managed lines carry no marker comment; they are recognised by content: ``devN``
entries for ``/dev/nvidia*``, mount entries of ``/dev/nvidia*``, allow lines for major 195 or a major that
``/proc/devices`` gives an nvidia driver, and lines recorded as written by the last run (``previous``).

The container's cpuset (``lxc.cgroup2.cpuset.cpus`` / ``.mems``, the CPUs and memory nodes of its GPUs' NUMA node)
is managed too when the caller asks for it (``manage_cpuset``): then every such line of the main section is replaced.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

NVIDIA_MAJOR = 195
NVIDIACTL_MINOR = 255
MODESET_MINOR = 254

CPUSET_CPUS_KEY = 'lxc.cgroup2.cpuset.cpus'
CPUSET_MEMS_KEY = 'lxc.cgroup2.cpuset.mems'
CPUSET_KEYS = (CPUSET_CPUS_KEY, CPUSET_MEMS_KEY)

_SECTION_RE = re.compile(r'^\[[^\]]+\]\s*$')
# PVE's parser: raw keys "lxc.x: v" or "lxc.x = v", other keys "name: v" (parse_pct_config).
_LXC_KEY_RE = re.compile(r'^(lxc\.[A-Za-z0-9_.\-]+)\s*(?::|=)\s*(.*?)\s*$')
_PVE_KEY_RE = re.compile(r'^([a-z][a-z_]*\d*):\s*(.*?)\s*$')
_DEV_KEY_RE = re.compile(r'^dev(\d+)$')
_ALLOW_RE = re.compile(r'^[cb]\s+(\d+|\*):(\d+|\*)\s+[rwm]+$')


class LxcConfigError(ValueError):
    pass


def parse_proc_devices(text):
    """``/proc/devices`` -> {'char': {name: major}, 'block': {name: major}}. Several names may share a major."""
    result = {'char': {}, 'block': {}}
    section = None
    for line in (text or '').splitlines():
        stripped = line.strip()
        if stripped == 'Character devices:':
            section = 'char'
            continue
        if stripped == 'Block devices:':
            section = 'block'
            continue
        parts = stripped.split(None, 1)
        if section and len(parts) == 2 and parts[0].isdigit():
            result[section][parts[1]] = int(parts[0])
    return result


def nvidia_majors(devices):
    """Character majors registered by NVIDIA drivers (nvidia, nvidia-uvm, nvidia-caps, nvidia-nvswitch ...)."""
    return sorted(set(major for name, major in devices['char'].items() if name.startswith('nvidia')))


def device_nodes(minors, uvm_major=None, include_ctl=True, include_uvm=True, include_uvm_tools=True,
                 include_modeset=False):
    """The nodes a CUDA container needs: one per GPU minor (in the given order), nvidiactl, nvidia-uvm(-tools).

    Each node: {'path', 'major', 'minor'}; the uvm nodes' major is ``uvm_major`` (None when unknown: only ``dev`` style
    can render them then)."""
    nodes = []
    seen = set()
    for minor in minors:
        minor = int(minor)
        if minor in seen:
            continue
        seen.add(minor)
        if minor < 0 or minor >= MODESET_MINOR:
            raise LxcConfigError('GPU minor %d is outside 0..253' % minor)
        nodes.append({'path': '/dev/nvidia%d' % minor, 'major': NVIDIA_MAJOR, 'minor': minor})
    if include_ctl:
        nodes.append({'path': '/dev/nvidiactl', 'major': NVIDIA_MAJOR, 'minor': NVIDIACTL_MINOR})
    if include_modeset:
        nodes.append({'path': '/dev/nvidia-modeset', 'major': NVIDIA_MAJOR, 'minor': MODESET_MINOR})
    if include_uvm:
        nodes.append({'path': '/dev/nvidia-uvm', 'major': uvm_major, 'minor': 0})
    if include_uvm_tools:
        nodes.append({'path': '/dev/nvidia-uvm-tools', 'major': uvm_major, 'minor': 1})
    return nodes


def render_lines(nodes, mode='dev', gid=None, uid=None, dev_mode=None, cgroup_key='lxc.cgroup2.devices.allow'):
    """(key, value) pairs for the nodes. ``dev`` keys are returned as ``dev`` (numbered on merge)."""
    pairs = []
    if mode == 'dev':
        options = []
        if uid is not None:
            options.append('uid=%d' % int(uid))
        if gid is not None:
            options.append('gid=%d' % int(gid))
        if dev_mode is not None:
            options.append('mode=%s' % dev_mode)
        for node in nodes:
            pairs.append(('dev', ','.join([node['path']] + options)))
        return pairs
    if mode != 'raw':
        raise LxcConfigError('mode must be dev or raw, got %r' % (mode,))
    missing = [node['path'] for node in nodes if node['major'] is None]
    if missing:
        raise LxcConfigError('no major number for %s: nvidia-uvm is not in /proc/devices (load it with '
                             '"nvidia-modprobe -u -c0" or "modprobe nvidia-uvm")' % ', '.join(missing))
    for node in nodes:
        pairs.append((cgroup_key, 'c %d:%d rwm' % (node['major'], node['minor'])))
    for node in nodes:
        pairs.append(('lxc.mount.entry', '%s %s none bind,optional,create=file' % (node['path'], node['path'].lstrip('/'))))
    return pairs


def render_cpuset(cpus=None, mems=None):
    """(key, value) pairs of the cpuset lines; a None or empty value gives no line."""
    pairs = []
    for key, value in ((CPUSET_CPUS_KEY, cpus), (CPUSET_MEMS_KEY, mems)):
        if value:
            if '\n' in value or '\r' in value:
                raise LxcConfigError('%s value %r spans lines' % (key, value))
            pairs.append((key, value))
    return pairs


def split_sections(text):
    """(main section lines, the rest verbatim from the first ``[section]`` line on)."""
    lines = (text or '').splitlines(True)
    for index, line in enumerate(lines):
        if _SECTION_RE.match(line.strip()):
            return lines[:index], ''.join(lines[index:])
    return lines, ''


def parse_line(line):
    """(key, value) of a config line, None for blank lines, comments and anything else."""
    stripped = line.strip()
    if not stripped or stripped.startswith('#'):
        return None
    match = _LXC_KEY_RE.match(stripped) or _PVE_KEY_RE.match(stripped)
    if not match:
        return None
    return match.group(1), match.group(2)


def is_managed(key, value, majors=(), previous=(), manage_cpuset=False):
    """Whether a main-section line is one this module owns: an NVIDIA device line, or a cpuset line when
    ``manage_cpuset`` (see the module docstring)."""
    if key in CPUSET_KEYS:
        return manage_cpuset
    if (key, value) in previous or ('dev' if _DEV_KEY_RE.match(key) else key, value) in previous:
        return True
    if _DEV_KEY_RE.match(key):
        return value.split(',', 1)[0].strip().startswith('/dev/nvidia')
    if key == 'lxc.mount.entry':
        return value.split(None, 1)[0].startswith('/dev/nvidia') if value else False
    if key in ('lxc.cgroup2.devices.allow', 'lxc.cgroup.devices.allow'):
        match = _ALLOW_RE.match(value)
        if match and match.group(1) != '*':
            return int(match.group(1)) == NVIDIA_MAJOR or int(match.group(1)) in majors
    return False


def merge(text, pairs, majors=(), previous=(), manage_cpuset=False):
    """Replace the managed lines of the main section with ``pairs``; return (new text, rendered lines).

    ``dev`` pairs get the lowest ``devN`` indices not used by other (non-managed) dev entries. Each block (``devN``
    entries, ``lxc.*`` lines) goes where the first managed line of the same style was; otherwise dev entries go after
    the last other ``devN`` line (else before the first ``lxc.*`` line) and ``lxc.*`` lines at the end of the main
    section. ``manage_cpuset``: the ``lxc.cgroup2.cpuset.*`` lines are managed too (replaced by those in ``pairs``).
    """
    main, rest = split_sections(text)
    kept = []
    # Where the first managed line of each kind (devN / lxc.*) was: the new block of that kind goes there.
    first_managed = {}
    used = set()
    for line in main:
        parsed = parse_line(line)
        if parsed and is_managed(parsed[0], parsed[1], majors, previous, manage_cpuset):
            first_managed.setdefault('dev' if _DEV_KEY_RE.match(parsed[0]) else 'lxc', len(kept))
            continue
        if parsed:
            match = _DEV_KEY_RE.match(parsed[0])
            if match:
                used.add(int(match.group(1)))
        kept.append(line)

    rendered = []
    blocks = {'dev': [], 'lxc': []}
    index = 0
    for key, value in pairs:
        kind = 'lxc'
        if key == 'dev':
            kind = 'dev'
            while index in used:
                index += 1
            used.add(index)
            key = 'dev%d' % index
        rendered.append('%s: %s' % (key, value))
        blocks[kind].append(rendered[-1] + '\n')

    # Trailing blank lines separate the main section from [snapshot]; keep them after our block.
    body_end = len(kept)
    while body_end > 0 and not kept[body_end - 1].strip():
        body_end -= 1
    if kept[:body_end] and not kept[body_end - 1].endswith('\n'):
        kept[body_end - 1] += '\n'
    positions = {}
    for kind in ('dev', 'lxc'):
        if kind in first_managed:
            positions[kind] = min(first_managed[kind], body_end)
        elif kind == 'dev':
            positions[kind] = _dev_position(kept[:body_end])
        else:
            positions[kind] = body_end
    new_main = []
    for position in range(len(kept) + 1):
        # At the same place, devN entries come before lxc.* lines (PVE writes its own keys first too).
        for kind in ('dev', 'lxc'):
            if positions[kind] == position:
                new_main.extend(blocks[kind])
        if position < len(kept):
            new_main.append(kept[position])
    return ''.join(new_main) + rest, rendered


def _dev_position(lines):
    last_dev = None
    first_lxc = None
    for index, line in enumerate(lines):
        parsed = parse_line(line)
        if not parsed:
            continue
        if _DEV_KEY_RE.match(parsed[0]):
            last_dev = index
        elif parsed[0].startswith('lxc.') and first_lxc is None:
            first_lxc = index
    if last_dev is not None:
        return last_dev + 1
    if first_lxc is not None:
        return first_lxc
    return len(lines)


def managed_lines(text, majors=(), previous=(), manage_cpuset=False):
    """The managed lines currently in the main section, as "key: value" strings."""
    main, dummy = split_sections(text)
    result = []
    for line in main:
        parsed = parse_line(line)
        if parsed and is_managed(parsed[0], parsed[1], majors, previous, manage_cpuset):
            result.append('%s: %s' % parsed)
    return result
