# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Owner, group and mode of a managed tree: the files it lists and the directories leading to them.

PRIVATE to the collection. Files the caller does not list (someone else's files in the directory) are left alone.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os


def resolve_ids(owner, group):
    """(uid, gid) for a user and group given by name or number; -1 for one not given. KeyError for an unknown name."""
    import grp
    import pwd
    uid = gid = -1
    if owner:
        uid = int(owner) if owner.isdigit() else pwd.getpwnam(owner).pw_uid
    if group:
        gid = int(group) if group.isdigit() else grp.getgrnam(group).gr_gid
    return uid, gid


def dir_mode_for(file_mode):
    """Directories get the file mode plus x wherever r is set (0644 -> 0755, 0640 -> 0750)."""
    return file_mode | ((file_mode & 0o444) >> 2)


def ensure_perms(root, relpaths, uid, gid, file_mode, dry_run=False):
    """Owner, group and mode of the given files, the directories leading to them and root; returns the count changed
    (with ``dry_run``: the count that would change).

    Files the module does not manage (extra files someone put into the model directory) are left alone.
    """
    entries = {root: dir_mode_for(file_mode)}
    for rel in relpaths:
        entries[os.path.join(root, rel)] = file_mode
        parent = os.path.dirname(rel)
        while parent:
            entries[os.path.join(root, parent)] = dir_mode_for(file_mode)
            parent = os.path.dirname(parent)
    changed = 0
    for path in sorted(entries):
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if os.path.islink(path):
            continue
        touched = False
        if (uid != -1 and st.st_uid != uid) or (gid != -1 and st.st_gid != gid):
            if not dry_run:
                os.chown(path, uid, gid)
            touched = True
        if (st.st_mode & 0o7777) != entries[path]:
            if not dry_run:
                os.chmod(path, entries[path])
            touched = True
        changed += touched
    return changed
