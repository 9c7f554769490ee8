# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""model_config.model_facts() once per resolution (issue #28 point 2): the resolver computes the architecture facts
of the server's model once and hands them to the planner (its plan and every re-plan of a recommendation) and to the
renderer; each still computes them itself when called alone."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.model import config as mc
from ansible_collections.llmops.inference.plugins.module_utils.planner import spec_draft
from ansible_collections.llmops.inference.plugins.module_utils.planner import vram_plan as vp
from ansible_collections.llmops.inference.plugins.module_utils.sglang import flags as sglang_flags
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import server as deployment_server

from collection_paths import ROOT, release

RELEASE = release()
with open(os.path.join(ROOT, 'tests', 'fixtures', 'hf_configs', 'Qwen__Qwen3-32B', 'config.json')) as _handle:
    CONFIG = json.load(_handle)


@pytest.fixture
def calls(monkeypatch):
    """Every model_facts() call, through each name a module imported it by."""
    seen = []

    def counting(config, architectures):
        seen.append(config)
        return mc.model_facts(config, architectures)
    monkeypatch.setattr(vp, '_model_facts', counting)
    monkeypatch.setattr(spec_draft, 'model_facts', counting)
    monkeypatch.setattr(sglang_flags, 'model_facts', counting)
    monkeypatch.setattr(deployment_server, 'config_facts', counting)
    return seen


def test_plan_with_recommendations_computes_the_facts_once(calls):
    result = vp.plan_with_recommendations(model_config=CONFIG, gpu_memory_mib=97887, tp_size=1, release=RELEASE,
                                          context_length=8192)
    assert result['recommendations'], 'the case must re-plan at least once to show the facts are shared'
    assert len(calls) == 1


def test_plan_uses_the_facts_it_is_given():
    facts = dict(mc.model_facts(CONFIG, RELEASE['architectures']), family=None)
    with pytest.raises(vp.PlanError) as caught:
        vp.plan(model_config=CONFIG, model_facts=facts, gpu_memory_mib=97887, tp_size=1, release=RELEASE)
    assert caught.value.kind == 'architecture'


def test_render_uses_the_facts_it_is_given(calls):
    model = dict(config=CONFIG, serving=dict(tp_size=1))
    facts = mc.model_facts(CONFIG, RELEASE['architectures'])
    server = dict(model_path='/models/qwen3-32b', served_model_name='qwen3-32b', host='127.0.0.1', port=30000,
                  tp_size=1)
    given = sglang_flags.render(RELEASE, model, {}, dict(gpu_indices=[0]), server, facts=facts)
    assert not calls
    alone = sglang_flags.render(RELEASE, model, {}, dict(gpu_indices=[0]), server)
    assert len(calls) == 1 and alone['argv'] == given['argv']


def test_one_resolution_computes_the_servers_facts_once(calls, monkeypatch):
    """The seed server (MTP on, so its plan is re-planned for recommendations): one computation. The "what else
    fits" table, tested below, is left out here."""
    from test_deployment import resolve
    monkeypatch.setattr(deployment_server.deployment_fits, 'table', lambda *args, **kwargs: [])
    deployment = resolve()
    assert deployment['plan']['recommendations'], 'the seed must re-plan at least once to show the facts are shared'
    assert deployment['command']
    assert len(calls) == 1


def test_what_else_fits_computes_each_profiles_facts_once(calls):
    """One computation per profile (and one per draft config it plans), not one per tensor-parallel size tried."""
    import glob
    import yaml
    from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import fits
    models = {}
    for path in sorted(glob.glob(os.path.join(ROOT, 'profiles', 'models', '*.yml'))):
        with open(path) as handle:
            models[os.path.basename(path)[:-4]] = yaml.safe_load(handle)
    with open(os.path.join(ROOT, 'profiles', 'hardware', 'rtx-pro-6000-blackwell-server.yml')) as handle:
        gpu = yaml.safe_load(handle)
    rows = fits.table(models, gpu, RELEASE, 8)
    assert any(row['tp'] and row['tp'] > 1 for row in rows), 'some profile must be tried at more than one size'
    for name, model in sorted(models.items()):
        if model.get('config'):
            assert sum(1 for config in calls if config is model['config']) == 1, name
