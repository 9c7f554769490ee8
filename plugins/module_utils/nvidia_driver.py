# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA kernel module / user-space driver mismatch detection (pure logic for nvidia_driver_info).

PRIVATE to the collection. Everything here reads files under a root directory (``RootFS``) so that the same code
inspects the running system (root ``/``) or a container's root filesystem from the host. Commands (nvidia-smi) are
run by the module and only their output is parsed here.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import fnmatch
import os
import posixpath
import re

from ansible_collections.llmops.inference.plugins.module_utils.cuda_compat import (
    BLACKWELL_COMPUTE_CAPABILITY_MAJORS,
    BLACKWELL_MIN_DRIVER_BRANCH,
    BLACKWELL_NAME_RE,
    cuda_min_driver,
    cuda_version_for_driver_branch,
    newest_cuda_for_driver,
)
from ansible_collections.llmops.inference.plugins.module_utils.nvidia_smi import NvidiaSmiParseError, parse_query_gpu
from ansible_collections.llmops.inference.plugins.module_utils.pci_sysfs import parse_nvidia_gpu_information

# A driver version as it appears in file names and banners: 3+ digit branch, 2 or 3 parts (515.76, 590.48.01).
DRIVER_VERSION_RE = re.compile(r"^\d{3,}\.\d+(?:\.\d+)?$")
LIB_VERSION_RE = re.compile(r"\.so\.(\d+\.\d+(?:\.\d+)?)$")
# Driver-versioned library files worth inventorying (libnvidia-egl-wayland.so.1.1.13 and friends carry their own
# small version numbers and are excluded by the 3-digit branch).
DRIVER_LIB_FILE_RE = re.compile(r"^(libcuda|libcudadebugger|libnvidia-[A-Za-z0-9_.-]+?)\.so\.(\d{3,}\.\d+(?:\.\d+)?)$")
COMPAT_DIR_RE = re.compile(r"(?:^|/)cuda[^/]*/compat(?:/|$)")

# The libraries whose versions must equal the kernel module's, keyed by name, with their SONAME.
TRACKED_LIBRARIES = (
    ("libcuda", "libcuda.so.1"),
    ("libnvidia-ml", "libnvidia-ml.so.1"),
    ("libnvidia-ptxjitcompiler", "libnvidia-ptxjitcompiler.so.1"),
)
TRACKED_NAMES = tuple(name for name, dummy in TRACKED_LIBRARIES)
# Without these two nothing CUDA/NVML-based works; ptxjitcompiler is optional on minimal installs.
REQUIRED_LIBRARIES = ("libcuda", "libnvidia-ml")

DEFAULT_LIBRARY_DIRS = {
    "x86_64": ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"),
    "aarch64": ("/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"),
}
GENERIC_LIBRARY_DIRS = ("/lib64", "/usr/lib64", "/lib", "/usr/lib")
# Places where driver libraries live without necessarily being on the loader path (inventory only).
EXTRA_SCAN_PATTERNS = (
    "/usr/local/cuda*/compat",
    "/usr/local/nvidia/lib64",
    "/usr/local/nvidia/lib",
    "/usr/lib/nvidia",
    "/usr/lib64/nvidia",
    "/usr/lib/*-linux-gnu/nvidia/current",
)
# The GPU query nvidia_driver_info runs (the CSV parser is nvidia_smi.parse_query_gpu).
GPU_QUERY_FIELDS = ("name", "compute_cap")
KERNEL_SUBMODULES = ("nvidia_uvm", "nvidia_modeset", "nvidia_drm")
MAX_SYMLINKS = 40
MAX_INCLUDE_DEPTH = 16


# ----------------------------------------------------------------------------------------------------------------
# Versions


def parse_version(text):
    """'590.48.01' -> (590, 48, 1); None unless it looks like a driver version."""
    if text is None:
        return None
    text = str(text).strip()
    if not DRIVER_VERSION_RE.match(text):
        return None
    return tuple(int(part) for part in text.split("."))


def compare_versions(left, right):
    """Numeric compare of two version strings (-1, 0, 1); a missing third part counts as 0."""
    lt, rt = parse_version(left), parse_version(right)
    if lt is None or rt is None:
        raise ValueError("not a driver version: %r / %r" % (left, right))
    lt, rt = lt + (0,) * (3 - len(lt)), rt + (0,) * (3 - len(rt))
    return (lt > rt) - (lt < rt)


def versions_match(left, right):
    """Equal versions, or a 2-part version that is a prefix of the other (NVML reports "565.57" for 565.57.01)."""
    lt, rt = parse_version(left), parse_version(right)
    if lt is None or rt is None:
        return False
    if len(lt) == len(rt):
        return lt == rt
    shorter, longer = (lt, rt) if len(lt) < len(rt) else (rt, lt)
    return longer[:len(shorter)] == shorter


def driver_branch(version):
    parsed = parse_version(version)
    return parsed[0] if parsed else None


def library_version(path):
    """Version suffix of a library file name (libcuda.so.590.48.01 -> 590.48.01); None for libcuda.so.1 etc."""
    match = LIB_VERSION_RE.search(posixpath.basename(path or ""))
    if match and DRIVER_VERSION_RE.match(match.group(1)):
        return match.group(1)
    return None


def is_compat_path(path):
    return bool(COMPAT_DIR_RE.search(path or ""))


# ----------------------------------------------------------------------------------------------------------------
# Kernel side


def parse_sys_module_version(text):
    """Content of /sys/module/nvidia/version ("590.48.01\\n")."""
    if text is None:
        return None
    value = text.strip()
    return value if parse_version(value) else None


def parse_proc_driver_version(text):
    """Parse /proc/driver/nvidia/version.

    Handles the open ("NVIDIA UNIX Open Kernel Module for x86_64  590.48.01  Release Build ...") and proprietary
    ("NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue ...") banners, aarch64, vGPU, third-party Kbuild
    ("NVIDIA Open Kernel Module  <ver>") and banners wrapped onto several lines. Returns a dict with version, flavor
    (open/proprietary/None), arch, nvrm (the banner, whitespace-collapsed) and gcc.
    """
    result = {"version": None, "flavor": None, "arch": None, "nvrm": None, "gcc": None}
    if not text:
        return result
    nvrm_lines, gcc, in_nvrm = [], None, False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("NVRM version:"):
            in_nvrm = True
            nvrm_lines.append(stripped[len("NVRM version:"):])
        elif stripped.startswith("GCC version:"):
            in_nvrm = False
            gcc = stripped[len("GCC version:"):].strip() or None
        elif in_nvrm and stripped:
            # Some distro builds (Fedora akmods) wrap the banner.
            nvrm_lines.append(stripped)
    if not nvrm_lines:
        return result
    nvrm = " ".join(" ".join(nvrm_lines).split())
    result["nvrm"], result["gcc"] = nvrm, gcc
    for token in nvrm.split():
        if DRIVER_VERSION_RE.match(token):
            result["version"] = token
            break
    if "Open Kernel Module" in nvrm:
        result["flavor"] = "open"
    elif "Kernel Module" in nvrm:
        result["flavor"] = "proprietary"
    arch = re.search(r"Kernel Module for (\S+)", nvrm) or re.search(r"UNIX (\S+) Kernel Module", nvrm)
    if arch and arch.group(1) != "Open":
        result["arch"] = arch.group(1)
    return result


# ----------------------------------------------------------------------------------------------------------------
# nvidia-smi

_SMI_BANNER_RE = re.compile(r"NVIDIA-SMI\s+(\S+)\s+(Driver|KMD) Version:\s+(\S+)\s+CUDA( UMD)? Version:\s+([0-9.]+)")
_SMI_KV_RE = re.compile(r"^\s*([A-Za-z][A-Za-z -]*?)\s*:\s*(\S+)\s*$")
_SMI_MISMATCH = "Driver/library version mismatch"
_SMI_NO_DRIVER = "couldn't communicate with the NVIDIA driver"


def parse_nvidia_smi(stdout, stderr="", rc=0):
    """Parse nvidia-smi output: the banner, ``nvidia-smi --version`` or an NVML failure.

    Returns smi_version, driver_version, cuda_version, nvml_version, format ("classic" for Driver/CUDA Version,
    "kmd" for the R610+ KMD/CUDA UMD Version banner, "version" for --version), error and error_kind
    (driver_library_mismatch, no_driver, nvml_init_failed, unknown).
    """
    text = "%s\n%s" % (stdout or "", stderr or "")
    result = {"smi_version": None, "driver_version": None, "cuda_version": None, "nvml_version": None,
              "format": None, "error": None, "error_kind": None}
    banner = _SMI_BANNER_RE.search(text)
    if banner:
        result.update(smi_version=banner.group(1), driver_version=banner.group(3), cuda_version=banner.group(5),
                      format="kmd" if banner.group(2) == "KMD" else "classic")
    else:
        fields = {}
        for line in text.splitlines():
            match = _SMI_KV_RE.match(line)
            if match:
                fields[" ".join(match.group(1).lower().split())] = match.group(2)
        if "nvidia-smi version" in fields:
            result["format"] = "version"
            result["smi_version"] = fields.get("nvidia-smi version")
            result["driver_version"] = fields.get("driver version") or fields.get("kmd version")
            result["cuda_version"] = fields.get("cuda version") or fields.get("cuda umd version")
            result["nvml_version"] = fields.get("nvml version")
        if "nvml library version" in fields:
            result["nvml_version"] = fields["nvml library version"]
    if _SMI_MISMATCH in text:
        result.update(error="Failed to initialize NVML: " + _SMI_MISMATCH, error_kind="driver_library_mismatch")
    elif _SMI_NO_DRIVER in text:
        result.update(error=_first_line(text, _SMI_NO_DRIVER), error_kind="no_driver")
    elif "Failed to initialize NVML" in text:
        result.update(error=_first_line(text, "Failed to initialize NVML"), error_kind="nvml_init_failed")
    elif rc not in (0, None) or result["format"] is None:
        result.update(error=_first_nonempty_line(text) or "nvidia-smi exited with rc %s" % rc, error_kind="unknown")
    return result


def nvidia_smi_record(ran, rc=None, stdout="", stderr="", skipped_reason=None, query_stdout=None, command=None):
    """The nvidia_smi return value: whether and how nvidia-smi ran plus the parsed banner and GPU list."""
    record = {"ran": ran, "rc": rc, "command": command, "skipped_reason": skipped_reason, "smi_version": None,
              "driver_version": None, "cuda_version": None, "nvml_version": None, "format": None, "error": None,
              "error_kind": None, "gpus": []}
    if ran:
        record.update(parse_nvidia_smi(stdout, stderr, rc))
        record["gpus"] = parse_gpu_query(query_stdout)
    return record


def parse_gpu_query(stdout):
    """Output of ``nvidia-smi`` + query_gpu_args(GPU_QUERY_FIELDS) -> [{name, compute_capability}]; [] if malformed."""
    try:
        rows = parse_query_gpu(stdout, GPU_QUERY_FIELDS)
    except NvidiaSmiParseError:
        return []
    return [{"name": row["name"], "compute_capability": row["compute_cap"]} for row in rows]


def _first_line(text, needle):
    return next((line.strip() for line in text.splitlines() if needle in line), None)


def _first_nonempty_line(text):
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return None


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


# ----------------------------------------------------------------------------------------------------------------
# Files under a root


class RootFS(object):
    """Read-only view of a directory tree as if it were ``/`` (chroot semantics for symlinks).

    Absolute symlink targets are re-rooted under ``root`` and ``..`` never climbs above it, so inspecting a container
    rootfs from the host never reads the host's own files. Virtual paths are absolute paths inside the root.
    """

    def __init__(self, root="/"):
        self.root = os.path.abspath(root or "/")

    @property
    def is_host_root(self):
        """True when inspecting the running system itself (commands may run, context may be host/container)."""
        return self.root == "/"

    def host_path(self, vpath):
        vpath = posixpath.normpath("/" + (vpath or "").lstrip("/"))
        if self.root == "/":
            return vpath
        return os.path.join(self.root, vpath.lstrip("/")) if vpath != "/" else self.root

    def resolve(self, vpath):
        """Canonical virtual path with every symlink followed inside the root; None on a symlink loop."""
        pending = (vpath or "/").split("/")[::-1]
        resolved, links = [], 0
        while pending:
            part = pending.pop()
            if part in ("", "."):
                continue
            if part == "..":
                if resolved:
                    resolved.pop()
                continue
            candidate = "/" + "/".join(resolved + [part])
            host = self.host_path(candidate)
            if os.path.islink(host):
                links += 1
                if links > MAX_SYMLINKS:
                    return None
                target = os.readlink(host)
                if target.startswith("/"):
                    resolved = []
                pending.extend(target.split("/")[::-1])
            else:
                resolved.append(part)
        return "/" + "/".join(resolved)

    def exists(self, vpath):
        resolved = self.resolve(vpath)
        return resolved is not None and os.path.exists(self.host_path(resolved))

    def lexists(self, vpath):
        parent = self.resolve(posixpath.dirname(vpath))
        if parent is None:
            return False
        return os.path.lexists(self.host_path(posixpath.join(parent, posixpath.basename(vpath))))

    def isdir(self, vpath):
        resolved = self.resolve(vpath)
        return resolved is not None and os.path.isdir(self.host_path(resolved))

    def listdir(self, vpath):
        resolved = self.resolve(vpath)
        if resolved is None:
            return []
        try:
            return sorted(os.listdir(self.host_path(resolved)))
        except OSError:
            return []

    def read_text(self, vpath):
        resolved = self.resolve(vpath)
        if resolved is None:
            return None
        try:
            with open(self.host_path(resolved), "rb") as handle:
                return handle.read().decode("utf-8", "replace")
        except (IOError, OSError):
            return None

    def glob(self, pattern):
        """Sorted virtual paths matching a glob (wildcards in any component; hidden names need an explicit dot)."""
        matches = ["/"]
        for part in [p for p in pattern.split("/") if p]:
            expanded = []
            for base in matches:
                if any(char in part for char in "*?["):
                    for name in self.listdir(base):
                        if (part.startswith(".") or not name.startswith(".")) and fnmatch.fnmatchcase(name, part):
                            expanded.append(posixpath.join(base, name))
                else:
                    expanded.append(posixpath.join(base, part))
            matches = expanded
        return sorted(path for path in matches if self.lexists(path))


# ----------------------------------------------------------------------------------------------------------------
# Dynamic loader search path


def parse_ld_so_conf(fs, path="/etc/ld.so.conf", _depth=0, _seen=None):
    """Directories of ld.so.conf in order, following ``include`` globs (relative to the including file).

    Returns a list of (directory, conf_file). ``hwcap`` lines are ignored; legacy ``dir=TYPE`` suffixes stripped.
    """
    seen = set() if _seen is None else _seen
    if _depth > MAX_INCLUDE_DEPTH or path in seen:
        return []
    seen.add(path)
    text = fs.read_text(path)
    if text is None:
        return []
    entries = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        keyword = line.split(None, 1)
        if keyword[0] == "include" and len(keyword) == 2:
            for pattern in keyword[1].split():
                if not pattern.startswith("/"):
                    pattern = posixpath.join(posixpath.dirname(path), pattern)
                for included in fs.glob(pattern):
                    entries.extend(parse_ld_so_conf(fs, included, _depth + 1, seen))
        elif keyword[0] == "hwcap":
            continue
        else:
            for directory in re.split(r"[\s:,]+", line):
                directory = directory.split("=", 1)[0].rstrip("/") or "/"
                if directory.startswith("/"):
                    entries.append((directory, path))
    return entries


def split_library_path(value):
    """ld_library_path option (list and/or colon-separated strings) -> list of absolute directories."""
    if value is None:
        return []
    items = value if isinstance(value, (list, tuple)) else [value]
    dirs = []
    for item in items:
        for directory in str(item).split(":"):
            directory = directory.strip()
            # Empty LD_LIBRARY_PATH elements mean the current directory, which says nothing about a service.
            if directory.startswith("/"):
                dirs.append(directory.rstrip("/") or "/")
    return dirs


def loader_search_path(fs, ld_library_path=None, arch="x86_64"):
    """Directories the dynamic loader searches, in order: LD_LIBRARY_PATH, ld.so.conf (ld.so.cache), defaults.

    Only existing directories are returned, de-duplicated by their canonical path inside the root (like ldconfig
    does by inode: with merged /usr, /lib and /usr/lib are one directory). Each entry: path, resolved, source
    (ld_library_path / ld.so.conf / default) and conf_file (for ld.so.conf entries).
    """
    candidates = [(d, "ld_library_path", None) for d in split_library_path(ld_library_path)]
    candidates += [(d, "ld.so.conf", conf) for d, conf in parse_ld_so_conf(fs)]
    candidates += [(d, "default", None) for d in DEFAULT_LIBRARY_DIRS.get(arch, GENERIC_LIBRARY_DIRS)]
    search, seen = [], set()
    for directory, source, conf in candidates:
        resolved = fs.resolve(directory)
        if resolved is None or resolved in seen or not fs.isdir(directory):
            continue
        seen.add(resolved)
        search.append({"path": directory, "resolved": resolved, "source": source, "conf_file": conf})
    return search


def resolve_soname(fs, search, soname):
    """Resolve a SONAME the way the loader would: the first search directory holding a usable entry wins.

    Returns (active, others): active is a dict (soname_path, path, version, directory, source, conf_file, compat,
    index) or None; others lists the later usable entries and broken links (same keys plus broken).
    """
    active, others = None, []
    for index, entry in enumerate(search):
        candidate = posixpath.join(entry["path"], soname)
        if not fs.lexists(candidate):
            continue
        target = fs.resolve(candidate)
        record = {"soname_path": candidate, "path": target, "version": library_version(target),
                  "directory": entry["path"], "source": entry["source"], "conf_file": entry["conf_file"],
                  "compat": is_compat_path(candidate) or is_compat_path(target), "index": index,
                  "broken": target is None or not fs.exists(target)}
        if record["broken"]:
            others.append(record)
        elif active is None:
            active = record
        else:
            others.append(record)
    return active, others


def library_inventory(fs, search, extra_patterns=EXTRA_SCAN_PATTERNS):
    """Every driver-versioned NVIDIA library file in the search path and the usual side directories.

    Returns a dict keyed by canonical path: library, version, path, loader_index (index of the first search
    directory through which the file is reachable, None if none) and compat.
    """
    scan = [(entry["path"], index) for index, entry in enumerate(search)]
    for pattern in extra_patterns:
        scan.extend((directory, None) for directory in fs.glob(pattern) if fs.isdir(directory))
    inventory, scanned = {}, set()
    for directory, index in scan:
        resolved_dir = fs.resolve(directory)
        if resolved_dir is None or (resolved_dir, index) in scanned:
            continue
        scanned.add((resolved_dir, index))
        for name in fs.listdir(directory):
            if not (name.startswith("libcuda") or name.startswith("libnvidia-")):
                continue
            target = fs.resolve(posixpath.join(resolved_dir, name))
            if target is None or not fs.exists(target):
                continue
            match = DRIVER_LIB_FILE_RE.match(posixpath.basename(target))
            if not match:
                continue
            item = inventory.setdefault(target, {"library": match.group(1), "version": match.group(2), "path": target,
                                                 "loader_index": None, "compat": is_compat_path(target)})
            if index is not None and (item["loader_index"] is None or index < item["loader_index"]):
                item["loader_index"] = index
    return inventory


# ----------------------------------------------------------------------------------------------------------------
# Whole inspection


def detect_context(fs):
    """host, container (inspected from inside) or rootfs (inspected from outside)."""
    if not fs.is_host_root:
        return "rootfs"
    if fs.lexists("/.dockerenv") or fs.lexists("/run/.containerenv"):
        return "container"
    marker = (fs.read_text("/run/systemd/container") or "").strip()
    if marker:
        return "container"
    environ = fs.read_text("/proc/1/environ") or ""
    if "container=" in environ:
        return "container"
    return "host"


def detect_arch(fs, kernel_arch=None, machine=None):
    """Library architecture: the kernel banner's, else the local machine's (root /), else the rootfs layout."""
    for value in (kernel_arch, machine if fs.is_host_root else None):
        if value in ("x86_64", "amd64"):
            return "x86_64"
        if value in ("aarch64", "arm64"):
            return "aarch64"
    if fs.isdir("/usr/lib/aarch64-linux-gnu") and not fs.isdir("/usr/lib/x86_64-linux-gnu"):
        return "aarch64"
    return "x86_64"


def read_kernel(fs):
    sys_version = parse_sys_module_version(fs.read_text("/sys/module/nvidia/version"))
    proc = parse_proc_driver_version(fs.read_text("/proc/driver/nvidia/version"))
    version, source = sys_version, "/sys/module/nvidia/version" if sys_version else None
    if version is None and proc["version"]:
        version, source = proc["version"], "/proc/driver/nvidia/version"
    submodules = {}
    for name in KERNEL_SUBMODULES:
        value = parse_sys_module_version(fs.read_text("/sys/module/%s/version" % name))
        if value:
            submodules[name] = value
    return {"version": version, "source": source, "flavor": proc["flavor"], "arch": proc["arch"], "nvrm": proc["nvrm"],
            "submodules": submodules}


def read_gpus(fs):
    gpus = []
    for path in fs.glob("/proc/driver/nvidia/gpus/*/information"):
        info = parse_nvidia_gpu_information(fs.read_text(path))
        if info["model"]:
            gpus.append({"name": info["model"], "bus_id": info["bus_location"], "compute_capability": None,
                         "source": "/proc/driver/nvidia/gpus"})
    return gpus


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
