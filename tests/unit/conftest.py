"""Make `ansible_collections.llmops.inference` importable from the checkout for plain pytest runs; load the hooks that
turn a skipped ``requires_lab`` test into a failure under LLMOPS_REQUIRE_ALL=1 or CI=true (require_lab.py)."""
import os
import sys

from require_lab import pytest_configure, pytest_runtest_makereport  # noqa: F401  pylint: disable=unused-import

_COLLECTIONS_ROOT = os.path.join(os.path.dirname(__file__), "..", "..", ".collections")
if os.path.isdir(_COLLECTIONS_ROOT) and os.path.abspath(_COLLECTIONS_ROOT) not in sys.path:
    sys.path.insert(0, os.path.abspath(_COLLECTIONS_ROOT))
