# Where SGLang's benchmark client lives in this interpreter, found without importing sglang (the import takes seconds
# and pulls torch): sglang.benchmark.serving from 0.5.15 on, sglang.bench_serving before. Prints JSON.
import importlib.util
import json
import os

try:
    from importlib.metadata import version
except ImportError:  # Python < 3.8
    version = None

spec = importlib.util.find_spec('sglang')
locations = list(spec.submodule_search_locations or []) if spec else []
module = None
for name, rel in (('sglang.benchmark.serving', os.path.join('benchmark', 'serving.py')), ('sglang.bench_serving', 'bench_serving.py')):
    if any(os.path.exists(os.path.join(loc, rel)) for loc in locations):
        module = name
        break
try:
    release = version('sglang') if version and spec else None
except Exception:  # pylint: disable=broad-except
    release = None
print(json.dumps({'module': module, 'version': release, 'path': locations[0] if locations else None}))
