# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Downloading model files with ``huggingface_hub``: one thread per file, retries, bytes fed into the progress.

PRIVATE to the collection. Files land in a staging directory (``hf_hub_download(local_dir=...)``); a failed
transfer is retried with back-off, a permanent Hub answer (gated, not found) is not; a download whose hash does not
match the Hub listing is deleted and fetched again, up to ``download_retries`` times.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import threading
import time

from ansible_collections.llmops.inference.plugins.module_utils.hf.hub import HubError, hub_message
from ansible_collections.llmops.inference.plugins.module_utils.hf.layout import HF_LOCAL_CACHE_DIR, lstat_regular
from ansible_collections.llmops.inference.plugins.module_utils.hf.verify import hash_jobs


def make_bar_class(progress, counted):
    """A tqdm stand-in for hf_hub_download(tqdm_class=...): feeds written bytes into ``progress``.

    Mirrors the interface snapshot_download's own aggregating bar offers (update, update_transfer, postfix setters).
    ``counted`` (thread-local) remembers bytes of the current attempt so a retry can take them back.
    """

    class _Bar(object):
        def __init__(self, *args, **kwargs):
            self.total = kwargs.get('total')
            self.n = 0
            initial = kwargs.get('initial') or 0
            if initial:
                self.update(initial)

        def __enter__(self):
            return self

        def __exit__(self, *args):
            return False

        def update(self, n=1):
            n = int(n or 0)
            self.n += n
            counted.bytes = getattr(counted, 'bytes', 0) + n
            progress.add(n)

        def update_transfer(self, n=1):
            pass

        def set_postfix_str(self, *args, **kwargs):
            pass

        def set_transfer_postfix_str(self, *args, **kwargs):
            pass

        def set_description(self, *args, **kwargs):
            pass

        def set_description_str(self, *args, **kwargs):
            pass

        def refresh(self, *args, **kwargs):
            pass

        def reset(self, total=None):
            self.total = total

        def close(self):
            pass

    return _Bar


def download_files(hf, p, commit, paths, staging, remote, progress):
    """Download ``paths`` into ``staging`` with max_workers threads; returns {path: error} for failures."""
    from concurrent.futures import ThreadPoolExecutor

    counted = threading.local()
    bar_class = make_bar_class(progress, counted)
    errs = hf['errors']
    permanent = tuple(getattr(errs, name) for name in ('RepositoryNotFoundError', 'GatedRepoError',
                                                       'RevisionNotFoundError', 'RemoteEntryNotFoundError')
                      if hasattr(errs, name))
    local_meta = os.path.join(staging, HF_LOCAL_CACHE_DIR, 'huggingface', 'download')

    def one(path):
        target = os.path.join(staging, path)
        for attempt in range(p['download_retries'] + 1):
            # A leftover file or client metadata would make hf_hub_download return it unchecked.
            for leftover in (target, os.path.join(local_meta, path + '.metadata')):
                if os.path.lexists(leftover):
                    os.unlink(leftover)
            counted.bytes = 0
            try:
                hf['hf_hub_download'](p['repo_id'], path, revision=commit, local_dir=staging, endpoint=p['endpoint'],
                                      etag_timeout=p['timeout'], tqdm_class=bar_class)
                have = lstat_regular(target)
                if have is None or have[0] != remote[path]['size']:
                    raise IOError('downloaded %s has %s bytes, the Hub lists %d'
                                  % (path, have[0] if have else 'no', remote[path]['size']))
                progress.file_done()
                return path, None
            except Exception as exc:  # pylint: disable=broad-except
                progress.add(-counted.bytes)
                if isinstance(exc, permanent):
                    return path, hub_message(hf, exc, p['repo_id'], commit, p['endpoint'], 'download of %s failed' % path)
                if attempt == p['download_retries']:
                    return path, 'download of %s failed after %d attempts: %s: %s' % (
                        path, attempt + 1, type(exc).__name__, (str(exc).splitlines() or [''])[0])
                time.sleep(min(2 ** attempt, 10))
        return path, 'unreachable'

    failures = {}
    with ThreadPoolExecutor(max_workers=max(1, p['max_workers'])) as pool:
        # Largest first: the longest transfers start early and the tail of the run stays short.
        for path, error in pool.map(one, sorted(paths, key=lambda x: -remote[x]['size'])):
            if error:
                failures[path] = error
    return failures


def download_verified(load_hf, p, commit, to_fetch, staging, remote, progress, verifier):
    """Download ``to_fetch`` into ``staging`` and hash every download; a mismatch is fetched again (download_retries times).

    ``load_hf()`` returns the client (imported only when there is something to fetch); ``verifier`` is the run's
    hf_verify.Verifier. Returns (the paths downloaded and verified, seconds, bytes, files) over every attempt.
    Raises HubError for a failed download or a file that still mismatches; a bad file is never left behind.
    """
    downloaded = []
    download_seconds, downloaded_bytes, downloaded_files, attempts = 0.0, 0, 0, 0
    while to_fetch:
        attempts += 1
        if not os.path.isdir(staging):
            os.makedirs(staging)
        fetch_bytes = sum(remote[x]['size'] for x in to_fetch)
        progress.start('download', fetch_bytes, len(to_fetch))
        t0 = time.time()
        failures = download_files(load_hf(), p, commit, to_fetch, staging, remote, progress)
        download_seconds += time.time() - t0
        if failures:
            raise HubError('; '.join(failures[k] for k in sorted(failures)))
        downloaded_bytes += fetch_bytes
        downloaded_files += len(to_fetch)
        bad = verifier.check('verify', [(('staged', x), f, kind) for x, f, kind in hash_jobs(to_fetch, staging, remote)])
        bad = dict((key[1], problem) for key, problem in bad.items())
        for path in to_fetch:
            if path in bad:
                os.unlink(os.path.join(staging, path))  # never leave a bad file behind
            else:
                downloaded.append(path)
        if bad and attempts > p['download_retries']:
            raise HubError('hash mismatch after %d downloads: %s'
                           % (attempts, '; '.join('%s: %s' % (k, bad[k]) for k in sorted(bad))))
        to_fetch = sorted(bad)
    return downloaded, download_seconds, downloaded_bytes, downloaded_files
