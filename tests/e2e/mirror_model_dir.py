#!/usr/bin/env python
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Publish a local model directory on the olah test mirror under a Hub repo id (one commit on main).

  mirror_model_dir.py --mirrors DIR --repos-path DIR --repo ORG/NAME --src MODEL_DIR

The deploy lab serves the tiny model of tests/bench/make_tiny_model.py (model.gguf for the CPU server, tokenizer and
config for SGLang's benchmark client) as e.g. Qwen/Qwen3.5-122B-A10B, so the playbook downloads it with the hf_model
role exactly as it would the real checkpoint. Large and binary files (*.gguf, *.safetensors, *.bin) are LFS objects,
the rest plain git files. The repo layout, the LFS pointers and olah's offline metadata seed are those of
tests/hub/make_model_repo.py (imported, not copied). Prints a JSON manifest (commit, files with size and sha256).

  mirror_model_dir.py --mirrors DIR --repos-path DIR --repo ORG/NAME --update

adds one upstream commit to a published repo (a new README.md, the weights unchanged), as a model's owners do: main
moves to a new commit, which the deploy lab's revision lock must not follow until the operator moves it.
"""
from __future__ import absolute_import, division, print_function

import argparse
import hashlib
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'hub'))
from make_model_repo import git, lfs_pointer  # noqa: E402 pylint: disable=wrong-import-position

LFS_SUFFIXES = ('.gguf', '.safetensors', '.bin')


def publish(args):
    org, name = args.repo.split('/')
    repo = os.path.join(args.mirrors, 'models', org, name)
    if os.path.exists(repo):
        sys.exit('refusing to overwrite %s' % repo)
    os.makedirs(repo)
    git(repo, 'init', '-q', '-b', 'main')
    files = {}
    attributes = ''.join('*%s filter=lfs diff=lfs merge=lfs -text\n' % s for s in LFS_SUFFIXES)
    with open(os.path.join(repo, '.gitattributes'), 'w') as handle:
        handle.write(attributes)
    files['.gitattributes'] = {'size': len(attributes), 'sha256': hashlib.sha256(attributes.encode()).hexdigest(), 'lfs': False}
    for entry in sorted(os.listdir(args.src)):
        path = os.path.join(args.src, entry)
        if entry.startswith('.') or not os.path.isfile(path):
            continue
        with open(path, 'rb') as handle:
            data = handle.read()
        sha = hashlib.sha256(data).hexdigest()
        if entry.endswith(LFS_SUFFIXES):
            obj = os.path.join(repo, '.git', 'lfs', 'objects', sha[0:2], sha[2:4], sha)
            os.makedirs(os.path.dirname(obj), exist_ok=True)
            with open(obj, 'wb') as handle:
                handle.write(data)
            with open(os.path.join(repo, entry), 'w') as handle:
                handle.write(lfs_pointer(sha, len(data)))
        else:
            with open(os.path.join(repo, entry), 'wb') as handle:
                handle.write(data)
        files[entry] = {'size': len(data), 'sha256': sha, 'lfs': entry.endswith(LFS_SUFFIXES)}
    git(repo, 'add', '-A')
    git(repo, 'commit', '-q', '-m', 'publish %s' % os.path.basename(os.path.abspath(args.src)))
    sha = git(repo, 'rev-parse', 'HEAD')
    seed_meta(args, org, name, sha)
    return {'repo_id': args.repo, 'commit': sha, 'path': repo, 'files': files}


def seed_meta(args, org, name, sha):
    meta_dir = os.path.join(args.repos_path, 'api', 'models', org, name, 'revision', sha)
    os.makedirs(meta_dir, exist_ok=True)
    with open(os.path.join(meta_dir, 'meta_head.json'), 'w') as handle:
        json.dump({'sha': sha, 'lastModified': time.strftime('%Y-%m-%dT%H:%M:%S.000Z', time.gmtime())}, handle)


def update(args):
    org, name = args.repo.split('/')
    repo = os.path.join(args.mirrors, 'models', org, name)
    if not os.path.isdir(os.path.join(repo, '.git')):
        sys.exit('%s is not published (no git repo at %s)' % (args.repo, repo))
    old = git(repo, 'rev-parse', 'HEAD')
    with open(os.path.join(repo, 'README.md'), 'a') as handle:
        handle.write('Updated upstream after %s.\n' % old)
    git(repo, 'add', 'README.md')
    git(repo, 'commit', '-q', '-m', 'update the model card')
    sha = git(repo, 'rev-parse', 'HEAD')
    seed_meta(args, org, name, sha)
    return {'repo_id': args.repo, 'commit': sha, 'previous': old, 'path': repo}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--mirrors', required=True, help='olah mirrors-path')
    parser.add_argument('--repos-path', required=True, help="olah repos-path (cache), for the meta_head.json seed")
    parser.add_argument('--repo', required=True, help='Hub repo id, ORG/NAME')
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument('--src', help='the model directory to publish')
    action.add_argument('--update', action='store_true', help='add one upstream commit to a published repo')
    args = parser.parse_args()
    json.dump(update(args) if args.update else publish(args), sys.stdout, indent=1)
    sys.stdout.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
