# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""An EAGLE-3 draft with its own checkpoint (--speculative-draft-model-path): its facts, weights and KV cache.

PRIVATE to the collection. Pure, stdlib only. The planner (vram_plan) asks three things of a draft, each as the pinned SGLang
release does it (paths under sglang/srt/; docs/dev/sglang-memory.md section 5.3):

* ``draft_facts``: the draft config.json as model_config facts, refused unless it is a draft class the planner sizes
  (release architectures.eagle3_draft) for an algorithm that takes a draft path;
* ``draft_weights``: the bytes its TpModelWorker holds when the target pools are sized (scheduler.py:1098-1111 sizes
  after both workers loaded), and what init_lm_head frees afterwards by sharing the target's embedding / lm_head
  (speculative/eagle_worker_v2.py:243-257 alloc_memory_pool -> :336-379 init_lm_head; models/llama.py:895-924);
* ``draft_kv``: the layers its KV adds to the target's per-token cell (model_runner_components/
  spec_aux_hidden_state.py:154-176) and the bytes one token takes in its own pool.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.model_config import ModelConfigError, model_facts

# layers/vocab_parallel_embedding.py:48 DEFAULT_VOCAB_PADDING_SIZE, :57-59 pad_vocab_size.
VOCAB_PADDING = 64
DRAFT_ALGORITHMS = ('EAGLE3',)
PATHLESS_ALGORITHMS = ('NEXTN', 'EAGLE')
_SIZE_KEYS = ('hidden_size', 'num_hidden_layers', 'num_attention_heads', 'vocab_size')


class DraftError(ValueError):
    """The draft cannot be sized, or SGLang would not load it; ``variable`` names what to change."""

    def __init__(self, msg, variable='llmops_model_profile'):
        super(DraftError, self).__init__(msg)
        self.variable = variable


def check_algorithm(algorithm, has_draft, target_facts):
    """Refuse an algorithm / draft combination SGLang would not run as the planner models it."""
    algorithm = (algorithm or 'NEXTN').upper()
    if algorithm not in DRAFT_ALGORITHMS + PATHLESS_ALGORITHMS:
        raise DraftError('speculative algorithm %s: the planner models NEXTN/EAGLE (the checkpoint\'s own MTP head) and '
                         'EAGLE3 (a draft checkpoint) only (fix: serving.speculative.algorithm: NEXTN or EAGLE3, or '
                         'num_draft_tokens: 0)' % algorithm)
    if algorithm in DRAFT_ALGORITHMS and not has_draft:
        raise DraftError('speculative algorithm %s needs a draft checkpoint (--speculative-draft-model-path): SGLang has '
                         'no built-in %s head for %s (fix: add serving.speculative.draft {hf_repo, hf_revision, config} '
                         'to the profile, or use NEXTN with a checkpoint that ships MTP layers)'
                         % (algorithm, algorithm, target_facts['arch']))
    if algorithm in PATHLESS_ALGORITHMS and has_draft:
        raise DraftError('speculative algorithm %s with a draft checkpoint: the collection runs NEXTN/EAGLE from the '
                         'target checkpoint\'s own MTP layers only (speculative_hook.py:1118-1148 warns "DeepSeek MTP '
                         'does not require setting speculative_draft_model_path") (fix: algorithm: EAGLE3 for an '
                         'EAGLE-3 draft, or remove serving.speculative.draft)' % algorithm)
    if algorithm in DRAFT_ALGORITHMS and target_facts['family'] == 'hybrid_swa':
        raise DraftError('EAGLE-3 on %s (a sliding-window hybrid): SGLang splits the draft layers into full and '
                         'sliding-window pools (pool_configurator.py:729-760), which the planner does not model (fix: '
                         'num_draft_tokens: 0)' % target_facts['arch'])
    return algorithm


def draft_facts(config, release):
    """model_config facts of a draft config.json; DraftError when the planner cannot size it."""
    if not isinstance(config, dict) or not config:
        raise DraftError('serving.speculative.draft.config must be the draft checkpoint\'s config.json (a mapping)')
    try:
        facts = model_facts(config, release['architectures'])
    except ModelConfigError as exc:
        raise DraftError('serving.speculative.draft.config: %s' % exc)
    allowed = sorted(release['architectures']['eagle3_draft'])
    if facts['arch'] not in allowed:
        raise DraftError('draft architecture %s: SGLang %s builds an EAGLE-3 draft from config.json architectures[0] '
                         '(models/llama_eagle3.py:387 EntryClass), and the planner sizes %s only; a plain '
                         'LlamaForCausalLM config (an EAGLE training config) would load the wrong model class (fix: '
                         'use the published draft\'s config.json, whose architectures is %s)'
                         % (facts['arch'], release['version'], ', '.join(allowed), ' or '.join(allowed)))
    missing = [key for key in _SIZE_KEYS if config.get(key) is None]
    if missing:
        raise DraftError('serving.speculative.draft.config lacks %s (copy them from the draft\'s config.json)'
                         % ', '.join(missing))
    return facts


def _padded(vocab):
    return (vocab + VOCAB_PADDING - 1) // VOCAB_PADDING * VOCAB_PADDING


def _kv_heads_per_rank(facts, tp):
    return max(1, facts['kv_heads'] // tp)  # configs/model_config.py:1700-1711 get_num_kv_heads


def draft_params(facts, target_facts, tp):
    """Per-rank parameter counts of LlamaForCausalLMEagle3 (models/llama_eagle3.py), as constructed:

    embed_tokens (vocab, padded to 64, sharded over TP, :145-149), fc (hidden_in x num_aux -> hidden, torch.nn.Linear:
    replicated, :151-167; hidden_in = target_hidden_size else hidden, num_aux = num_aux_hidden_states, else the
    eagle_aux_hidden_state_layer_ids count, else 3), num_hidden_layers decoder layers (layer 0 takes a 2 x hidden qkv
    input, :61-75; o_proj and the MLP as LlamaForCausalLM, models/llama.py; three RMSNorms each), the final norm, and
    lm_head (draft_vocab_size, else vocab, padded, sharded; the embedding itself when tie_word_embeddings, :300-314).
    The draft runs on the target's attention-TP group (speculative/draft_parallel.py:53-69).
    """
    hidden = facts['hidden']
    head_dim = facts['head_dim']
    heads, kv_heads = facts['heads'], facts['kv_heads']
    kv_rank = _kv_heads_per_rank(facts, tp)
    hidden_in = facts['target_hidden_size'] or hidden
    num_aux = facts['num_aux_hidden_states'] or facts['eagle_aux_layers'] or 3
    embed = _padded(facts['vocab']) * hidden // tp
    lm_vocab = facts['draft_vocab_size'] or facts['vocab']
    lm_head = 0 if facts['tied'] else _padded(lm_vocab) * hidden // tp
    fc = hidden_in * num_aux * hidden
    layers = 0
    for layer in range(facts['layers']):
        qkv_in = 2 * hidden if layer == 0 else hidden
        qkv = qkv_in * (heads // tp + 2 * kv_rank) * head_dim
        o_proj = heads // tp * head_dim * hidden
        mlp = 3 * hidden * facts['dense_inter'] // tp
        layers += qkv + o_proj + mlp + 3 * hidden
    total = embed + lm_head + fc + layers + hidden
    return dict(total=total, embed=embed, lm_head=lm_head, fc=fc, layers=layers)


def draft_weights(facts, target_facts, tp, bytes_per_param):
    """dict(at_sizing, freed_after, ...) in bytes per GPU.

    at_sizing: every parameter of the draft model, its own embed_tokens included: the module allocates it on the GPU
    when it is built (loader.py:1010-1021 under the target device; vocab_parallel_embedding.py:342-350) and
    init_lm_head replaces it with the target's only after the target pools are sized (scheduler.py:1098-1111).
    freed_after: what init_lm_head drops (eagle_worker_v2.py:353-363): the embedding via set_embed unless
    target_hidden_size differs from hidden_size (models/llama.py:910-924); embedding and lm_head via
    set_embed_and_head when draft_vocab_size is absent (llama_eagle3.py:305-308 load_lm_head_from_target).
    """
    params = draft_params(facts, target_facts, tp)
    freed = 0
    if not facts['tied'] and not facts['draft_vocab_size']:
        freed = params['embed'] + params['lm_head']
    elif not facts['target_hidden_size'] or facts['target_hidden_size'] == facts['hidden']:
        freed = params['embed']
    return dict(at_sizing=params['total'] * bytes_per_param, freed_after=freed * bytes_per_param,
                embed_bytes=params['embed'] * bytes_per_param, params=params['total'], bytes_per_param=bytes_per_param)


def draft_layers(facts):
    """Layers of the draft pool and of its share of the token budget (spec_aux_hidden_state.py:154-176): the draft
    config's num_nextn_predict_layers when it has one, else max(num_hidden_layers, num_attention_layers)."""
    if facts['nextn_layers'] is not None:
        return facts['nextn_layers']
    return facts['layers']


def draft_kv_layer_bytes(facts, attn_tp, kv_bytes):
    """Bytes one token takes in one layer of the draft's own MHA pool (built from the draft's ModelConfig:
    get_num_kv_heads(attn_tp) x (head_dim + v_head_dim) x KV bytes, kv_cache_configurator.py:2742-2793)."""
    return _kv_heads_per_rank(facts, attn_tp) * (facts['head_dim'] + facts['v_head_dim']) * kv_bytes
