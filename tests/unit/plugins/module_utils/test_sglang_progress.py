# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The start-up progress parser on real public SGLang logs (tests/fixtures/sglang_logs, sglang_progress): every
milestone a log holds is found, in start-up order, with the time of its logger stamp and the shard percentages.
What a log holds is read from the log text itself (its own words and its own elapsed= figures), not from the parser."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import json
import os
import re

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.sglang import progress as sglang_progress

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures')
# A JSON string, as the notebook it comes from stores it: the carriage returns stay bytes of the data, not line ends.
SHARD_LOG = os.path.join(FIXTURES, 'sglang_progress', 'qwen2.5-7b-instruct-tp1-docs-tool-parser.json')


def shard_log_text():
    with open(SHARD_LOG) as handle:
        return json.load(handle)['text']


def blocks(path):
    """Each fenced block under the file's "## Log line(s)" heading (none: a file that quotes a table)."""
    with open(path) as handle:
        text = handle.read()
    if '\n## Log line' not in text:
        return []
    section = text[text.index('\n## Log line'):]
    return re.findall(r'^```[a-z]*\n(.*?)^```', section, re.S | re.M)


LOG_BLOCKS = [(os.path.relpath(path, FIXTURES), index, block)
              for path in sorted(glob.glob(os.path.join(FIXTURES, 'sglang_logs', '*', '*.md')))
              for index, block in enumerate(blocks(path))]
# What the log's own words say it holds (plain substring tests on the text).
HOLDS = (
    ('parallel_begin', lambda text: 'Init parallel begin.' in text or 'Init torch distributed begin.' in text),
    ('load_weight_begin', lambda text: 'Load weight begin.' in text),
    ('load_weight_end', lambda text: 'Load weight end.' in text),
    ('kv_cache', lambda text: 'KV Cache is allocated' in text),
    ('cuda_graph_begin', lambda text: re.search(r'Capture [\w ]*(?:CUDA|cuda) graph begin\.', text) is not None),
    ('cuda_graph_end', lambda text: re.search(r'Capture [\w ]*(?:CUDA|cuda) graph end\.', text) is not None),
    ('ready', lambda text: 'The server is fired up and ready to roll!' in text),
)
ORDER = [name for name, dummy, dummy2 in sglang_progress.PATTERNS]


@pytest.mark.parametrize('name,index,block', LOG_BLOCKS, ids=['%s#%d' % (n, i) for n, i, b in LOG_BLOCKS])
def test_every_milestone_a_real_log_holds_is_found_in_start_up_order(name, index, block):
    found = sglang_progress.parse(block.splitlines())
    names = [item['name'] for item in found]
    assert set(names) == set(milestone for milestone, holds in HOLDS if holds(block))
    # A start goes through the milestones in the catalogue's order: the first of each comes after the first of the
    # one before it (a speculative start goes round again for its draft worker).
    firsts = [names.index(milestone) for milestone in ORDER if milestone in names]
    assert firsts == sorted(firsts)


def test_the_real_logs_cover_every_milestone_but_ready():
    # The fixtures are memory-line excerpts (their README): without this the test above could pass on nothing.
    seen = set(item['name'] for dummy, dummy2, block in LOG_BLOCKS for item in sglang_progress.parse(block.splitlines()))
    assert seen >= {'parallel_begin', 'load_weight_begin', 'load_weight_end', 'kv_cache', 'cuda_graph_begin',
                    'cuda_graph_end'}


@pytest.mark.parametrize('name,index,block', LOG_BLOCKS, ids=['%s#%d' % (n, i) for n, i, b in LOG_BLOCKS])
def test_the_load_milestones_are_as_far_apart_as_sglang_timed_the_load(name, index, block):
    found = sglang_progress.parse(block.splitlines())
    for begin, end in zip(found, found[1:]):
        if begin['name'] != 'load_weight_begin' or end['name'] != 'load_weight_end' or None in (begin['at'], end['at']):
            continue
        # The end line's own elapsed= (SGLang's perf counter); the stamps have whole seconds.
        line = [text for text in block.splitlines()
                if 'Load weight end.' in text and sglang_progress.log_time(text) == end['at']][0]
        elapsed = re.search(r'elapsed=([\d.]+) s', line)
        if elapsed:
            assert abs((end['at'] - begin['at']) - float(elapsed.group(1))) < 1.0


def test_the_shard_bar_of_a_real_start_gives_each_percentage_once():
    # tqdm's carriage returns kept, as SGLang wrote them (the file's README has the source).
    text = shard_log_text()
    bars = re.findall(r'checkpoint shards: +(\d+)% Completed \| (\d+)/(\d+)', text)
    found = [item for item in sglang_progress.parse(text.split('\n')) if item['name'] == 'weight_shards']
    # Each distinct update once (tqdm shows the last one again when it closes).
    distinct = [b for i, b in enumerate(bars) if i == 0 or b != bars[i - 1]]
    assert [(str(i['percent']), str(i['done']), str(i['total'])) for i in found] == distinct
    assert found[-1]['percent'] == 100 and found[-1]['text'] == 'weights 100%% (%s/%s shards)' % bars[-1][1:]


def test_a_burst_of_shard_updates_is_reported_as_its_last_one():
    text = shard_log_text()
    tracker = sglang_progress.Tracker()
    # journald stores the whole bar as one entry (one time): one progress line, the last percentage.
    items = tracker.add(text[text.index('\rLoading'):text.index('\n', text.index('\rLoading'))], at=1000.0)
    assert len(items) > 1
    lines = sglang_progress.report_lines(items, 990.0, expected=412.0)
    assert lines == ['weights 100% (4/4 shards) - 10s since start, expected ~6m52s (last start)']
    # Updates that arrived at different times are each a line.
    spread = [dict(item, at=1000.0 + n) for n, item in enumerate(items)]
    assert len(sglang_progress.report_lines(spread, 990.0)) == len(items)


def test_a_repeat_by_the_other_tp_ranks_is_one_milestone():
    lines = ['[2026-12-01 10:00:07 TP%d] Load weight begin. avail mem=94.19 GB' % rank for rank in (2, 0, 1, 3)]
    lines += ['[2026-12-01 10:01:42 TP%d] Load weight end. elapsed=95.31 s, type=Qwen3_5MoeForConditionalGeneration, '
              'avail mem=37.05 GB, mem usage=57.14 GB.' % rank for rank in (1, 0, 3, 2)]
    lines += ['[2026-12-01 10:01:42 TP0] Load weight begin. avail mem=37.05 GB']
    found = sglang_progress.parse(lines)
    assert [item['name'] for item in found] == ['load_weight_begin', 'load_weight_end', 'load_weight_begin']
    assert found[1]['text'] == 'weights loaded (Qwen3_5MoeForConditionalGeneration, 57.14 GB per GPU)'
    assert found[1]['at'] - found[0]['at'] == 95


def test_progress_lines_name_the_time_since_start_and_the_last_start():
    kv = sglang_progress.parse(['[TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 685794, K size: 4.09 GB, '
                                'V size: 4.09 GB'], times=[1104.0])
    ready = sglang_progress.parse(['[2026-12-01 10:06:52] The server is fired up and ready to roll!'], times=[1400.0])
    assert sglang_progress.report_lines(kv + ready, 1000.0, 412.0) == [
        'KV cache allocated (685794 tokens) - 1m44s since start, expected ~6m52s (last start)',
        'ready - 6m40s since start (last start: 6m52s)']
    assert sglang_progress.report_lines(kv, 1000.0) == [
        'KV cache allocated (685794 tokens) - 1m44s since start, no previous start recorded']
    assert sglang_progress.last_reached(kv, 1000.0) == 'KV cache allocated (685794 tokens) at 1m44s'
    assert sglang_progress.last_reached([], 1000.0) == 'none'


def test_the_expected_total_comes_from_the_record_of_the_last_start():
    assert sglang_progress.expected_seconds({'startup_progress': {'seconds': 412.3}}) == 412.3
    for record in (None, {}, {'startup_progress': None}, {'startup_progress': {'seconds': None}},
                   {'startup_progress': {'seconds': True}}, {'startup_progress': {'seconds': 0}}, []):
        assert sglang_progress.expected_seconds(record) is None
