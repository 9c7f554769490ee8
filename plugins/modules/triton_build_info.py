#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: triton_build_info
short_description: Prove that a Python interpreter can build Triton's CUDA launcher stub (C compiler and Python.h)
version_added: 0.2.0
description:
  - Triton compiles a small C launcher with a C compiler and the interpreter's C(Python.h) at the first kernel launch
    (C(triton/runtime/build.py)); without them the first request to a server whose model runs Triton kernels (the
    Gated DeltaNet layers of Qwen3.5, FLA) fails with C(Failed to find C compiler).
  - Runs a probe with O(python) that builds and imports a C extension with Triton's own C(_build) when Triton is
    importable by that interpreter, else with the same compiler lookup (C(CC), else C(gcc), else C(clang)), include
    directory (the default C(sysconfig) scheme, C(posix_local) read as C(posix_prefix)) and command
    (C(-O3 -shared -fPIC)).
  - Read-only; writes only in a temporary directory, so it also runs in check mode.
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.attributes.read_only
options:
  python:
    description: The interpreter to prove, for example the SGLang virtualenv's C(bin/python).
    type: path
    required: true
  environment:
    description:
      - Environment of the probe on top of the module's, for example C(CC) as the service sets it, or C(PYTHONPATH).
    type: dict
    default: {}
seealso:
  - name: Triton's launcher build
    description: triton/runtime/build.py of the Triton release the pinned SGLang installs.
    link: https://github.com/triton-lang/triton/blob/main/python/triton/runtime/build.py
"""

EXAMPLES = r"""
- name: Prove the SGLang virtualenv can build Triton's launcher
  llmops.inference.triton_build_info:
    python: "{{ llmops_deployment.sglang.python }}"
"""

RETURN = r"""
ok:
  description: Whether the extension was built and imported.
  type: bool
  returned: always
builder:
  description: Triton's own builder (V(triton <version>)) or the replica used when Triton is not importable.
  type: str
  returned: when the probe ran
  sample: triton 3.8.0
cc:
  description: The C compiler chosen the way Triton chooses it.
  type: str
  returned: when the probe ran
  sample: /usr/bin/gcc
include_dir:
  description: The include directory of the interpreter that Triton passes with C(-I).
  type: str
  returned: when the probe ran
  sample: /usr/include/python3.11
python_h:
  description: Whether C(Python.h) exists in RV(include_dir).
  type: bool
  returned: when the probe ran
built:
  description: File name of the extension that was built and imported.
  type: str
  returned: when the build succeeded
  sample: llmops_cc_probe.cpython-311-x86_64-linux-gnu.so
error:
  description: Why the build failed (the compiler's output included), or null.
  type: str
  returned: always
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils.gpu.scripts import triton_build_probe

PROBE_NAME = 'triton_build_probe.py'


def probe_source():
    """Text of the probe, also when AnsiballZ imported it from its zip (the loader still has the source)."""
    loader = getattr(triton_build_probe, '__loader__', None)
    source = loader.get_source(triton_build_probe.__name__) if loader is not None and hasattr(loader, 'get_source') else None
    if source:
        return source
    with open(triton_build_probe.__file__) as handle:
        return handle.read()


def main():
    module = AnsibleModule(
        argument_spec=dict(
            python=dict(type='path', required=True),
            environment=dict(type='dict', default={}),
        ),
        supports_check_mode=True,
    )
    python = module.params['python']
    result = dict(changed=False, ok=False, error=None)
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        module.fail_json(msg='triton_build_info: python %s is not an executable file' % python, **result)
    path = os.path.join(module.tmpdir, PROBE_NAME)
    with open(path, 'w') as handle:
        handle.write(probe_source())
    env = dict((str(k), str(v)) for k, v in module.params['environment'].items())
    env.setdefault('LC_ALL', 'C')
    rc, out, err = module.run_command([python, path], environ_update=env)
    try:
        result.update(json.loads(out.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        result['error'] = 'the probe printed no result (rc %d): %s' % (rc, (err or out).strip()[-2000:])
    result['ok'] = rc == 0 and not result.get('error')
    result.pop('python', None)
    if not result['ok']:
        module.fail_json(msg=(
            '%s cannot build a C extension the way Triton does at the first kernel launch (%s): %s. Rule: Triton '
            'compiles its CUDA launcher with a C compiler (CC, else gcc, else clang) and Python.h of this interpreter '
            '(%s). Fix: install gcc, libc6-dev and the interpreter\'s -dev package (python<version>-dev; the '
            'sglang_server role does with sglang_server_manage_packages: true), or set CC.'
            % (python, result.get('builder') or '?', result['error'], result.get('include_dir') or '?')), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
