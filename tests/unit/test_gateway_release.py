# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""make gateway-release's logic (tests/tools/gateway_release.py) on facts written here: no smg venv needed."""

from __future__ import annotations

import copy

import gateway_release as gr


def opt(default=None, choices=None):
    return dict(aliases=[], dest='d', default=default, choices=choices, nargs=None, takes_value=True, kind='_StoreAction')


def facts(version, options, policies=('random', 'cache_aware'), functions=('parse_router_args', 'launch_router'),
          parsed=None):
    out = dict(version=version, options=options, policies=list(policies),
               launcher=dict(module='smg.launch_router', functions=list(functions)))
    if parsed is not None:
        out['parsed'] = parsed
    return out


ENTRY = dict(lock='locks/smg-9.0.0.txt', policies=['random', 'cache_aware'],
             flags=dict(port={'flag': '--port', 'default': 30000},
                        retries={'flag': '--retry-max-retries', 'default': 5, 'disable': '--disable-retries'},
                        prometheus_host={'flag': '--prometheus-host'}),
             reserved_flags=['--api-key', '--tenant-api-key'], api=dict(readiness='/readiness'),
             worker_inflight=dict(path='/v1/loads'))

OLD = facts('9.0.0', {'--port': opt(30000), '--retry-max-retries': opt(5), '--disable-retries': opt(False),
                      '--prometheus-host': opt('0.0.0.0'), '--api-key': opt(), '--tenant-api-key': opt(),
                      '--gone': opt(), '--parser': opt(None, ['a', 'b'])})


def new_release(**changes):
    options = copy.deepcopy(OLD['options'])
    for name in changes.pop('drop', ()):
        del options[name]
    options.update(changes.pop('options', {}))
    return facts('9.1.0', options, **changes)


def test_added_removed_defaults_and_choices():
    new = new_release(drop=['--gone'], options={'--fresh': opt(1), '--port': opt(8000), '--parser': opt(None, ['b', 'c'])})
    o = gr.compare_options(OLD['options'], new['options'])
    assert o['added'] == ['--fresh'] and o['removed'] == ['--gone']
    assert o['defaults'] == [('--port', 30000, 8000)]
    assert o['choices'] == [('--parser', ['c'], ['a'])]


def test_a_rendered_flag_missing_blocks_and_a_reserved_one_is_only_reported():
    new = new_release(drop=['--disable-retries', '--tenant-api-key'])
    report = gr.compare(OLD, new, '9.0.0', ENTRY)
    assert report['blockers'] == ['rendered flag --disable-retries (retries) is not an option of smg 9.1.0']
    assert [r['flag'] for r in report['entry']['reserved'] if not r['present']] == ['--tenant-api-key']
    assert gr.changes(report)['reserved_missing'] == ['--tenant-api-key']
    assert '**no**' in gr.markdown(report)
    clean = gr.compare(OLD, new_release(), '9.0.0', ENTRY)
    assert clean['blockers'] == [] and 'Nothing: every rendered flag exists' in gr.markdown(clean)


def test_a_refused_command_line_and_a_missing_launcher_function_block():
    parsed = [dict(argv=['--port', '1'], ok=True, error=None),
              dict(argv=['--policy', 'x'], ok=False, error='invalid choice')]
    report = gr.compare(OLD, new_release(parsed=parsed, functions=['launch_router']), '9.0.0', ENTRY)
    assert report['blockers'] == ["smg 9.1.0 refuses the rendered command line --policy x: invalid choice",
                                  "smg 9.1.0.launch_router has no parse_router_args (the role's smg-launch calls it)"]


def test_policy_changes_and_a_default_the_table_disagrees_with():
    new = new_release(policies=['cache_aware', 'least_load'], options={'--retry-max-retries': opt(3)})
    report = gr.compare(OLD, new, '9.0.0', ENTRY)
    assert report['policies'] == dict(added=['least_load'], removed=['random'])
    rows = dict((r['flag'], r) for r in report['entry']['rendered'])
    assert rows['--retry-max-retries']['default_agrees'] is False and rows['--port']['default_agrees'] is True
    # An entry flag without a table default (prometheus_host) agrees whatever the release's default.
    assert rows['--prometheus-host']['default_agrees'] is True


def test_the_draft_takes_the_release_facts_and_marks_the_rest():
    new = new_release(drop=['--tenant-api-key', '--port'], options={'--retry-max-retries': opt(3)},
                      policies=['cache_aware', 'least_load'])
    draft = gr.draft_entry(gr.compare(OLD, new, '9.0.0', ENTRY), ENTRY, new)['9.1.0']
    assert draft['lock'] == 'locks/smg-9.1.0.txt' and draft['policies'] == ['cache_aware', 'least_load']
    assert draft['flags']['retries'] == {'flag': '--retry-max-retries', 'default': 3, 'disable': '--disable-retries'}
    assert draft['flags']['port']['flag'].startswith('UNVERIFIED --port')
    assert draft['reserved_flags'] == ['--api-key'] and draft['api']['note'].startswith('UNVERIFIED')
    assert ENTRY['flags']['retries']['default'] == 5  # the entry itself is not changed


def test_the_table_entry_falls_back_to_the_old_release():
    table = dict(version='9.0.0', releases={'9.0.0': ENTRY})
    assert gr.table_entry(table, '9.1.0', '9.0.0') == ('9.0.0', ENTRY)
    assert gr.table_entry(table, '9.2.0', '9.1.0') == (None, None)


def test_sample_command_lines_cover_every_flag_and_each_off_switch():
    lines = gr.sample_argv(ENTRY)
    assert len(lines) == 2
    first, off = lines
    assert first[first.index('--port') + 1] == '30080' and first[first.index('--prometheus-host') + 1] == '127.0.0.1'
    assert '--disable-retries' in off and '--retry-max-retries' not in off and '--port' in off
    rendered = [f for _k, f in gr.rendered_flags(ENTRY) if f != '--disable-retries']
    assert sorted(f for f in first if f.startswith('--')) == sorted(rendered)
