# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What make profile prints after the module (plugins/plugin_utils/views/profile_hints.py), over profiles generated from
real config.json files: the follow-up plan, the MTP variant only for checkpoints with MTP layers, the commands on
the refusal to replace a profile, each as it works from the operator's directory. tests/unit/test_make_profile.py
runs them; this file checks their form and the MTP rule in memory."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shlex

import pytest

from ansible_collections.llmops.inference.plugins.filter.profile_hints import FilterModule
from ansible_collections.llmops.inference.plugins.module_utils.planner import profile_gen as pg

from collection_paths import ROOT, release

CONFIGS = os.path.join(ROOT, 'tests', 'fixtures', 'hf_configs')
RELEASE = release()
hints = FilterModule().filters()['profile_hints']
MODELS = os.path.join(ROOT, 'profiles', 'models')


def config(name):
    with open(os.path.join(CONFIGS, name, 'config.json')) as handle:
        return json.load(handle)


def result_of(profile, guesses, dest):
    return dict(changed=True, profile=profile, dest=dest, diff=dict(before=''),
                unverified=['%s - %s' % ('.'.join(k), why) for k, why in sorted(guesses.items())])


def make_from(caller, args=()):
    return dict(make_dir=ROOT, caller_dir=caller, args=[list(a) for a in args])


def plan_lines(lines):
    """The make plan commands of the 'next' lines (after the cp of a profile written elsewhere), as argv."""
    out = []
    for line in lines:
        if line.startswith('  ') and ' plan MODEL=' in line:
            text = line.split('   # ', 1)[0].strip()
            out.append(shlex.split(text.split(' && ', 1)[-1]))
    return out


# (fixture, MTP layers in its config.json, why): the SPEC=off plan is printed for the first group only.
WITH_MTP = [
    ('deepseek-ai__DeepSeek-V3', 'num_nextn_predict_layers: 1'),
    ('Qwen__Qwen3.5-122B-A10B', 'mtp_num_hidden_layers: 1 (text_config)'),
    ('zai-org__GLM-4.5-Air', 'num_nextn_predict_layers: 1'),
    ('XiaomiMiMo__MiMo-7B-Base', 'num_nextn_predict_layers: 1'),
]
WITHOUT_MTP = [
    ('Qwen__Qwen3-32B', 'no MTP key'),
    ('meta-llama__Meta-Llama-3.1-8B', 'no MTP key'),
    ('openai__gpt-oss-120b', 'no MTP key'),
    # DeepseekV3ForCausalLM has an MTP draft class in SGLang, but this checkpoint has no MTP layer.
    ('moonshotai__Kimi-K2-Instruct', 'num_nextn_predict_layers: 0'),
    # use_mtp / num_mtp_modules: 3 are MiniMax's own keys; SGLang 0.5.23 skips those weights and has no draft for it.
    ('MiniMaxAI__MiniMax-M2.5', 'num_mtp_modules: 3, not an MTP key SGLang reads'),
]


@pytest.mark.parametrize('name, why', WITH_MTP + WITHOUT_MTP)
def test_the_mtp_plan_is_printed_only_for_a_checkpoint_with_mtp_layers(name, why):
    cfg = config(name)
    text = cfg.get('text_config') or cfg
    layers = text.get('mtp_num_hidden_layers') or text.get('num_nextn_predict_layers') or 0
    profile, guesses = pg.generate(dict(config=cfg), RELEASE, repo=name.replace('__', '/', 1), tp_size=2)
    lines = hints(result_of(profile, guesses, os.path.join(MODELS, profile['name'] + '.yml')), make_from(ROOT))
    plans = plan_lines(lines)
    assert plans[0] == ['make', 'plan', 'MODEL=%s' % profile['name'], 'TP=2'], lines
    with_mtp = (name, why) in WITH_MTP
    assert (layers > 0) is with_mtp, (name, why)
    assert (profile['serving']['speculative'].get('algorithm') == 'NEXTN') is with_mtp
    assert [p for p in plans if 'SPEC=off' in p] == ([plans[0] + ['SPEC=off']] if with_mtp else []), lines
    assert any('MTP' in line for line in lines) is with_mtp, lines


def test_mtp_layers_of_an_architecture_sglang_has_no_draft_for_turn_nothing_on():
    # Qwen3-32B's real config with an MTP key: Qwen3ForCausalLM has no MTP draft class in the pinned release.
    cfg = dict(config('Qwen__Qwen3-32B'), num_nextn_predict_layers=1)
    notes = {}
    profile, guesses = pg.generate(dict(config=cfg), RELEASE, repo='Qwen/Qwen3-32B', notes=notes)
    assert 'Qwen3ForCausalLM' not in RELEASE['architectures']['mtp_draft']
    assert profile['serving']['speculative'] == dict(num_draft_tokens=0)
    assert ('serving', 'speculative') not in guesses
    assert 'loads no MTP draft for Qwen3ForCausalLM' in notes[('serving', 'speculative')]
    lines = hints(result_of(profile, guesses, os.path.join(MODELS, 'qwen3-32b.yml')), make_from(ROOT))
    assert not [p for p in plan_lines(lines) if 'SPEC=off' in p]


def test_from_another_directory_every_make_is_make_c_the_collection():
    profile, guesses = pg.generate(dict(config=config('Qwen__Qwen3-32B')), RELEASE, repo='Qwen/Qwen3-32B')
    lines = hints(result_of(profile, guesses, os.path.join(MODELS, 'qwen3-32b.yml')), make_from('/srv/ops'))
    assert lines[-1].startswith('  make -C %s plan MODEL=qwen3-32b TP=1   # ' % ROOT), lines
    # The TP guess of the file (written for a reader in the collection root) is printed as it works from /srv/ops.
    tp = [line for line in lines if line.startswith('serving.tp_size - ')]
    assert tp and 'with make -C %s plan MODEL=qwen3-32b TP=2 ' % ROOT in tp[0], lines
    assert 'next, from /srv/ops:' in lines
    # From the collection root itself: plain make.
    lines = hints(result_of(profile, guesses, os.path.join(MODELS, 'qwen3-32b.yml')), make_from(ROOT))
    assert lines[-1].startswith('  make plan MODEL=qwen3-32b TP=1   # ')


def test_a_profile_written_elsewhere_is_copied_where_make_plan_reads_it(tmp_path):
    profile, guesses = pg.generate(dict(config=config('Qwen__Qwen3-32B')), RELEASE, repo='Qwen/Qwen3-32B')
    dest = str(tmp_path / 'qwen3-32b.yml')
    lines = hints(result_of(profile, guesses, dest), make_from(str(tmp_path), [('DEST', '.')]))
    committed = os.path.join(MODELS, 'qwen3-32b.yml')
    assert os.path.exists(committed)
    assert '  diff -u %s %s   # against the collection\'s profile of that name' % (committed, dest) in lines
    assert ('  cp %s %s && make -C %s plan MODEL=qwen3-32b TP=1   # the plan of this profile, replacing the '
            'collection\'s' % (dest, committed, ROOT)) in lines
    assert [line for line in lines if 'serving.tp_size' in line][0].endswith(
        'once it is in profiles/models/ (the cp below)')


def test_the_refusal_gives_the_three_commands_keeping_the_operators_variables():
    args = [('SRC', '../ckpt'), ('REPO', 'Qwen/Qwen3-32B'), ('DEST', 'mine'), ('INVENTORY', 'inventories/prod')]
    result = dict(failed=True, exists=True, dest='/srv/ops/mine/qwen3-32b.yml', name='qwen3-32b')
    lines = hints(result, make_from('/srv/ops', args))
    prefix = 'make -C %s profile SRC=../ckpt REPO=Qwen/Qwen3-32B' % ROOT
    assert lines == [
        '/srv/ops/mine/qwen3-32b.yml exists with other content; not replaced. From /srv/ops:',
        '  see the difference (writes nothing):  %s DEST=mine INVENTORY=inventories/prod DIFF=1' % prefix,
        '  replace it:                           %s DEST=mine INVENTORY=inventories/prod FORCE=1' % prefix,
        '  write it elsewhere:                   %s INVENTORY=inventories/prod DEST=/srv/ops/qwen3-32b.new.yml' % prefix]
    # A FORCE=1 already given is not repeated; DIFF=1 replaces it.
    again = hints(result, make_from('/srv/ops', args + [('FORCE', '1')]))
    assert again[1].endswith('DIFF=1') and 'FORCE' not in again[1] and again[2].count('FORCE=1') == 1


def test_by_ansible_playbook_the_commands_are_ansible_playbook_with_the_inventory():
    invocation = dict(playbook=os.path.join(ROOT, 'playbooks', 'profile.yml'), caller_dir='/srv/ops',
                      inventory=['/srv/ops/inv'], args=[['profile_dest', 'mine'], ['profile_repo', 'a/b']])
    lines = hints(dict(failed=True, exists=True, dest='/srv/ops/mine/b.yml', name='b'), invocation)
    base = 'ansible-playbook %s/playbooks/profile.yml -i /srv/ops/inv' % ROOT
    assert lines[1].endswith('%s -e profile_dest=mine -e profile_repo=a/b --check --diff -e profile_force=true' % base)
    assert lines[2].endswith('%s -e profile_dest=mine -e profile_repo=a/b -e profile_force=true' % base)
    assert lines[3].endswith('%s -e profile_repo=a/b -e profile_dest=/srv/ops/b.new.yml' % base)
    profile, guesses = pg.generate(dict(config=config('Qwen__Qwen3-32B')), RELEASE, repo='a/b', name='b', tp_size=1)
    written = hints(result_of(profile, guesses, os.path.join(MODELS, 'b.yml')), invocation)
    assert written[-1].startswith('  make -C %s plan MODEL=b TP=1 INVENTORY=/srv/ops/inv   # ' % ROOT), written


def test_check_mode_says_how_to_write_it():
    profile, guesses = pg.generate(dict(config=config('Qwen__Qwen3-32B')), RELEASE, repo='a/b', tp_size=1)
    result = dict(result_of(profile, guesses, os.path.join(MODELS, 'b.yml')), diff=dict(before='old'))
    lines = hints(result, make_from(ROOT, [('REPO', 'a/b'), ('DIFF', '1')]), check_mode=True)
    assert lines[-1] == 'nothing written (check mode); to write it: make profile REPO=a/b FORCE=1'


def test_servers_with_different_endpoints_get_a_command_per_endpoint():
    args = [('REPO', 'a/b'), ('INVENTORY', 'inventories/prod'), ('ENDPOINT', '')]
    lines = hints(dict(endpoints=['http://m1:8090', 'http://m2:8090']), make_from(ROOT, args))
    assert lines[1:] == ['  make profile REPO=a/b INVENTORY=inventories/prod ENDPOINT=http://m1:8090',
                         '  make profile REPO=a/b INVENTORY=inventories/prod ENDPOINT=http://m2:8090'], lines
