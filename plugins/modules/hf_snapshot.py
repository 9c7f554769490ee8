#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: hf_snapshot
short_description: Download a Hugging Face model snapshot, verify every file, and put it in place atomically
version_added: 0.1.0
description:
  - Runs on the target with the real C(huggingface_hub) client (use a virtualenv where it is installed as the
    interpreter of this task; the M(llmops.inference.hf_snapshot) task of the C(llmops.inference.hf_model) role does).
  - Resolves O(revision) to a commit, lists the repo files with their sizes and LFS sha256 from the Hub (tree API),
    applies O(allow_patterns) and O(ignore_patterns), and checks that every shard named in a
    C(*.safetensors.index.json) is part of the selection.
  - Plans against a marker file (C(.llmops-hf-model.json)) in O(dest) that records the last verified state. A file
    whose size and mtime are unchanged since it was verified is not read again (O(verify=quick)), everything else
    is hashed (sha256 for LFS files, git blob sha1 for small files), in parallel across files.
  - Missing, truncated or corrupted files are downloaded into a staging directory next to O(dest) (same file
    system), hashed, and the complete new tree (unchanged files hard-linked) replaces O(dest) with one atomic
    directory exchange. Until then O(dest) and anything that uses it are untouched.
  - Refuses before any work when the free space of the destination file system is short of the bytes to download
    plus O(free_space_margin_mb), or when O(dest) is under one of O(forbidden_paths) after resolving symlinks and
    mount points.
  - With O(state=absent) removes the model directory, refusing while a process or an active systemd unit
    matching O(service_patterns) uses it.
  - Writes progress (phase, bytes done/total, rate, ETA, files) to O(progress_file) every 2 seconds, for
    M(llmops.inference.hf_snapshot_wait) to print on the controller while this module runs as an async task.
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.model_dir
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: Lists the Hub files, plans against the marker and checks the free space; hashes, downloads and writes
      nothing. Files are judged by size and mtime against the marker, so damage that keeps both (found only by
      hashing) is not predicted, with O(verify=full) too.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: full
    details: One line per model file (size and sha256 or git sha1), before (what is in place, or why a file in place
      does not count) and after (what the Hub lists), plus the revision.
requirements:
  - huggingface_hub (tested with 2.4.0 and hf-xet 1.8.0) for O(state=present), unless a pinned re-run is fully
    covered by the marker.
options:
  state:
    description:
      - V(present) downloads and verifies the model; V(absent) removes O(dest) (refused while in use).
    type: str
    choices: [present, absent]
    default: present
  repo_id:
    description:
      - Model repository on the Hub, C(org/name). Required with O(state=present).
    type: str
  revision:
    description:
      - A 40-hex commit sha pins the model (a re-run covered by the marker then needs no Hub access at all).
      - A branch or tag is resolved to its commit at every run; the commit is returned and recorded.
    type: str
    default: main
  dest:
    description:
      - Model directory. It is replaced as a whole, so it must be a directory of its own (not a mount point, not a
        system directory).
    type: path
    required: true
  allow_patterns:
    description:
      - Only files matching at least one of these fnmatch patterns (same rules as C(snapshot_download)).
    type: list
    elements: str
  ignore_patterns:
    description:
      - Skip files matching any of these fnmatch patterns.
    type: list
    elements: str
  token:
    description:
      - Hugging Face access token for private or gated repos. Placed in C(HF_TOKEN) of this module's own process
        only; never on a command line and never written to a file.
    type: str
  endpoint:
    description:
      - Hub or Hub mirror base URL, for example V(http://mirror.internal:8090). Default is the client's
        (C(HF_ENDPOINT) or huggingface.co).
    type: str
  max_workers:
    description:
      - Files downloaded concurrently (one thread per file, as C(hf download --max-workers)).
    type: int
    default: 8
  high_performance:
    description:
      - Set C(HF_XET_HIGH_PERFORMANCE=1) for the client (Xet storage uses all cores and large buffers).
    type: bool
    default: false
  verify:
    description:
      - V(quick) trusts files whose size and mtime match the marker; V(full) hashes every file again (a scrub).
    type: str
    choices: [quick, full]
    default: quick
  hash_workers:
    description:
      - Threads hashing files in parallel; V(0) uses every CPU the process may run on.
    type: int
    default: 0
  free_space_margin_mb:
    description:
      - Space (MB, 10^6 bytes) that must stay free on the destination file system after the download.
    type: int
    default: 1024
  require_sha256:
    description:
      - Fail when the Hub listing has no sha256 for an LFS file (it could then only be size-checked).
    type: bool
    default: true
  check_index:
    description:
      - Fail when a C(*.safetensors.index.json) names a shard that is not in the repo or is excluded by the patterns.
    type: bool
    default: true
  timeout:
    description:
      - Seconds the client waits for Hub metadata and download reads (C(HF_HUB_ETAG_TIMEOUT), C(HF_HUB_DOWNLOAD_TIMEOUT)).
    type: int
    default: 30
  download_retries:
    description:
      - Further attempts for a file whose download failed or whose hash did not match.
    type: int
    default: 2
  progress_file:
    description:
      - JSON file rewritten every 2 seconds with the progress of the current phase.
    type: path
  owner:
    description:
      - Owner of the model files and directories. Default is the user running the module.
    type: str
  group:
    description:
      - Group of the model files and directories.
    type: str
  mode:
    description:
      - Octal mode of the model files; directories get the same mode plus C(x) wherever C(r) is set.
    type: str
    default: '0644'
  force:
    description:
      - With O(state=absent), remove O(dest) even when it has no marker (was not written by this module).
    type: bool
    default: false
notes:
  - Linux only (C(/proc) for the in-use check, C(renameat2) for the atomic exchange with a two-rename fallback).
  - Nothing is written before the revision, the file list, the patterns, the index and the free space have been
    checked; a refusal leaves the host as it was. The progress file is written from then on.
  - The marker trusts size and mtime (O(verify=quick)). Silent corruption that keeps both is found only by
    O(verify=full).
  - Only regular files are carried from the old O(dest) into the new tree; files an earlier run verified but the new
    file set no longer contains are dropped, files this module never recorded are kept.
  - An interrupted run leaves its verified and partly downloaded files in C(.<name>.hf_model/partial-<commit>) next to
    O(dest); the next run hashes the complete ones and downloads the rest (a partial file restarts from byte 0).
seealso:
  - module: llmops.inference.hf_snapshot_wait
  - name: huggingface_hub download guide
    description: Patterns, revisions and local_dir downloads.
    link: https://huggingface.co/docs/huggingface_hub/guides/download
"""

EXAMPLES = r"""
- name: Download a pinned model with progress on the controller
  llmops.inference.hf_snapshot:
    repo_id: Qwen/Qwen3.5-122B-A10B
    revision: 0123456789abcdef0123456789abcdef01234567
    dest: /srv/models/Qwen/Qwen3.5-122B-A10B
    allow_patterns: ['*.safetensors', '*.json', '*.txt', '*.jinja']
    token: "{{ vault_hf_token }}"
    progress_file: /srv/models/.Qwen3.5-122B-A10B.progress.json
  vars:
    ansible_python_interpreter: /opt/llmops/hf-venv/bin/python
  async: 7200
  poll: 0
  register: download_job

- name: Wait, printing bytes done/total, rate and ETA every 15 s
  llmops.inference.hf_snapshot_wait:
    jid: "{{ download_job.ansible_job_id }}"
    progress_file: /srv/models/.Qwen3.5-122B-A10B.progress.json
    interval: 15

- name: Remove a model that no service uses any more
  llmops.inference.hf_snapshot:
    dest: /srv/models/Qwen/Qwen3.5-122B-A10B
    state: absent
"""

RETURN = r"""
path:
  description: The model directory (as given).
  returned: always
  type: str
  sample: /srv/models/Qwen/Qwen3.5-122B-A10B
repo_id:
  description: The repository.
  returned: when state is present
  type: str
  sample: Qwen/Qwen3.5-122B-A10B
revision:
  description: The commit the model directory now holds.
  returned: when state is present
  type: str
  sample: 0123456789abcdef0123456789abcdef01234567
requested_revision:
  description: O(revision) as given (a branch or tag resolves to RV(revision)).
  returned: when state is present
  type: str
  sample: main
source:
  description: Where the file list came from, V(hub) or V(marker) (a pinned re-run that needed no Hub access).
  returned: when state is present
  type: str
  sample: hub
files:
  description: Number of model files.
  returned: when state is present
  type: int
  sample: 45
bytes:
  description: Total size of the model files.
  returned: when state is present
  type: int
  sample: 234017456128
downloaded_files:
  description: Files downloaded by this run (including re-downloads after a hash mismatch).
  returned: when state is present
  type: int
  sample: 39
downloaded_bytes:
  description: Bytes downloaded by this run.
  returned: when state is present
  type: int
  sample: 234000000000
download_seconds:
  description: Wall time of the download phase.
  returned: when state is present
  type: float
  sample: 251.3
download_mb_per_s:
  description: RV(downloaded_bytes) / RV(download_seconds) in MB/s (10^6 bytes); null when nothing was downloaded.
  returned: when state is present
  type: float
  sample: 931.2
verified_files:
  description: Files hashed by this run (existing files that the marker could not vouch for, and every download).
  returned: when state is present
  type: int
  sample: 45
verified_bytes:
  description: Bytes hashed by this run. Zero for an idempotent re-run.
  returned: when state is present
  type: int
  sample: 234017456128
verify_seconds:
  description: Wall time of the hashing phases.
  returned: when state is present
  type: float
  sample: 41.7
verify_mb_per_s:
  description: RV(verified_bytes) / RV(verify_seconds) in MB/s; null when nothing was hashed.
  returned: when state is present
  type: float
  sample: 5612.0
hash_workers:
  description: Threads used for hashing.
  returned: when state is present
  type: int
  sample: 32
repaired:
  description: Files that were present with a wrong size or hash and were downloaded again.
  returned: when state is present
  type: list
  elements: str
  sample: [model-00007-of-00039.safetensors]
removed:
  description: Files of an earlier verified state that the new file set no longer contains (state present), or the
    directories deleted (state absent).
  returned: always
  type: list
  elements: str
  sample: []
replaced:
  description: How the new tree was put in place, V(exchange) (atomic), V(rename), V(new), or null when the files
    stayed where they were.
  returned: when state is present
  type: str
  sample: exchange
plan:
  description: Counts of the plan (files ok by marker, to verify, to download, to remove, extra files kept).
  returned: when state is present
  type: dict
  sample: {files_ok: 45, files_to_verify: 0, bytes_to_verify: 0, files_to_download: 0, bytes_to_download: 0}
free_bytes:
  description: Free space on the destination file system before the download.
  returned: when state is present
  type: int
  sample: 1500000000000
marker:
  description: Path of the marker file.
  returned: when state is present
  type: str
  sample: /srv/models/Qwen/Qwen3.5-122B-A10B/.llmops-hf-model.json
total_seconds:
  description: Wall time of the module.
  returned: always
  type: float
  sample: 301.9
users:
  description: With O(state=absent), the processes and units found using the directory (the module then fails).
  returned: when state is absent and the model is in use
  type: dict
  sample: {processes: [{pid: 4242, comm: python3, unit: sglang-qwen.service, reasons: [cmdline, mmap]}], units: []}
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.llmops.inference.plugins.module_utils.common.failures import ModuleFailure
from ansible_collections.llmops.inference.plugins.module_utils.hf.hub import MissingHubClient
from ansible_collections.llmops.inference.plugins.module_utils.hf.remove import remove_model
from ansible_collections.llmops.inference.plugins.module_utils.hf.sync import sync_model


def build_module():
    return AnsibleModule(
        argument_spec=dict(
            state=dict(type='str', choices=['present', 'absent'], default='present'),
            repo_id=dict(type='str'),
            revision=dict(type='str', default='main'),
            dest=dict(type='path', required=True),
            allow_patterns=dict(type='list', elements='str'),
            ignore_patterns=dict(type='list', elements='str'),
            token=dict(type='str', no_log=True),
            endpoint=dict(type='str'),
            max_workers=dict(type='int', default=8),
            high_performance=dict(type='bool', default=False),
            forbidden_paths=dict(type='list', elements='path', default=['/data']),
            verify=dict(type='str', choices=['quick', 'full'], default='quick'),
            hash_workers=dict(type='int', default=0),
            free_space_margin_mb=dict(type='int', default=1024),
            require_sha256=dict(type='bool', default=True),
            check_index=dict(type='bool', default=True),
            timeout=dict(type='int', default=30),
            download_retries=dict(type='int', default=2),
            progress_file=dict(type='path'),
            owner=dict(type='str'),
            group=dict(type='str'),
            mode=dict(type='str', default='0644'),
            service_patterns=dict(type='list', elements='str', default=['sglang-*.service']),
            force=dict(type='bool', default=False),
        ),
        required_if=[('state', 'present', ['repo_id'])],
        supports_check_mode=True,
    )


def main():
    module = build_module()
    p = module.params
    p['dest'] = os.path.normpath(p['dest']) if p['dest'] else p['dest']
    if p['endpoint']:
        p['endpoint'] = p['endpoint'].rstrip('/')
    started = time.time()
    try:
        if p['state'] == 'absent':
            result = remove_model(p, module.run_command, module.get_bin_path('systemctl'), module.check_mode,
                                  module._diff, started)
        else:
            result = sync_model(p, module.check_mode, module._diff, started)
    except MissingHubClient as exc:
        module.fail_json(msg=missing_required_lib('huggingface_hub', reason='to download models',
                                                  url='https://pypi.org/project/huggingface-hub/')
                         + ' Run this module with the interpreter of the hf_model virtualenv.',
                         exception=exc.traceback)
    except ModuleFailure as exc:
        module.fail_json(msg=exc.msg, **exc.details)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
