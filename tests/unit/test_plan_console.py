# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""make plan's console (tests/tools/plan_console.py): the what-if knobs, the fresh tree, the refusal first.

The pure parts run in memory; `test_make_plan_*` run `make plan` itself, as an operator types it, into a temporary
PLAN_BUILD (about 15 s a run on this 2-core machine), and the printed hint of `make profile` is run as printed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import shlex
import subprocess
import sys

import pytest

import collection_paths as cp
from collection_paths import ROOT

sys.path.insert(0, os.path.join(ROOT, 'tests', 'tools'))

import plan_console as pc  # noqa: E402  pylint: disable=wrong-import-position


def env_of(**given):
    environ = dict(given)
    environ['PLAN_CLI_VARS'] = ' '.join(sorted(given) + ['INVENTORY'])
    return environ


# --- the knobs ------------------------------------------------------------------------------------------------------


def test_only_variables_given_to_make_are_knobs():
    environ = {'PLAN_CLI_VARS': 'TP INVENTORY llmops_mem_fraction_static', 'TP': '2', 'GPU': 'h200',
               'llmops_mem_fraction_static': '0.85', 'llmops_context_length': '4096', 'INVENTORY': 'x'}
    # GPU and llmops_context_length are in the shell's environment only: never read.
    assert pc.knob_values(environ) == {'TP': '2', 'llmops_mem_fraction_static': '0.85'}


def test_the_knobs_become_the_inventory_variables():
    evars, extra = pc.extra_vars({'MODEL': 'qwen3-32b', 'GPU': 'h200', 'TP': '2', 'CONTEXT': '32k',
                                  'KV_DTYPE': 'fp8_e4m3', 'llmops_mem_fraction_static': '0.85',
                                  'EXTRA': "-e llmops_page_size=64 -e 'llmops_radix_cache=false'"})
    assert evars == {'llmops_model_profile': 'qwen3-32b', 'llmops_gpu_profile': 'h200', 'llmops_tp_size': 2,
                     'llmops_context_length': 32768, 'llmops_kv_cache_dtype': 'fp8_e4m3',
                     'llmops_mem_fraction_static': 0.85}
    assert extra == ['-e', 'llmops_page_size=64', '-e', 'llmops_radix_cache=false']
    assert pc.extra_assignments(extra) == {'llmops_page_size': 64, 'llmops_radix_cache': False}


@pytest.mark.parametrize('knobs, needles', [
    # SPEC reads the model profile, so only there is an unknown one refused before Ansible (else the resolver does).
    ({'SPEC': 'off', 'MODEL': 'qwen3.5-122b'}, ['MODEL=qwen3.5-122b', 'did you mean qwen3.5-122b-a10b?',
                                                'profiles/models/']),
    ({'TP': 'four'}, ['TP=four', 'whole number', 'make plan TP=4']),
    ({'TP': '0'}, ['TP=0', '>= 1']),
    ({'CONTEXT': '128 thousand'}, ['CONTEXT=128 thousand', 'make plan CONTEXT=131072']),
    ({'SPEC': 'medusa', 'MODEL': 'qwen3-32b'}, ['SPEC=medusa', 'off, mtp, eagle3']),
    ({'SPEC': 'eagle3', 'MODEL': 'qwen3.5-122b-a10b'}, ['no EAGLE-3 draft', 'algorithm NEXTN', 'make plan SPEC=mtp']),
    ({'SPEC': 'mtp', 'MODEL': 'qwen3-32b-eagle3'}, ['no built-in MTP head', 'make plan SPEC=eagle3']),
    ({'SPEC': 'mtp', 'MODEL': 'qwen3-32b'}, ['no built-in MTP head', 'make plan SPEC=off']),
])
def test_a_wrong_knob_names_itself_and_the_fix(knobs, needles):
    with pytest.raises(pc.PlanRunError) as exc:
        pc.extra_vars(knobs)
    for needle in needles:
        assert needle in str(exc.value)


def test_spec_reads_the_profile_the_plan_uses():
    assert pc.extra_vars({'SPEC': 'off'}, 'qwen3.5-122b-a10b')[0] == {'llmops_speculative_num_draft_tokens': 0}
    # mtp / eagle3 give the profile's own settings back even where the inventory turned them off.
    assert pc.extra_vars({'SPEC': 'mtp'}, 'qwen3.5-122b-a10b')[0] == {
        'llmops_speculative_num_draft_tokens': None, 'llmops_speculative_num_steps': None}
    assert pc.extra_vars({'SPEC': 'eagle3', 'MODEL': 'qwen3-32b-eagle3'}, 'qwen3.5-122b-a10b')[0][
        'llmops_speculative_num_draft_tokens'] is None
    with pytest.raises(pc.PlanRunError, match='no model profile'):
        pc.extra_vars({'SPEC': 'off'}, None)


def test_a_what_if_at_fewer_gpus_takes_the_first_of_the_listed_ones():
    listing = {'sglang_servers': {'hosts': ['a', 'b']},
               '_meta': {'hostvars': {'a': {'llmops_gpu_indices': [4, 5, 6, 7]}, 'b': {'llmops_gpu_indices': [4, 5, 6, 7]}}}}
    evars = {'llmops_tp_size': 2}
    note = pc.tp_indices(evars, {'TP': '2'}, listing)
    assert evars['llmops_gpu_indices'] == [4, 5] and 'GPUs 4,5' in note
    # As many as listed, more than listed, servers that disagree, or indices given too: left to the resolver.
    for tp, hv_b, given in ((4, [4, 5, 6, 7], {}), (8, [4, 5, 6, 7], {}), (2, [0, 1, 2, 3], {}),
                            (2, [4, 5, 6, 7], {'llmops_gpu_indices': [6, 7]})):
        listing['_meta']['hostvars']['b']['llmops_gpu_indices'] = hv_b
        evars = dict({'llmops_tp_size': tp}, **given)
        assert pc.tp_indices(evars, {'TP': str(tp)}, listing) is None
        assert evars.get('llmops_gpu_indices') == given.get('llmops_gpu_indices')


def test_what_if_directories_are_named_by_their_knobs():
    assert pc.whatif_slug({'TP': '2'}) == 'tp-2'
    assert pc.whatif_slug({'MODEL': 'qwen3-32b', 'TP': '1', 'KV_DTYPE': 'fp8_e4m3'}) == \
        'model-qwen3-32b_tp-1_kv-dtype-fp8_e4m3'
    assert re.match(r'^mem_fraction_static-0\.85_extra-[0-9a-f]{8}$',
                    pc.whatif_slug({'llmops_mem_fraction_static': '0.85', 'EXTRA': '-e a=b'}))
    assert pc.whatif_slug({'EXTRA': '-e a=b'}) != pc.whatif_slug({'EXTRA': '-e a=c'})


def test_each_plan_is_a_fresh_tree_and_keeps_the_previous(tmp_path):
    out = str(tmp_path / 'plan')
    os.makedirs(os.path.join(out, 'old-host'))
    open(os.path.join(out, 'old-host', 'plan.md'), 'w').close()
    os.makedirs(out + '.previous/older')
    previous = pc.fresh_tree(out)
    assert os.listdir(out) == []
    assert os.listdir(previous) == ['old-host']


def test_the_summary_of_a_host():
    """plugin_utils/views/deployment_summary.py: what make plan prints and the deploy ends with, from one deployment."""
    from ansible_collections.llmops.inference.plugins.plugin_utils.views import deployment_summary as ds
    text = 'ct: 2 problems, nothing was changed on any host:\n1. llmops_tp_size = 3: bad. Fix: 4.\n2. other'
    assert ds.first_problem('ct', text) == 'llmops_tp_size = 3: bad. Fix: 4.'
    assert ds.first_problem('ct', 'ct: one line') == 'one line'
    assert ds.host_lines('ct', {'refusal': text, 'problems': ['x']}) == ['ct  REFUSED: llmops_tp_size = 3: bad. Fix: 4.']
    assert ds.host_lines('ct', {'refusal': text}, shown_refusal=True) == ['ct  REFUSED (the message above)']
    assert ds.host_lines('ct', None) == ['ct  not resolved']
    plan = {'verdict': 'FITS (tight)', 'kv_cache_tokens': 1000000, 'max_running_requests': 12,
            'max_running_requests_bound_by': 'kv_cache', 'context_length': 131072, 'weights_gib_per_gpu': 40.0,
            'k_size_gib': 1.5, 'v_size_gib': 1.5, 'headroom_gib': 2.0, 'sglang_runtime_reserve_gib': 3.5,
            'mem_fraction_static': 0.9}
    lines = ds.host_lines('ct', {'kind': 'sglang_server', 'plan': plan, 'gpus': {'count': 2, 'display_name': 'L40S'},
                                 'profiles': {'model': 'm'}, 'parallel': {'tp_size': 2}, 'sglang': {'version': '9'}})
    assert lines == [
        'ct  FITS (tight)  m on 2 x L40S, TP2, SGLang 9',
        '  KV tokens 1,000,000 | max running requests 12 (bound by kv cache) | context 131,072',
        '  per GPU: weights 40 GiB, KV 3 GiB, headroom 2 GiB | mem fraction static 0.9',
        "  tight = it starts, but max running requests 12 < 32 and headroom 2.0 GiB < SGLang's activation reserve "
        '3.5 GiB']


# --- make plan itself -----------------------------------------------------------------------------------------------


def make_plan(build, *args):
    """`make plan ARGS` in the checkout, its plans under `build`; (rc, output). make's own status is 2 whenever the
    recipe fails (the script's 2 refused / 3 could not run is in its output, not in make's status)."""
    run = subprocess.run(['make', '--no-print-directory', 'plan', 'PLAN_BUILD=%s' % build] + list(args), cwd=ROOT,
                         capture_output=True, text=True, check=False, env=dict(os.environ, SGLANG_API_KEY=''))
    return run.returncode, run.stdout + run.stderr


def snapshot_digest(path):
    with open(os.path.join(path, 'plan-snapshot.json'), 'rb') as handle:
        return handle.read()


@pytest.fixture(scope='module')
def build(tmp_path_factory):
    return str(tmp_path_factory.mktemp('plan-build'))


def test_make_plan_is_short_fresh_and_says_what_changed(build):
    rc, first = make_plan(build)
    assert rc == 0, first
    lines = first.strip().splitlines()
    # A summary, not Ansible's output: no PLAY / TASK banners, no recipe echoed, the log named.
    assert len(lines) <= 30, first
    assert not [line for line in lines if re.match(r'^(PLAY|TASK) \[', line) or 'plan_console.py' in line], first
    assert 'sglang-ct  FITS' in first and 'KV tokens ' in first and 'build/plan' not in first.replace(build, '')
    assert 'tight = it starts, but' in first
    # Each picture beside its text report (plugins/plugin_utils/views/plan_pictures.py).
    assert '/plan.md (picture: plan.html)' in first and '/gpu_partition.txt (picture: topology.html)' in first, first
    log = os.path.join(build, 'plan.log')
    assert 'PLAY [Resolve every host of the inventory]' in open(log).read()
    # The fixture's sysfs tree is read from beside the plan, never written into it.
    assert not os.path.exists(os.path.join(build, 'plan', '_sysfs'))
    stale = os.path.join(build, 'plan', 'ghost-host')
    os.makedirs(stale)
    rc, second = make_plan(build)
    assert rc == 0 and 'No change against the previous plan' in second, second
    assert not os.path.exists(stale) and os.path.isdir(os.path.join(build, 'plan.previous', 'ghost-host'))


def test_make_plan_what_if_writes_its_own_plan(build):
    if not os.path.isfile(os.path.join(build, 'plan', 'plan-snapshot.json')):
        assert make_plan(build)[0] == 0
    before = snapshot_digest(os.path.join(build, 'plan'))
    rc, out = make_plan(build, 'llmops_mem_fraction_static=0.85')
    assert rc == 0, out
    assert 'What-if plan' in out and 'plan-whatif/mem_fraction_static-0.85' in out
    assert 'KV tokens 684,739 -> ' in out and 'because llmops_mem_fraction_static' in out, out
    assert '--mem-fraction-static 0.7851 -> 0.85' in out
    assert snapshot_digest(os.path.join(build, 'plan')) == before
    with open(os.path.join(build, 'plan-whatif', 'mem_fraction_static-0.85', 'sglang-ct', 'sglang_argv.json')) as h:
        argv = json.load(h)['argv']
    assert argv[argv.index('--mem-fraction-static') + 1] == '0.85'


# The pictures make plan draws (plugins/plugin_utils/views/plan_pictures.py), committed as samples the README links to.
SAMPLES = (('sglang-ct', 'plan.html'), ('pve1', 'topology.html'))


def test_the_committed_picture_samples_are_what_make_plan_draws(build):
    """docs/samples/plan/ holds the pictures of the example inventory byte for byte as this checkout's make plan draws
    them (no timestamp, no path in them), so they cannot go stale. The plan of the tests above is reused."""
    if not os.path.isfile(os.path.join(build, 'plan', 'plan-snapshot.json')):
        assert make_plan(build)[0] == 0
    for host, name in SAMPLES:
        fresh = os.path.join(build, 'plan', host, name)
        sample = os.path.join('docs', 'samples', 'plan', host, name)
        with open(fresh) as handle, open(os.path.join(ROOT, sample)) as committed:
            assert handle.read() == committed.read(), '%s is stale; from the checkout: cp %s %s' % (sample, fresh, sample)


def test_the_hint_of_make_profile_runs_as_printed(build):
    """profile_gen's hint for a profile without a TP size, run exactly as it prints it (for the example's model)."""
    from ansible_collections.llmops.inference.plugins.module_utils.planner import profile_gen as pg
    release = cp.release()
    with open(os.path.join(ROOT, 'tests', 'fixtures', 'hf_configs', 'Qwen__Qwen3.5-122B-A10B', 'config.json')) as handle:
        config = json.load(handle)
    _profile, guesses = pg.generate({'config': config}, release, repo='Qwen/Qwen3.5-122B-A10B',
                                    name='qwen3.5-122b-a10b')
    hint = guesses[('serving', 'tp_size')]
    command = re.search(r'(make plan [^(;]+?)\s*(\(|$)', hint).group(1)
    argv = shlex.split(command)
    assert argv[:2] == ['make', 'plan'], hint
    rc, out = make_plan(build, *argv[2:])
    # The example's model does not fit two 96 GB GPUs: the what-if says so, for TP 2 (the knob reached the plan).
    assert rc != 0, out
    assert out.splitlines()[1].startswith('REFUSED: the deploy would refuse sglang-ct'), out
    assert 'at tp 2: 114.2 GiB of weights per GPU' in out and 'plan-whatif/model-qwen3.5-122b-a10b_tp-2' in out


def patched_profiles(tmp_path, edit):
    """A copy of profiles/ with one file changed: edit(relpath -> text) gives {relpath: new text}."""
    import shutil
    dest = str(tmp_path / 'profiles')
    shutil.copytree(os.path.join(ROOT, 'profiles'), dest)
    for rel, change in edit.items():
        path = os.path.join(dest, rel)
        with open(path) as handle:
            text = handle.read()
        new = change(text)
        assert new != text, rel
        with open(path, 'w') as handle:
            handle.write(new)
    return dest


# The five mistakes a new user made that a monitoring error used to mask (issue #27 point 6): each must be the
# first thing make plan says, and the one fatal message of its log.
FIRST_REFUSALS = {
    'unknown-model-profile': ({}, '-e llmops_model_profile=qwen3.5-122b',
                              ["llmops_model_profile = 'qwen3.5-122b': no profile", 'Fix: use qwen3.5-122b-a10b']),
    'misspelled-profile-key': ({'models/qwen3.5-122b-a10b.yml': lambda t: t.replace('  speculative:\n', '  speculativ:\n', 1)},
                               '', ['speculativ']),
    'misspelled-spec': ({'models/qwen3.5-122b-a10b.yml': lambda t: t.replace('algorithm: NEXTN', 'algorithm: NEXTM', 1)},
                        '', ['NEXTM']),
    'unknown-gpu-profile': ({}, '-e llmops_gpu_profile=rtx-pro-6000', ["llmops_gpu_profile = 'rtx-pro-6000'"]),
    'pin-without-rules': ({'sglang.yml': lambda t: re.sub(r'(?m)^version: .*$', 'version: "0.5.99"', t, count=1)},
                          '', ['0.5.99']),
}


@pytest.mark.parametrize('case', sorted(FIRST_REFUSALS))
def test_make_plan_reports_the_first_refusal_first(build, tmp_path, case):
    edits, extra, needles = FIRST_REFUSALS[case]
    if edits:
        extra = (extra + ' -e llmops_profiles_dir=%s' % patched_profiles(tmp_path, edits)).strip()
    rc, out = make_plan(build, 'EXTRA=' + extra)
    assert rc != 0, out
    lines = out.splitlines()
    assert lines[1] == 'REFUSED: the deploy would refuse sglang-ct', out
    first = ' '.join(lines[2:lines.index('')])
    for needle in needles:
        assert needle in first, out
    assert 'Fix: ' in first, out
    assert 'monitoring_sglang_hosts' not in out
    log_path = [line.split(': ', 1)[1] for line in lines if line.startswith('Full log: ')][0]
    with open(os.path.join(ROOT, log_path) if not os.path.isabs(log_path) else log_path) as handle:
        log = handle.read()
    assert log.count('fatal: [') == 1 and 'monitoring_sglang_hosts' not in log, log[-3000:]
    fatal = log[log.index('fatal: ['):]
    assert needles[0] in fatal, fatal[:2000]


def _logs(build):
    folder = os.path.join(build, 'plan-whatif')
    return [os.path.join(folder, name) for name in os.listdir(folder) if name.endswith('.log')]


def test_a_wrong_knob_stops_make_plan_before_ansible(build):
    rc, out = make_plan(build, 'TP=two')
    assert rc != 0 and 'TP=two' in out and 'make plan TP=4' in out, out
    assert not os.path.exists(os.path.join(build, 'plan-whatif', 'tp-two'))
