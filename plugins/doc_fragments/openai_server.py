# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The OpenAI-compatible server a client module talks to (openai_smoke, sglang_bench_run); O(api_key) must be
    # no_log in the argument spec.
    DOCUMENTATION = r'''
options:
  base_url:
    description:
      - Server URL without the C(/v1) suffix, for example V(http://127.0.0.1:30000).
    type: str
    required: true
  api_key:
    description:
      - The server's API key, sent as a Bearer token in the C(Authorization) header. Omit for a server without
        authentication.
    type: str
  validate_certs:
    description:
      - Verify TLS certificates of an https URL.
    type: bool
    default: true
'''
