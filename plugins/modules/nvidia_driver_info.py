#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: nvidia_driver_info
short_description: Detect NVIDIA kernel module / user-space driver version mismatches (host, container or rootfs)
version_added: 0.1.0
description:
  - Reads the loaded NVIDIA kernel module version (C(/sys/module/nvidia/version), falling back to
    C(/proc/driver/nvidia/version), which also gives the open or proprietary flavour).
  - Resolves C(libcuda.so.1), C(libnvidia-ml.so.1) and C(libnvidia-ptxjitcompiler.so.1) the way the dynamic loader
    would (O(ld_library_path) first, then C(/etc/ld.so.conf) with its C(include) files, then the default directories)
    and reads their versions from the file names the SONAME links point at.
  - Inventories every other C(libcuda.so.*) and C(libnvidia-*.so.*) in those directories and in C(/usr/local/cuda*/compat),
    C(/usr/local/nvidia/lib64) and similar places, and reports the ones the loader does not use with the reason.
    CUDA forward-compat libraries are reported but are a mismatch only when they are on the loader path.
  - Parses the C(nvidia-smi) banner (classic C(Driver Version)/C(CUDA Version) and R610+ C(KMD Version)/C(CUDA UMD Version)),
    C(nvidia-smi --version) and its C(Driver/library version mismatch) failure (C(Failed to initialize NVML)).
  - Checks the minimum driver of a CUDA runtime (O(cuda_runtime)) and the Blackwell rule (R570+ and open kernel modules).
  - Every file is read under O(root), so the same module inspects a container's root filesystem from the host
    (symlinks are followed inside O(root), absolute targets included). Commands run only when O(root=/).
  - Read-only. A mismatch fails the task only with O(fail_on_mismatch=true); otherwise RV(consistent) is V(false)
    and RV(mismatches) and RV(remediation) say what is wrong and how to fix it.
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.attributes.read_only
options:
  root:
    description:
      - Directory to treat as C(/) for every file read, for example a container rootfs such as
        C(/var/lib/lxc/101/rootfs) inspected from the host.
      - Symlinks are resolved inside it; absolute link targets are re-rooted under it.
      - When it is not C(/), C(nvidia-smi) is not run and the kernel files usually do not exist; pass O(expected_version).
    type: path
    default: /
  expected_version:
    description:
      - The driver version the user-space libraries must match, for example the host's kernel module version
        (C(cat /sys/module/nvidia/version) on the host) when inspecting a container or its rootfs.
      - When the kernel module version is readable it stays the reference, and a different O(expected_version) is
        reported as a mismatch.
    type: str
  ld_library_path:
    description:
      - Extra loader directories searched before C(ld.so.conf), like the C(LD_LIBRARY_PATH) of the service that will
        use the GPU. Elements may also be colon-separated lists.
    type: list
    elements: str
  cuda_runtime:
    description:
      - CUDA runtime the workload is built for, such as V(12.8), V(12.8u1), V(12.8.1) (same as 12.8 Update 1), V(13.1u1)
        or a wheel tag such as V(cu128). Sets RV(cuda_runtime_min_driver) and RV(cuda_runtime_supported); an
        unsupported runtime is a mismatch.
    type: str
  gpu_architecture:
    description:
      - Architecture hint for the Blackwell rule when the GPUs cannot be seen (for example in a rootfs), given as an
        architecture name (V(blackwell), V(hopper)), a compute capability (V(12.0), V(10.0), V(sm_120)) or a GPU name.
      - Without it the GPUs come from C(/proc/driver/nvidia/gpus) and C(nvidia-smi).
    type: str
  allow_forward_compat:
    description:
      - Accept CUDA forward-compat libraries (C(/usr/local/cuda-*/compat)) on the loader path when they are newer than
        the driver (forward compatibility on data-center GPUs). C(libnvidia-ml) must still match.
    type: bool
    default: false
  fail_on_mismatch:
    description:
      - Fail the task when any mismatch is found. The failure message names the versions and the remediation, and all
        return values are included.
    type: bool
    default: false
  run_nvidia_smi:
    description:
      - Run C(nvidia-smi) (only when O(root=/) and the binary exists) and parse its banner and GPU list.
    type: bool
    default: true
notes:
  - NVIDIA requires the user-space libraries to be exactly the kernel module's version; forward compat is the only
    sanctioned exception.
seealso:
  - name: CUDA compatibility
    description: Minor-version and forward compatibility rules.
    link: https://docs.nvidia.com/deploy/cuda-compatibility/
"""

EXAMPLES = r"""
- name: Check the driver on the host (kernel module vs. user space vs. nvidia-smi)
  llmops.inference.nvidia_driver_info:
  register: host_driver

- name: Check the user space inside an LXC against the host's kernel module, failing on a mismatch
  llmops.inference.nvidia_driver_info:
    expected_version: "{{ hostvars['pve1'].host_driver.kernel_module_version }}"
    ld_library_path: /opt/sglang/venv/lib/python3.12/site-packages/nvidia/cuda_runtime/lib
    cuda_runtime: "12.8"
    fail_on_mismatch: true

- name: Inspect a container's rootfs from the Proxmox host (nothing is run inside it)
  llmops.inference.nvidia_driver_info:
    root: /var/lib/lxc/101/rootfs
    expected_version: "{{ host_driver.kernel_module_version }}"
    gpu_architecture: blackwell
  register: ct101_driver

- name: Show what to do
  ansible.builtin.debug:
    msg: "{{ ct101_driver.mismatches + [ct101_driver.remediation] }}"
  when: not ct101_driver.consistent
"""

RETURN = r"""
root:
  description: The root directory that was inspected.
  returned: always
  type: str
  sample: /var/lib/lxc/101/rootfs
context:
  description: V(host), V(container) (inspected from inside) or V(rootfs) (a root filesystem inspected from outside).
  returned: always
  type: str
  sample: host
kernel_module_version:
  description: Version of the loaded C(nvidia) kernel module; V(null) when not readable (no driver, or a rootfs).
  returned: always
  type: str
  sample: 580.159.04
kernel_module_version_source:
  description: The file the kernel module version came from.
  returned: always
  type: str
  sample: /sys/module/nvidia/version
kernel_module_flavor:
  description: V(open), V(proprietary) or V(null) when C(/proc/driver/nvidia/version) is not readable.
  returned: always
  type: str
  sample: open
kernel_modules:
  description: Versions of the loaded C(nvidia), C(nvidia_uvm), C(nvidia_modeset) and C(nvidia_drm) modules that were readable.
  returned: always
  type: dict
  sample: {"nvidia": "580.159.04", "nvidia_uvm": "580.159.04"}
reference_version:
  description: The version the user space must match (kernel module, else O(expected_version), else nvidia-smi's driver).
  returned: always
  type: str
  sample: 580.159.04
reference_source:
  description: V(kernel_module), V(expected_version), V(nvidia_smi) or V(null).
  returned: always
  type: str
  sample: kernel_module
userspace_versions:
  description:
    - The libraries the loader resolves, keyed by library name (V(libcuda), V(libnvidia-ml), V(libnvidia-ptxjitcompiler)).
    - Paths are absolute paths inside O(root).
  returned: always
  type: dict
  contains:
    version:
      description: Version from the resolved file name; V(null) if the file name carries none.
      type: str
    path:
      description: The file the SONAME link resolves to.
      type: str
    soname_path:
      description: The SONAME link the loader finds first, for example C(/usr/lib/x86_64-linux-gnu/libcuda.so.1).
      type: str
    directory:
      description: The loader search directory it was found in.
      type: str
    source:
      description: How that directory is on the search path, V(ld_library_path), V(ld.so.conf) or V(default).
      type: str
    compat:
      description: Whether it is a CUDA forward-compat library.
      type: bool
  sample:
    libcuda:
      version: 580.159.04
      path: /usr/local/nvidia/lib64/libcuda.so.580.159.04
      soname_path: /usr/local/nvidia/lib64/libcuda.so.1
      directory: /usr/local/nvidia/lib64
      source: ld.so.conf
      compat: false
missing_libraries:
  description: Library names whose SONAME is not found on the loader path.
  returned: always
  type: list
  elements: str
  sample: []
inactive_libraries:
  description: Driver-versioned NVIDIA libraries present but not used by the loader.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: Canonical path inside O(root) (the SONAME link itself for V(broken_symlink)).
      type: str
    library:
      description: Library name, for example V(libcuda).
      type: str
    version:
      description: Version from the file name.
      type: str
    reason:
      description:
        - V(cuda_compat_not_on_loader_path), V(cuda_compat_on_loader_path), V(not_on_loader_path),
          V(shadowed_by_earlier_directory), V(stale_version) (another driver version on the loader path),
          V(not_soname_target) (right version, but the SONAME link points elsewhere) or V(broken_symlink).
      type: str
  sample:
    - path: /usr/local/cuda-13.0/compat/libcuda.so.580.95.05
      library: libcuda
      version: 580.95.05
      reason: cuda_compat_not_on_loader_path
loader_search_path:
  description: The existing loader search directories in order, de-duplicated by their canonical path.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: Directory as configured.
      type: str
    source:
      description: V(ld_library_path), V(ld.so.conf) or V(default).
      type: str
    conf_file:
      description: The ld.so.conf file naming it (V(null) for other sources).
      type: str
  sample:
    - path: /usr/local/nvidia/lib64
      source: ld.so.conf
      conf_file: /etc/ld.so.conf.d/git-farm-nvidia-folders.conf
cuda_driver_api_version:
  description: CUDA version of the driver API (nvidia-smi's C(CUDA Version)), else derived from the driver branch.
  returned: always
  type: str
  sample: "13.0"
cuda_driver_api_version_source:
  description: V(nvidia_smi), V(driver_branch_table) or V(null).
  returned: always
  type: str
  sample: driver_branch_table
cuda_runtime:
  description: O(cuda_runtime) normalised (V(12.8u1) style); V(null) when not given.
  returned: always
  type: str
  sample: 13.0u2
cuda_runtime_min_driver:
  description: Minimum driver for O(cuda_runtime); V(null) when not given or unknown.
  returned: always
  type: str
  sample: 580.95.05
cuda_runtime_min_driver_source:
  description:
    - V(toolkit_table) (exact release), V(toolkit_table_nearest_update) (closest lower update of the same minor),
      V(minor_version_compatibility) (release not in the table; the major's floor) or V(null).
  returned: always
  type: str
  sample: toolkit_table
cuda_runtime_supported:
  description: Whether the user-mode driver (libcuda, else the reference) meets RV(cuda_runtime_min_driver); V(null) if unknown.
  returned: always
  type: bool
  sample: true
forward_compat_libraries:
  description: Newer CUDA forward-compat libraries accepted on the loader path because of O(allow_forward_compat).
  returned: always
  type: dict
  sample: {}
gpus:
  description: GPUs seen in C(/proc/driver/nvidia/gpus) and/or by C(nvidia-smi).
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: GPU model.
      type: str
    bus_id:
      description: PCI address from C(/proc/driver/nvidia/gpus).
      type: str
    compute_capability:
      description: Compute capability from C(nvidia-smi).
      type: str
    source:
      description: Where the GPU was first seen.
      type: str
  sample:
    - name: NVIDIA H200
      bus_id: "0000:00:06.0"
      compute_capability: "9.0"
      source: /proc/driver/nvidia/gpus
blackwell:
  description: Whether the Blackwell rule applies (from O(gpu_architecture) or the GPUs); V(null) if unknown.
  returned: always
  type: bool
  sample: false
nvidia_smi:
  description: How C(nvidia-smi) ran and what it printed.
  returned: always
  type: dict
  contains:
    ran:
      description: Whether it was run.
      type: bool
    rc:
      description: Exit status of the banner call.
      type: int
    command:
      description: The command line of the banner call.
      type: str
    skipped_reason:
      description: Why it was not run.
      type: str
    smi_version:
      description: Version of nvidia-smi itself.
      type: str
    driver_version:
      description: C(Driver Version) (C(KMD Version) on R610+).
      type: str
    cuda_version:
      description: C(CUDA Version) (C(CUDA UMD Version) on R610+).
      type: str
    nvml_version:
      description: NVML version (C(nvidia-smi --version), or C(NVML library version) after a mismatch).
      type: str
    format:
      description: V(classic), V(kmd) (R610+ banner), V(version) (C(nvidia-smi --version)) or V(null).
      type: str
    error:
      description: "The failure line, for example C(Failed to initialize NVML: Driver/library version mismatch)."
      type: str
    error_kind:
      description: V(driver_library_mismatch), V(no_driver), V(nvml_init_failed), V(unknown) or V(null).
      type: str
    gpus:
      description: C(name) and C(compute_capability) per GPU from C(--query-gpu).
      type: list
      elements: dict
  sample:
    ran: true
    rc: 0
    command: nvidia-smi
    skipped_reason: null
    smi_version: 580.159.04
    driver_version: 580.159.04
    cuda_version: "13.0"
    nvml_version: null
    format: classic
    error: null
    error_kind: null
    gpus: [{"name": "NVIDIA H200", "compute_capability": "9.0"}]
findings:
  description: The mismatches as structured records (same order as RV(mismatches)).
  returned: always
  type: list
  elements: dict
  contains:
    code:
      description:
        - V(kernel_expected_mismatch), V(kernel_submodule_mismatch), V(userspace_version_mismatch),
          V(cuda_compat_on_loader_path), V(missing_library), V(multiple_active_versions),
          V(stale_library_on_loader_path), V(nvml_driver_library_mismatch), V(nvidia_smi_version_mismatch),
          V(cuda_runtime_unsupported), V(blackwell_proprietary_module) or V(blackwell_driver_too_old).
      type: str
    msg:
      description: Human-readable finding.
      type: str
    library:
      description: Library or module concerned, when there is one.
      type: str
    version:
      description: The version found.
      type: str
    reference:
      description: The version it was compared with.
      type: str
    path:
      description: The file concerned, when there is one.
      type: str
    versions:
      description: All versions involved (V(multiple_active_versions)).
      type: list
      elements: str
  sample:
    - code: userspace_version_mismatch
      msg: libcuda 565.57.01 at /usr/lib/x86_64-linux-gnu/libcuda.so.565.57.01 (via /etc/ld.so.conf.d/x86_64-linux-gnu.conf)
        does not match the loaded kernel module 590.48.01
      library: libcuda
      version: 565.57.01
      reference: 590.48.01
      path: /usr/lib/x86_64-linux-gnu/libcuda.so.565.57.01
mismatches:
  description: Human-readable findings; empty when consistent.
  returned: always
  type: list
  elements: str
  sample:
    - libcuda 565.57.01 at /usr/lib/x86_64-linux-gnu/libcuda.so.565.57.01 (via /etc/ld.so.conf.d/x86_64-linux-gnu.conf)
      does not match the loaded kernel module 590.48.01
consistent:
  description: V(true) when there are no mismatches.
  returned: always
  type: bool
  sample: false
remediation:
  description: What to do about the mismatches, as concrete instructions; V(null) when consistent.
  returned: always
  type: str
  sample: Install NVIDIA-Linux-x86_64-590.48.01.run with --no-kernel-modules inside the container (or the distro packages
    pinned to 590.48.01), then run ldconfig.
"""

import platform

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils.gpu.cuda_compat import parse_cuda_version
from ansible_collections.llmops.inference.plugins.module_utils.gpu.driver import inspect
from ansible_collections.llmops.inference.plugins.module_utils.gpu.nvidia_smi import query_gpu_args
from ansible_collections.llmops.inference.plugins.module_utils.gpu.smi_banner import GPU_QUERY_FIELDS, nvidia_smi_record
from ansible_collections.llmops.inference.plugins.module_utils.gpu.versions import parse_version
from ansible_collections.llmops.inference.plugins.module_utils.host.rootfs import RootFS

NVIDIA_SMI_DIRS = ["/usr/bin", "/usr/local/nvidia/bin", "/usr/local/bin"]
# nvidia-smi can hang on a wedged GPU; bound it with coreutils timeout when that exists.
NVIDIA_SMI_TIMEOUT = "120"


def build_module():
    return AnsibleModule(
        argument_spec=dict(
            root=dict(type="path", default="/"),
            expected_version=dict(type="str"),
            ld_library_path=dict(type="list", elements="str"),
            cuda_runtime=dict(type="str"),
            gpu_architecture=dict(type="str"),
            allow_forward_compat=dict(type="bool", default=False),
            fail_on_mismatch=dict(type="bool", default=False),
            run_nvidia_smi=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )


def run_nvidia_smi(module, fs):
    """Run nvidia-smi (banner, --version fallback, GPU query) and return the nvidia_smi record."""
    if not fs.is_host_root:
        return nvidia_smi_record(False, skipped_reason="root is not /")
    if not module.params["run_nvidia_smi"]:
        return nvidia_smi_record(False, skipped_reason="run_nvidia_smi is false")
    smi = module.get_bin_path("nvidia-smi", opt_dirs=NVIDIA_SMI_DIRS)
    if not smi:
        return nvidia_smi_record(False, skipped_reason="nvidia-smi not found")
    timeout = module.get_bin_path("timeout")
    prefix = [timeout, NVIDIA_SMI_TIMEOUT] if timeout else []
    environ = {"LANGUAGE": "C", "LC_ALL": "C"}
    rc, out, err = module.run_command(prefix + [smi], environ_update=environ)
    record = nvidia_smi_record(True, rc, out, err, command="nvidia-smi")
    if record["format"] is None and rc == 0:
        # No banner on this build: --version prints the same versions line by line.
        rc, out, err = module.run_command(prefix + [smi, "--version"], environ_update=environ)
        record = nvidia_smi_record(True, rc, out, err, command="nvidia-smi --version")
    if record["error"] is None:
        qrc, qout, dummy = module.run_command(prefix + [smi] + query_gpu_args(GPU_QUERY_FIELDS), environ_update=environ)
        if qrc == 0:
            record = nvidia_smi_record(True, rc, out, err, query_stdout=qout, command=record["command"])
    return record


def main():
    module = build_module()
    params = module.params
    if params["expected_version"] is not None and not parse_version(params["expected_version"]):
        module.fail_json(msg="expected_version must look like 590.48.01 or 515.76, got %r" % params["expected_version"])
    if params["cuda_runtime"] is not None and parse_cuda_version(params["cuda_runtime"]) is None:
        module.fail_json(msg="cuda_runtime must look like 12.8, 12.8u1, 12.8.1 or cu128, got %r" % params["cuda_runtime"])
    fs = RootFS(params["root"])
    if not fs.isdir("/"):
        module.fail_json(msg="root %s is not a directory" % params["root"])

    result, warnings = inspect(
        fs,
        expected_version=params["expected_version"],
        ld_library_path=params["ld_library_path"],
        cuda_runtime=params["cuda_runtime"],
        gpu_architecture=params["gpu_architecture"],
        allow_forward_compat=params["allow_forward_compat"],
        smi=run_nvidia_smi(module, fs),
        machine=platform.machine(),
    )
    for warning in warnings:
        module.warn(warning)
    if params["fail_on_mismatch"] and not result["consistent"]:
        module.fail_json(msg="NVIDIA driver mismatch: %s. Remediation: %s" % ("; ".join(result["mismatches"]), result["remediation"] or "n/a"),
                         changed=False, **result)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
