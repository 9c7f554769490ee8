#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: model_profile
short_description: Write a model profile from a checkpoint's config.json (local directory or Hub)
description:
  - Reads C(config.json) and, where the checkpoint has them, C(model.safetensors.index.json) (checkpoint size),
    C(generation_config.json), C(tokenizer_config.json) and C(chat_template.jinja) (chat template), C(tokenizer.json)
    (the vocabulary the parser detection tests) and C(hf_quant_config.json) (a ModelOpt quantization kept out of
    config.json) from a local directory or through the real C(huggingface_hub) client from the Hub or a mirror, and
    writes a model profile (C(profiles/models/<name>.yml)) with the architecture facts the VRAM planner needs, the
    quantization, the MTP/NEXTN layers and the parsers.
  - The reasoning and tool-call parsers are what the pinned SGLang's C(auto) resolves them to from the chat template
    (its template-detection rules, as data in the release table), each with a comment saying which rule decided;
    C(auto) with a C(# unverified:) comment when no template was read or an unread vocabulary leaves a rule open.
  - Without a safetensors index, a quantized checkpoint's C(weights_bytes) is computed from its
    C(quantization_config) and tensor layout (FP8 block, MXFP4, NVFP4, ModelOpt FP8, compressed-tensors INT4/INT8,
    GPTQ, AWQ); a comment says so, and it is marked unverified unless that format was checked against a real
    checkpoint.
  - Everything it had to guess is written as a C(# unverified:) comment above its key.
  - An architecture that no planner family of the release table names is refused with the list of supported ones.
  - An EAGLE-3 draft checkpoint gets no profile of its own; the refusal shows how to attach it to its target's
    profile under C(serving.speculative.draft).
  - An existing profile with other content is never replaced unless O(force=true) (the refusal returns C(exists),
    C(dest) and C(name)); check mode with O(force=true) reports the change (and diff mode the difference) without
    writing.
  - Runs on the controller (delegate to localhost); the Hub files are fetched by O(hub_python), an interpreter with
    C(huggingface_hub) (make profile builds one from C(profiles/locks/)).
version_added: 0.2.0
author:
  - llmops.inference maintainers (@llmops)
options:
  src:
    description: A local checkpoint (or config-only) directory to read instead of the Hub (O(repo) is then only recorded).
    type: path
  repo:
    description: Hugging Face repository id, read through O(hub_python). Also recorded as C(hf_repo) with O(src).
    type: str
  revision:
    description:
      - Branch, tag or commit to read. A 40-hex commit is recorded as C(hf_revision); with O(src) only a commit
        given here is recorded; a branch read from the Hub is resolved to its commit.
    type: str
  endpoint:
    description: Hub endpoint (a mirror such as olah); default the client's own (C(HF_ENDPOINT) or huggingface.co).
    type: str
  token:
    description: Hub token for gated repositories; passed in the environment, never on a command line.
    type: str
  hub_python:
    description: Python interpreter with C(huggingface_hub), required with O(repo).
    type: path
  dest:
    description: The profile file to write, or an existing directory to write C(<name>.yml) in.
    type: path
    required: true
  name:
    description: Profile and served-model name; default the repository's (or directory's) last part in lower case.
    type: str
  tp_size:
    description: Tensor-parallel size to record; default 1 (marked unverified).
    type: int
  release_table:
    description: The parsed C(profiles/sglang_releases.yml).
    type: dict
    required: true
  sglang_version:
    description: The pinned SGLang version (C(profiles/sglang.yml)).
    type: str
    required: true
  force:
    description: Replace an existing profile whose content differs.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Profile a checkpoint from the Hub mirror
  llmops.inference.model_profile:
    repo: Qwen/Qwen3-32B
    revision: main
    endpoint: http://127.0.0.1:8090
    hub_python: /root/.cache/llmops-inference/hf-client/bin/python
    dest: "{{ playbook_dir }}/../profiles/models/qwen3-32b.yml"
    release_table: "{{ lookup('ansible.builtin.file', playbook_dir ~ '/../profiles/sglang_releases.yml') | from_yaml }}"
    sglang_version: "{{ (lookup('ansible.builtin.file', playbook_dir ~ '/../profiles/sglang.yml') | from_yaml).version }}"
  delegate_to: localhost
"""

RETURN = r"""
profile:
  description: The profile as written (or as it would be in check mode).
  returned: success
  type: dict
unverified:
  description: What was guessed, as "key - why" lines (the comments in the file).
  returned: success
  type: list
  elements: str
family:
  description: The planner family of the architecture (gqa, mla, hybrid_swa, hybrid_gdn).
  returned: success
  type: str
revision:
  description: The commit the files were read at, when known.
  returned: success
  type: str
dest:
  description: The profile file written (or that would be).
  returned: success
  type: str
files_read:
  description: Which of the checkpoint's JSON files were read.
  returned: success
  type: list
  elements: str
"""

import json
import os
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils.common.atomic_files import write_file_atomic
from ansible_collections.llmops.inference.plugins.module_utils.common.json_files import read_json
from ansible_collections.llmops.inference.plugins.module_utils.model.config import model_facts
from ansible_collections.llmops.inference.plugins.module_utils.planner.profile_gen import (
    ProfileError, generate, slug, to_yaml)
from ansible_collections.llmops.inference.plugins.module_utils.sglang.release import ReleaseError, load_table, release

FILES = (('config', 'config.json'), ('index', 'model.safetensors.index.json'),
         ('generation_config', 'generation_config.json'), ('tokenizer_config', 'tokenizer_config.json'),
         # The parser detection: the chat template file (wins over tokenizer_config's) and the vocabulary it tests.
         ('chat_template', 'chat_template.jinja'), ('tokenizer', 'tokenizer.json'),
         # ModelOpt exports that keep their quantization out of config.json (SGLang reads this file then).
         ('hf_quant_config', 'hf_quant_config.json'))
# Files read as text, not JSON.
TEXT_FILES = ('chat_template',)

# Run by hub_python: the real huggingface_hub client resolves the revision to its commit and downloads the files that
# exist (config.json must). Arguments: repo, revision, output directory; token and endpoint come in the environment.
HUB_FETCH = r'''
import json, sys
from huggingface_hub import HfApi, hf_hub_download
from huggingface_hub.utils import EntryNotFoundError
repo, revision, out = sys.argv[1:4]
sha = HfApi().model_info(repo, revision=revision).sha
got = {}
for name in sys.argv[4:]:
    try:
        got[name] = hf_hub_download(repo, name, revision=sha, local_dir=out)
    except EntryNotFoundError:
        pass
print(json.dumps({"sha": sha, "files": got}))
'''


def from_dir(module, directory):
    files = {}
    for key, name in FILES:
        path = os.path.join(directory, name)
        if key in TEXT_FILES:
            if os.path.isfile(path):
                try:
                    with open(path, 'rb') as handle:
                        files[key] = handle.read().decode('utf-8')
                except (IOError, OSError, UnicodeDecodeError) as exc:
                    module.fail_json(msg='cannot read %s: %s' % (path, exc))
            continue
        value, error = read_json(path, key == 'config', ": a model profile needs the checkpoint's config.json")
        if error:
            module.fail_json(msg=error)
        if value is not None:
            files[key] = value
    return files


def from_hub(module, workdir):
    p = module.params
    if not p['hub_python'] or not os.access(p['hub_python'], os.X_OK):
        module.fail_json(msg='repo needs hub_python, a Python with huggingface_hub (got %r)' % p['hub_python'])
    env = {'HF_HUB_DISABLE_TELEMETRY': '1'}
    if p['endpoint']:
        env['HF_ENDPOINT'] = p['endpoint']
    if p['token']:
        env['HF_TOKEN'] = p['token']
    argv = [p['hub_python'], '-c', HUB_FETCH, p['repo'], p['revision'] or 'main', workdir] + [n for _k, n in FILES]
    rc, out, err = module.run_command(argv, environ_update=env)
    try:
        result = json.loads(out.strip().splitlines()[-1]) if rc == 0 else None
    except (ValueError, IndexError):
        result = None
    if not result or 'config.json' not in result['files']:
        module.fail_json(msg='could not read config.json of %s at %s from %s: %s'
                         % (p['repo'], p['revision'] or 'main', p['endpoint'] or 'the Hub',
                            (err or out).strip()[-800:] or 'no config.json in the repository'))
    return from_dir(module, workdir), result['sha']


def main():
    module = AnsibleModule(
        argument_spec=dict(
            src=dict(type='path'), repo=dict(type='str'), revision=dict(type='str'), endpoint=dict(type='str'),
            token=dict(type='str', no_log=True), hub_python=dict(type='path'), dest=dict(type='path', required=True),
            name=dict(type='str'), tp_size=dict(type='int'), release_table=dict(type='dict', required=True),
            sglang_version=dict(type='str', required=True), force=dict(type='bool', default=False),
        ),
        required_one_of=[('src', 'repo')],
        supports_check_mode=True,
    )
    p = module.params
    try:
        rel = release(load_table(p['release_table']), p['sglang_version'])
    except ReleaseError as exc:
        module.fail_json(msg=str(exc))
    revision = p['revision']
    if p['src']:
        if not os.path.isdir(p['src']):
            module.fail_json(msg='src %s is not a directory' % p['src'])
        files = from_dir(module, p['src'])
        # The directory's name, not its path on this controller (the profile is committed and shared).
        source = 'the local directory %s' % os.path.basename(os.path.normpath(p['src']))
    else:
        workdir = tempfile.mkdtemp(prefix='llmops-profile-')
        try:
            files, revision = from_hub(module, workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        source = '%s@%s via %s' % (p['repo'], revision, p['endpoint'] or 'the Hub')
    try:
        name = p['name'] or slug(p['repo'] or os.path.basename(os.path.normpath(p['src'])))
        notes = {}
        profile, guesses = generate(files, rel, repo=p['repo'], revision=revision, name=name, tp_size=p['tp_size'],
                                    notes=notes)
    except ProfileError as exc:
        module.fail_json(msg='%s: %s' % (source, exc))
    facts = model_facts(files['config'], rel['architectures'])
    read = [n for k, n in FILES if k in files]
    header = ['%s (%s): generated by llmops.inference.model_profile from %s (%s).' % (
        name, facts['arch'], source, ', '.join(read)),
        'Planner family %s. Every "# unverified:" line is a guess to check before serving.' % facts['family']]
    text = to_yaml(profile, guesses, header, notes)
    if os.path.isdir(p['dest']):
        p['dest'] = os.path.join(p['dest'], name + '.yml')
    old = None
    if os.path.exists(p['dest']):
        with open(p['dest']) as handle:
            old = handle.read()
    changed = old != text
    if changed and old is not None and not p['force']:
        module.fail_json(msg='%s exists with other content; not replaced (force=true replaces it; check mode with '
                         'force=true and diff mode shows the difference)' % p['dest'], exists=True, dest=p['dest'],
                         name=name, diff=dict(before=old, after=text))
    if changed and not module.check_mode:
        directory = os.path.dirname(p['dest']) or '.'
        if not os.path.isdir(directory):
            os.makedirs(directory)
        write_file_atomic(p["dest"], text, 0o644)
    unverified = ['%s - %s' % ('.'.join(key), why) for key, why in sorted(guesses.items())]
    module.exit_json(changed=changed, profile=profile, unverified=unverified, family=facts['family'],
                     revision=revision, files_read=read, dest=p['dest'],
                     diff=dict(before=old or '', after=text, before_header=p['dest'], after_header=p['dest']))


if __name__ == '__main__':
    main()
