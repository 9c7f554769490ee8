# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""PRIVATE to the collection: the probe llmops.inference.triton_build_info runs with the interpreter it checks
(written to a temporary file, like gpu_p2p_check's worker). Standalone: only the standard library (and Triton when
it is importable).

Proves that this interpreter can build a C extension the way Triton builds its CUDA launcher stub at the first
kernel launch (Qwen3.5's Gated DeltaNet layers run Triton/FLA kernels). The sglang_server role runs it with the
SGLang virtualenv's Python after the install, so "Failed to find C compiler" or a missing Python.h fails the deploy
before the service starts, not at the first request.

With Triton importable, its own builder does the work (triton/runtime/build.py ``_build``: the compiler from CC,
else gcc, else clang; the include directory of the interpreter's default sysconfig scheme, posix_local read as
posix_prefix; ``-O3 -shared -fPIC``). Without Triton (a venv that has none) the same lookup and command are
replicated here. The built module is then imported, as Triton does. Prints one JSON line; exit 1 on failure with
the reason in "error".
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile

PROBE = 'llmops_cc_probe'
SOURCE = r'''
#include <Python.h>
static struct PyModuleDef probe = {PyModuleDef_HEAD_INIT, "llmops_cc_probe", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_llmops_cc_probe(void) { return PyModule_Create(&probe); }
'''


def include_dir():
    scheme = sysconfig.get_default_scheme() if hasattr(sysconfig, 'get_default_scheme') else 'posix_prefix'
    if scheme == 'posix_local':
        scheme = 'posix_prefix'
    return sysconfig.get_paths(scheme=scheme)['include']


def find_cc():
    cc = os.environ.get('CC')
    if cc is not None:
        return cc
    gcc, clang = shutil.which('gcc'), shutil.which('clang')
    cc = gcc if gcc is not None else clang
    if cc is None:
        raise RuntimeError('Failed to find C compiler. Please specify via CC environment variable.')
    return cc


def build_replica(src, srcdir):
    so = os.path.join(srcdir, PROBE + sysconfig.get_config_var('EXT_SUFFIX'))
    cmd = [find_cc(), src, '-O3', '-shared', '-fPIC', '-Wno-psabi', '-o', so, '-I' + srcdir, '-I' + include_dir()]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError('%s failed (rc %d): %s' % (' '.join(cmd), proc.returncode, proc.stdout.strip()[-2000:]))
    return so


def build_with_triton(build, src, srcdir):
    args = dict(name=PROBE, src=src, srcdir=srcdir, library_dirs=[], include_dirs=[], libraries=[])
    if 'ccflags' in inspect.signature(build).parameters:
        args['ccflags'] = []
    return build(**args)


def main():
    out = {'python': sys.executable, 'include_dir': include_dir(), 'cc': None, 'builder': None, 'error': None}
    try:
        from triton.runtime.build import _build as triton_build  # pylint: disable=import-outside-toplevel
        import triton  # pylint: disable=import-outside-toplevel
        out['builder'] = 'triton %s' % triton.__version__
    except Exception:  # pylint: disable=broad-except
        triton_build = None
        out['builder'] = 'replica of triton/runtime/build.py (Triton is not importable here)'
    try:
        out['cc'] = find_cc()
        out['python_h'] = os.path.exists(os.path.join(out['include_dir'], 'Python.h'))
        with tempfile.TemporaryDirectory() as srcdir:
            src = os.path.join(srcdir, 'main.c')
            with open(src, 'w') as handle:
                handle.write(SOURCE)
            so = build_with_triton(triton_build, src, srcdir) if triton_build else build_replica(src, srcdir)
            spec = importlib.util.spec_from_file_location(PROBE, so)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            out['built'] = os.path.basename(so)
    except Exception as exc:  # pylint: disable=broad-except
        out['error'] = '%s: %s' % (type(exc).__name__, exc)
    sys.stdout.write(json.dumps(out, sort_keys=True) + '\n')
    return 1 if out['error'] else 0


if __name__ == '__main__':
    raise SystemExit(main())
