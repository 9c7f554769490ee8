"""Capture the raw driver/GPU facts of a real NVIDIA host into a JSON document.

Run on a GPU machine (read-only; changes nothing). The output feeds the fixture trees under
tests/fixtures/: file contents and symlink targets are recorded verbatim so tests replay reality.
Usage: capture_host_facts.py OUT.json
"""
import glob
import json
import os
import subprocess
import sys


def read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except OSError as exc:
        return {"error": str(exc)}


def link(path):
    try:
        return os.readlink(path)
    except OSError:
        return None


def run(argv):
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        return {"argv": argv, "rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"argv": argv, "error": str(exc)}


PCI_ATTRS = ("vendor", "device", "class", "subsystem_vendor", "subsystem_device", "numa_node",
             "local_cpulist", "local_cpus", "driver_override", "revision", "enable", "current_link_speed",
             "current_link_width", "max_link_speed", "max_link_width")


def pci_device(addr):
    base = "/sys/bus/pci/devices/" + addr
    entry = {"sysfs_link": link(base), "realpath": os.path.realpath(base)}
    for attr in PCI_ATTRS:
        if os.path.exists(os.path.join(base, attr)):
            entry[attr] = read(os.path.join(base, attr))
    for name in ("driver", "iommu_group", "physfn"):
        entry[name + "_link"] = link(os.path.join(base, name))
    group = os.path.join(base, "iommu_group", "devices")
    entry["iommu_group_devices"] = sorted(os.listdir(group)) if os.path.isdir(group) else None
    entry["is_bridge"] = os.path.isdir(os.path.join(base, "pci_bus"))
    return entry


def main(out_path):
    facts = {"files": {}, "links": {}, "commands": {}, "pci": {}, "globs": {}}
    for path in ["/sys/module/nvidia/version", "/sys/module/nvidia_uvm/version", "/sys/module/nvidia_modeset/version",
                 "/proc/driver/nvidia/version", "/proc/driver/nvidia/params", "/proc/devices", "/proc/cmdline",
                 "/etc/os-release", "/etc/ld.so.conf"] + sorted(glob.glob("/etc/ld.so.conf.d/*")) \
            + sorted(glob.glob("/proc/driver/nvidia/gpus/*/information")):
        facts["files"][path] = read(path)
    lib_patterns = ["libcuda.so*", "libnvidia-ml.so*", "libnvidia-ptxjitcompiler.so*", "libnvidia-nvvm.so*",
                    "libcudadebugger.so*", "libnvidia-cfg.so*"]
    for root in ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/nvidia/lib64",
                 "/usr/local/nvidia/lib", "/usr/local/cuda/compat", "/usr/local/cuda/lib64"] \
            + sorted(glob.glob("/usr/local/cuda-*/compat")):
        for pattern in lib_patterns:
            for path in sorted(glob.glob(os.path.join(root, pattern))):
                facts["globs"][path] = {"link": link(path), "realpath": os.path.realpath(path),
                                        "size": os.path.getsize(path) if os.path.exists(path) else None}
    for path in sorted(glob.glob("/dev/nvidia*")):
        st = os.stat(path)
        facts["links"][path] = {"major": os.major(st.st_rdev), "minor": os.minor(st.st_rdev)}
    for addr in sorted(os.listdir("/sys/bus/pci/devices")):
        vendor = read(f"/sys/bus/pci/devices/{addr}/vendor")
        if isinstance(vendor, str) and vendor.strip() == "0x10de":
            facts["pci"][addr] = pci_device(addr)
            for member in facts["pci"][addr]["iommu_group_devices"] or []:
                facts["pci"].setdefault(member, pci_device(member))
    for argv in (["nvidia-smi"], ["nvidia-smi", "-q"], ["nvidia-smi", "--version"],
                 ["nvidia-smi", "--query-gpu=driver_version,name,memory.total,pci.bus_id,compute_cap,uuid,index",
                  "--format=csv,noheader,nounits"],
                 ["nvidia-smi", "--query-gpu=index,pci.bus_id,name,memory.total,compute_cap",
                  "--format=csv"],
                 ["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory,gpu_bus_id",
                  "--format=csv,noheader,nounits"],
                 ["nvidia-smi", "topo", "-m"], ["nvidia-smi", "topo", "-p2p", "r"], ["nvidia-smi", "topo", "-p2p", "w"],
                 ["nvidia-smi", "-L"], ["ldconfig", "-p"], ["uname", "-a"], ["lspci", "-nn", "-D"],
                 ["sh", "-c", "ls -la /usr/lib/x86_64-linux-gnu/ | grep -E 'nvidia|cuda'"],
                 ["sh", "-c", "ls -la /usr/local/nvidia/lib64 /usr/local/nvidia/lib 2>&1 | head -200"],
                 ["sh", "-c", "ls -la /usr/local/ ; ls -la /usr/local/cuda*/compat 2>&1"],
                 ["sh", "-c", "env | grep -E '^(LD_LIBRARY_PATH|CUDA|NVIDIA|NCCL)' | sort"],
                 ["sh", "-c", "dmesg 2>&1 | grep -i -E 'nvrm|nvidia' | tail -50"]):
        facts["commands"][" ".join(argv)] = run(argv)
    with open(out_path, "w", encoding="utf-8") as handle:
        json.dump(facts, handle, indent=1, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1])
