# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The checkout as every test sees it: ROOT, the SGLang pin and the release table, each read once.

Import it instead of working out the checkout's root or opening profiles/ yourself:

- pytest (tests/unit, tests/monitoring): pytest.ini puts tests/tools on sys.path, so ``import collection_paths as cp``;
- a script run directly (tests/sglang under the SGLang lab venv, tests/gpu, benchmarks): put tests/tools first on
  sys.path once, ``sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tools'))``
  (``'tests', 'tools'`` from benchmarks/); tests/tools' own scripts import it as they are.

Importing it also puts the checkout's .collections/ on sys.path (as tests/unit/conftest.py does), so
``ansible_collections.llmops.inference`` is this checkout in any interpreter that has PyYAML (a script that must run
with the standard library alone, like tests/gpu/run_p2p_check.py on a bare GPU host, keeps its own path).

- ``ROOT``: the collection root (absolute, normalised); ``PROFILES``: its profiles/.
- ``PIN``: ``version`` of profiles/sglang.yml, normalised as the collection does (release.normalize_version). A test
  that means "the pinned release" uses it; the literal pin belongs only in fixtures recorded from that release
  (tests/unit/test_pin_literals.py fails on any other).
- ``pin_profile()``: profiles/sglang.yml parsed (packages, python).
- ``release_table_data()``: profiles/sglang_releases.yml parsed, what the modules take as ``sglang_releases``.
- ``release_table()``: that data through the collection's own loader (plugins/module_utils/sglang/release.py
  ``load_table``), validated once.
- ``release(version=None, **kwargs)``: ``release.release(table, version or PIN, **kwargs)``, the object the planner
  and the flag renderer take.

The files are parsed once per interpreter; every call returns a fresh deep copy, so a test may mutate what it got.
"""

from __future__ import absolute_import, division, print_function

import copy
import functools
import os
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROFILES = os.path.join(ROOT, 'profiles')
PIN_FILE = os.path.join(PROFILES, 'sglang.yml')
TABLE_FILE = os.path.join(PROFILES, 'sglang_releases.yml')

# The checkout's .collections link tree; in a copy that already sits in an ansible_collections tree (ansible-test's),
# the directory above that tree.
_COLLECTIONS = os.path.join(ROOT, '.collections')
if not os.path.isdir(_COLLECTIONS) and ROOT.endswith(os.path.join(os.sep, 'ansible_collections', 'llmops', 'inference')):
    _COLLECTIONS = os.path.dirname(os.path.dirname(os.path.dirname(ROOT)))
if os.path.isdir(_COLLECTIONS) and _COLLECTIONS not in sys.path:
    sys.path.insert(0, _COLLECTIONS)

from ansible_collections.llmops.inference.plugins.module_utils.sglang import release as _release  # noqa: E402

# The C loader where PyYAML has it (the table is 78 kB: 0.24 s with the pure-Python one); both give the same data.
_LOADER = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)


@functools.lru_cache(maxsize=None)
def _parsed(path):
    with open(path, encoding='utf-8') as handle:
        return yaml.load(handle, Loader=_LOADER)  # nosec B506 - a safe loader


def pin_profile():
    """profiles/sglang.yml, parsed."""
    return copy.deepcopy(_parsed(PIN_FILE))


PIN = _release.normalize_version(_parsed(PIN_FILE)['version'])


def release_table_data():
    """profiles/sglang_releases.yml as YAML gives it (the modules' ``sglang_releases`` argument)."""
    return copy.deepcopy(_parsed(TABLE_FILE))


@functools.lru_cache(maxsize=None)
def _table():
    return _release.load_table(_parsed(TABLE_FILE))


def release_table():
    """The release table through the collection's loader (release.load_table), validated once."""
    return copy.deepcopy(_table())


def release(version=None, **kwargs):
    """One resolved release (default: the pin), as release.release() gives it to the planner and the renderer."""
    return _release.release(_table(), PIN if version is None else version, **kwargs)
