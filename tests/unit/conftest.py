"""Make `ansible_collections.llmops.inference` importable from the checkout for plain pytest runs."""
import os
import sys

_COLLECTIONS_ROOT = os.path.join(os.path.dirname(__file__), "..", "..", ".collections")
if os.path.isdir(_COLLECTIONS_ROOT) and os.path.abspath(_COLLECTIONS_ROOT) not in sys.path:
    sys.path.insert(0, os.path.abspath(_COLLECTIONS_ROOT))
