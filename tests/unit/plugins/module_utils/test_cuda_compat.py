# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""cuda_compat: CUDA versions, the toolkit minimum-driver table and the driver-branch table."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.gpu import cuda_compat as cc
from ansible_collections.llmops.inference.plugins.module_utils.gpu import versions as nv


@pytest.mark.parametrize("text, expected", [
    ("12.8", (12, 8, 0)), ("12.8u1", (12, 8, 1)), ("12.8U1", (12, 8, 1)), ("12.8 Update 1", (12, 8, 1)),
    ("12.8.1", (12, 8, 1)), ("13.1u1", (13, 1, 1)), ("cu128", (12, 8, 0)), ("cu130", (13, 0, 0)), ("cu118", (11, 8, 0)),
    ("12", None), ("latest", None), (None, None), (12.8, (12, 8, 0)),
])
def test_parse_cuda_version(text, expected):
    assert cc.parse_cuda_version(text) == expected


@pytest.mark.parametrize("runtime, cuda, min_driver, source", [
    ("12.8", "12.8", "570.26", "toolkit_table"),
    ("12.8u1", "12.8u1", "570.124.06", "toolkit_table"),
    ("12.8.1", "12.8u1", "570.124.06", "toolkit_table"),
    ("13.0", "13.0", "580.65.06", "toolkit_table"),
    ("13.0.2", "13.0u2", "580.95.05", "toolkit_table"),
    ("13.1u1", "13.1u1", "590.48.01", "toolkit_table"),
    ("13.2 Update 2", "13.2u2", "595.71.05", "toolkit_table"),
    ("cu128", "12.8", "570.26", "toolkit_table"),
    ("12.8u2", "12.8u2", "570.124.06", "toolkit_table_nearest_update"),
    ("12.6u1", "12.6u1", "560.28.03", "toolkit_table_nearest_update"),
    ("12.3", "12.3", "525", "minor_version_compatibility"),
    ("11.8", "11.8", "450", "minor_version_compatibility"),
    ("14.0", "14.0", None, None),
    ("junk", None, None, None),
])
def test_cuda_min_driver(runtime, cuda, min_driver, source):
    assert cc.cuda_min_driver(runtime) == {"cuda": cuda, "min_driver": min_driver, "source": source}


def test_cuda_table_is_monotonic():
    """A newer CUDA release never needs an older driver (guards typos in the data table)."""
    ordered = [cc.CUDA_TOOLKIT_MIN_DRIVER[key] for key in sorted(cc.CUDA_TOOLKIT_MIN_DRIVER)]
    for older, newer in zip(ordered, ordered[1:]):
        assert nv.compare_versions(older, newer) < 0, (older, newer)
    branches = [branch for branch, dummy in cc.DRIVER_BRANCH_CUDA_VERSION]
    assert branches == sorted(branches, reverse=True)
    for key, min_driver in cc.CUDA_TOOLKIT_MIN_DRIVER.items():
        assert cc.cuda_version_for_driver_branch(nv.driver_branch(min_driver)) == "%d.%d" % key[:2]


@pytest.mark.parametrize("branch, expected", [(580, "13.0"), (590, "13.1"), (565, "12.7"), (515, "11.7"), (999, "13.3"), (400, None)])
def test_cuda_version_for_driver_branch(branch, expected):
    assert cc.cuda_version_for_driver_branch(branch) == expected


@pytest.mark.parametrize("driver, expected", [((580, 159, 4), "13.0u2"), ((565, 57, 1), "12.6u3"), ((570, 26), "12.8"), ((400,), None)])
def test_newest_cuda_for_driver(driver, expected):
    assert cc.newest_cuda_for_driver(driver) == expected
