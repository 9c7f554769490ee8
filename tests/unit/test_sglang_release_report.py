# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""tests/tools/sglang_release.py on facts written here: each kind of change lands in its row, and the report blocks
on a rendered command line the new release's parser refuses, a read metric or a matched text it lacks (issue #29). The real reports are the
command's output on real releases (docs/releases/)."""

from __future__ import annotations

import sglang_release as sr


def arg(dest, default=None, choices=None, aliases=(), deprecated=False):
    return dict(dest=dest, default=default, choices=choices, aliases=list(aliases), deprecated=deprecated,
                nargs=None, help='')


def facts(version, args, families=None, texts=None, memory=None, rendered=None):
    return dict(version=version, server_args=args, metrics=dict(families=families or {}),
                texts=dict(entry=version, results=texts or {}), memory=memory or {},
                rendered=dict(entry=version, lines=rendered or {}))


def line(flags, error=None):
    return dict(flags=flags, ok=error is None, error=error)


OLD = facts('1.0', {
    '--model-path': arg('model_path'),
    '--mamba-scheduler-strategy': arg('mamba_scheduler_strategy', 'auto', ['auto', 'no_buffer']),
    '--old-name': arg('kept'),
    '--gone': arg('gone'),
    '--chunked-prefill-size': arg('chunked_prefill_size', None),
    '--reasoning-parser': arg('reasoning_parser', None, ['qwen3', 'kimi']),
    '--watchdog-timeout': arg('watchdog_timeout', 300),
}, families={'sglang:num_running_reqs': 'gauge', 'sglang:old_metric': 'gauge'},
    texts={'signature oom': ['PASS', 'in sglang'], 'milestone ready': ['PASS', 'in sglang']},
    memory={'seed': dict(mem_fraction_static=0.8, kv_tokens=100)},
    rendered={'seed': line(['--model-path', '--mamba-scheduler-strategy'])})

NEW = facts('2.0', {
    '--model-path': arg('model_path'),
    '--mamba-radix-cache-strategy': arg('mamba_scheduler_strategy', 'auto', ['auto', 'no_buffer', 'extra_buffer']),
    '--new-name': arg('kept', aliases=['--old-name']),
    '--chunked-prefill-size': arg('chunked_prefill_size', 8192),
    '--reasoning-parser': arg('reasoning_parser', None, ['qwen3', 'deepseek-r1']),
    '--watchdog-timeout': arg('watchdog_timeout', 300, deprecated=True),
    '--brand-new': arg('brand_new'),
}, families={'sglang:num_running_reqs': 'counter', 'sglang:new_metric': 'gauge'},
    texts={'signature oom': ['FAIL', "not in sglang: ['CUDA out of memory']"], 'milestone ready': ['PASS', 'in sglang']},
    memory={'seed': dict(mem_fraction_static=0.78, kv_tokens=100)},
    rendered={'seed': line(['--model-path', '--mamba-radix-cache-strategy']),
              'two nodes': line(['--model-path', '--gone'], 'unrecognized arguments: --gone')})


def test_each_change_lands_in_its_row():
    report = sr.compare(OLD, NEW, used={'running_requests': 'sglang:num_running_reqs'})
    args = report['args']
    assert args['added'] == ['--brand-new']
    assert args['removed'] == ['--gone']
    assert args['renamed'] == [('--mamba-scheduler-strategy', '--mamba-radix-cache-strategy')]
    assert args['aliased'] == [('--old-name', '--new-name')]
    assert args['defaults'] == [('--chunked-prefill-size', None, 8192)]
    assert args['deprecated'] == ['--watchdog-timeout']
    assert args['choices'] == [('--reasoning-parser', ['deepseek-r1'], ['kimi'])]
    assert report['metrics']['added'] == ['sglang:new_metric']
    assert report['metrics']['removed'] == ['sglang:old_metric']
    assert report['metrics']['retyped'] == [('sglang:num_running_reqs', 'gauge', 'counter')]
    assert ('seed', 'mem_fraction_static', 0.8, 0.78) in report['memory']
    assert report['texts']['lost'] == ['signature oom']
    assert report['rendered']['dropped'] == ['--mamba-scheduler-strategy']
    assert report['rendered']['flags'] == ['--gone', '--mamba-radix-cache-strategy', '--model-path']


def test_blocks_on_a_refused_command_line_a_read_metric_and_a_matched_text():
    report = sr.compare(OLD, NEW, used={'running_requests': 'sglang:num_running_reqs', 'old': 'sglang:old_metric'})
    blockers = report['blockers']
    assert [b for b in blockers if 'renders' in b] == [
        '2.0 refuses the command line the collection renders for two nodes: unrecognized arguments: --gone']
    assert [b for b in blockers if 'metric' in b] == [
        'the release table reads the metric sglang:old_metric (old), which 2.0 does not expose']
    assert any('signature oom' in b and 'CUDA out of memory' in b for b in blockers)
    text = sr.markdown(report)
    assert text.startswith('# SGLang 1.0 -> 2.0\n')
    assert 'BLOCKED: 3 finding(s)' in text
    assert '| removed | `--gone` |' in text
    assert '| `--reasoning-parser` (watched) | `deepseek-r1` | `kimi` |' in text
    assert 'newly deprecated in 2.0' not in text  # --watchdog-timeout is deprecated, but not rendered


def test_a_rendered_flag_newly_deprecated_is_called_out():
    new = dict(NEW, rendered=dict(entry='2.0', lines={'seed': line(['--model-path', '--watchdog-timeout'])}))
    text = sr.markdown(sr.compare(OLD, new, used={}))
    assert '**Rendered by the collection and newly deprecated in 2.0**' in text and '`--watchdog-timeout`' in text


def test_nothing_blocks_when_the_new_release_has_everything():
    report = sr.compare(OLD, OLD, used={'running_requests': 'sglang:num_running_reqs'})
    assert report['blockers'] == []
    assert 'Nothing blocks the bump' in sr.markdown(report)
