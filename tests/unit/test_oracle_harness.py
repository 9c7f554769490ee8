# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""tests/oracle/sglang_oracle.py's own mechanics, without SGLang: _taking() passes each call only the keyword
arguments it declares, and a required argument the harness does not pass is the harness's error, never a refusal
by SGLang (a TypeError raised inside SGLang's own code still is one)."""

from __future__ import annotations

import importlib.util
import os

import pytest

from collection_paths import ROOT

_spec = importlib.util.spec_from_file_location('sglang_oracle', os.path.join(ROOT, 'tests', 'oracle', 'sglang_oracle.py'))
oracle = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(oracle)


class Configurator:
    """Shaped like a release's KVCacheConfigurator: keyword arguments, one of them required."""

    def __init__(self, model, ps, device='cuda'):
        self.args = (model, ps, device)


def test_taking_drops_what_the_release_does_not_declare():
    made = oracle._taking(Configurator)(model='m', ps='p', attn_dp_size=2, draft_parallel_layout=None)
    assert made.args == ('m', 'p', 'cuda')
    # Positional arguments count as given.
    assert oracle._taking(Configurator)('m', 'p').args == ('m', 'p', 'cuda')


def test_a_required_argument_the_harness_does_not_pass_is_a_harness_error():
    with pytest.raises(oracle._Refused) as refused:
        oracle._stage('pool', oracle._taking(Configurator), model='m', attn_dp_size=2)
    details = refused.value.args[0]
    assert details['stage'] == 'harness' and details['type'] == '_HarnessMismatch'
    assert 'Configurator needs ps' in details['message'] and 'name the argument in the harness' in details['message']


def test_a_type_error_inside_the_call_stays_sglangs():
    def refuses(model):
        raise TypeError('unsupported model %s' % model)
    with pytest.raises(oracle._Refused) as refused:
        oracle._stage('pool', oracle._taking(refuses), model='m', extra=1)
    assert refused.value.args[0] == dict(stage='pool', type='TypeError', message='unsupported model m')
