# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""tests/tools/sglang_install.py: a release's install overrides applied to its wheel's requirements, and pip check
accepting exactly the lines they make (the lab venv's half; the role's is llmops_deployment.sglang.pip_check_accepted)."""

from __future__ import annotations

import pytest

import sglang_install as si
from ansible_collections.llmops.inference.plugins.module_utils.sglang import release as sglang_release

OVER = {'cuda-tile': {'requires': '==1.6.0rc5', 'install': '1.6.0', 'why': 'x'}}


def test_the_override_replaces_only_its_requirement():
    wanted = ['aiohttp', 'cuda-tile==1.6.0rc5', 'cuda-python>=13.0', 'flashinfer_python[cu13]==0.7.1']
    assert si.apply_overrides('0.5.22', wanted, OVER) == ['aiohttp', 'cuda-tile==1.6.0', 'cuda-python>=13.0',
                                                          'flashinfer_python[cu13]==0.7.1']
    assert si.apply_overrides('0.5.22', ['Cuda_Tile==1.6.0rc5'], OVER) == ['cuda-tile==1.6.0']


def test_an_override_the_wheel_does_not_require_is_refused():
    with pytest.raises(SystemExit) as exc:
        si.apply_overrides('0.5.22', ['aiohttp'], OVER)
    assert 'does not require cuda-tile' in str(exc.value)


def test_pip_check_accepts_exactly_the_override_line():
    accepted = sglang_release.pip_check_accepted('0.5.22', OVER)
    line = 'sglang 0.5.22 has requirement cuda-tile==1.6.0rc5, but you have cuda-tile 1.6.0.'
    assert accepted == [line]
    assert si.unexplained([line], accepted) == ([], [])
    other = 'torchvision 0.28.0 has requirement torch==2.12.0, but you have torch 2.13.0.'
    assert si.unexplained([line, other], accepted) == ([other], [])
    # The lock changed under the override (pip check is clean): the override no longer applies.
    assert si.unexplained(['No broken requirements found.'], accepted) == ([], [line])
