# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Refusals that name the variable, the value, the rule and the fix; type coercion against a spec entry.

PRIVATE to the collection. Pure functions. A ``Problems`` list collects every refusal of one host so the operator
sees all of them at once; ``coerce()`` turns what Ansible hands over (``-e k=v`` strings included) into the
declared type or adds a problem, never guessing: ``'http'`` is not a port and ``'0'`` is not ``False``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmops.inference.plugins.module_utils.common.choosing import nearest

_TRUE = ('true', 'yes', 'on', '1')
_FALSE = ('false', 'no', 'off', '0')
_INT = re.compile(r'^[+-]?\d+$')


def show(value):
    """A value as the operator wrote it, short."""
    if isinstance(value, str):
        text = repr(value)
    else:
        text = repr(value) if not isinstance(value, (dict, list)) else _json_like(value)
    return text if len(text) <= 160 else text[:157] + '...'


def _json_like(value):
    import json
    try:
        return json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)


class Problems(object):
    """Refusals of one host, in the order found."""

    def __init__(self, host):
        self.host = host
        self.items = []

    def add(self, variable, value, rule, fix, kind='input'):
        self.items.append(dict(variable=variable, value=value, rule=rule, fix=fix, kind=kind))

    def __len__(self):
        return len(self.items)

    def __bool__(self):
        return bool(self.items)

    __nonzero__ = __bool__

    def lines(self):
        out = []
        for index, item in enumerate(self.items, 1):
            head = item['variable']
            if item['value'] is not _NOVALUE:
                head += ' = %s' % show(item['value'])
            out.append('%d. %s: %s. Fix: %s' % (index, head, item['rule'].rstrip('.'), item['fix'].rstrip('.') + '.'))
        return out

    def message(self):
        count = len(self.items)
        return '%s: %d problem%s, nothing was changed on any host:\n%s' % (
            self.host, count, '' if count == 1 else 's', '\n'.join(self.lines()))


class _NoValue(object):
    def __repr__(self):
        return '<unset>'


_NOVALUE = _NoValue()
NOVALUE = _NOVALUE


def _coerce_scalar(kind, value):
    """(value, error) for one scalar of type int/float/bool/str/path."""
    if kind == 'int':
        if isinstance(value, bool):
            return None, 'must be an integer, not a boolean'
        if isinstance(value, int):
            return value, None
        if isinstance(value, float) and value.is_integer():
            return int(value), None
        if isinstance(value, str) and _INT.match(value.strip()):
            return int(value.strip()), None
        return None, 'must be an integer'
    if kind == 'float':
        if isinstance(value, bool):
            return None, 'must be a number, not a boolean'
        if isinstance(value, (int, float)):
            return float(value), None
        if isinstance(value, str):
            try:
                return float(value.strip()), None
            except ValueError:
                pass
        return None, 'must be a number'
    if kind == 'bool':
        if isinstance(value, bool):
            return value, None
        if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
            return value.strip().lower() in _TRUE, None
        return None, 'must be true or false'
    if kind in ('str', 'path'):
        if isinstance(value, bool) or isinstance(value, (dict, list)):
            return None, 'must be a string'
        if isinstance(value, (int, float)):
            return str(value), None
        return str(value), None
    return value, None


def coerce(entry, value, problems, source=''):
    """The value converted to the entry's type, or NOVALUE after adding a problem. None stays None."""
    name = entry['name'] + source
    if value is None:
        return None
    kind = entry['type']
    if kind == 'list':
        if isinstance(value, str):
            problems.add(name, value, 'must be a list (YAML [a, b]; with -e pass JSON: -e \'{"%s": [...]}\')'
                         % entry['name'], 'give a list')
            return _NOVALUE
        if not isinstance(value, (list, tuple)):
            problems.add(name, value, 'must be a list', 'give a list')
            return _NOVALUE
        out = []
        elements = entry.get('elements')
        for index, item in enumerate(value):
            if elements == 'path' and _blank_ends(item):
                problems.add('%s[%d]' % (name, index), item, _BLANK_ENDS, 'write it without them: %r' % item.strip())
                return _NOVALUE
            if elements in ('int', 'float', 'bool', 'str', 'path'):
                converted, error = _coerce_scalar(elements, item)
                if error:
                    problems.add('%s[%d]' % (name, index), item, 'every element %s' % error,
                                 'give every element of %s as %s' % (entry['name'], {
                                     'int': 'a whole number, e.g. [0, 1, 2, 3]', 'float': 'a number',
                                     'bool': 'true or false'}.get(elements, 'a string')))
                    return _NOVALUE
                item = converted
            elif elements == 'dict' and not isinstance(item, dict):
                problems.add('%s[%d]' % (name, index), item, 'every element must be a mapping',
                             _fix_for(entry, 'dict'))
                return _NOVALUE
            out.append(item)
        return out
    if kind == 'dict':
        if not isinstance(value, dict):
            problems.add(name, value, 'must be a mapping', 'give a YAML mapping (key: value)')
            return _NOVALUE
        return dict(value)
    if kind == 'path' and _blank_ends(value):
        problems.add(name, value, _BLANK_ENDS, 'write it without them: %r' % value.strip())
        return _NOVALUE
    converted, error = _coerce_scalar(kind, value)
    if error:
        problems.add(name, value, error, _fix_for(entry, kind, value))
        return _NOVALUE
    return converted


_BLANK_ENDS = 'begins or ends with white space (a path with a trailing blank names another directory)'


def _blank_ends(value):
    return isinstance(value, str) and value != value.strip()


_SIZE_SUFFIX = re.compile(r'^\s*(\d+)\s*([kKmM])\s*$')


def _fix_for(entry, kind, value=None):
    default = entry.get('default')
    if kind == 'int':
        sized = _SIZE_SUFFIX.match(value) if isinstance(value, str) else None
        if sized:
            factor = 1024 if sized.group(2) in 'kK' else 1024 * 1024
            number = int(sized.group(1))
            return 'set %s to a whole number: %d%s = %d' % (entry['name'], number, sized.group(2), number * factor)
        if isinstance(value, float) and not isinstance(value, bool):
            return 'set %s to a whole number, e.g. %d' % (entry['name'], int(value))
        example = default if isinstance(default, int) and not isinstance(default, bool) else (entry.get('min') or 1)
        return 'set %s to a whole number, e.g. %s' % (entry['name'], example)
    if kind == 'float':
        return 'set %s to a number, e.g. %s' % (entry['name'], default if default is not None else '0.8')
    if kind == 'bool':
        return 'set %s to true or false' % entry['name']
    if kind == 'dict':
        return 'give %s as a list of mappings' % entry['name']
    return 'set %s to a string' % entry['name']


def check_bounds(entry, value, problems):
    """min/max of a number (or of every element of a list of numbers)."""
    if value is None or value is _NOVALUE:
        return value
    values = value if isinstance(value, list) else [value]
    low, high, exclusive = entry.get('min'), entry.get('max'), entry.get('exclusive', False)
    for item in values:
        if not isinstance(item, (int, float)) or isinstance(item, bool):
            continue
        bad = False
        if low is not None and (item < low or (exclusive and item == low)):
            bad = True
        if high is not None and (item > high or (exclusive and item == high)):
            bad = True
        if bad:
            if low is not None and high is not None:
                rule = 'must be %s %s and %s' % ('strictly between' if exclusive else 'between', low, high)
            elif low is not None:
                rule = 'must be %s %s' % ('greater than' if exclusive else 'at least', low)
            else:
                rule = 'must be %s %s' % ('less than' if exclusive else 'at most', high)
            problems.add(entry['name'], value, rule, 'set %s within that range or to null (the default)'
                         % entry['name'])
            return _NOVALUE
    return value


def check_choice(entry, value, choices, problems, context=''):
    """value must be one of choices; the fix names the nearest."""
    if value is None or value is _NOVALUE or value in choices:
        return value
    close = nearest(value, [c for c in choices if c])
    problems.add(entry['name'], value, 'not one of %s%s (%s)' % (
        'the choices' if not context else context, '', ', '.join(repr(c) for c in choices)),
        "use %r (nearest)" % close if close else 'use one of them', kind='input')
    return _NOVALUE
