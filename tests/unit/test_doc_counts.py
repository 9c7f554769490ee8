# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Counts the docs state about the test fixtures are the fixtures' own counts (they went stale twice: 93 and 66 were
written while tests/fixtures/bad_inputs.yml grew to 111 cases)."""

from __future__ import annotations

import os
import re

import yaml

from collection_paths import ROOT

STATED = re.compile(r'(\d+) cases(?: in `tests/fixtures/bad_inputs\.yml`|\))|The (\d+) cases of \[tests/fixtures/bad_inputs')


def test_the_docs_state_the_number_of_bad_input_cases():
    with open(os.path.join(ROOT, 'tests', 'fixtures', 'bad_inputs.yml'), encoding='utf-8') as handle:
        cases = len(yaml.safe_load(handle)['cases'])
    stated = []
    for name in ('docs/overview.md', 'docs/deploy_playbook.md'):
        with open(os.path.join(ROOT, name), encoding='utf-8') as handle:
            for line in handle:
                if 'bad_inputs' in line:
                    stated += [(name, int(a or b)) for a, b in STATED.findall(line)]
    assert stated, 'the docs no longer state the count; drop this test or its pattern'
    assert [s for s in stated if s[1] != cases] == [], 'tests/fixtures/bad_inputs.yml has %d cases' % cases
