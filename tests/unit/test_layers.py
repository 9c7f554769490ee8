"""The layer guard: which folder of plugins/ may import which (docs/architecture.md draws the same map).

module_utils is what AnsiballZ ships to hosts, one folder per concern, standing on floors: a folder imports only its
own files and folders on a lower floor (``common`` at the bottom). ``planner`` and ``sglang/flags`` never import each
other: the VRAM plan and the argv meet in the controller's engine (plugin_utils/deployment/engine.py). The scripts in
gpu/scripts are shipped as text and run alone, so they import nothing of the collection. plugin_utils is controller
only: action and filter plugins and the resolver; nothing shipped to a host may import it.

The rules are read from the files with ast (no import runs); a test of the test plants a wrong import in a copy of
the tree and shows the guard naming it."""
import ast
import os
import re
import shutil

import pytest

from collection_paths import ROOT

PREFIX = 'ansible_collections.llmops.inference.plugins.'

# Floors of module_utils: a folder may import its own files and any folder on a lower floor.
MODULE_UTILS_FLOORS = {
    'common': 0,
    'model': 1, 'host': 1,
    'gpu': 2, 'hf': 2, 'sglang': 2,
    'planner': 3,
}
# Folders that stand apart: bench reads SGLang's benchmark output and the OpenAI API, so it needs only common.
MODULE_UTILS_ONLY = {'bench': {'common'}, 'gpu/scripts': set(),
                     # make compare (issue #30): the planner's plans and the benchmark's verdict; nothing imports it.
                     'compare': {'common', 'model', 'sglang', 'planner', 'bench'}}
# plugin_utils (controller only): each folder may import module_utils and the plugin_utils folders named here.
PLUGIN_UTILS_MAY_IMPORT = {
    'actions': set(),
    'monitoring': set(),
    'deployment': set(),
    'views': set(),
}
# Pairs that never import each other in either direction (folder or folder/file).
NEVER_TOGETHER = [('planner', 'sglang/flags')]
# Plugin kinds: what each may import.
KIND_MAY_IMPORT = {
    'module_utils': {'module_utils'},
    'plugin_utils': {'module_utils', 'plugin_utils'},
    'modules': {'module_utils'},
    'action': {'module_utils', 'plugin_utils'},
    'filter': {'module_utils', 'plugin_utils'},
    'doc_fragments': set(),
}


def python_files(plugins):
    for directory, _subdirs, names in os.walk(plugins):
        for name in sorted(names):
            if name.endswith('.py'):
                yield os.path.relpath(os.path.join(directory, name), plugins)


def collection_imports(path):
    """(line, dotted name under plugins/) of every import of the collection in one file; relative imports too."""
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                found.append((node.lineno, '.' * node.level + (node.module or '')))
            elif node.module and node.module.startswith(PREFIX):
                base = node.module[len(PREFIX):]
                found.extend((node.lineno, base + '.' + alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name[len(PREFIX):]) for alias in node.names if alias.name.startswith(PREFIX))
    return found


def target_file(plugins, dotted):
    """The file under plugins/ an import names (a module, or the package of `from package import name`)."""
    parts = dotted.split('.')
    for cut in (len(parts), len(parts) - 1):
        candidate = os.path.join(plugins, *parts[:cut])
        if os.path.isfile(candidate + '.py'):
            return os.path.relpath(candidate + '.py', plugins)
        if os.path.isdir(candidate):
            return os.path.relpath(os.path.join(candidate, '__init__.py'), plugins)
    return None


def folder(rel):
    """'module_utils/sglang/flags.py' -> ('module_utils', 'sglang'); scripts keep their subfolder."""
    parts = rel[:-3].split(os.sep)
    kind = parts[0]
    inner = parts[1:-1]
    if inner[:2] == ['gpu', 'scripts']:
        return kind, 'gpu/scripts'
    return kind, inner[0] if inner else ''


def _module_utils_rule(source, target):
    if source == target:
        return None
    if source in MODULE_UTILS_ONLY:
        allowed = MODULE_UTILS_ONLY[source]
        return None if target in allowed else 'module_utils/%s may import only %s' % (
            source, ', '.join(sorted(allowed)) or 'nothing of the collection (it is shipped and run as a script)')
    if target in MODULE_UTILS_ONLY:
        return 'module_utils/%s is not a floor others build on' % target
    if source not in MODULE_UTILS_FLOORS:
        return 'module_utils/%s is not in the layer map (tests/unit/test_layers.py, docs/architecture.md)' % (source or '.')
    if target not in MODULE_UTILS_FLOORS:
        return 'module_utils/%s is not in the layer map' % (target or '.')
    if MODULE_UTILS_FLOORS[target] >= MODULE_UTILS_FLOORS[source]:
        return 'module_utils/%s (floor %d) may import only lower floors, not module_utils/%s (floor %d)' % (
            source, MODULE_UTILS_FLOORS[source], target, MODULE_UTILS_FLOORS[target])
    return None


def _plugin_utils_rule(source, target):
    if source == target:
        return None
    if source not in PLUGIN_UTILS_MAY_IMPORT:
        return 'plugin_utils/%s is not in the layer map' % (source or '.')
    if target not in PLUGIN_UTILS_MAY_IMPORT[source]:
        return 'plugin_utils/%s may not import plugin_utils/%s' % (source, target)
    return None


def rule_broken(source_rel, target_rel):
    """Why an import from one file to another breaks the layers, or None."""
    source_kind, source_folder = folder(source_rel)
    target_kind, target_folder = folder(target_rel)
    if target_kind not in KIND_MAY_IMPORT.get(source_kind, set()):
        allowed = ', '.join(sorted(KIND_MAY_IMPORT.get(source_kind, ()))) or 'nothing of the collection'
        return '%s may import only %s' % (source_kind, allowed)
    for one, other in NEVER_TOGETHER:
        names = {source_rel[:-3].split(os.sep, 1)[1], target_rel[:-3].split(os.sep, 1)[1], source_folder, target_folder}
        if one in names and other in names and source_kind == target_kind == 'module_utils':
            return '%s and %s never import each other (they meet in plugin_utils/deployment/engine.py)' % (one, other)
    if source_kind == target_kind == 'module_utils':
        return _module_utils_rule(source_folder, target_folder)
    if source_kind == target_kind == 'plugin_utils':
        return _plugin_utils_rule(source_folder, target_folder)
    return None


def violations(plugins):
    """Every import of plugins/ that breaks the map, as 'file:line imports target: rule'."""
    found = []
    for rel in python_files(plugins):
        for line, dotted in collection_imports(os.path.join(plugins, rel)):
            if dotted.startswith('.'):
                found.append('%s:%d imports %s: relative imports are not used (name the collection path)' % (rel, line, dotted))
                continue
            target = target_file(plugins, dotted)
            if target is None:
                found.append('%s:%d imports %s: no such file under plugins/' % (rel, line, dotted))
                continue
            why = rule_broken(rel, target)
            if why:
                found.append('%s:%d imports %s: %s' % (rel, line, target, why))
    return found


def test_every_import_keeps_to_the_layers():
    assert violations(os.path.join(ROOT, 'plugins')) == []


def test_every_folder_is_in_the_map_and_has_an_empty_init():
    plugins = os.path.join(ROOT, 'plugins')
    for kind, known in (('module_utils', set(MODULE_UTILS_FLOORS) | set(MODULE_UTILS_ONLY)),
                        ('plugin_utils', set(PLUGIN_UTILS_MAY_IMPORT))):
        base = os.path.join(plugins, kind)
        for directory, subdirs, names in os.walk(base):
            subdirs[:] = [d for d in subdirs if d != '__pycache__']
            rel = os.path.relpath(directory, base)
            if rel == '.':
                assert [n for n in names if n.endswith('.py')] == [], '%s/ holds files only in its folders' % kind
                continue
            assert rel in known or rel.split(os.sep)[0] in known, '%s/%s is not in the layer map' % (kind, rel)
            init = os.path.join(directory, '__init__.py')
            assert os.path.isfile(init) and os.path.getsize(init) == 0, '%s needs an empty __init__.py' % init


def test_the_architecture_map_names_every_folder():
    with open(os.path.join(ROOT, 'docs', 'architecture.md')) as handle:
        text = handle.read()
    tree = text.split('## The tree', 1)[1].split('```')[1]
    module_utils, plugin_utils = tree.split('plugins/plugin_utils/')
    for names, block in ((list(MODULE_UTILS_FLOORS) + list(MODULE_UTILS_ONLY), module_utils),
                         (list(PLUGIN_UTILS_MAY_IMPORT), plugin_utils)):
        for name in names:
            assert re.search(r'^  %s/ ' % re.escape(name), block, re.M), 'docs/architecture.md: the tree lacks %s/' % name
    for name, floor in MODULE_UTILS_FLOORS.items():
        assert re.search(r'^  %s/\s+floor %d ' % (name, floor), module_utils, re.M), 'docs: %s is on floor %d' % (name, floor)


def test_no_cycle_between_files():
    plugins = os.path.join(ROOT, 'plugins')
    graph = {}
    for rel in python_files(plugins):
        graph[rel] = {target_file(plugins, d) for _line, d in collection_imports(os.path.join(plugins, rel))} - {None}
    state = {}

    def visit(node, trail):
        if state.get(node) == 'done':
            return
        assert state.get(node) != 'open', 'import cycle: %s' % ' -> '.join(trail + [node])
        state[node] = 'open'
        for nxt in sorted(graph.get(node, ())):
            visit(nxt, trail + [node])
        state[node] = 'done'

    for rel in sorted(graph):
        visit(rel, [])


@pytest.mark.parametrize('planted, expected', [
    ('module_utils/common/formatting.py',
     'module_utils/common/formatting.py:%d imports module_utils/sglang/release.py: module_utils/common (floor 0) may '
     'import only lower floors, not module_utils/sglang (floor 2)'),
    ('module_utils/planner/spec_draft.py',
     'module_utils/planner/spec_draft.py:%d imports module_utils/sglang/flags.py: planner and sglang/flags never import '
     'each other'),
    ('modules/gpu_info.py', 'modules/gpu_info.py:%d imports module_utils/sglang/release.py'),
])
def test_the_guard_names_a_wrong_import(tmp_path, planted, expected):
    """A test of the test: a copy of plugins/ with one wrong import added is refused, naming file, line and rule."""
    plugins = str(tmp_path / 'plugins')
    shutil.copytree(os.path.join(ROOT, 'plugins'), plugins, ignore=shutil.ignore_patterns('__pycache__'))
    path = os.path.join(plugins, planted)
    with open(path) as handle:
        lines = handle.read().split('\n')
    target = 'sglang import flags' if 'planner' in planted else 'sglang import release'
    if planted.startswith('modules/'):
        # a module importing module_utils is fine: plant a controller import instead
        line = 'from %splugin_utils.deployment import spec  # planted' % PREFIX
        expected = 'modules/gpu_info.py:%d imports plugin_utils/deployment/spec.py: modules may import only module_utils'
    else:
        line = 'from %smodule_utils.%s  # planted' % (PREFIX, target)
    lines.append(line)
    with open(path, 'w') as handle:
        handle.write('\n'.join(lines) + '\n')
    found = violations(plugins)
    assert len(found) == 1, found
    assert found[0].startswith(expected % len(lines)), found[0]
