# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""hf_files: input checks, plan, marker, hashing, safetensors, in-use detection, progress, directory exchange."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import struct
import subprocess
import sys
import time

import pytest

from ansible_collections.llmops.inference.plugins.module_utils import hf_files as hf


# ---- input checks ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('repo_id', ['Qwen/Qwen3.5-122B-A10B', 'gpt2', 'org_1/model.v2-final', 'a/b'])
def test_repo_id_valid(repo_id):
    assert hf.repo_id_error(repo_id) is None


@pytest.mark.parametrize('repo_id', ['', 'a/b/c', 'bad repo/x', 'org/-x', 'org/x.', 'org--a/b', 'a/b..c', 'a/b.git',
                                     '../etc', 'org/' + 'x' * 97, 'caf\u00e9/x', None])
def test_repo_id_invalid(repo_id):
    assert hf.repo_id_error(repo_id)


@pytest.mark.parametrize('rev', ['main', 'v1.0', 'refs/pr/12', 'a' * 40, 'release-2026_11'])
def test_revision_valid(rev):
    assert hf.revision_error(rev) is None


@pytest.mark.parametrize('rev', ['', 'a b', '../x', 'x/', '/x', 'a//b', 'A' * 40, 'x' * 256, 'main;rm'])
def test_revision_invalid(rev):
    assert hf.revision_error(rev)


def test_is_commit_sha():
    assert hf.is_commit_sha('0123456789abcdef0123456789abcdef01234567')
    assert not hf.is_commit_sha('main')
    assert not hf.is_commit_sha('0123456789abcdef0123456789abcdef0123456')


def test_filter_paths_matches_snapshot_download_rules():
    paths = ['config.json', 'model-00001-of-00002.safetensors', 'original/consolidated.pth', 'original/params.json',
             '.gitattributes', 'tokenizer.json']
    assert hf.filter_paths(paths) == paths
    assert hf.filter_paths(paths, ['*.safetensors', '*.json']) == [
        'config.json', 'model-00001-of-00002.safetensors', 'original/params.json', 'tokenizer.json']
    # A trailing slash means the whole folder; fnmatch '*' crosses '/'.
    assert hf.filter_paths(paths, ignore_patterns=['original/']) == [
        'config.json', 'model-00001-of-00002.safetensors', '.gitattributes', 'tokenizer.json']
    assert hf.filter_paths(paths, ['*'], ['.*', '*.pth']) == [
        'config.json', 'model-00001-of-00002.safetensors', 'original/params.json', 'tokenizer.json']
    # Case-sensitive like fnmatchcase.
    assert hf.filter_paths(['A.JSON'], ['*.json']) == []


@pytest.mark.parametrize('path', ['/etc/passwd', '../x', 'a/../../x', 'a//b', './x', '.llmops-hf-model.json', '.cache/x', ''])
def test_repo_path_error(path):
    assert hf.repo_path_error(path)


def test_repo_path_ok():
    assert hf.repo_path_error('original/params.json') is None
    assert hf.repo_path_error('.gitattributes') is None


# ---- forbidden paths, unsafe destinations, space -------------------------------------------------------------------

def test_forbidden_plain_and_prefix(tmp_path):
    forbidden = tmp_path / 'data'
    forbidden.mkdir()
    assert 'under forbidden path' in hf.forbidden_reason(str(forbidden / 'models' / 'x'), [str(forbidden)])
    assert 'under forbidden path' in hf.forbidden_reason(str(forbidden), [str(forbidden)])
    # A sibling that only shares the prefix is fine.
    assert hf.forbidden_reason(str(tmp_path / 'data2' / 'x'), [str(forbidden)]) is None
    assert hf.forbidden_reason(str(tmp_path / 'srv' / 'x'), [str(forbidden)]) is None
    assert hf.forbidden_reason(str(tmp_path / 'srv' / 'x'), []) is None


def test_forbidden_through_symlink(tmp_path):
    forbidden = tmp_path / 'data'
    (forbidden / 'models').mkdir(parents=True)
    (tmp_path / 'srv').mkdir()
    os.symlink(str(forbidden / 'models'), str(tmp_path / 'srv' / 'models'))
    reason = hf.forbidden_reason(str(tmp_path / 'srv' / 'models' / 'qwen'), [str(forbidden)])
    assert 'under forbidden path' in reason and 'resolves to' in reason


def test_forbidden_path_that_is_itself_a_symlink(tmp_path):
    real = tmp_path / 'disk2'
    real.mkdir()
    os.symlink(str(real), str(tmp_path / 'data'))
    # The destination names the real directory, the forbidden list names the link.
    assert hf.forbidden_reason(str(real / 'models' / 'x'), [str(tmp_path / 'data')])


def test_forbidden_mount_point_by_device(monkeypatch, tmp_path):
    """A forbidden mount point forbids other views of the same file system (bind mounts): same st_dev."""
    forbidden = tmp_path / 'data'
    other = tmp_path / 'srv'
    forbidden.mkdir()
    other.mkdir()
    real_ismount = os.path.ismount
    monkeypatch.setattr(hf.os.path, 'ismount', lambda p: p == str(forbidden) or real_ismount(p))
    reason = hf.forbidden_reason(str(other / 'x'), [str(forbidden)])
    assert 'file system mounted at forbidden path' in reason
    # A forbidden directory that is not a mount point does not forbid its whole file system.
    monkeypatch.setattr(hf.os.path, 'ismount', real_ismount)
    assert hf.forbidden_reason(str(other / 'x'), [str(forbidden)]) is None


@pytest.mark.parametrize('dest', ['/', '/srv', '/srv/', '/usr/local', '/data', 'relative/path', '/x'])
def test_unsafe_dest(dest):
    assert hf.unsafe_dest_reason(dest)


def test_safe_dest():
    assert hf.unsafe_dest_reason('/srv/models/Qwen/Qwen3.5-122B-A10B') is None
    assert hf.unsafe_dest_reason('/opt/models') is None


def test_existing_ancestor_and_mount_point(tmp_path):
    assert hf.existing_ancestor(str(tmp_path / 'a' / 'b' / 'c')) == str(tmp_path)
    assert os.path.ismount(hf.mount_point(str(tmp_path / 'a' / 'b')))


def test_space_check():
    assert hf.space_check(100, 1000, 10) is None
    assert hf.space_check(100, 105, 10) == 5
    assert hf.space_check(0, 0, 10) is None  # nothing to download needs no space
    assert hf.free_bytes('/') > 0


def test_work_paths():
    paths = hf.work_paths('/srv/models/Qwen/Qwen3', 'a' * 40)
    assert paths['work'] == '/srv/models/Qwen/.Qwen3.hf_model'
    assert paths['staging'] == '/srv/models/Qwen/.Qwen3.hf_model/partial-' + 'a' * 40
    assert os.path.dirname(paths['lock']) == paths['work']


# ---- plan and marker ----------------------------------------------------------------------------------------------

SHA_A = 'a' * 64
SHA_B = 'b' * 64


def remote():
    return {
        'config.json': hf.remote_entry(100, None, 'c' * 40),
        'model-1.safetensors': hf.remote_entry(1000, SHA_A, 'p' * 40),
        'model-2.safetensors': hf.remote_entry(2000, SHA_B, 'q' * 40),
    }


def marker_for(rem, mtimes):
    return hf.build_marker('o/m', 'f' * 40, 'main', None, None, None, rem,
                           dict((p, (rem[p]['size'], mtimes[p])) for p in rem))


def test_remote_entry_prefers_sha256():
    assert hf.remote_entry(5, 'ABC', 'def') == {'size': 5, 'sha256': 'abc'}
    assert hf.remote_entry(5, None, 'DEF') == {'size': 5, 'git_sha1': 'def'}
    assert hf.expected_digest({'size': 1}) == (None, None)


def test_plan_fresh_download():
    rem = remote()
    plan = hf.make_plan(rem, None, {}, {})
    assert plan['download'] == sorted(rem)
    assert plan['ok'] == [] and plan['verify'] == []
    assert plan['reasons']['config.json'] == 'missing'
    summary = hf.plan_summary(plan, rem)
    assert summary['bytes_to_download'] == 3100 and summary['files_to_download'] == 3


def test_plan_rerun_trusts_marker_size_and_mtime():
    rem = remote()
    disk = dict((p, (rem[p]['size'], 7)) for p in rem)
    marker = marker_for(rem, dict((p, 7) for p in rem))
    plan = hf.make_plan(rem, marker, disk, {})
    assert plan['ok'] == sorted(rem)
    assert plan['verify'] == [] and plan['download'] == []
    # verify=full re-hashes everything.
    assert hf.make_plan(rem, marker, disk, {}, 'full')['verify'] == sorted(rem)


def test_plan_mtime_changed_means_hash_and_size_changed_means_download():
    rem = remote()
    marker = marker_for(rem, dict((p, 7) for p in rem))
    disk = dict((p, (rem[p]['size'], 7)) for p in rem)
    disk['model-1.safetensors'] = (1000, 8)          # touched (maybe a flipped byte)
    disk['model-2.safetensors'] = (1999, 7)          # truncated
    plan = hf.make_plan(rem, marker, disk, {})
    assert plan['verify'] == ['model-1.safetensors']
    assert plan['download'] == ['model-2.safetensors']
    assert plan['reasons']['model-1.safetensors'].startswith('modified since verification')
    assert plan['reasons']['model-2.safetensors'] == 'size 1999, expected 2000'


def test_plan_without_marker_hashes_what_has_the_right_size():
    rem = remote()
    disk = dict((p, (rem[p]['size'], 7)) for p in rem)
    plan = hf.make_plan(rem, None, disk, {})
    assert plan['verify'] == sorted(rem)
    assert plan['reasons']['config.json'] == 'not recorded as verified'


def test_plan_new_revision_downloads_changed_content_without_reading_it():
    rem = remote()
    marker = marker_for(rem, dict((p, 7) for p in rem))
    disk = dict((p, (rem[p]['size'], 7)) for p in rem)
    new = dict(rem)
    new['model-2.safetensors'] = hf.remote_entry(2000, 'c' * 64)
    plan = hf.make_plan(new, marker, disk, {})
    assert plan['download'] == ['model-2.safetensors']
    assert plan['reasons']['model-2.safetensors'] == 'content changed at the Hub'
    assert plan['ok'] == ['config.json', 'model-1.safetensors']


def test_plan_staged_files_from_an_interrupted_run():
    rem = remote()
    staged = {'model-1.safetensors': (1000, 1), 'model-2.safetensors': (5, 1)}
    plan = hf.make_plan(rem, None, {}, staged)
    assert plan['verify_staged'] == ['model-1.safetensors']
    assert plan['download'] == ['config.json', 'model-2.safetensors']


def test_plan_stale_and_extra_files():
    rem = remote()
    old = dict(rem)
    old['model-3.safetensors'] = hf.remote_entry(10, 'd' * 64)
    marker = marker_for(old, dict((p, 7) for p in old))
    disk = dict((p, (old[p]['size'], 7)) for p in old)
    disk['my-notes.txt'] = (3, 1)
    plan = hf.make_plan(rem, marker, disk, {})
    assert plan['remove'] == ['model-3.safetensors']
    assert plan['extra'] == ['my-notes.txt']


def test_marker_roundtrip_and_equivalence():
    rem = remote()
    marker = marker_for(rem, dict((p, 7) for p in rem))
    text = hf.marker_json(marker)
    parsed = hf.parse_marker(text)
    assert parsed == json.loads(text)
    assert parsed['files']['model-1.safetensors'] == {'size': 1000, 'sha256': SHA_A, 'mtime_ns': 7}
    assert hf.remote_from_marker(parsed) == rem
    later = dict(parsed, verified_at='2030-01-01T00:00:00Z', requested_revision='f' * 40, endpoint='http://mirror')
    assert hf.marker_equivalent(parsed, later)
    moved = json.loads(text)
    moved['files']['config.json']['mtime_ns'] = 8
    assert not hf.marker_equivalent(parsed, moved)
    assert not hf.marker_equivalent(None, parsed)


@pytest.mark.parametrize('text', ['', 'not json', '[]', '{"format": 99, "files": {}}', '{"format": 1}'])
def test_parse_marker_rejects_garbage(text):
    assert hf.parse_marker(text) is None


def test_marker_covers():
    rem = remote()
    marker = marker_for(rem, dict((p, 7) for p in rem))
    assert hf.marker_covers(marker, 'o/m', 'f' * 40, None, None)
    assert hf.marker_covers(marker, 'o/m', 'f' * 40, [], [])
    assert not hf.marker_covers(marker, 'o/m', 'e' * 40, None, None)
    assert not hf.marker_covers(marker, 'o/m', 'f' * 40, ['*.json'], None)
    assert not hf.marker_covers(None, 'o/m', 'f' * 40, None, None)


def test_missing_lfs_hashes():
    rem = {'a.safetensors': {'size': 1}, 'b.safetensors': {'size': 1, 'sha256': SHA_A}}
    assert hf.missing_lfs_hashes(rem, {'a.safetensors', 'b.safetensors'}) == ['a.safetensors']


def test_scan_tree_skips_marker_cache_and_symlinks(tmp_path):
    (tmp_path / 'sub').mkdir()
    (tmp_path / 'sub' / 'w.bin').write_bytes(b'12345')
    (tmp_path / 'config.json').write_text('{}')
    (tmp_path / hf.MARKER_NAME).write_text('{}')
    (tmp_path / '.cache' / 'huggingface').mkdir(parents=True)
    (tmp_path / '.cache' / 'huggingface' / 'x.incomplete').write_text('x')
    os.symlink('/etc/hostname', str(tmp_path / 'link.json'))
    found = hf.scan_tree(str(tmp_path))
    assert sorted(found) == ['config.json', 'sub/w.bin']
    assert found['sub/w.bin'][0] == 5
    assert hf.scan_tree(str(tmp_path / 'nope')) == {}


# ---- hashing -------------------------------------------------------------------------------------------------------

def test_hash_file_sha256_and_git_sha1(tmp_path):
    data = os.urandom(3 * 1024 * 1024 + 17)
    path = tmp_path / 'f'
    path.write_bytes(data)
    seen = []
    assert hf.hash_file(str(path), 'sha256', seen.append, chunk=1024 * 1024) == hashlib.sha256(data).hexdigest()
    assert sum(seen) == len(data) and len(seen) == 4
    git = hashlib.sha1(b'blob %d\0' % len(data) + data).hexdigest()
    assert hf.hash_file(str(path), 'git_sha1') == git


def test_git_sha1_matches_git(tmp_path):
    path = tmp_path / 'config.json'
    path.write_text('{"a": 1}\n')
    out = subprocess.run(['git', 'hash-object', str(path)], check=True, stdout=subprocess.PIPE,
                         universal_newlines=True).stdout.strip()
    assert hf.hash_file(str(path), 'git_sha1') == out


def test_hash_files_parallel(tmp_path):
    jobs, want = [], {}
    for i in range(5):
        data = os.urandom(100000 * (i + 1))
        (tmp_path / str(i)).write_bytes(data)
        jobs.append((str(i), str(tmp_path / str(i)), 'sha256'))
        want[str(i)] = hashlib.sha256(data).hexdigest()
    jobs.append(('gone', str(tmp_path / 'gone'), 'sha256'))
    results, errors, seconds, nbytes = hf.hash_files(jobs, workers=3)
    assert dict((k, v) for k, v in results.items() if k != 'gone') == want
    assert results['gone'] is None and 'gone' in errors
    assert nbytes == sum(100000 * (i + 1) for i in range(5)) and seconds >= 0
    assert hf.hash_files([], 2) == ({}, {}, 0.0, 0)


def test_hash_files_uses_threads_in_parallel(tmp_path, monkeypatch):
    """Files are hashed concurrently (one thread per file): two slow files overlap in time."""
    for name in 'ab':
        (tmp_path / name).write_bytes(b'x' * 10)
    spans = {}

    def slow(path, kind='sha256', progress=None, chunk=0):
        start = time.time()
        time.sleep(0.3)
        spans[path] = (start, time.time())
        return 'h'

    monkeypatch.setattr(hf, 'hash_file', slow)
    hf.hash_files([('a', str(tmp_path / 'a'), 'sha256'), ('b', str(tmp_path / 'b'), 'sha256')], workers=2)
    first, second = sorted(spans.values())
    assert first[0] < second[1] and second[0] < first[1]


# ---- safetensors ---------------------------------------------------------------------------------------------------

def write_safetensors(path, tensors, pad_to=None):
    header = {'__metadata__': {'format': 'pt'}}
    offset = 0
    for name, size in tensors:
        header[name] = {'dtype': 'U8', 'shape': [size], 'data_offsets': [offset, offset + size]}
        offset += size
    blob = json.dumps(header).encode()
    blob += b' ' * (-len(blob) % 8)
    data = struct.pack('<Q', len(blob)) + blob + b'\0' * offset
    if pad_to is not None:
        data = data[:pad_to]
    path.write_bytes(data)


def test_safetensors_header(tmp_path):
    good = tmp_path / 'good.safetensors'
    write_safetensors(good, [('a', 100), ('b', 28)])
    assert hf.safetensors_header_error(str(good)) is None
    short = tmp_path / 'short.safetensors'
    write_safetensors(short, [('a', 100)], pad_to=200)
    assert 'ends at byte' in hf.safetensors_header_error(str(short))
    tiny = tmp_path / 'tiny.safetensors'
    tiny.write_bytes(b'\x01\x02')
    assert 'shorter' in hf.safetensors_header_error(str(tiny))
    huge = tmp_path / 'huge.safetensors'
    huge.write_bytes(struct.pack('<Q', 10 ** 12) + b'{}')
    assert 'does not fit' in hf.safetensors_header_error(str(huge))
    bad_json = tmp_path / 'badjson.safetensors'
    bad_json.write_bytes(struct.pack('<Q', 4) + b'{{{{')
    assert 'unreadable header' in hf.safetensors_header_error(str(bad_json))


def test_index_shards_and_missing():
    index = json.dumps({'metadata': {'total_size': 3}, 'weight_map': {
        'a': 'model-00001-of-00002.safetensors', 'b': 'model-00002-of-00002.safetensors',
        'c': 'model-00001-of-00002.safetensors'}})
    assert hf.index_shards(index) == ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']
    assert hf.index_missing_shards('model.safetensors.index.json', index, {'model-00001-of-00002.safetensors'}) == [
        'model-00002-of-00002.safetensors']
    # An index in a subfolder names shards relative to itself.
    assert hf.index_missing_shards('sub/model.safetensors.index.json', index, {
        'sub/model-00001-of-00002.safetensors', 'sub/model-00002-of-00002.safetensors'}) == []
    with pytest.raises(ValueError):
        hf.index_shards('{"metadata": {}}')
    with pytest.raises(ValueError):
        hf.index_shards('not json')


# ---- who uses a directory ------------------------------------------------------------------------------------------

def test_mentions():
    roots = ['/srv/models/q']
    assert hf._mentions('--model-path=/srv/models/q', roots)
    assert hf._mentions('/srv/models/q/config.json', roots)
    assert hf._mentions('/srv/models/q', roots)
    assert not hf._mentions('/srv/models/qwen', roots)
    assert not hf._mentions('/x/srv/models/q', roots)


def test_find_path_users_real_processes(tmp_path):
    model = tmp_path / 'model'
    model.mkdir()
    shard = model / 'w.safetensors'
    shard.write_bytes(b'x' * 4096)
    holder = subprocess.Popen([sys.executable, '-c', 'import sys, time; f = open(sys.argv[1], "rb"); '
                               'print("ready", flush=True); time.sleep(60)', str(shard)],
                              stdout=subprocess.PIPE, universal_newlines=True)
    cwd_user = subprocess.Popen(['sleep', '60'], cwd=str(model))
    try:
        assert holder.stdout.readline().strip() == 'ready'
        users = dict((u['pid'], u) for u in hf.find_path_users(str(model)))
        assert holder.pid in users and cwd_user.pid in users
        assert 'open file' in users[holder.pid]['reasons'] and 'cmdline' in users[holder.pid]['reasons']
        assert users[cwd_user.pid]['reasons'] == ['cwd'] and users[cwd_user.pid]['comm'] == 'sleep'
        assert hf.find_path_users(str(tmp_path / 'other')) == []
        text = hf.describe_users(list(users.values()), [])
        assert 'PID %d' % holder.pid in text
    finally:
        holder.kill()
        cwd_user.kill()
        holder.wait()
        cwd_user.wait()


def test_systemctl_show_parsing_and_units_using():
    text = ('Id=sglang-qwen.service\nActiveState=active\nMainPID=4242\n'
            'ExecStart={ path=/opt/sglang/bin/python ; argv[]=/opt/sglang/bin/python -m sglang.launch_server '
            '--model-path /srv/models/Qwen/Q ; ignore_errors=no }\nWorkingDirectory=/\nEnvironment=\n\n'
            'Id=sglang-other.service\nActiveState=active\nMainPID=5\nExecStart=/bin/x --model-path /srv/models/Qwen/Q2\n\n'
            'Id=sglang-dead.service\nActiveState=inactive\nMainPID=0\nExecStart=/bin/x /srv/models/Qwen/Q\n')
    units = hf.parse_systemctl_show(text)
    assert [u['Id'] for u in units] == ['sglang-qwen.service', 'sglang-other.service', 'sglang-dead.service']
    found = hf.units_using(units, '/srv/models/Qwen/Q')
    assert found == [{'unit': 'sglang-qwen.service', 'property': 'ExecStart', 'main_pid': 4242}]
    assert 'unit sglang-qwen.service' in hf.describe_users([], found)


def test_active_units_using_with_a_fake_systemctl(monkeypatch):
    calls = []

    def run(argv):
        calls.append(argv)
        if argv[1] == 'list-units':
            return 0, 'sglang-qwen.service loaded active running SGLang\n', ''
        return 0, 'Id=sglang-qwen.service\nActiveState=active\nMainPID=7\nExecStart=/x /srv/m\n', ''

    monkeypatch.setattr(hf.os.path, 'isdir', lambda p: p == '/run/systemd/system')
    assert hf.active_units_using(run, '/bin/systemctl', '/srv/m', ['sglang-*.service'])[0]['unit'] == 'sglang-qwen.service'
    assert calls[0][-1] == 'sglang-*.service' and calls[1][-1] == 'sglang-qwen.service'
    assert hf.active_units_using(run, None, '/srv/m', ['x']) == []


def test_unit_of_cgroup():
    assert hf._unit_of('0::/system.slice/sglang-qwen.service\n') == 'sglang-qwen.service'
    assert hf._unit_of('12:pids:/user.slice/user-0.slice/session-3.scope\n') == 'session-3.scope'
    assert hf._unit_of('0::/\n') is None


# ---- progress -------------------------------------------------------------------------------------------------------

class FakeClock(object):
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_progress_rate_eta_and_file(tmp_path):
    clock = FakeClock()
    path = tmp_path / 'progress.json'
    progress = hf.Progress(path=str(path), label='o/m@abc', window=30, clock=clock)
    progress.start('download', bytes_total=1000 * 1000 * 1000, files_total=4)
    for _second in range(10):
        clock.now += 1
        progress.add(10 * 1000 * 1000)
        progress.snapshot()
    progress.file_done()
    progress.write()
    data = json.loads(path.read_text())
    assert data['bytes_done'] == 100 * 1000 * 1000 and data['files_done'] == 1
    assert data['rate_bps'] == pytest.approx(10 * 1000 * 1000)
    assert data['eta_s'] == pytest.approx(90)
    line = hf.progress_line(data, now=clock.now)
    assert line == 'download o/m@abc: 100.0 MB / 1.0 GB (10.0%), 10.0 MB/s, ETA 1m30s, 1/4 files'
    # A stalled job says so.
    assert 'no report for 2m00s' in hf.progress_line(data, now=clock.now + 120)


def test_progress_rate_uses_a_sliding_window():
    clock = FakeClock()
    progress = hf.Progress(window=10, clock=clock)
    progress.start('download', 10 ** 9)
    for _second in range(20):  # fast for 20 s
        clock.now += 1
        progress.add(50 * 10 ** 6)
        progress.snapshot()
    for _second in range(20):  # then slow
        clock.now += 1
        progress.add(1 * 10 ** 6)
        progress.snapshot()
    assert progress.snapshot()['rate_bps'] == pytest.approx(1 * 10 ** 6, rel=0.2)


def test_progress_line_edge_cases():
    assert hf.progress_line(None) == 'waiting for the first progress report'
    assert hf.progress_line({'phase': 'plan', 'label': 'o/m', 'message': 'resolving main', 'updated': 5}, now=5) == \
        'plan o/m - resolving main'


def test_fmt():
    assert hf.fmt_bytes(999) == '999 B'
    assert hf.fmt_bytes(234017456128) == '234.0 GB'
    assert hf.fmt_duration(59) == '59s'
    assert hf.fmt_duration(3601) == '1h00m'
    assert hf.fmt_duration(None) == '?'


# ---- putting a tree in place --------------------------------------------------------------------------------------

def test_replace_dir_exchange(tmp_path):
    dest, new, old = tmp_path / 'model', tmp_path / 'new', tmp_path / 'old'
    dest.mkdir()
    (dest / 'v').write_text('1')
    new.mkdir()
    (new / 'v').write_text('2')
    how = hf.replace_dir(str(new), str(dest), str(old))
    assert how in ('exchange', 'rename')
    assert (dest / 'v').read_text() == '2' and (old / 'v').read_text() == '1' and not new.exists()
    with pytest.raises(OSError):
        hf.replace_dir(str(tmp_path / 'x'), str(dest), str(old))  # leftover old dir


def test_replace_dir_new(tmp_path):
    new = tmp_path / 'new'
    new.mkdir()
    assert hf.replace_dir(str(new), str(tmp_path / 'model'), str(tmp_path / 'old')) == 'new'
    assert (tmp_path / 'model').is_dir()


def test_exchange_dirs_is_atomic_when_supported(tmp_path):
    a, b = tmp_path / 'a', tmp_path / 'b'
    a.mkdir()
    b.mkdir()
    (a / 'x').write_text('a')
    (b / 'x').write_text('b')
    if hf.exchange_dirs(str(a), str(b)):
        assert (a / 'x').read_text() == 'b' and (b / 'x').read_text() == 'a'
    else:  # pragma: no cover - kernels/file systems without RENAME_EXCHANGE
        pytest.skip('renameat2(RENAME_EXCHANGE) not supported here')
