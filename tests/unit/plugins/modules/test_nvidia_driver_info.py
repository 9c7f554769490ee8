# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the nvidia_driver_info module: real argument spec, exit/fail paths, nvidia-smi plumbing, docs."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import os

import pytest
import yaml

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.llmops.inference.plugins.module_utils.host.rootfs import RootFS
from ansible_collections.llmops.inference.plugins.modules import nvidia_driver_info
from module_harness import AnsibleExitJson, AnsibleFailJson, run

FIXTURES = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures"))


def _generator():
    spec = importlib.util.spec_from_file_location("build_driver_roots", os.path.join(FIXTURES, "build_driver_roots.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _generator()
FACTS = GEN.load_facts()


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    return GEN.build(str(tmp_path_factory.mktemp("driver_roots")))


def run_module(args, expect=AnsibleExitJson):
    return run(nvidia_driver_info.main, args, expect=expect)[1]


def smi_text(name):
    with open(os.path.join(FIXTURES, "nvidia_smi", name)) as handle:
        return handle.read()


class FakeCommands(object):
    """Stands in for get_bin_path/run_command: maps an argv tail to (rc, stdout, stderr) and records calls."""

    def __init__(self, outputs, binaries=("nvidia-smi", "timeout")):
        self.outputs, self.binaries, self.calls = outputs, binaries, []

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return "/usr/bin/%s" % name if name in self.binaries else None

    def run_command(self, args, **kwargs):
        self.calls.append(list(args))
        assert kwargs["environ_update"]["LC_ALL"] == "C"
        tail = tuple(arg for arg in args if not arg.startswith("/usr/bin/") and arg != nvidia_driver_info.NVIDIA_SMI_TIMEOUT)
        return self.outputs[tail]


@pytest.fixture
def host_like(monkeypatch):
    """Run the module with root=/ but read a fixture tree, so the nvidia-smi path is exercised."""

    def install(root, outputs, binaries=("nvidia-smi", "timeout")):
        fake = FakeCommands(outputs, binaries)
        monkeypatch.setattr(nvidia_driver_info, "RootFS", lambda path: HostLikeRootFS(root))
        monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", fake.get_bin_path)
        monkeypatch.setattr(basic.AnsibleModule, "run_command", fake.run_command)
        return fake
    return install


class HostLikeRootFS(RootFS):
    @property
    def is_host_root(self):
        return True


QUERY = ("--query-gpu=name,compute_cap", "--format=csv,noheader,nounits")


# ----------------------------------------------------------------------------------------------------------------


def test_h200_real_consistent(roots):
    result = run_module({"root": roots["h200_real"], "cuda_runtime": "13.0.2"})
    assert result["changed"] is False and result["consistent"] is True
    assert result["kernel_module_version"] == "580.159.04"
    assert result["userspace_versions"]["libcuda"]["version"] == "580.159.04"
    assert result["inactive_libraries"][0]["path"] == "/usr/local/cuda-13.0/compat/libcuda.so.580.95.05"
    assert result["nvidia_smi"]["skipped_reason"] == "root is not /"
    assert result["cuda_runtime_supported"] is True


def test_check_mode_gives_the_same_answer(roots):
    normal = run_module({"root": roots["host590_container565"]})
    checked = run_module({"root": roots["host590_container565"], "_ansible_check_mode": True})
    assert checked == normal and checked["changed"] is False and checked["consistent"] is False


def test_mismatch_reported_without_failing(roots):
    result = run_module({"root": roots["host590_container565"]})
    assert result["consistent"] is False
    assert "NVIDIA-Linux-x86_64-590.48.01.run" in result["remediation"]


def test_fail_on_mismatch(roots):
    result = run_module({"root": roots["host590_container565"], "fail_on_mismatch": True}, AnsibleFailJson)
    assert result["failed"] is True and result["changed"] is False
    assert result["msg"].startswith("NVIDIA driver mismatch: libcuda 565.57.01 at /usr/lib/x86_64-linux-gnu/libcuda.so.565.57.01")
    assert "590.48.01" in result["msg"]
    assert "Remediation: Install NVIDIA-Linux-x86_64-590.48.01.run with --no-kernel-modules" in result["msg"]
    # all return values come with the failure
    assert result["consistent"] is False and result["userspace_versions"]["libnvidia-ml"]["version"] == "565.57.01"


def test_fail_on_mismatch_passes_when_consistent(roots):
    result = run_module({"root": roots["h200_real"], "fail_on_mismatch": True})
    assert result["consistent"] is True


def test_fail_without_remediation(roots, host_like):
    host_like(roots["container_rootfs"], {(): (18, smi_text("mismatch_legacy.txt"), "")})
    result = run_module({"fail_on_mismatch": True}, AnsibleFailJson)
    assert result["msg"].endswith("Remediation: n/a")


def test_container_rootfs_with_expected_version_and_warning(roots):
    result = run_module({"root": roots["container_rootfs"], "expected_version": "590.48.01", "gpu_architecture": "blackwell",
                         "ld_library_path": ["/opt/app/lib:/nonexistent"]})
    assert result["reference_source"] == "expected_version"
    assert result["userspace_versions"]["libcuda"]["version"] == "550.54.15"
    assert any("flavour is unknown" in warning for warning in result["warnings"])


@pytest.mark.parametrize("args, msg", [
    ({"expected_version": "590"}, "expected_version must look like 590.48.01 or 515.76, got '590'"),
    ({"cuda_runtime": "latest"}, "cuda_runtime must look like 12.8, 12.8u1, 12.8.1 or cu128, got 'latest'"),
    ({"root": "/nonexistent/rootfs"}, "root /nonexistent/rootfs is not a directory"),
])
def test_parameter_validation(args, msg):
    assert run_module(args, AnsibleFailJson)["msg"] == msg


def test_argument_spec_types_are_enforced():
    result = run_module({"fail_on_mismatch": "perhaps"}, AnsibleFailJson)
    assert "fail_on_mismatch" in result["msg"]
    result = run_module({"unknown_option": 1}, AnsibleFailJson)
    assert "Unsupported parameters" in result["msg"]


# ----------------------------------------------------------------------------------------------------------------
# nvidia-smi plumbing (root /)


def test_nvidia_smi_banner_and_query(roots, host_like):
    banner = FACTS["commands"]["nvidia-smi"]
    fake = host_like(roots["h200_real"], {(): (0, banner["stdout"], ""), QUERY: (0, "NVIDIA H200, 9.0\nNVIDIA H200, 9.0\n", "")})
    result = run_module({})
    smi = result["nvidia_smi"]
    assert (smi["ran"], smi["rc"], smi["format"], smi["command"]) == (True, 0, "classic", "nvidia-smi")
    assert smi["gpus"] == [{"name": "NVIDIA H200", "compute_capability": "9.0"}] * 2
    assert result["cuda_driver_api_version_source"] == "nvidia_smi" and result["consistent"] is True
    assert fake.calls[0] == ["/usr/bin/timeout", nvidia_driver_info.NVIDIA_SMI_TIMEOUT, "/usr/bin/nvidia-smi"]


def test_nvidia_smi_version_fallback_without_timeout(roots, host_like):
    version = FACTS["commands"]["nvidia-smi --version"]
    fake = host_like(roots["h200_real"], {(): (0, "no banner here\n", ""), ("--version",): (0, version["stdout"], ""),
                                          QUERY: (6, "", "")}, binaries=("nvidia-smi",))
    result = run_module({})
    smi = result["nvidia_smi"]
    assert (smi["format"], smi["command"], smi["nvml_version"], smi["gpus"]) == ("version", "nvidia-smi --version", "580.159", [])
    assert fake.calls[0] == ["/usr/bin/nvidia-smi"]
    assert len(fake.calls) == 3


def test_nvidia_smi_mismatch(roots, host_like):
    fake = host_like(roots["host590_container565"], {(): (18, smi_text("mismatch_565.txt"), "")})
    result = run_module({})
    assert result["nvidia_smi"]["error_kind"] == "driver_library_mismatch"
    assert "nvml_driver_library_mismatch" in [f["code"] for f in result["findings"]]
    assert len(fake.calls) == 1  # no GPU query after a failure


@pytest.mark.parametrize("args, binaries, reason", [
    ({"run_nvidia_smi": False}, ("nvidia-smi",), "run_nvidia_smi is false"),
    ({}, (), "nvidia-smi not found"),
])
def test_nvidia_smi_skipped(roots, host_like, args, binaries, reason):
    fake = host_like(roots["h200_real"], {}, binaries=binaries)
    result = run_module(args)
    assert result["nvidia_smi"]["ran"] is False and result["nvidia_smi"]["skipped_reason"] == reason
    assert fake.calls == []


def test_nvidia_smi_never_runs_for_another_root(roots, monkeypatch):
    fake = FakeCommands({})
    monkeypatch.setattr(basic.AnsibleModule, "run_command", fake.run_command)
    run_module({"root": roots["h200_real"]})
    assert fake.calls == []


# ----------------------------------------------------------------------------------------------------------------
# documentation vs. argument spec and return values (what validate-modules checks, kept honest here too)


def _docs():
    return (yaml.safe_load(nvidia_driver_info.DOCUMENTATION), yaml.safe_load(nvidia_driver_info.RETURN),
            yaml.safe_load(nvidia_driver_info.EXAMPLES))


def test_documentation_matches_argument_spec():
    with patch_module_args({}):
        module = nvidia_driver_info.build_module()
    spec = module.argument_spec
    documented = _docs()[0]["options"]
    assert sorted(documented) == sorted(spec)
    for name, option in spec.items():
        doc = documented[name]
        assert doc["type"] == option["type"], name
        assert doc.get("default") == option.get("default"), name
        assert doc.get("elements") == option.get("elements"), name
        assert doc.get("choices") == option.get("choices"), name
        assert bool(doc.get("required")) == bool(option.get("required")), name
    assert module.supports_check_mode is True
    # check_mode support "full" comes from the read-only fragment
    assert "llmops.inference.attributes.read_only" in _docs()[0]["extends_documentation_fragment"]


def test_return_documents_every_key(roots, host_like):
    banner = FACTS["commands"]["nvidia-smi"]
    host_like(roots["stale_duplicates"], {(): (0, banner["stdout"], ""), QUERY: (0, "NVIDIA H200, 9.0\n", "")})
    result = run_module({"cuda_runtime": "12.8"})
    returned = _docs()[1]
    assert set(result) - {"changed", "warnings"} == set(returned)
    for key, doc in returned.items():
        assert doc["returned"] == "always" and "description" in doc and "sample" in doc, key
    assert set(result["nvidia_smi"]) == set(returned["nvidia_smi"]["contains"])
    assert set(result["userspace_versions"]["libcuda"]) == set(returned["userspace_versions"]["contains"])
    assert set(result["inactive_libraries"][0]) == set(returned["inactive_libraries"]["contains"])
    assert set(result["loader_search_path"][0]) == set(returned["loader_search_path"]["contains"])
    assert set(result["gpus"][0]) == set(returned["gpus"]["contains"])
    finding_keys = set()
    for finding in result["findings"]:
        finding_keys |= set(finding)
    assert finding_keys <= set(returned["findings"]["contains"])
    assert {"code", "msg", "library", "version", "reference", "path", "versions"} <= finding_keys


def test_examples_use_only_documented_options():
    documentation, dummy, examples = _docs()
    for task in examples:
        args = task.get("llmops.inference.nvidia_driver_info")
        if args:
            assert set(args) <= set(documentation["options"]), task["name"]
