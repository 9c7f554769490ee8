# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan's "what else fits on this host" table over the committed model profiles."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import yaml

from ansible_collections.llmops.inference.plugins.module_utils import deployment_fits as df
from ansible_collections.llmops.inference.plugins.module_utils import sglang_release as sr
from ansible_collections.llmops.inference.plugins.module_utils import vram_plan as vp

ROOT = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..')
PROFILES = os.path.join(ROOT, 'profiles')


def load(*parts):
    with open(os.path.join(PROFILES, *parts)) as handle:
        return yaml.safe_load(handle)


RELEASE = sr.release(sr.load_table(load('sglang_releases.yml')), str(load('sglang.yml')['version']))
MODELS = dict((n[:-4], load('models', n)) for n in os.listdir(os.path.join(PROFILES, 'models')) if n.endswith('.yml'))
RTX = load('hardware', 'rtx-pro-6000-blackwell-server.yml')
H200 = load('hardware', 'h200.yml')


def spec_inputs(spec):
    """The planner's speculative inputs of a profile as the deploy passes them (an EAGLE-3 profile names its draft)."""
    return dict(speculative_num_draft_tokens=spec.get('num_draft_tokens'), speculative_num_steps=spec.get('num_steps'),
                speculative_eagle_topk=spec.get('eagle_topk'), speculative_algorithm=spec.get('algorithm'),
                draft_model_config=(spec.get('draft') or {}).get('config'))


def test_every_committed_profile_gets_its_smallest_fitting_size():
    rows = df.table(MODELS, RTX, RELEASE, 4, current='qwen3.5-122b-a10b')
    assert [r['profile'] for r in rows] == sorted(MODELS)
    for row in rows:
        model = MODELS[row['profile']]
        spec = model['serving'].get('speculative') or {}
        if row['tp'] is None:
            # Too big for the example host (4 x 96 GB): the note says why, and the profile's own size fits on H200.
            assert row['note'].startswith('does not fit on 4 GPU(s): cannot load'), row
            assert model['serving']['tp_size'] == 8
            assert vp.plan(model_config=model['config'], weights_bytes=model.get('weights_bytes'), gpu_profile=H200,
                           tp_size=8, release=RELEASE, speculative_num_draft_tokens=spec.get('num_draft_tokens', 0))['fits']
            continue
        fitting = vp.plan(model_config=model['config'], weights_bytes=model.get('weights_bytes'), gpu_profile=RTX,
                          tp_size=row['tp'], release=RELEASE, **spec_inputs(spec))
        assert fitting['fits'] and fitting['kv_cache_tokens'] == row['kv_tokens']
        if row['tp'] > 1:
            # The next size down does not fit (or cannot be planned).
            try:
                smaller = vp.plan(model_config=model['config'], weights_bytes=model.get('weights_bytes'),
                                  gpu_profile=RTX, tp_size=row['tp'] // 2, release=RELEASE, **spec_inputs(spec))
                assert not smaller['fits']
            except vp.PlanError:
                pass
    assert [r['current'] for r in rows].count(True) == 1


def test_a_profile_that_fits_nowhere_says_why_and_an_unknown_architecture_is_named():
    big = dict(MODELS['qwen3.5-122b-a10b'])
    unknown = dict(MODELS['qwen3-32b'], config=dict(MODELS['qwen3-32b']['config'], architectures=['Gemma3ForCausalLM']))
    rows = df.table({'big': big, 'unknown': unknown}, RTX, RELEASE, 1)
    assert rows[0]['tp'] is None and rows[0]['note'].startswith('does not fit on 1 GPU(s)')
    assert rows[1]['tp'] is None and 'Gemma3ForCausalLM is not one the planner sizes' in rows[1]['note']
    text = '\n'.join(df.markdown(rows, 'RTX PRO 6000', 1))
    assert '| big | - | - | - | - | does not fit on 1 GPU(s)' in text
