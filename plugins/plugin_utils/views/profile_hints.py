# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The commands `make profile` (playbooks/profile.yml) prints, each one a command that works as printed from the
directory the operator started it in.

Controller only, stdlib only; the filter llmops.inference.profile_hints calls lines(). How the workflow was started
(``invocation``):

* through make: ``make_dir`` (the collection root make ran in), ``caller_dir`` (the operator's directory: make -C
  leaves the shell's $PWD alone) and ``args``, the ``[NAME, value]`` variables given on make's command line (their
  relative paths are relative to ``caller_dir``, so they are replayed verbatim);
* by ansible-playbook: ``playbook`` (playbooks/profile.yml), ``caller_dir`` (its working directory), ``args``, the
  ``[profile_*, value]`` variables it was given, and ``inventory``, its inventory sources (the Hub endpoint can come
  from there, so the commands keep them).

``result`` is the model_profile module's result: on success (``dest``, ``profile``, ``changed``) the follow-up
``make plan`` of the profile (and, only for a profile with MTP on, the same plan without it); on the refusal to
replace a profile with other content (``exists``) the three ways on: see the difference, replace it, write it
elsewhere.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shlex

# The variables of `make profile` / the playbook the hints set (the others, DEST too unless a new one is given, are
# replayed as given).
_MAKE_OWN = ('FORCE', 'DIFF')
_PLAYBOOK_OWN = ('profile_force',)


def _same_dir(one, other):
    return bool(one and other) and os.path.realpath(one) == os.path.realpath(other)


def root_of(invocation):
    """The collection root: where make ran, or the directory above playbooks/."""
    if invocation.get('make_dir'):
        return invocation['make_dir']
    return os.path.dirname(os.path.dirname(os.path.abspath(invocation['playbook'])))


def _make(invocation, target):
    """make [-C root] <target>: -C only when the operator is not in the collection root already."""
    root = root_of(invocation)
    return ['make'] + ([] if _same_dir(invocation.get('caller_dir'), root) else ['-C', root]) + [target]


def command(argv):
    return ' '.join(shlex.quote(str(word)) for word in argv)


def rerun(invocation, force=False, diff=False, dest=None, endpoint=None):
    """The operator's own command again (argv), with FORCE=1, DIFF=1 (check mode, diff, nothing written), another
    DEST or an ENDPOINT; through make as make, through ansible-playbook as ansible-playbook."""
    args = [(str(k), v) for k, v in invocation.get('args') or []]
    if invocation.get('make_dir'):
        own = _MAKE_OWN + (('DEST',) if dest else ()) + (('ENDPOINT',) if endpoint else ())
        argv = _make(invocation, 'profile') + ['%s=%s' % (k, v) for k, v in args if k not in own]
        return argv + (['FORCE=1'] if force else []) + (['DIFF=1'] if diff else []) + (
            ['DEST=%s' % dest] if dest else []) + (['ENDPOINT=%s' % endpoint] if endpoint else [])
    own = _PLAYBOOK_OWN + (('profile_dest',) if dest else ()) + (('profile_endpoint',) if endpoint else ())
    argv = ['ansible-playbook', invocation['playbook']]
    for source in invocation.get('inventory') or []:
        argv += ['-i', source]
    for key, value in args:
        if key not in own:
            argv += ['-e', '%s=%s' % (key, value)]
    if diff:
        argv += ['--check', '--diff']
    if force or diff:
        argv += ['-e', 'profile_force=true']
    return argv + (['-e', 'profile_dest=%s' % dest] if dest else []) + (
        ['-e', 'profile_endpoint=%s' % endpoint] if endpoint else [])


def plan(invocation, name, tp_size, spec_off=False):
    """make [-C root] plan MODEL=<name> TP=<n> [SPEC=off] [INVENTORY=<the one make profile read>]."""
    argv = _make(invocation, 'plan') + ['MODEL=%s' % name, 'TP=%s' % tp_size] + (['SPEC=off'] if spec_off else [])
    if invocation.get('make_dir'):
        inventory = dict((str(k), v) for k, v in invocation.get('args') or []).get('INVENTORY')
    else:
        # make plan's own default is the example inventory (as ansible.cfg's); another one is named.
        default = os.path.join(root_of(invocation), 'inventories', 'example')
        inventory = next((source for source in invocation.get('inventory') or []
                          if not os.path.realpath(source).startswith(os.path.realpath(default))), None)
    return argv + (['INVENTORY=%s' % inventory] if inventory else [])


def mtp_on(profile):
    """True when the profile turns on the checkpoint's own MTP head (NEXTN / EAGLE without a draft checkpoint)."""
    spec = ((profile or {}).get('serving') or {}).get('speculative') or {}
    return str(spec.get('algorithm') or '').upper() in ('NEXTN', 'EAGLE') and not spec.get('draft')


def refused(invocation, result):
    """The lines of the refusal to replace an existing profile: what is there and the three commands on."""
    dest, name = result['dest'], result.get('name') or os.path.basename(result['dest'])[:-4]
    new = os.path.join(invocation.get('caller_dir') or '.', '%s.new.yml' % name)
    return ['%s exists with other content; not replaced. From %s:' % (dest, invocation.get('caller_dir') or 'here'),
            '  see the difference (writes nothing):  %s' % command(rerun(invocation, diff=True)),
            '  replace it:                           %s' % command(rerun(invocation, force=True)),
            '  write it elsewhere:                   %s' % command(rerun(invocation, dest=new))]


def written(invocation, result, check_mode=False):
    """The lines after a profile was written (or would be): the plan of it, and how make plan gets to read it."""
    profile, dest = result['profile'], result['dest']
    name, tp = profile['name'], (profile.get('serving') or {}).get('tp_size') or 1
    if check_mode:
        if not result.get('changed'):
            return ['nothing to write: %s is the same' % dest]
        existed = bool((result.get('diff') or {}).get('before'))
        return ['nothing written (check mode); to write it: %s'
                % command(rerun(invocation, force=existed))]
    committed = os.path.join(root_of(invocation), 'profiles', 'models', name + '.yml')
    plans = [('the plan of this profile', plan(invocation, name, tp))]
    if mtp_on(profile):
        plans.append(('the same without MTP (the profile turns on the checkpoint\'s MTP layers)',
                      plan(invocation, name, tp, spec_off=True)))
    if in_collection(invocation, result):
        return ['next, from %s:' % (invocation.get('caller_dir') or 'here')] + [
            '  %s   # %s' % (command(argv), why) for why, argv in plans]
    # make plan reads the collection's profiles/models/ only: the profile goes there first.
    where = invocation.get('caller_dir') or 'here'
    lines = ['next, from %s (make plan reads %s only):' % (where, os.path.dirname(committed))]
    replacing = ''
    if os.path.exists(committed):
        lines.append('  %s   # against the collection\'s profile of that name' % command(['diff', '-u', committed, dest]))
        replacing = ', replacing the collection\'s'
    copy = command(['cp', dest, committed])
    return lines + ['  %s && %s   # %s%s' % (copy, command(argv), why, replacing) for why, argv in plans]


def in_collection(invocation, result):
    """True when the profile is (or would be) in the collection's profiles/models/, where make plan reads it."""
    return _same_dir(os.path.dirname(os.path.abspath(result['dest'])),
                     os.path.join(root_of(invocation), 'profiles', 'models'))


def unverified(invocation, result):
    """The guesses as "key - why" lines, a `make plan` in them (the file's comment, which reads from the collection
    root) as it works from the operator's directory, and said to need the cp when the profile is not where make plan
    reads."""
    out = []
    for line in result.get('unverified') or []:
        if 'make plan ' in line:
            line = line.replace('make plan ', command(_make(invocation, 'plan')) + ' ')
            if not in_collection(invocation, result):
                line += ', once it is in profiles/models/ (the cp below)'
        out.append(line)
    return ['unverified (marked in the file):'] + out if out else []


def lines(result, invocation, check_mode=False):
    """The lines to print after model_profile: on success its guesses and what to run next; on its refusal to
    replace a profile, the commands that go on."""
    if result.get('exists'):
        return refused(invocation, result)
    if result.get('endpoints'):
        # The inventory's servers download from different mirrors: which one to read, as a command each.
        return ['the inventory\'s sglang_servers download from different Hub endpoints (hf_model_endpoint): read '
                'from one of them:'] + ['  %s' % command(rerun(invocation, endpoint=e)) for e in result['endpoints']]
    if result.get('failed') or not result.get('profile'):
        return []
    return unverified(invocation, result) + written(invocation, result, check_mode)
