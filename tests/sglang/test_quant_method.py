#!/usr/bin/env python
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The quant_method the planner prices a checkpoint by (model_config.sglang_quant_method) is the one the installed
SGLang resolves: its own ModelConfig._parse_quant_hf_config rules (configs/model_config.py), run on every
hf_quant_config.json and quantization_config of tests/fixtures/hf_configs.

Run with the python of the lab SGLang venv (tests/bench/setup-bench-venv.sh; no GPU needed): run-parser-tests.sh runs
it. Prints one line per case and a closing "N passed, N failed"; exit 1 on any failure.
"""
import glob
import json
import os
import sys

# tests/tools/collection_paths.py: ROOT, the pin, the release table; it puts the checkout's .collections on sys.path.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tools'))
from collection_paths import ROOT  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.llmops.inference.plugins.module_utils.model.config import sglang_quant_method  # noqa: E402


class _Config(object):
    """What _parse_quant_hf_config reads of a ModelConfig when the file is local: hf_config and model_path."""

    def __init__(self, hf_config, model_path):
        self.hf_config = hf_config
        self.model_path = model_path


def sglang_method(directory, config):
    from transformers import PretrainedConfig
    from sglang.srt.configs.model_config import ModelConfig
    text = config.get('text_config') if isinstance(config.get('text_config'), dict) else config
    hf = PretrainedConfig()
    for key in ('quantization_config', 'compression_config'):
        if key in text:
            setattr(hf, key, text[key])
    # The unbound methods run on a stand-in holding what they read: no weights, no GPU, no Hub.
    stand_in = _Config(hf, directory)
    stand_in._parse_modelopt_quant_config = lambda d: ModelConfig._parse_modelopt_quant_config(stand_in, d)
    quant = ModelConfig._parse_quant_hf_config(stand_in)
    return (quant or {}).get('quant_method') if quant else None


def main():
    passed = failed = 0
    for path in sorted(glob.glob(os.path.join(ROOT, 'tests', 'fixtures', 'hf_configs', '*', 'config.json'))):
        directory = os.path.dirname(path)
        with open(path) as handle:
            config = json.load(handle)
        ours_source = None
        text = config.get('text_config') if isinstance(config.get('text_config'), dict) else config
        for key in ('quantization_config', 'compression_config'):
            if isinstance(text.get(key), dict) and text[key]:
                ours_source = text[key]
                break
        if ours_source is None and os.path.exists(os.path.join(directory, 'hf_quant_config.json')):
            with open(os.path.join(directory, 'hf_quant_config.json')) as handle:
                ours_source = json.load(handle)
        ours = sglang_quant_method(ours_source)
        theirs = sglang_method(directory, config)
        ok = ours == theirs
        passed, failed = passed + ok, failed + (not ok)
        print('%s %s: planner %s, sglang %s' % ('ok  ' if ok else 'FAIL', os.path.basename(directory), ours, theirs))
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
