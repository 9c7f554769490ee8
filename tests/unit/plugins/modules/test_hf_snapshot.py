# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""hf_snapshot through its real argument spec: refusals before any write, check and diff mode, state=absent.

The Hub client is replaced by a small in-memory fake at the import_hf() boundary (module_utils/hf/hub.py, as
module_utils/hf/sync.py calls it; same call signatures as
huggingface_hub 2.4: HfApi.repo_info/list_repo_tree, hf_hub_download(local_dir=...)); real downloads from a real
mirror run in tests/integration/targets/hf_model.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import struct
import subprocess
import sys

import pytest

from ansible.module_utils import basic

from module_harness import AnsibleFailJson, run

from ansible_collections.llmops.inference.plugins.module_utils.hf import hub as hf_hub
from ansible_collections.llmops.inference.plugins.module_utils.hf import sync as hf_sync
from ansible_collections.llmops.inference.plugins.module_utils.hf.marker import MARKER_NAME
from ansible_collections.llmops.inference.plugins.modules import hf_snapshot

COMMIT = 'c' * 40


def run_module(args, **kwargs):
    cls, res = run(hf_snapshot.main, args, **kwargs)
    return cls is AnsibleFailJson, res


def safetensors(n, seed):
    header = json.dumps({'w': {'dtype': 'U8', 'shape': [n], 'data_offsets': [0, n]}}).encode()
    body = bytes((seed + i * 7) % 256 for i in range(n))
    return struct.pack('<Q', len(header)) + header + body


class Entry(object):
    def __init__(self, path, data, lfs):
        self.path = path
        self.size = len(data)
        self.lfs = {'sha256': hashlib.sha256(data).hexdigest(), 'size': len(data)} if lfs else None
        self.blob_id = hashlib.sha1(b'blob %d\0' % len(data) + data).hexdigest()


class FakeHub(object):
    """One repo, branch main -> COMMIT; records the calls (and the HF_TOKEN the process had at each one)."""

    def __init__(self, files):
        self.files = files
        self.calls = []
        hub = self

        class HfApi(object):
            def __init__(self, endpoint=None):
                pass

            def repo_info(self, repo_id, revision=None, repo_type=None):
                hub.calls.append(('repo_info', revision))
                if revision != 'main':
                    raise hub.RevisionNotFoundError('no revision %s' % revision)
                return type('Info', (), {'sha': COMMIT})()

            def list_repo_tree(self, repo_id, revision=None, recursive=False, repo_type=None):
                hub.calls.append(('list_repo_tree', revision))
                if revision != COMMIT:
                    raise hub.RevisionNotFoundError('no revision %s' % revision)
                return [Entry(path, data, path.endswith('.safetensors')) for path, data in sorted(hub.files.items())]

        def hf_hub_download(repo_id, filename, revision=None, local_dir=None, tqdm_class=None, **kwargs):
            hub.calls.append(('download', filename))
            target = os.path.join(local_dir, filename)
            with open(target, 'wb') as handle:
                handle.write(hub.files[filename])
            return target

        class RevisionNotFoundError(Exception):
            pass

        self.RevisionNotFoundError = RevisionNotFoundError
        errors = type('errors', (), {'RevisionNotFoundError': RevisionNotFoundError})
        self.api = {'HfApi': HfApi, 'hf_hub_download': hf_hub_download, 'errors': errors, 'version': 'fake'}

    def downloads(self):
        return sorted(name for kind, name in self.calls if kind == 'download')


@pytest.fixture
def hub(monkeypatch):
    index = json.dumps({'weight_map': {'a': 'model-00001-of-00002.safetensors', 'b': 'model-00002-of-00002.safetensors'}})
    fake = FakeHub({'model-00001-of-00002.safetensors': safetensors(3000, 1),
                    'model-00002-of-00002.safetensors': safetensors(5000, 2),
                    'model.safetensors.index.json': index.encode(), 'config.json': b'{"x": 1}\n'})
    monkeypatch.setattr(hf_sync, 'import_hf', lambda env: fake.api)
    return fake


def tree(root):
    """Every path under ``root`` with its size (directories as None): what 'nothing changed' compares."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(str(root)):
        for name in dirnames:
            found[os.path.relpath(os.path.join(dirpath, name), str(root))] = None
        for name in filenames:
            full = os.path.join(dirpath, name)
            found[os.path.relpath(full, str(root))] = os.path.getsize(full)
    return found


def args_for(tmp_path, **extra):
    args = {'repo_id': 'o/m', 'dest': str(tmp_path / 'models' / 'm'), 'forbidden_paths': [],
            'free_space_margin_mb': 0, 'progress_file': str(tmp_path / 'models' / '.m.hf_model' / 'progress.json')}
    args.update(extra)
    return args


def test_bad_repo_id_is_refused(tmp_path):
    failed, res = run_module({'repo_id': 'bad repo', 'dest': str(tmp_path / 'm')})
    assert failed and 'repo id' in res['msg']
    assert not (tmp_path / 'm').exists()


def test_bad_revision_is_refused(tmp_path):
    failed, res = run_module({'repo_id': 'o/m', 'revision': 'A' * 40, 'dest': str(tmp_path / 'm')})
    assert failed and 'lower case' in res['msg']


def test_forbidden_destination_through_symlink_is_refused_before_any_work(tmp_path):
    forbidden = tmp_path / 'data'
    forbidden.mkdir()
    os.symlink(str(forbidden), str(tmp_path / 'srv'))
    failed, res = run_module({'repo_id': 'o/m', 'dest': str(tmp_path / 'srv' / 'm'), 'forbidden_paths': [str(forbidden)]})
    assert failed and 'under forbidden path' in res['msg'] and 'resolves to' in res['msg']
    assert os.listdir(str(forbidden)) == []


@pytest.mark.parametrize('dest', ['/srv', '/usr/local', '/'])
def test_system_directories_are_refused(dest):
    failed, res = run_module({'repo_id': 'o/m', 'dest': dest, 'forbidden_paths': []})
    assert failed and ('system directory' in res['msg'] or 'too close' in res['msg'])


def test_dest_that_is_a_file_is_refused(tmp_path):
    (tmp_path / 'm').write_text('x')
    failed, res = run_module({'repo_id': 'o/m', 'dest': str(tmp_path / 'm'), 'forbidden_paths': []})
    assert failed and 'not a directory' in res['msg']


def test_missing_client_is_reported(tmp_path, monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_hf(name, *args, **kwargs):
        if name.startswith('huggingface_hub'):
            raise ImportError('No module named huggingface_hub')
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, '__import__', no_hf)
    failed, res = run_module({'repo_id': 'o/m', 'dest': str(tmp_path / 'm'), 'forbidden_paths': []})
    assert failed and 'huggingface_hub' in res['msg'] and 'virtualenv' in res['msg']


def test_token_is_no_log(monkeypatch):
    spec = {}

    class Capture(Exception):
        pass

    def fake_init(self, argument_spec, **kwargs):
        spec.update(argument_spec)
        raise Capture()

    monkeypatch.setattr(basic.AnsibleModule, '__init__', fake_init)
    with pytest.raises(Capture):
        hf_snapshot.main()
    assert spec['token']['no_log'] is True


def test_token_goes_to_the_environment_only():
    env = hf_hub.hf_env({'timeout': 5, 'high_performance': True, 'token': 'hf_secret'})
    assert env['HF_TOKEN'] == 'hf_secret' and env['HF_XET_HIGH_PERFORMANCE'] == '1'
    assert 'HF_TOKEN' not in hf_hub.hf_env({'timeout': 5, 'high_performance': False, 'token': None})


# ---- state=present with the fake client ---------------------------------------------------------------------------

def test_fresh_download_then_idempotent_rerun(tmp_path, hub):
    failed, res = run_module(args_for(tmp_path, revision='main'))
    assert not failed and res['changed'] and res['revision'] == COMMIT and res['replaced'] == 'new'
    assert res['files'] == 4 and res['downloaded_files'] == 4 and res['verified_files'] == 4
    assert hub.downloads() == sorted(hub.files) + ['model.safetensors.index.json']  # + the index check
    for path, data in hub.files.items():
        assert (tmp_path / 'models' / 'm' / path).read_bytes() == data
    marker = json.loads((tmp_path / 'models' / 'm' / MARKER_NAME).read_text())
    assert marker['revision'] == COMMIT and sorted(marker['files']) == sorted(hub.files)
    progress = json.loads((tmp_path / 'models' / '.m.hf_model' / 'progress.json').read_text())
    assert progress['phase'] == 'done'

    hub.calls[:] = []
    failed, res = run_module(args_for(tmp_path, revision='main'))
    assert not failed and not res['changed'] and res['verified_bytes'] == 0 and res['downloaded_files'] == 0
    assert hub.downloads() == ['model.safetensors.index.json']

    # Pinned to the commit the marker records: no Hub call at all.
    hub.calls[:] = []
    failed, res = run_module(args_for(tmp_path, revision=COMMIT))
    assert not failed and not res['changed'] and res['source'] == 'marker' and hub.calls == []


def test_wrong_revision_fails_before_any_write(tmp_path, hub):
    (tmp_path / 'models').mkdir()
    failed, res = run_module(args_for(tmp_path, revision='no-such-branch'))
    assert failed and "revision 'no-such-branch' not found" in res['msg']
    assert tree(tmp_path) == {'models': None}


def test_insufficient_space_fails_before_any_write(tmp_path, hub, monkeypatch):
    (tmp_path / 'models').mkdir()
    monkeypatch.setattr(hf_sync, 'free_bytes', lambda path: 5000)
    failed, res = run_module(args_for(tmp_path, free_space_margin_mb=1))
    assert failed and 'not enough space' in res['msg'] and 'short by 1.0 MB' in res['msg']
    assert hub.downloads() == ['model.safetensors.index.json']
    assert tree(tmp_path) == {'models': None}


def test_index_naming_an_excluded_shard_fails_before_any_write(tmp_path, hub):
    (tmp_path / 'models').mkdir()
    failed, res = run_module(args_for(tmp_path, ignore_patterns=['model-00002-*']))
    assert failed and 'exclude: model-00002-of-00002.safetensors' in res['msg']
    assert tree(tmp_path) == {'models': None}


def test_check_mode_predicts_and_writes_nothing(tmp_path, hub):
    (tmp_path / 'models').mkdir()
    failed, res = run_module(args_for(tmp_path), check_mode=True, diff=True)
    assert not failed and res['changed'] and res['plan']['files_to_download'] == 4
    assert tree(tmp_path) == {'models': None}
    assert res['diff']['before'] == '\n' and 'config.json  9 bytes git_sha1:' in res['diff']['after']

    run_module(args_for(tmp_path))
    failed, res = run_module(args_for(tmp_path), check_mode=True)
    assert not failed and not res['changed']
    # A full verification in check mode hashes nothing and so cannot find damage: it predicts no change.
    failed, res = run_module(args_for(tmp_path, verify='full'), check_mode=True)
    assert not failed and not res['changed'] and res['verified_bytes'] == 0

    # A mode change alone is a change, in check mode as in a real run.
    os.chmod(str(tmp_path / 'models' / 'm' / 'config.json'), 0o600)
    failed, res = run_module(args_for(tmp_path), check_mode=True)
    assert res['changed'] and res['plan']['files_to_download'] == 0
    assert oct(os.stat(str(tmp_path / 'models' / 'm' / 'config.json')).st_mode & 0o777) == '0o600'
    failed, res = run_module(args_for(tmp_path))
    assert res['changed'] and oct(os.stat(str(tmp_path / 'models' / 'm' / 'config.json')).st_mode & 0o777) == '0o644'
    failed, res = run_module(args_for(tmp_path))
    assert not res['changed']


def test_diff_shows_the_damaged_file(tmp_path, hub):
    run_module(args_for(tmp_path))
    shard = tmp_path / 'models' / 'm' / 'model-00002-of-00002.safetensors'
    data = bytearray(shard.read_bytes())
    data[100] ^= 1
    shard.write_bytes(bytes(data))
    failed, res = run_module(args_for(tmp_path), check_mode=True, diff=True)
    assert res['changed'] and 'model-00002-of-00002.safetensors  present, modified since verification (mtime)' in \
        res['diff']['before']
    failed, res = run_module(args_for(tmp_path), diff=True)
    assert res['changed'] and res['repaired'] == ['model-00002-of-00002.safetensors']
    assert 'model-00002-of-00002.safetensors  present, sha256 ' in res['diff']['before']
    assert 'model-00002-of-00002.safetensors  %d bytes sha256:%s' % (
        len(data), hashlib.sha256(hub.files['model-00002-of-00002.safetensors']).hexdigest()) in res['diff']['after']
    assert shard.read_bytes() == hub.files['model-00002-of-00002.safetensors']


def test_absent_removes_a_marked_model_and_its_work_dir(tmp_path):
    model = tmp_path / 'models' / 'm'
    model.mkdir(parents=True)
    (model / MARKER_NAME).write_text('{}')
    (model / 'w.safetensors').write_bytes(b'x')
    work = tmp_path / 'models' / '.m.hf_model'
    (work / 'partial-abc').mkdir(parents=True)
    failed, res = run_module({'state': 'absent', 'dest': str(model), 'forbidden_paths': [], 'service_patterns': []})
    assert not failed and res['changed']
    assert not model.exists() and not work.exists()
    failed, res = run_module({'state': 'absent', 'dest': str(model), 'forbidden_paths': []})
    assert not failed and not res['changed']


def test_absent_refuses_a_directory_it_did_not_write(tmp_path):
    model = tmp_path / 'models' / 'm'
    model.mkdir(parents=True)
    (model / 'precious.bin').write_bytes(b'x')
    failed, res = run_module({'state': 'absent', 'dest': str(model), 'forbidden_paths': [], 'service_patterns': []})
    assert failed and 'force' in res['msg']
    assert (model / 'precious.bin').exists()
    failed, res = run_module({'state': 'absent', 'dest': str(model), 'forbidden_paths': [], 'service_patterns': [],
                              'force': True})
    assert not failed and not model.exists()


def test_absent_refuses_while_a_process_uses_the_model(tmp_path):
    model = tmp_path / 'models' / 'm'
    model.mkdir(parents=True)
    (model / MARKER_NAME).write_text('{}')
    holder = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], cwd=str(model))
    try:
        failed, res = run_module({'state': 'absent', 'dest': str(model), 'forbidden_paths': [], 'service_patterns': []})
        assert failed and 'PID %d' % holder.pid in res['msg'] and 'cwd' in res['msg']
        assert res['users']['processes'][0]['pid'] == holder.pid
        assert model.exists()
    finally:
        holder.kill()
        holder.wait()


def test_absent_check_mode_changes_nothing(tmp_path):
    model = tmp_path / 'models' / 'm'
    model.mkdir(parents=True)
    (model / MARKER_NAME).write_text('{}')
    failed, res = run_module({'state': 'absent', 'dest': str(model), 'forbidden_paths': [], 'service_patterns': []},
                             check_mode=True, diff=True)
    assert not failed and res['changed'] and model.exists()
    assert res['diff'] == {'before': 'path %s\nstate present\n' % model, 'after': 'path %s\nstate absent\n' % model}
