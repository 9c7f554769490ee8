# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia_versions: parsing, comparing and prefix-matching driver versions."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.gpu import versions as nv


@pytest.mark.parametrize("text, expected", [
    ("590.48.01", (590, 48, 1)), ("515.76", (515, 76)), (" 580.159.04\n", (580, 159, 4)),
    ("13.0", None), ("590", None), ("590.48.01.1", None), ("abc", None), ("", None), (None, None),
])
def test_parse_version(text, expected):
    assert nv.parse_version(text) == expected


@pytest.mark.parametrize("left, right, expected", [
    ("590.48.01", "590.48.01", 0), ("590.48.01", "565.57.01", 1), ("565.57.01", "590.48.01", -1),
    ("570.26", "570.26.0", 0), ("570.124.06", "570.26", 1), ("580.159.04", "580.95.05", 1),
])
def test_compare_versions(left, right, expected):
    assert nv.compare_versions(left, right) == expected


def test_compare_versions_rejects_junk():
    with pytest.raises(ValueError):
        nv.compare_versions("590.48.01", "latest")


@pytest.mark.parametrize("left, right, expected", [
    ("590.48.01", "590.48.01", True), ("590.48.01", "590.48.02", False), ("515.76", "515.76", True),
    ("565.57", "565.57.01", True), ("565.57.01", "565.57", True), ("565.57", "565.58.01", False),
    ("580.159", "580.159.04", True), ("580.159.04", "580.95.05", False), (None, "590.48.01", False),
])
def test_versions_match(left, right, expected):
    assert nv.versions_match(left, right) is expected


def test_driver_branch():
    assert nv.driver_branch("590.48.01") == 590
    assert nv.driver_branch("x") is None
