# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A failure for AnsibleModule.fail_json raised from module_utils code that has no module object.

PRIVATE to the collection. The module's ``main()`` catches it and calls ``fail_json(msg=exc.msg, **exc.details)``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleFailure(Exception):
    """A refusal or error: ``msg`` plus the result keys that go with it (``path``, ``exception`` ...)."""

    def __init__(self, msg, **details):
        super(ModuleFailure, self).__init__(msg)
        self.msg = msg
        self.details = details
