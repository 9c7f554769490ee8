# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA kernel module / user-space driver mismatch detection: the verdict of nvidia_driver_info and its remedies.

PRIVATE to the collection. An inspection puts together what the kernel module is (module_utils/gpu/system.py), which
libraries the loader would use (module_utils/gpu/loader.py) and what nvidia-smi said (module_utils/gpu/smi_banner.py), all read through
a ``RootFS`` so that the same code inspects the running system or a container's root filesystem from the host, and
turns every mismatch into a finding with a concrete remedy.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import posixpath
import re

from ansible_collections.llmops.inference.plugins.module_utils.gpu.cuda_compat import (
    BLACKWELL_COMPUTE_CAPABILITY_MAJORS,
    BLACKWELL_MIN_DRIVER_BRANCH,
    BLACKWELL_NAME_RE,
    cuda_min_driver,
    cuda_version_for_driver_branch,
    newest_cuda_for_driver,
)
from ansible_collections.llmops.inference.plugins.module_utils.gpu.loader import (
    is_compat_path,
    library_inventory,
    loader_search_path,
    resolve_soname,
)
from ansible_collections.llmops.inference.plugins.module_utils.gpu.smi_banner import nvidia_smi_record
from ansible_collections.llmops.inference.plugins.module_utils.gpu.system import (
    detect_arch,
    detect_context,
    read_gpus,
    read_kernel,
)
from ansible_collections.llmops.inference.plugins.module_utils.gpu.versions import (
    compare_versions,
    driver_branch,
    parse_version,
    versions_match,
)

# The libraries whose versions must equal the kernel module's, keyed by name, with their SONAME.
TRACKED_LIBRARIES = (
    ("libcuda", "libcuda.so.1"),
    ("libnvidia-ml", "libnvidia-ml.so.1"),
    ("libnvidia-ptxjitcompiler", "libnvidia-ptxjitcompiler.so.1"),
)
TRACKED_NAMES = tuple(name for name, dummy in TRACKED_LIBRARIES)
# Without these two nothing CUDA/NVML-based works; ptxjitcompiler is optional on minimal installs.
REQUIRED_LIBRARIES = ("libcuda", "libnvidia-ml")


def is_blackwell(name=None, compute_capability=None):
    """Blackwell by compute capability (10.x, 11.x, 12.x) or by product name."""
    if compute_capability:
        match = re.match(r"^\s*(?:sm_?)?(\d+)(?:\.(\d+))?", str(compute_capability))
        if match:
            major = int(match.group(1))
            if match.group(2) is None and major >= 100:
                major //= 10  # sm_120 / 120 -> 12
            return major in BLACKWELL_COMPUTE_CAPABILITY_MAJORS
    return bool(name and BLACKWELL_NAME_RE.search(name))


def is_blackwell_hint(hint):
    """gpu_architecture option: an architecture name (blackwell, hopper, ...), a compute capability or a GPU name."""
    if not hint:
        return None
    text = str(hint).strip()
    if re.match(r"^(?:sm_?)?\d+(?:\.\d+)?$", text, re.IGNORECASE):
        return is_blackwell(compute_capability=text)
    return is_blackwell(name=text)


def inspect(fs, expected_version=None, ld_library_path=None, cuda_runtime=None, gpu_architecture=None,
            allow_forward_compat=False, smi=None, machine=None):
    """Inspect the driver state under ``fs`` and return (result, warnings).

    ``smi`` is the module's nvidia-smi record (see nvidia_smi_record), None when nvidia-smi was not run.
    ``machine`` is platform.machine() of the inspecting host (used only for root /).
    """
    return _Inspection(fs, expected_version, ld_library_path, cuda_runtime, gpu_architecture, allow_forward_compat,
                       smi, machine).run()


class _Inspection(object):
    """One inspection; each check_* step adds findings (each with its remedy) and warnings."""

    def __init__(self, fs, expected_version, ld_library_path, cuda_runtime, gpu_architecture, allow_forward_compat,
                 smi, machine):
        self.fs = fs
        self.expected_version = expected_version
        self.cuda_runtime = cuda_runtime
        self.gpu_architecture = gpu_architecture
        self.allow_forward_compat = allow_forward_compat
        self.smi = smi or nvidia_smi_record(False, skipped_reason="not requested")
        self.findings, self.remediation, self.warnings = [], [], []
        self.kernel = read_kernel(fs)
        self.context = detect_context(fs)
        self.arch = detect_arch(fs, self.kernel["arch"], machine)
        self.search = loader_search_path(fs, ld_library_path, self.arch)
        self.inventory = library_inventory(fs, self.search)
        self.userspace, self.missing, self.broken = {}, [], {}
        for name, soname in TRACKED_LIBRARIES:
            active, others = resolve_soname(fs, self.search, soname)
            self.broken.update((other["soname_path"], other) for other in others if other["broken"])
            if active is None:
                self.missing.append(name)
            else:
                self.userspace[name] = active
        # The loaded kernel module is the truth; expected_version stands in where it is unreadable (container rootfs).
        self.reference, self.reference_source = None, None
        if self.kernel["version"]:
            self.reference, self.reference_source = self.kernel["version"], "kernel_module"
        elif expected_version:
            self.reference, self.reference_source = expected_version, "expected_version"
        elif parse_version(self.smi.get("driver_version")):
            self.reference, self.reference_source = self.smi["driver_version"], "nvidia_smi"
        self.forward_compat = {}
        self.inactive = []

    def add(self, code, msg, remedy=None, **details):
        item = {"code": code, "msg": msg}
        item.update(details)
        self.findings.append(item)
        if remedy and remedy not in self.remediation:
            self.remediation.append(remedy)

    def run(self):
        self.check_kernel()
        self.check_userspace()
        self.check_multiple_active()
        self.classify_inactive()
        self.check_nvidia_smi()
        runtime, supported = self.check_cuda_runtime()
        gpus, blackwell = self.check_blackwell()
        if self.reference is None and (self.userspace or not self.fs.is_host_root):
            self.warnings.append("no reference version: the kernel module version is not readable under %s; pass "
                                 "expected_version (the host's /sys/module/nvidia/version) to compare the user-space "
                                 "libraries with it" % self.fs.root)
        cuda_api, cuda_api_source = self.cuda_driver_api_version()
        kernel = self.kernel
        mismatches = [item["msg"] for item in self.findings]
        result = {
            "root": self.fs.root,
            "context": self.context,
            "kernel_module_version": kernel["version"],
            "kernel_module_version_source": kernel["source"],
            "kernel_module_flavor": kernel["flavor"],
            "kernel_modules": dict(kernel["submodules"], nvidia=kernel["version"]) if kernel["version"] else kernel["submodules"],
            "reference_version": self.reference,
            "reference_source": self.reference_source,
            "userspace_versions": dict((name, _public_library(item)) for name, item in self.userspace.items()),
            "missing_libraries": self.missing,
            "inactive_libraries": self.inactive,
            "loader_search_path": [{"path": e["path"], "source": e["source"], "conf_file": e["conf_file"]} for e in self.search],
            "cuda_driver_api_version": cuda_api,
            "cuda_driver_api_version_source": cuda_api_source,
            "cuda_runtime": runtime["cuda"],
            "cuda_runtime_min_driver": runtime["min_driver"],
            "cuda_runtime_min_driver_source": runtime["source"],
            "cuda_runtime_supported": supported,
            "forward_compat_libraries": self.forward_compat,
            "gpus": gpus,
            "blackwell": blackwell,
            "nvidia_smi": self.smi,
            "findings": self.findings,
            "mismatches": mismatches,
            "consistent": not mismatches,
            "remediation": " ".join(self.remediation) if self.remediation else None,
        }
        return result, self.warnings

    # -- steps -----------------------------------------------------------------------------------------------------

    def check_kernel(self):
        loaded, expected = self.kernel["version"], self.expected_version
        if loaded and expected and not versions_match(loaded, expected):
            self.add("kernel_expected_mismatch", "loaded kernel module is %s but expected_version is %s" % (loaded, expected),
                     "The loaded NVIDIA kernel module (%s) is not the expected %s: if the host driver was upgraded, reboot "
                     "the host (or reload the nvidia modules); otherwise correct expected_version." % (loaded, expected),
                     version=loaded, reference=expected)
        for name, value in sorted(self.kernel["submodules"].items()):
            if loaded and not versions_match(value, loaded):
                self.add("kernel_submodule_mismatch", "kernel module %s is %s but nvidia is %s" % (name, value, loaded),
                         "Reload the NVIDIA kernel modules (or reboot) so that %s matches nvidia %s." % (name, loaded),
                         library=name, version=value, reference=loaded)

    def check_userspace(self):
        reference = self.reference
        if not reference:
            return
        for name, item in sorted(self.userspace.items()):
            version = item["version"]
            if version is None:
                self.warnings.append("cannot tell the version of %s (resolved to %s): its file name has no version suffix"
                                     % (item["soname_path"], item["path"]))
                continue
            if versions_match(version, reference):
                continue
            newer = compare_versions(version, reference) > 0
            if item["compat"] and self.allow_forward_compat and newer and name != "libnvidia-ml":
                self.forward_compat[name] = version
                continue
            where = "%s (%s)" % (item["path"], _origin(item))
            if item["compat"]:
                effect = ("forward compatibility works only on data-center GPUs (else CUDA error 804)" if newer
                          else "an older compat library over a newer driver fails with CUDA error 803")
                self.add("cuda_compat_on_loader_path", "%s %s is the CUDA forward-compat library %s, not the driver %s: %s"
                         % (name, version, where, reference, effect),
                         _compat_remedy(item), library=name, version=version, reference=reference, path=item["path"])
                continue
            # A matching copy already reachable on the loader path needs a re-link, not a reinstall.
            matching = sorted((other["loader_index"], other["path"]) for other in self.inventory.values()
                              if other["library"] == name and other["loader_index"] is not None
                              and versions_match(other["version"], reference))
            self.add("userspace_version_mismatch",
                     "%s %s at %s does not match the %s %s" % (name, version, where, _ref_label(self.reference_source), reference),
                     _relink_remedy(item, matching[0]) if matching else self.install_remedy(version),
                     library=name, version=version, reference=reference, path=item["path"])
        for name in self.missing:
            if name in REQUIRED_LIBRARIES:
                self.add("missing_library", "%s (%s) is not on the loader path although driver %s is expected"
                         % (name, dict(TRACKED_LIBRARIES)[name], reference),
                         self.install_remedy(None), library=name, reference=reference)

    def active_versions(self):
        return sorted(set(item["version"] for name, item in self.userspace.items()
                          if item["version"] and name not in self.forward_compat), key=_version_key)

    def check_multiple_active(self):
        versions = self.active_versions()
        if len(_distinct(versions)) < 2:
            return
        # With a reference every off-version library already has its own finding and remedy.
        remedy = None if self.reference else (
            "Reinstall one driver version's user-space libraries, remove the others and run ldconfig; pass "
            "expected_version to check them against the kernel module.")
        self.add("multiple_active_versions", "the loader resolves more than one driver version: %s" % ", ".join(
            "%s=%s" % (name, item["version"]) for name, item in sorted(self.userspace.items())), remedy, versions=versions)

    def classify_inactive(self):
        """Every inventoried library the loader does not use, with the reason; stale ones on the path are findings."""
        versions = _distinct(self.active_versions())
        consensus = self.reference or (versions[0] if len(versions) == 1 else None)
        active_paths = set(item["path"] for item in self.userspace.values())
        for path in sorted(self.inventory):
            item = self.inventory[path]
            if path in active_paths:
                continue
            reason = self._inactive_reason(item, consensus)
            if reason is None:
                continue
            self.inactive.append({"path": path, "library": item["library"], "version": item["version"], "reason": reason})
            if reason in ("stale_version", "shadowed_by_earlier_directory") and item["library"] in TRACKED_NAMES \
                    and consensus and not versions_match(item["version"], consensus):
                self.add("stale_library_on_loader_path",
                         "%s %s (%s) is on the loader path next to driver %s; ldconfig or a different search order "
                         "would load it" % (item["library"], item["version"], path, consensus),
                         "Remove the stale library %s (a leftover of another driver version) and run ldconfig." % path,
                         library=item["library"], version=item["version"], reference=consensus, path=path)
        for soname_path in sorted(self.broken):
            self.inactive.append({"path": soname_path, "library": _library_of(soname_path), "version": None,
                                  "reason": "broken_symlink"})

    def _inactive_reason(self, item, consensus):
        matches = consensus is not None and versions_match(item["version"], consensus)
        tracked = item["library"] in TRACKED_NAMES
        if item["loader_index"] is None:
            if item["compat"]:
                return "cuda_compat_not_on_loader_path"
            # Companions of the installed driver reached only through links are noise.
            return None if matches and not tracked else "not_on_loader_path"
        if not tracked:
            if matches:
                return None  # libnvidia-glcore & co. of the active driver
            return "cuda_compat_on_loader_path" if item["compat"] else "stale_version"
        active = self.userspace.get(item["library"])
        if active is not None and item["loader_index"] > active["index"]:
            return "shadowed_by_earlier_directory"
        return "not_soname_target" if matches else "stale_version"

    def check_nvidia_smi(self):
        smi, reference = self.smi, self.reference
        if smi.get("error_kind") == "driver_library_mismatch":
            nvml = smi.get("nvml_version")
            self.add("nvml_driver_library_mismatch",
                     "nvidia-smi: Failed to initialize NVML: Driver/library version mismatch (NVML library %s, kernel module %s)"
                     % (nvml or "unknown", self.kernel["version"] or reference or "unknown"),
                     self.install_remedy(nvml) if reference else None, version=nvml, reference=reference)
        elif parse_version(smi.get("smi_version")) and reference and not versions_match(smi["smi_version"], reference):
            self.add("nvidia_smi_version_mismatch", "nvidia-smi %s does not match the %s %s"
                     % (smi["smi_version"], _ref_label(self.reference_source), reference),
                     self.install_remedy(smi["smi_version"]), version=smi["smi_version"], reference=reference)
        elif smi.get("error"):
            self.warnings.append("nvidia-smi failed: %s" % smi["error"])

    def umd_version(self):
        """The user-mode driver an application loads (libcuda), else the reference."""
        return (self.userspace.get("libcuda") or {}).get("version") or self.reference

    def cuda_driver_api_version(self):
        if self.smi.get("cuda_version"):
            return self.smi["cuda_version"], "nvidia_smi"
        branch = driver_branch(self.umd_version())
        cuda = cuda_version_for_driver_branch(branch) if branch else None
        return cuda, "driver_branch_table" if cuda else None

    def check_cuda_runtime(self):
        if not self.cuda_runtime:
            return {"cuda": None, "min_driver": None, "source": None}, None
        runtime, driver = cuda_min_driver(self.cuda_runtime), self.umd_version()
        if runtime["min_driver"] is None:
            self.warnings.append("no minimum driver known for cuda_runtime %s" % self.cuda_runtime)
            return runtime, None
        if not driver:
            self.warnings.append("cuda_runtime given but no driver version was found to compare it with")
            return runtime, None
        supported = compare_versions(driver, _pad_min(runtime["min_driver"])) >= 0
        if not supported:
            newest = newest_cuda_for_driver(parse_version(driver))
            cuda, minimum = runtime["cuda"], runtime["min_driver"]
            self.add("cuda_runtime_unsupported", "CUDA %s needs driver >= %s, found %s" % (cuda, minimum, driver),
                     "CUDA %s needs driver >= %s: upgrade the host driver (and the container user space) to at least %s, "
                     "or use a build for CUDA %s or older." % (cuda, minimum, minimum, newest or "an older release"),
                     version=driver, reference=minimum)
        return runtime, supported

    def check_blackwell(self):
        """Blackwell needs an R570+ driver and the open kernel modules."""
        gpus = read_gpus(self.fs)
        for gpu in self.smi.get("gpus") or []:
            known = [g for g in gpus if g["name"] == gpu["name"] and g["compute_capability"] is None]
            if known:
                known[0]["compute_capability"] = gpu["compute_capability"]
            else:
                gpus.append({"name": gpu["name"], "bus_id": None, "compute_capability": gpu["compute_capability"],
                             "source": "nvidia-smi"})
        blackwell = is_blackwell_hint(self.gpu_architecture)
        if blackwell is None and gpus:
            blackwell = any(is_blackwell(g["name"], g["compute_capability"]) for g in gpus)
        if not blackwell:
            return gpus, blackwell
        kernel = self.kernel
        if kernel["flavor"] == "proprietary":
            self.add("blackwell_proprietary_module",
                     "Blackwell GPUs need the open kernel modules but the loaded module is proprietary (%s)" % kernel["version"],
                     "Blackwell is supported only with NVIDIA's open kernel modules: reinstall the host driver with "
                     "--kernel-module-type=open (or the nvidia-open / *-open packages) and reboot.", version=kernel["version"])
        elif kernel["flavor"] is None:
            self.warnings.append("Blackwell GPU: the kernel module flavour is unknown here; check on the host that the open "
                                 "kernel modules are loaded")
        upgrade = ("Blackwell needs driver R%d or newer with the open kernel modules (and CUDA 12.8+): upgrade the host "
                   "driver, then install the same version's user space in the container." % BLACKWELL_MIN_DRIVER_BRANCH)
        host_version = kernel["version"] or self.reference
        host_too_old = host_version and driver_branch(host_version) < BLACKWELL_MIN_DRIVER_BRANCH
        for label, version in (("kernel module", host_version), ("libcuda", (self.userspace.get("libcuda") or {}).get("version"))):
            if version and driver_branch(version) < BLACKWELL_MIN_DRIVER_BRANCH:
                # An old libcuda on a new enough host is already a user-space mismatch with its own remedy.
                self.add("blackwell_driver_too_old", "Blackwell GPUs need an R%d+ driver but the %s is %s"
                         % (BLACKWELL_MIN_DRIVER_BRANCH, label, version),
                         upgrade if host_too_old or not host_version else None, library=label, version=version)
        return gpus, blackwell

    def install_remedy(self, found):
        """How to bring the user space to the reference version."""
        kernel_version, reference = self.kernel["version"], self.reference
        if self.context == "host" and kernel_version and parse_version(found) and compare_versions(found, kernel_version) > 0:
            return ("The loaded kernel module (%s) is older than the installed user-space driver (%s): the driver was "
                    "upgraded without reloading the module. Reboot the host (or unload and reload the nvidia modules) so "
                    "both are %s." % (kernel_version, found, found))
        where = "inside the container" if self.context in ("container", "rootfs") else "on this host"
        return ("Install NVIDIA-Linux-%s-%s.run with --no-kernel-modules %s (or the distro packages pinned to %s), then "
                "run ldconfig." % (self.arch, reference, where, reference))


def _public_library(item):
    return {"version": item["version"], "path": item["path"], "soname_path": item["soname_path"],
            "directory": item["directory"], "source": item["source"], "compat": item["compat"]}


def _origin(item):
    if item["source"] == "ld.so.conf":
        return "via %s" % item["conf_file"]
    if item["source"] == "ld_library_path":
        return "via ld_library_path"
    return "default directory %s" % item["directory"]


def _ref_label(source):
    return {"kernel_module": "loaded kernel module", "expected_version": "expected version",
            "nvidia_smi": "driver reported by nvidia-smi"}.get(source, "reference")


def _compat_remedy(item):
    if not is_compat_path(item["soname_path"]):
        return ("%s links to the CUDA forward-compat library %s: remove the link and run ldconfig so that it points at the "
                "native driver library again." % (item["soname_path"], item["path"]))
    if item["source"] == "ld_library_path":
        how = "remove %s from LD_LIBRARY_PATH" % item["directory"]
    else:
        how = "delete %s (or the line %s in it) and run ldconfig" % (item["conf_file"], item["directory"])
    return ("Take the CUDA forward-compat directory %s off the loader path: %s; the native driver libraries must "
            "match the kernel module." % (item["directory"], how))


def _relink_remedy(item, matching):
    """The active library is off-version but a matching one is reachable: say how to make the loader pick it."""
    index, path = matching
    if index == item["index"]:
        return ("%s points at %s, but the matching %s is next to it: remove %s and run ldconfig."
                % (item["soname_path"], item["path"], path, item["path"]))
    if index < item["index"]:
        return "The matching %s comes earlier on the loader path but has no %s link yet: run ldconfig." % (
            path, posixpath.basename(item["soname_path"]))
    if item["source"] == "ld_library_path":
        how = "remove it or take %s off the service's LD_LIBRARY_PATH" % item["directory"]
    elif item["source"] == "ld.so.conf":
        how = "remove it (or take %s out of %s) and run ldconfig" % (item["directory"], item["conf_file"])
    else:
        how = "remove it and run ldconfig"
    return "%s shadows the matching %s: %s." % (item["path"], path, how)


def _library_of(path):
    name = posixpath.basename(path or "")
    return name.split(".so", 1)[0]


def _version_key(version):
    parsed = parse_version(version) or ()
    return parsed + (0,) * (3 - len(parsed))


def _distinct(versions):
    """Versions that do not prefix-match each other."""
    distinct = []
    for version in versions:
        if not any(versions_match(version, other) for other in distinct):
            distinct.append(version)
    return distinct


def _pad_min(version):
    """Table minimums may be a bare branch ("525"); make them comparable."""
    return version if "." in version else version + ".0"
