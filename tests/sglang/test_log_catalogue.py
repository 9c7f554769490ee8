#!/usr/bin/env python
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every log text the collection matches, and every pre-check that quotes SGLang, against the installed release.

Run with the python of the lab SGLang venv (tests/sglang/run-parser-tests.sh runs it after test_parser.py). The
texts come from the catalogue itself (plugins/module_utils/sglang/log_catalogue.py: failure signatures, milestones,
start-up lines), the pre-checks from the flag rules' own code (every check name module_utils/sglang/flags.py and
module_utils/sglang/defaults.py can emit), never from a list copied here:

- each word of a text (its verbatim pieces) must be in the text's origin as installed: a string literal of the
  pinned SGLang (implicit concatenation joined, docstrings left out), of CPython's argparse/asyncio/traceback or
  nvidia-ml-py's pynvml.py, a builtin exception name, a string of PyTorch's, CUDA's runtime or NCCL's shared
  libraries, a strerror()/dlerror() text. A text the release table says the pinned release does not print (its
  ``when``) must NOT be whole in the pinned source. Texts of the NVIDIA driver are listed as not checkable here.
- the parallel-init milestones are exactly the release table's wordings (profiles/sglang_releases.yml
  flags.parallel_begin and parallel_end of every release).
- each SGLang pre-check, triggered, gives a message that the pinned source can print: a prefix of the output of one
  of its string templates (fields as wildcards, at least half of the message the template's own words), or, for a
  bare ``assert`` of the source, that statement verbatim. Checks of the collection's own (deployment_engine's
  _COLLECTION_CHECKS) are not SGLang's words; a check of another release's rules is listed as such.
Prints one line per item and "N passed, N failed"; exit 1 on any failure.
"""
import ast
import builtins
import glob
import mmap
import os
import re
import sys
from functools import lru_cache

import yaml  # SGLang depends on PyYAML, so the venv has it

# tests/tools/collection_paths.py: ROOT, the pin, the release table; it puts the checkout's .collections on sys.path.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tools'))
from collection_paths import ROOT, release_table_data  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.llmops.inference.plugins.module_utils.sglang import defaults as sglang_defaults  # noqa: E402
from ansible_collections.llmops.inference.plugins.module_utils.sglang import flags as sglang_flags  # noqa: E402
from ansible_collections.llmops.inference.plugins.module_utils.sglang import log_catalogue as catalogue  # noqa: E402
from ansible_collections.llmops.inference.plugins.module_utils.sglang import release as sglang_release  # noqa: E402
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.engine import _COLLECTION_CHECKS  # noqa: E402

FIELD = None
_SKIP_DIRS = ('test', 'tests', 'multimodal_gen', '__pycache__')
_TOKEN = re.compile(r'[A-Za-z_][A-Za-z0-9_]{3,}')


def site_packages():
    """Where the installed sglang package is, without importing it (its import patches transformers, ~15 s)."""
    import importlib.util
    return os.path.dirname(os.path.dirname(importlib.util.find_spec('sglang').origin))


def py_files(root):
    if os.path.isfile(root):
        return [root]
    out = []
    for base, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS]
        out.extend(os.path.join(base, name) for name in files if name.endswith('.py'))
    return out


class PySource(object):
    """The string literals (and, for bare asserts, the raw text) of a package's .py files. A file is parsed only when
    it holds one of the tokens asked about (parsing all of SGLang costs ~6 s of CPU)."""

    def __init__(self, roots):
        self.raw = {}
        for root in roots:
            for path in py_files(root):
                with open(path, encoding='utf-8', errors='replace') as stream:
                    self.raw[path] = stream.read()
        self.parsed = {}
        self.index = {}

    def _parse(self, path):
        if path not in self.parsed:
            literals, templates = [], []
            try:
                tree = ast.parse(self.raw[path])
            except SyntaxError:
                tree = None
            if tree is not None:
                docstrings = set()
                for node in ast.walk(tree):
                    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                        docstrings.add(id(node.value))
                for node in ast.walk(tree):
                    if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                        literals.append(node.value)
                        templates.append(split_format(node.value))
                    elif isinstance(node, ast.JoinedStr):
                        templates.append(tuple(v.value if isinstance(v, ast.Constant) else FIELD for v in node.values))
            self.parsed[path] = (literals, templates)
        return self.parsed[path]

    def _files_with(self, text, share):
        """Files holding at least that share of the text's words (implicit concatenation splits literals between
        words, never inside one; a formatted value is a word the source does not hold)."""
        tokens = set(_TOKEN.findall(text))
        need = max(1, int(len(tokens) * share + 0.999))
        counts = {}
        for token in tokens:
            if token not in self.index:
                self.index[token] = [path for path, raw in self.raw.items() if token in raw]
            for path in self.index[token]:
                counts[path] = counts.get(path, 0) + 1
        return sorted((path for path, count in counts.items() if count >= need), key=lambda p: (-counts[p], p))

    def has_word(self, word):
        """The word is (part of) a string literal: the files whose text holds it, as written or split by implicit
        concatenation at a blank, are parsed to see that it is in a literal (not a comment)."""
        pieces = word.split(' ')
        # A literal may end and the next begin (comment lines between) on either side of the blank.
        cut = r'(?:["\']\s*(?:#[^\n]*\s*)*[fFrRbBuU]{0,2}["\'])?'
        pattern = re.compile((cut + ' ' + cut).join(re.escape(p) for p in pieces))
        first = max(pieces, key=len)
        for path, text in self.raw.items():
            if first in text and pattern.search(text):
                if any(word in literal for literal in self._parse(path)[0]):
                    return True
        return False

    def templates(self, message):
        """The templates of the files that hold most of the message's words."""
        for path in self._files_with(message, 0.6):
            yield from self._parse(path)[1]

    def raw_has(self, text):
        return any(text in raw for raw in self.raw.values())


_FORMAT = re.compile(r'%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[sdifgrxXeE]|\{[^{}]*\}')


def split_format(text):
    """A plain string literal as a template: %-format and str.format fields are FIELDs."""
    pieces, last = [], 0
    for match in _FORMAT.finditer(text):
        pieces += [text[last:match.start()], FIELD]
        last = match.end()
    pieces.append(text[last:])
    return tuple(p for p in pieces if p != '')


class Binaries(object):
    """Strings of shared libraries (found with mmap, never loaded)."""

    def __init__(self, patterns):
        self.paths = sorted(set(p for pattern in patterns for p in glob.glob(pattern)))

    def has_word(self, word):
        needle = word.encode()
        for path in self.paths:
            with open(path, 'rb') as stream:
                with mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as data:
                    if data.find(needle) >= 0:
                        return True
        return False


class Libc(object):
    def __init__(self):
        texts = [os.strerror(n) for n in range(1, 134)]
        self.texts = texts + [t.lower() for t in texts]
        self.loader = Binaries(['/lib64/ld-linux-*.so*', '/lib/ld-linux*.so*', '/lib/*-linux-gnu/ld-linux*.so*'])

    def has_word(self, word):
        return any(word in text for text in self.texts) or self.loader.has_word(word)


class Python(object):
    def __init__(self):
        import argparse
        import asyncio.base_events
        import traceback
        self.source = PySource([argparse.__file__, asyncio.base_events.__file__, traceback.__file__])
        self.names = set(name for name in dir(builtins) if isinstance(getattr(builtins, name), type))

    def has_word(self, word):
        return word in self.names or self.source.has_word(word)


def origins(site):
    return {
        'sglang': PySource([os.path.join(site, 'sglang')]),
        'torch': Binaries([os.path.join(site, 'torch', 'lib', name) for name in
                           ('libc10.so', 'libc10_cuda.so', 'libtorch_python.so', 'libtorch_cuda.so',
                            'libtorch_cpu.so')]),
        'cudart': Binaries([os.path.join(site, 'nvidia', '*', 'lib', 'libcudart.so*')]),
        'nccl': Binaries([os.path.join(site, 'nvidia', 'nccl', 'lib', 'libnccl.so*')]),
        'pynvml': PySource([os.path.join(site, 'pynvml.py')]),
        'transformers': PySource([os.path.join(site, 'transformers')]),
        'uvicorn': PySource([os.path.join(site, 'uvicorn')]),
        'python': Python(),
        'libc': Libc(),
    }


def prefix_printable(template, message):
    """The ways the template prints a prefix of the message (fields match anything): a set of (end, covered) - the
    message position where the template's output ends (len(message): the message ends inside it) and how many of
    those characters are the template's own words."""
    @lru_cache(maxsize=None)
    def walk(index, pos):
        if pos == len(message):
            return frozenset([(pos, 0)])
        if index == len(template):
            return frozenset([(pos, 0)])
        piece = template[index]
        if piece is FIELD:
            out = set()
            for end in range(pos, len(message) + 1):
                out |= walk(index + 1, end)
            return frozenset(out)
        size = min(len(piece), len(message) - pos)
        if message[pos:pos + size] != piece[:size]:
            return frozenset()
        return frozenset((end, covered + size) for end, covered in walk(index + 1, pos + size))
    return walk(0, 0)


def sglang_can_print(source, message, continuation=False, depth=0):
    """(ok, how): the pinned source prints this message - a prefix of one template's output with at least half of it
    the template's own words; or one template's whole output followed by the rest of a template that begins with it
    (a message built as f"{msg} more words"); or, for a bare assert, the statement verbatim."""
    if message.startswith('assert ') and not continuation:
        statement = message.split(' (', 1)[0]
        return source.raw_has(statement), 'bare assert %r' % statement
    partial = []
    for template in source.templates(message):
        if continuation:
            # The rest of f"{msg} ...": the template starts with the field that held the message so far.
            if not template or template[0] is not FIELD:
                continue
            template = template[1:]
        first = template[0] if template else FIELD
        if first is not FIELD and message[:len(first)] != first[:len(message)]:
            continue
        if not any(piece is not FIELD and len(piece) >= 4 for piece in template):
            continue
        name = ''.join('{}' if p is FIELD else p for p in template)[:80]
        for end, covered in prefix_printable(template, message):
            if end == len(message) and covered >= end / 2.0:
                return True, 'template %r' % name
            if 0 < end < len(message) and covered >= end / 2.0:
                partial.append((end, name))
    if depth < 2:
        for end, name in partial:
            ok, how = sglang_can_print(source, message[end:], True, depth + 1)
            if ok:
                return True, 'template %r, then %s' % (name, how)
    return False, 'no template of the installed source prints it'


def printed_by(entry, flags):
    """Whether a release with these flags (the release table's) prints the text (its ``when``)."""
    when = entry['when']
    if when is None:
        return True
    kind, name = when
    if kind == 'flag':
        return bool(flags[name])
    return flags[name] == ''.join(p for p in entry['pieces'] if isinstance(p, str))


def check_texts(release, found, out):
    pin = release['version']
    for kind, name, entry in catalogue.every_text():
        words = catalogue.verbatim(entry)
        where = catalogue.origins(entry)
        label = '%s %s %r' % (kind, name, ''.join(w for w in words)[:70])
        if where == ('nvidia-driver',):
            out.append(('SKIP', label, 'the NVIDIA driver\'s words (%s): not installable here' % entry['source']))
            continue
        missing = [w for w in words if not any(found[o].has_word(w) for o in where if o in found)]
        if not printed_by(entry, release['flags']):
            ok = bool(missing)
            detail = ('not whole in %s, which by the release table does not print it (when %s)' % (pin, entry['when']) if ok else
                      'every word is in %s although the release table says %s does not print it (when %s)'
                      % (pin, pin, entry['when']))
        else:
            ok = not missing
            detail = 'in %s' % '/'.join(where) if ok else 'not in %s: %r' % ('/'.join(where), missing)
        out.append(('PASS' if ok else 'FAIL', label, detail))


def check_parallel_milestones(table, out):
    """The catalogue's parallel-init texts are the release table's wordings, every one of them."""
    texts = dict(catalogue.MILESTONES)
    for name in ('parallel_begin', 'parallel_end'):
        ours = set(''.join(e['pieces']) for e in texts[name] if e['when'] == ('wording', name))
        theirs = set(entry['flags'][name] for entry in table['releases'].values() if 'flags' in entry)
        out.append(('PASS' if ours == theirs else 'FAIL', 'milestone %s of each rule family' % name,
                    'catalogue %s, release table %s' % (sorted(ours), sorted(theirs))))


# Inputs that make each check fire (not its wording): check -> ('flags', server, host) for sglang_flags.render of the
# seed profile, ('mamba', arguments of sglang_defaults.resolve_mamba_strategy), or ('release', flag) when the check
# belongs to rules the pinned release does not have (its flag is false there; a third item fires it where the flag is
# true).
TRIGGERS = {
    'tp_nnodes': ('flags', dict(tp_size=4), dict(nnodes=3, node_rank=0, dist_init_addr='h:1')),
    'node_rank': ('flags', dict(tp_size=4), dict(nnodes=2, node_rank=5, dist_init_addr='h:1')),
    'served_model_name': ('flags', dict(served_model_name='a:b'), {}),
    'chunked_prefill_page': ('flags', dict(page_size=64, chunked_prefill_size=1000), {}),
    'context_length': ('flags', dict(context_length=300000), {}),
    'trtllm_topk': ('flags', dict(attention_backend='trtllm_mha', speculative_eagle_topk=2), {}),
    'spec_v2_topk': ('release', 'spec_v2_topk1'),
    'pp_spec': ('flags', dict(pp_size=2), {}),
    'fa3_blackwell': ('flags', dict(attention_backend='fa3'), dict(compute_capability='10.0')),
    'gdn_blackwell_backend': ('flags', dict(attention_backend='fa3'), dict(compute_capability='10.0')),
    'mtp_layers': ('flags', dict(speculative_num_draft_tokens=4), {}),
    'gpu_count': ('flags', {}, dict(gpu_indices=[0])),
    'nccl_broken': ('flags', {}, dict(p2p_verdict='nccl_broken')),
    'spec_radix_mamba': ('release', 'spec_radix_no_buffer'),
    'mamba_extra_buffer_radix': ('release', 'extra_buffer_needs_radix',
                                 ('mamba', dict(requested='extra_buffer', radix_cache=False))),
    'mamba_no_buffer_overlap': ('mamba', dict(requested='no_buffer')),
    'mamba_no_buffer_page': ('mamba', dict(requested='no_buffer', disable_overlap_schedule=True, page_size=64)),
    'mamba_no_buffer_backend': ('mamba', dict(requested='no_buffer', disable_overlap_schedule=True,
                                              attention_backend='trtllm_mha')),
    'mamba_lazy_overlap': ('mamba', dict(requested='extra_buffer_lazy', disable_overlap_schedule=True)),
    'mamba_extra_buffer_arch': ('mamba', dict(requested='extra_buffer'), dict(extra_buffer_supported=False)),
    'mamba_track_interval': ('mamba', dict(requested='extra_buffer', spec_draft_tokens=300)),
    'mamba_page_size': ('mamba', dict(requested='extra_buffer', page_size=48)),
    'dp_attention': ('flags', dict(dp_size=2), {}),
    # The EAGLE-3 pair: without its draft directory, and with a draft trained for a shorter context than the target's.
    'draft_path': ('flags', {}, {}, 'qwen3-32b-eagle3'),
    'draft_context_length': ('flags', dict(speculative_draft_model_path='/d'), {}, 'qwen3-32b-eagle3',
                             dict(max_position_embeddings=2048)),
}


def check_names():
    """Every check name the flag rules' code can emit (sglang_flags._check, sglang_defaults._refuse calls)."""
    names = set()
    for module in (sglang_flags, sglang_defaults):
        with open(module.__file__.replace('.pyc', '.py')) as stream:
            names.update(re.findall(r"_(?:check|refuse)\(\s*\w+,\s*'(\w+)'", stream.read()))
    return names


def profile(name):
    with open(os.path.join(ROOT, 'profiles', 'models', name + '.yml')) as stream:
        return yaml.safe_load(stream)


def fire(release, check, trigger, seed, seed_facts):
    """The messages of one check, fired by its trigger."""
    if trigger[0] == 'flags':
        server, host = trigger[1], trigger[2]
        model = seed if len(trigger) < 4 else profile(trigger[3])
        if len(trigger) > 4:
            model['serving']['speculative']['draft']['config'].update(trigger[4])
        if check == 'mtp_layers':
            text = dict(seed['config']['text_config'], mtp_num_hidden_layers=0)
            model = dict(seed, config=dict(seed['config'], text_config=text))
        rendered = sglang_flags.render(release, model, dict(max_running_requests=22), dict(dict(gpu_indices=[0, 1, 2, 3]), **host),
                                       dict(dict(model_path='/m'), **server))
        return [c['message'] for c in rendered['preflight'] if c['check'] == check]
    facts = dict(seed_facts, **(trigger[2] if len(trigger) > 2 else {}))
    kwargs = dict(dict(spec_draft_tokens=4), **trigger[1])
    result = sglang_defaults.resolve_mamba_strategy(release, facts, **kwargs)
    return [r['message'] for r in result['refusals'] if r['check'] == check]


def check_prechecks(release, source, out):
    from ansible_collections.llmops.inference.plugins.module_utils.model import config as model_config
    seed = profile('qwen3.5-122b-a10b')
    seed_facts = model_config.model_facts(seed['config'], release['architectures'])
    for check in sorted(check_names()):
        label = 'pre-check %s' % check
        trigger = TRIGGERS.get(check)
        if trigger is None:
            out.append(('FAIL', label, 'no trigger in tests/sglang/test_log_catalogue.py TRIGGERS: add the inputs that '
                        'fire it'))
            continue
        if trigger[0] == 'release' and release['flags'][trigger[1]] and len(trigger) > 2:
            trigger = trigger[2]  # a rule of this release too: fire it with its own inputs
        if trigger[0] == 'release':
            ok = not release['flags'][trigger[1]]
            out.append(('SKIP' if ok else 'FAIL', label, 'a rule of other releases (flags.%s is false for %s)'
                        % (trigger[1], release['version']) if ok else 'flags.%s is true for %s: give it a trigger'
                        % (trigger[1], release['version'])))
            continue
        messages = fire(release, check, trigger, seed, seed_facts)
        if not messages:
            out.append(('FAIL', label, 'its trigger did not fire it'))
            continue
        if check in _COLLECTION_CHECKS:
            out.append(('SKIP', label, "the collection's own refusal, not SGLang's words: %r" % messages[0][:60]))
            continue
        ok, how = sglang_can_print(source, messages[0])
        out.append(('PASS' if ok else 'FAIL', label, '%r: %s' % (messages[0][:70], how)))


def main():
    import importlib.metadata
    table = release_table_data()
    release = sglang_release.release(table, importlib.metadata.version('sglang'))
    found = origins(site_packages())
    out = []
    check_texts(release, found, out)
    check_parallel_milestones(table, out)
    check_prechecks(release, found['sglang'], out)
    for status, label, detail in out:
        print('%s %s: %s' % (status, label, detail))
    failed = sum(1 for item in out if item[0] == 'FAIL')
    passed = sum(1 for item in out if item[0] == 'PASS')
    print('sglang %s log catalogue and pre-check wording: %d passed, %d failed, %d not checkable here'
          % (release['version'], passed, failed, len(out) - passed - failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
