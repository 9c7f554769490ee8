# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Destinations that may be replaced or removed as a whole: never a system directory, never under a forbidden path.

PRIVATE to the collection. Paths are resolved the way the kernel would (symlinks in every existing component), and a
forbidden mount point forbids every view of its file system (bind mounts, seen through ``st_dev``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

# Directories a model may never replace or be removed as (the module exchanges or deletes the whole directory).
SYSTEM_DIRS = frozenset([
    '/', '/bin', '/boot', '/dev', '/etc', '/home', '/lib', '/lib32', '/lib64', '/libx32', '/media', '/mnt', '/opt',
    '/proc', '/root', '/run', '/sbin', '/srv', '/sys', '/tmp', '/usr', '/usr/local', '/var', '/var/lib', '/var/tmp',
    '/var/log', '/var/cache', '/data',
])


def existing_ancestor(path):
    """The longest existing prefix of ``path`` (``path`` itself when it exists)."""
    path = os.path.abspath(path)
    while not os.path.lexists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def mount_point(path):
    """Mount point of the file system that holds ``path`` (or would hold it, for a path not created yet)."""
    path = os.path.realpath(existing_ancestor(path))
    while not os.path.ismount(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def path_under(path, root):
    """True when ``path`` is ``root`` or inside it (plain path prefixes, component-wise)."""
    root = root.rstrip('/') or '/'
    return path == root or path.startswith(root + '/') or root == '/'


def forbidden_reason(dest, forbidden_paths):
    """Why ``dest`` is refused under ``forbidden_paths``, or None.

    ``dest`` is resolved like the kernel would when creating it: symlinks in every existing component are followed
    (a symlink /srv/models -> /data/models does not hide /data). A forbidden path that is a mount point forbids its
    whole file system, so a bind mount of it elsewhere (same device, seen through ``st_dev``) is refused too.
    """
    real_dest = os.path.realpath(dest)
    dest_dev = None
    anchor = existing_ancestor(real_dest)
    try:
        dest_dev = os.stat(anchor).st_dev
    except OSError:
        pass
    for forbidden in forbidden_paths or []:
        if not forbidden:
            continue
        real_forbidden = os.path.realpath(forbidden)
        for candidate in sorted(set([os.path.normpath(forbidden), real_forbidden])):
            if path_under(real_dest, candidate):
                via = '' if real_dest == os.path.abspath(dest) else ' (%s resolves to %s)' % (dest, real_dest)
                return 'destination %s is under forbidden path %s%s' % (dest, forbidden, via)
        try:
            if dest_dev is not None and os.path.ismount(real_forbidden) and real_forbidden != '/' \
                    and os.stat(real_forbidden).st_dev == dest_dev:
                return ('destination %s is on the file system mounted at forbidden path %s (same device; a bind mount'
                        ' or another mount of it)' % (dest, forbidden))
        except OSError:
            pass
    return None


def unsafe_dest_reason(dest):
    """Refuse destinations whose replacement or removal would take a system directory with it."""
    if not os.path.isabs(dest):
        return 'destination %s must be an absolute path' % dest
    real = os.path.realpath(dest)
    for candidate in (os.path.normpath(dest), real):
        if candidate in SYSTEM_DIRS:
            return 'destination %s is a system directory; use a directory of its own, e.g. /srv/models/<org>/<name>' % dest
    if len([p for p in real.split('/') if p]) < 2:
        return 'destination %s is too close to / (%s); use a directory of its own, e.g. /srv/models/<org>/<name>' % (dest, real)
    return None


def dest_refusal(dest, forbidden_paths):
    """Why ``dest`` cannot be a directory replaced or removed as a whole: (message, result keys), or None."""
    reason = unsafe_dest_reason(dest) or forbidden_reason(dest, forbidden_paths)
    if reason:
        return 'refusing: %s' % reason, {'path': dest, 'forbidden_paths': forbidden_paths}
    if os.path.lexists(dest) and not os.path.isdir(dest):
        return 'refusing: %s exists and is not a directory' % dest, {'path': dest}
    if os.path.isdir(dest) and os.path.ismount(dest):
        return ('refusing: %s is a mount point; the model directory is replaced as a whole, so use a directory inside'
                ' the mount, e.g. %s/<name>' % (dest, dest), {'path': dest})
    return None
