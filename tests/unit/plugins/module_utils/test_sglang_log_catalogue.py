# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The log catalogue's own consistency: each text's regex matches the line its program prints, the classifier names
that line's signature (the table order holds), and every text says where its words come from. Whether the words are
really the pinned release's is tests/sglang/test_log_catalogue.py (make parser: the installed source)."""

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.sglang import log_catalogue as catalogue
from ansible_collections.llmops.inference.plugins.module_utils.sglang import release as sglang_release
from ansible_collections.llmops.inference.plugins.module_utils.sglang.logs import classify, milestones

TEXTS = catalogue.every_text()


def _id(item):
    return '%s:%s:%s' % (item[0], item[1], item[2]['example'][:30])


@pytest.mark.parametrize('kind,name,entry', TEXTS, ids=[_id(t) for t in TEXTS])
def test_each_text_matches_its_example_and_names_its_origin(kind, name, entry):
    assert catalogue.compile_text(entry).search(entry['example']), entry['example']
    assert set(catalogue.origins(entry)) <= set(catalogue.ORIGINS)
    assert entry['source']
    # Only SGLang's own texts are bound to releases, through a flag of the release table.
    if entry['when'] is not None:
        assert catalogue.origins(entry) == ('sglang',)
        assert entry['when'][0] in ('flag', 'wording') and entry['when'][1] in sglang_release.FLAG_KEYS
    # Every text but a structural one has words to look up.
    assert catalogue.verbatim(entry)


@pytest.mark.parametrize('name,entry', [(n, e) for k, n, e in TEXTS if k == 'failure'],
                         ids=[_id(t) for t in TEXTS if t[0] == 'failure'])
def test_each_failure_example_is_classified_as_its_signature(name, entry):
    found = classify(['[2026-12-01 10:00:00 TP0] Load weight begin. avail mem=94.19 GB', entry['example']])
    assert found['signature'] == name


@pytest.mark.parametrize('name,entry', [(n, e) for k, n, e in TEXTS if k == 'milestone'],
                         ids=[_id(t) for t in TEXTS if t[0] == 'milestone'])
def test_each_milestone_example_is_that_milestone(name, entry):
    assert name in [m for m, dummy in milestones([entry['example']])]
    assert classify([entry['example']]) is None


def test_the_names_of_the_startup_lines_are_named_groups():
    groups = dict((name, set(catalogue.compile_text(entry).groupindex)) for name, entry in catalogue.STARTUP_LINES)
    assert groups['kv_cache'] >= {'tokens', 'dtype', 'label', 'k', 'v', 'kv'}
    assert groups['scheduler'] >= {'tokens', 'running', 'context', 'avail'}
    assert groups['mamba_cache'] >= {'slots', 'conv', 'ssm'}


def test_pieces_build_the_regex_and_only_words_are_looked_up():
    entry = catalogue.text(['Error ', catalogue.Value('803'), ': ', catalogue.OneOf('abc def', 'x'),
                            catalogue.Raw(r'(?:\d+)?'), catalogue.INT('n')], 'cudart', example='Error 803: abc def7')
    match = catalogue.compile_text(entry).search('RuntimeError: Error 803: abc def7')
    assert match and match.group('n') == '7'
    assert not catalogue.compile_text(entry).search('Error 35: abc def7')
    # '803' is a value, ': ' and 'x' carry no word, the Raw regex is structure.
    assert catalogue.verbatim(entry) == ['Error ', 'abc def']


def test_the_parallel_milestones_are_the_release_tables_wordings():
    import os
    import yaml
    with open(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', sglang_release.TABLE_PATH)) as handle:
        table = yaml.safe_load(handle)
    for name in ('parallel_begin', 'parallel_end'):
        ours = [e for e in dict(catalogue.MILESTONES)[name] if e['when'] == ('wording', name)]
        assert set(e['pieces'][0] for e in ours) == set(
            r['flags'][name] for r in table['releases'].values() if 'flags' in r)
