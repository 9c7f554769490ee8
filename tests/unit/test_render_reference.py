# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""tests/tools/render_reference.py, the byte-identity check of make plan (issue #28): its pure parts, in memory.

The whole check (every inventory rendered and compared with tests/fixtures/render_reference.json) is `make
render-check`, run by make test; here the comparison is shown to catch a changed, a lost and a new file, and the
normalisation to keep the reference free of this machine's paths.
"""

from __future__ import annotations

import json
import os
import sys

from collection_paths import ROOT

sys.path.insert(0, os.path.join(ROOT, 'tests', 'tools'))

import render_reference  # noqa: E402


def test_a_changed_a_lost_and_a_new_file_are_each_named():
    old = render_reference.digest({'a/unit.service': 'ExecStart=x\n', 'b/plan.md': 'KV 1\n', 'c.json': '{}\n'})
    new = render_reference.digest({'a/unit.service': 'ExecStart=y\n', 'c.json': '{}\n', 'd.md': 'new\n'})
    assert render_reference.compare_digests(old, new) == (['a/unit.service'], ['b/plan.md'], ['d.md'])
    assert render_reference.compare_digests(old, old) == ([], [], [])


def test_rendered_files_are_normalised_and_the_log_left_out(tmp_path):
    out = tmp_path / 'example'
    (out / 'host' / 'files').mkdir(parents=True)
    (out / 'host' / 'files' / 'x.service').write_text('WorkingDirectory=%s/srv\nat 2026-12-04T10:11:12Z\n' % ROOT)
    (out / 'plan.log').write_text('the playbook log\n')
    replacements = render_reference.plan_gate.volatile_replacements(root=ROOT, out_dir=str(out), hostnames=[])
    files = render_reference.rendered_files(str(out), replacements)
    assert files == {'host/files/x.service': 'WorkingDirectory=<checkout>/srv\nat <time>\n'}


def test_the_reference_covers_every_inventory_and_says_why():
    with open(os.path.join(ROOT, render_reference.REFERENCE), encoding='utf-8') as handle:
        reference = json.load(handle)
    assert sorted(reference['inventories']) == render_reference.inventories(ROOT)
    assert reference['reason'].strip() and reference['commit']
    for name, files in reference['inventories'].items():
        assert files, '%s rendered no file in the reference' % name
        assert any(rel.endswith('.service') for rel in files), name


def test_the_table_lines_up():
    text = render_reference.table([('inventory', 'files'), ('example', 13), ('replicas', 20)])
    assert text.splitlines() == ['inventory  files', '---------  -----', 'example    13', 'replicas   20']
