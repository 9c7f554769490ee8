# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Speculative drafts: an EAGLE-3 draft checkpoint and a path-less MTP head, their facts, weights and KV cache.

PRIVATE to the collection. Pure, stdlib only. The planner (vram_plan) asks these things of a draft, each as the pinned
SGLang release does it (paths under sglang/srt/; docs/dev/sglang-memory.md section 5):

* ``draft_facts``: the draft config.json as model_config facts, refused unless it is a draft class the planner sizes
  (release architectures.eagle3_draft) for an algorithm that takes a draft path;
* ``draft_weights`` (EAGLE-3) and ``mtp_draft_weights`` (the MTP class the target's checkpoint is loaded as): the
  bytes the draft's TpModelWorker holds when the target pools are sized, and what init_lm_head frees afterwards. Both
  follow one rule, ``resident_draft``: the draft's own embedding and lm_head (``vocab_table_bytes``, the
  VocabParallelEmbedding layout) are allocated when it loads, before scheduler.init_memory_pools sizes the target's
  pools (managers/scheduler.py:1098-1111), and replaced by the target's only in the draft's alloc_memory_pool ->
  init_lm_head (speculative/eagle_worker_v2.py:243-258, :336-379);
* ``draft_kv``: the layers its KV adds to the target's per-token cell (model_runner_components/
  spec_aux_hidden_state.py:154-176) and the bytes one token takes in its own pool.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.model.config import ModelConfigError, model_facts
from ansible_collections.llmops.inference.plugins.module_utils.planner.families.registry import family

# layers/vocab_parallel_embedding.py:48 DEFAULT_VOCAB_PADDING_SIZE, :57-59 pad_vocab_size.
VOCAB_PADDING = 64
# configs/model_config.py:2284-2320 _get_and_verify_dtype under --dtype auto: a float32 (or dtype-less) config runs in
# float16 (bfloat16 for Gemma), bfloat16 / float16 as given; the vocab tables are created in that dtype
# (vocab_parallel_embedding.py:323-324, :342-350: params_dtype = torch.get_default_dtype()).
_RUNTIME_DTYPE_BYTES = {'float32': 2, 'float': 2, 'bfloat16': 2, 'bf16': 2, 'float16': 2, 'half': 2}
EMBED_REPLICATION_ENV = 'SGLANG_ENABLE_EMBED_REPLICATION'
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
    return algorithm


def check_swa_draft(target_facts, draft):
    """EAGLE-3 on a sliding-window hybrid: SGLang prices the draft's layers in the full pool at the target's per-layer
    size unless the draft config is itself a hybrid SWA one (model_executor/pool_configurator.py:729-760:
    eagle_draft_swa_num_layers, spec_aux_hidden_state.py:180-183); the planner models the first case only."""
    if family(target_facts).SWA_POOL and draft is not None and draft.get('n_swa'):
        raise DraftError('EAGLE-3 draft %s has %d sliding-window layers: SGLang puts them in the target\'s '
                         'sliding-window pool (pool_configurator.py:729-760), which the planner does not model (fix: '
                         'a draft of full-attention layers, or num_draft_tokens: 0)' % (draft['arch'], draft['n_swa']))


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


def _pad(vocab, to):
    return (vocab + to - 1) // to * to


def vocab_partition_rows(vocab, group):
    """Rows of one rank's shard of a VocabParallelEmbedding / ParallelLMHead split over ``group`` ranks
    (layers/vocab_parallel_embedding.py:272-290, :327-329): the vocab padded to 64, or to 64 x group when that is not
    divisible by the group, divided by the group (1: the whole table on every rank)."""
    padding = VOCAB_PADDING
    if _pad(vocab, padding) % group:
        padding *= group
    return _pad(vocab, padding) // group


def vocab_table_bytes(vocab, hidden, group, dtype_bytes):
    """Bytes one rank holds of a vocab x hidden embedding or lm_head split over ``group`` ranks."""
    return vocab_partition_rows(vocab, group) * hidden * dtype_bytes


def runtime_dtype_bytes(dtype):
    """Bytes per element of the dtype SGLang builds the model in under --dtype auto (_RUNTIME_DTYPE_BYTES)."""
    size = _RUNTIME_DTYPE_BYTES.get(str(dtype or 'float32').replace('torch.', ''))
    if size is None:
        raise DraftError('config dtype %s: the planner knows no runtime byte size for it (known: %s)'
                         % (dtype, ', '.join(sorted(_RUNTIME_DTYPE_BYTES))))
    return size


def env_bool(environment, name, variable='llmops_environment'):
    """SGLang's EnvBool of ``name`` in the server environment (environ.py:143-150): true/1/yes/y, false/0/no/n (any
    case); unset is False. Any other value makes SGLang raise ValueError when it reads the variable."""
    value = (environment or {}).get(name)
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    text = str(value).lower()
    if text in ('true', '1', 'yes', 'y'):
        return True
    if text in ('false', '0', 'no', 'n'):
        return False
    raise DraftError('%s=%r: SGLang raises ValueError (\'"%s" is not a valid boolean value\', environ.py:143-150) when '
                     'it builds the embedding (fix: %s: true or false)' % (name, value, text, name), variable)


def embedding_group(layout, tp, attn_tp, environment=None):
    """Ranks a draft's embedding is split over (release architectures.mtp_draft embed; 1 = replicated):

    * tp: VocabParallelEmbedding's defaults, the TP group;
    * attn_tp: use_attn_tp_group=is_dp_attention_enabled(), the attention-TP group (= tp without DP attention);
    * embedding_tp_kwargs: get_embedding_tp_kwargs() (vocab_parallel_embedding.py:166-185): replicated when
      SGLANG_ENABLE_EMBED_REPLICATION is set, else the attention-TP group;
    * tp_unless_dp_attention: enable_tp=not is_dp_attention_enabled() (qwen3_5.py:1864-1873): replicated under DP
      attention, else the TP group.
    """
    dp_attention = attn_tp != tp
    if layout == 'tp':
        return tp
    if layout == 'attn_tp':
        return attn_tp
    if layout == 'embedding_tp_kwargs':
        return 1 if env_bool(environment, EMBED_REPLICATION_ENV) else attn_tp
    if layout == 'tp_unless_dp_attention':
        return 1 if dp_attention else tp
    raise DraftError('embedding layout %s is not one the planner knows' % layout)


def resident_draft(body, embed, head, freed):
    """The rule both draft kinds follow, in bytes per GPU: dict(at_sizing, freed_after, embed_bytes, head_bytes,
    body_bytes). at_sizing: the draft's body plus its OWN embedding and lm_head, all allocated when the draft worker
    is built (model_loader/loader.py:1010-1021 under the target device) and resident when init_memory_pools sizes the
    target pools (scheduler.py:1098-1111); freed_after: the tables init_lm_head replaces with the target's afterwards
    (eagle_worker_v2.py:243-258 alloc_memory_pool -> :336-379 init_lm_head), given back to the headroom."""
    return dict(at_sizing=body + embed + head, freed_after=freed, embed_bytes=embed, head_bytes=head, body_bytes=body)


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
    embed = vocab_partition_rows(facts['vocab'], tp) * hidden
    lm_vocab = facts['draft_vocab_size'] or facts['vocab']
    lm_head = 0 if facts['tied'] else vocab_partition_rows(lm_vocab, tp) * hidden
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


def draft_weights(facts, target_facts, tp, bytes_per_param=None):
    """resident_draft() of an EAGLE-3 draft checkpoint, plus params and bytes_per_param.

    at_sizing: every parameter of the draft model, its own embed_tokens (and lm_head) included (resident_draft).
    freed_after: what init_lm_head drops (eagle_worker_v2.py:353-363): the embedding via set_embed unless
    target_hidden_size differs from hidden_size (models/llama.py:910-924); embedding and lm_head via
    set_embed_and_head when draft_vocab_size is absent (llama_eagle3.py:305-308 load_lm_head_from_target).
    ``bytes_per_param``: None for the dtype SGLang builds the draft in (runtime_dtype_bytes).
    """
    if bytes_per_param is None:
        bytes_per_param = runtime_dtype_bytes(facts['dtype'])
    params = draft_params(facts, target_facts, tp)
    freed = 0
    if not facts['tied'] and not facts['draft_vocab_size']:
        freed = params['embed'] + params['lm_head']
    elif not facts['target_hidden_size'] or facts['target_hidden_size'] == facts['hidden']:
        freed = params['embed']
    body = params['total'] - params['embed'] - params['lm_head']
    out = resident_draft(body * bytes_per_param, params['embed'] * bytes_per_param, params['lm_head'] * bytes_per_param,
                         freed * bytes_per_param)
    out.update(arch=facts['arch'], params=params['total'], bytes_per_param=bytes_per_param)
    return out


def mtp_draft_rule(release, target_facts):
    """dict(class, embed, head) of the MTP class SGLang loads as the path-less draft of the target (release
    architectures.mtp_draft; configs/model_config.py:1032-1211); DraftError when the release rewrites the target's
    architecture to none the planner sizes."""
    rules = release['architectures'].get('mtp_draft') or {}
    rule = rules.get(target_facts['arch'])
    if rule is None:
        raise DraftError('MTP for %s: sglang %s loads the path-less draft as the MTP class configs/model_config.py:'
                         '1032-1211 rewrites the target architecture to, and the planner knows the embedding and lm_head '
                         'of those for %s only (profiles/sglang_releases.yml architectures.mtp_draft) (fix: '
                         'num_draft_tokens: 0)' % (target_facts['arch'], release.get('version', '?'),
                                                   ', '.join(sorted(rules)) or 'no architecture'))
    return rule


def mtp_draft_weights(release, target_facts, layer_bytes, tp, attn_tp, environment=None):
    """resident_draft() of a path-less MTP draft, plus arch (its class), embed_group and dtype_bytes.

    ``layer_bytes``: its MTP layer(s) per GPU (vram_plan.weights_per_rank prices those from the checkpoint). The class
    (release architectures.mtp_draft) builds its own embedding over embedding_group() and, unless ``head`` is untied
    and the config ties the embeddings (Qwen3.5: lm_head = embed_tokens, qwen3_5_mtp.py:146-155), its own
    ParallelLMHead over the TP group (enable_dp_lm_head, which would use the attention-TP group, is not an input).
    Both are vocab x hidden in the runtime dtype, padded as VocabParallelEmbedding pads. set_embed_and_head frees the
    embedding and (untied) the lm_head (deepseek_v2.py:3442-3448, glm4_moe.py:1253-1259, qwen3_next.py:1115-1121,
    mimo_mtp.py:198-204, mimo_v2_nextn.py:387-393, qwen3_moe_mtp.py:84-90, qwen3_5_mtp.py:170-180).
    """
    rule = mtp_draft_rule(release, target_facts)
    dtype_bytes = runtime_dtype_bytes(target_facts['dtype'])
    vocab, hidden = target_facts['vocab'], target_facts['hidden']
    group = embedding_group(rule['embed'], tp, attn_tp, environment)
    embed = vocab_table_bytes(vocab, hidden, group, dtype_bytes)
    head = 0 if rule['head'] == 'untied' and target_facts['tied'] else vocab_table_bytes(vocab, hidden, tp, dtype_bytes)
    out = resident_draft(layer_bytes, embed, head, embed + head)
    out.update(arch=rule['class'], embed_group=group, dtype_bytes=dtype_bytes)
    return out


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


ALLOW_LONGER_CONTEXT_ENV = 'SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN'


def check_draft_context(facts, context, environment=None):
    """Refuse what SGLang refuses at start: the draft worker is built with the target's context length
    (speculative/eagle_worker_v2.py:229) and the draft's ModelConfig raises ValueError when that exceeds the draft's own
    derived context length (configs/model_config.py:1291-1316 _derive_context_length) unless
    SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN is set (it then stretches the draft's max_position_embeddings)."""
    derived = facts['context']
    if not derived or context <= derived or env_bool(environment, ALLOW_LONGER_CONTEXT_ENV):
        return
    raise DraftError('the EAGLE-3 draft (%s) was trained for a context of %d tokens (its max_position_embeddings), and '
                     'SGLang builds it with the serving context of %d: it refuses to start ("Target model\'s '
                     'context_length (%d) is greater than the derived context_length (%d)", '
                     'configs/model_config.py:1291-1316) (fix: llmops_context_length: %d or less, or '
                     'llmops_environment: {%s: "1"} to run the draft past its trained length)'
                     % (facts['arch'], derived, context, context, derived, derived, ALLOW_LONGER_CONTEXT_ENV),
                     variable='llmops_context_length')
