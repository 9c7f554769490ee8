# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`make profile` as an operator types it from another directory (make -C <collection>, relative SRC and DEST),
and every command it prints run as printed from there: the plan of the profile (and, for a checkpoint with MTP
layers, the plan without MTP), and on the refusal to replace an edited profile the diff, FORCE=1 and DEST= commands.

It runs in a copy of the collection (make plan reads the copy's profiles/models/, where the profile is written) with
a real config.json (tests/fixtures/hf_configs: MiMo-7B-Base, one MTP layer); no Hub (SRC). The make plan runs go to a
temporary PLAN_BUILD (make's own variable, from the environment: the commands stay as printed). About 4 s a make
profile and 15 s a make plan on this 2-core machine; two plans are run (the plain one through the cp of a profile
written elsewhere, the SPEC=off one as printed after writing into the collection)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import shlex
import shutil
import subprocess

import pytest
import yaml

from collection_paths import ROOT

FIXTURE = os.path.join(ROOT, 'tests', 'fixtures', 'hf_configs', 'XiaomiMiMo__MiMo-7B-Base')
NAME = 'mimo-7b-base'


@pytest.fixture(scope='module')
def lab(tmp_path_factory):
    """(collection copy, the operator's directory, environment) for make runs as from a shell in that directory."""
    base = tmp_path_factory.mktemp('make_profile')
    coll = str(base / 'collection')
    shutil.copytree(ROOT, coll, symlinks=True, ignore=shutil.ignore_patterns(
        '.git', 'build', '.venv', '__pycache__', '.pytest_cache', 'output'))
    os.symlink(os.path.realpath(os.path.join(ROOT, '.venv')), os.path.join(coll, '.venv'))
    operator = str(base / 'operator')
    os.makedirs(os.path.join(operator, 'ckpt'))
    shutil.copy(os.path.join(FIXTURE, 'config.json'), os.path.join(operator, 'ckpt'))
    env = dict(os.environ, PWD=operator, PLAN_BUILD=str(base / 'build'), HF_ENDPOINT='')
    for name in ('MAKEFLAGS', 'MAKELEVEL', 'MFLAGS'):
        env.pop(name, None)
    return coll, operator, env


def run(argv, lab, shell=False):
    _coll, operator, env = lab
    proc = subprocess.run(argv, cwd=operator, env=env, shell=shell, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=540, check=False)
    return proc.returncode, proc.stdout


def printed(out, task):
    """The msg list a debug task printed (the YAML callback's lines unwrapped)."""
    block = out.split('TASK [%s]' % task, 1)[1].split('msg:', 1)[1].split('\n\n', 1)[0]
    return yaml.safe_load(block)


def commands(lines):
    """{why: command} of the indented command lines ('  <command>   # <why>' or '  <label>:  <command>')."""
    out = {}
    for line in lines:
        if line.startswith('  ') and '   # ' in line:
            text, why = line.strip().split('   # ', 1)
            out[why] = text
        elif line.startswith('  ') and re.search(r':\s{2,}', line):
            label, text = re.split(r':\s{2,}', line.strip(), maxsplit=1)
            out[label] = text
    return out


def test_make_profile_from_another_directory_and_every_printed_command(lab):
    coll, operator, _env = lab
    committed = os.path.join(coll, 'profiles', 'models', NAME + '.yml')
    rc, out = run(['make', '-C', coll, 'profile', 'SRC=ckpt', 'REPO=XiaomiMiMo/MiMo-7B-Base', 'TP=1'], lab)
    assert rc == 0, out
    lines = printed(out, 'Show what was written, what to check and what to run next')
    assert lines[0].startswith('wrote: %s ' % committed), lines
    with open(committed) as handle:
        generated = handle.read()
    assert 'the local directory ckpt' in generated and 'num_nextn_predict_layers: 1' in generated
    hints = commands(lines)
    prefix = 'make -C %s plan MODEL=%s TP=1' % (coll, NAME)
    assert hints['the plan of this profile'] == prefix, lines
    assert hints["the same without MTP (the profile turns on the checkpoint's MTP layers)"] == prefix + ' SPEC=off'

    # The plan without MTP, as printed: it reads the profile just written (one MTP layer, so SPEC=off changes it).
    rc, out = run(shlex.split(prefix + ' SPEC=off'), lab)
    assert rc == 0, out
    assert re.search(r'sglang-ct +FITS +%s on 1 x RTX PRO 6000' % NAME, out), out
    assert 'plan-whatif/model-%s_tp-1_spec-off' % NAME in out, out

    # An edited profile is not replaced: the three commands, each run as printed.
    with open(committed, 'a') as handle:
        handle.write('# edited by the operator\n')
    rc, out = run(['make', '-C', coll, 'profile', 'SRC=ckpt', 'REPO=XiaomiMiMo/MiMo-7B-Base', 'TP=1'], lab)
    assert rc != 0, out
    hints = commands(printed(out, 'Say what is there and the commands that go on from here'))
    # The operator's variables replayed (in make's order of them), with the one the command is about.
    base = 'make -C %s profile REPO=XiaomiMiMo/MiMo-7B-Base SRC=ckpt TP=1' % coll
    assert hints == {'see the difference (writes nothing)': base + ' DIFF=1', 'replace it': base + ' FORCE=1',
                     'write it elsewhere': base + ' DEST=%s/%s.new.yml' % (operator, NAME)}, out

    rc, out = run(shlex.split(hints['see the difference (writes nothing)']), lab)
    assert rc == 0 and '\n-# edited by the operator\n' in out and 'would write: %s' % committed in out, out
    with open(committed) as handle:
        assert handle.read() == generated + '# edited by the operator\n'

    rc, out = run(shlex.split(hints['write it elsewhere']), lab)
    assert rc == 0, out
    elsewhere = os.path.join(operator, NAME + '.new.yml')
    with open(elsewhere) as handle:
        assert handle.read() == generated
    then = commands(printed(out, 'Show what was written, what to check and what to run next'))
    diff = then["against the collection's profile of that name"]
    assert diff == 'diff -u %s %s' % (committed, elsewhere)
    rc, out = run(shlex.split(diff), lab)
    assert rc == 1 and '\n-# edited by the operator\n' in out, out
    # The plan of the profile written elsewhere: the cp to where make plan reads it, then the plan, as printed.
    copy_and_plan = then["the plan of this profile, replacing the collection's"]
    assert copy_and_plan == 'cp %s %s && %s' % (elsewhere, committed, prefix)
    rc, out = run(copy_and_plan, lab, shell=True)
    assert rc == 0 and re.search(r'sglang-ct +FITS +%s on 1 x' % NAME, out), out
    with open(committed) as handle:
        assert handle.read() == generated

    with open(committed, 'a') as handle:
        handle.write('# edited again\n')
    rc, out = run(shlex.split(hints['replace it']), lab)
    assert rc == 0, out
    with open(committed) as handle:
        assert handle.read() == generated


def test_caller_dir_is_where_relative_paths_start_when_pwd_is_not_the_callers(lab):
    """A program that starts make in another directory without a shell (its $PWD stale) gives CALLER_DIR."""
    coll, operator, env = lab
    os.makedirs(os.path.join(operator, 'out'))
    proc = subprocess.run(['make', '-C', coll, 'profile', 'SRC=ckpt', 'DEST=out', 'CALLER_DIR=%s' % operator],
                          cwd='/', env=dict(env, PWD='/'), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout
    # No REPO: the profile is named after the directory.
    assert 'wrote: %s ' % os.path.join(operator, 'out', 'ckpt.yml') in proc.stdout, proc.stdout
