# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The tensors of a checkpoint, from model_config.model_facts(): ONE layout for two readers.

PRIVATE to the collection. Pure, stdlib only. vram_plan.param_counts sums the shapes (parameters per rank);
weight_bytes prices each tensor in the format its quantization_config stores it in (checkpoint bytes). A tensor is
(name, shape, role): the name as the Hugging Face checkpoint writes it (quantizers write their ignore lists in these
names), the shape before quantization ([out, in] for a Linear weight) and the role, which decides how a format stores
it:

  linear    a Linear weight of a decoder or MTP layer: what FP8 / NVFP4 / INT4 formats quantize unless ignored
  expert    one routed expert's Linear weight (the record's count is the number of experts)
  router    router gates (SGLang builds them with quant_config=None: never quantized)
  embed, head, norm, vector (other 1-D parameters: biases, A_log, dt_bias, attention sinks), conv (GDN conv1d)
  fp32      stored float32 whatever the model dtype (DeepSeek's e_score_correction_bias: the R1 tensor table)
  mtp_proj  the MTP input projection (eh_proj / fc): BF16 in the DeepSeek-R1 FP8 checkpoint (its tensor table)
  vision    vision tower and projector

The per-architecture details (q/k norms, attention biases and sinks, the shared-expert gate, expert biases, where
the MTP layer lives and which copies it carries) come from the config keys and model types read in layout().
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def _int(text, root, key, default=0):
    value = text.get(key, root.get(key, default))
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return default


def layout(text, root, arch, model_type):
    """The checkpoint-layout flags of one config (text_config first, then the top level), for model_facts."""
    mtype = str(text.get('model_type') or model_type or '')
    gpt_oss = mtype == 'gpt_oss'
    nested = text is not root
    kimi_vl = arch == 'KimiK25ForConditionalGeneration'
    text_prefix = 'language_model.model.' if kimi_vl else ('model.language_model.' if nested else 'model.')
    return dict(
        # qwen3.py / qwen3_moe.py / qwen3_next.py / qwen3_5.py build q_norm and k_norm; glm4_moe.py when use_qk_norm.
        qk_norm=mtype.startswith('qwen3') or bool(text.get('use_qk_norm', root.get('use_qk_norm', False))),
        # attention_bias: q/k/v biases (GLM-4.5, gpt-oss); Qwen2 always has them; gpt-oss also an o_proj bias.
        qkv_bias=bool(text.get('attention_bias', root.get('attention_bias', False))) or mtype == 'qwen2',
        # gpt-oss: o_proj bias, per-head sinks, router bias, expert biases; its experts are stored fused per layer
        # (mlp.experts.gate_up_proj_* / down_proj_* over all experts).
        o_bias=gpt_oss, sinks=gpt_oss, router_bias=gpt_oss, expert_bias=gpt_oss, fused_experts=gpt_oss,
        # Qwen MoE: one shared expert behind a sigmoid gate [1, hidden]; DeepSeek-style n_shared_experts: no gate.
        shared_gate=bool(_int(text, root, 'shared_expert_intermediate_size')),
        # noaux_tc routing keeps a float32 e_score_correction_bias per MoE layer (deepseek_v2.py MoEGate,
        # glm4_moe.py Glm4MoeGate).
        score_bias=text.get('topk_method', root.get('topk_method')) == 'noaux_tc' or mtype == 'glm4_moe',
        # num_nextn_predict_layers (DeepSeek, GLM): the MTP layer is model.layers.<num_hidden_layers + k> and carries
        # its own embed_tokens and shared_head.head (the DeepSeek-R1 tensor table); mtp_num_hidden_layers (Qwen3.5):
        # mtp.* sharing the target's embedding and head.
        mtp_style='deepseek' if _int(text, root, 'num_nextn_predict_layers') else 'qwen',
        text_prefix=text_prefix,
        head_name='language_model.lm_head' if kimi_vl else 'lm_head',
        vision_prefix='' if kimi_vl else 'model.visual.',
        gdn_names='qwen3_5' if arch.startswith('Qwen3_5') else 'qwen3_next',
    )


def _lay(f):
    return f.get('layout') or layout({}, {}, f.get('arch') or '', f.get('model_type'))


def params(tensors):
    """Sum of the elements of (name, shape, role[, count]) tensors."""
    total = 0
    for tensor in tensors:
        size = 1
        for dim in tensor[1]:
            size *= dim
        total += size * (tensor[3] if len(tensor) > 3 else 1)
    return total


def _mla(f):
    """DeepseekV2AttentionMLA: q (through q_lora_rank when set), the latent kv_a projection, kv_b and o."""
    qk = f['qk_nope_head_dim'] + f['qk_rope_head_dim']
    heads, hidden = f['heads'], f['hidden']
    if f['q_lora_rank']:
        q = [('self_attn.q_a_proj', (f['q_lora_rank'], hidden), 'linear'),
             ('self_attn.q_a_layernorm', (f['q_lora_rank'],), 'norm'),
             ('self_attn.q_b_proj', (heads * qk, f['q_lora_rank']), 'linear')]
    else:
        q = [('self_attn.q_proj', (heads * qk, hidden), 'linear')]
    return q + [
        ('self_attn.kv_a_proj_with_mqa', (f['kv_lora_rank'] + f['qk_rope_head_dim'], hidden), 'linear'),
        ('self_attn.kv_a_layernorm', (f['kv_lora_rank'],), 'norm'),
        ('self_attn.kv_b_proj', (heads * (f['qk_nope_head_dim'] + f['v_head_dim']), f['kv_lora_rank']), 'linear'),
        ('self_attn.o_proj', (hidden, heads * f['v_head_dim']), 'linear'),
    ]


def attention(f, swa=False):
    """One full-attention (or, ``swa``, sliding-window) layer's mixer; q_proj is doubled for Qwen3.5's output gate.
    V and o_proj use v_head_dim, and a sliding-window layer its own KV heads and dims where the config names them
    (MiMo-V2-Flash: models/mimo_v2.py:704-731, :884-918)."""
    if f['attention'] == 'mla':
        return _mla(f)
    lay = _lay(f)
    hidden, heads = f['hidden'], f['heads']
    hd, vhd, kv = ((f.get('swa_head_dim'), f.get('swa_v_head_dim'), f.get('swa_kv_heads')) if swa else
                   (f['head_dim'], f.get('v_head_dim'), f['kv_heads']))
    hd = hd or f['head_dim']
    vhd, kv = vhd or hd, kv or f['kv_heads']
    q_out = heads * hd * (2 if f['attn_output_gate'] else 1)
    out = [('self_attn.q_proj', (q_out, hidden), 'linear'), ('self_attn.k_proj', (kv * hd, hidden), 'linear'),
           ('self_attn.v_proj', (kv * vhd, hidden), 'linear'), ('self_attn.o_proj', (hidden, heads * vhd), 'linear')]
    if lay['qk_norm']:
        out += [('self_attn.q_norm', (hd,), 'norm'), ('self_attn.k_norm', (hd,), 'norm')]
    if lay['qkv_bias']:
        out += [('self_attn.q_proj.bias', (q_out,), 'vector'), ('self_attn.k_proj.bias', (kv * hd,), 'vector'),
                ('self_attn.v_proj.bias', (kv * vhd,), 'vector')]
    if lay['o_bias']:
        out.append(('self_attn.o_proj.bias', (hidden,), 'vector'))
    if lay['sinks']:
        out.append(('self_attn.sinks', (heads,), 'vector'))
    return out


def gdn(f):
    """One Gated DeltaNet layer (Qwen3-Next fuses in_proj_qkvz / in_proj_ba; Qwen3.5 splits them)."""
    hidden, vh = f['hidden'], f['lin_v_heads']
    key_dim, value_dim = f['lin_k_heads'] * f['lin_k_dim'], vh * f['lin_v_dim']
    if _lay(f)['gdn_names'] == 'qwen3_5':
        proj = [('linear_attn.in_proj_qkv', (2 * key_dim + value_dim, hidden), 'linear'),
                ('linear_attn.in_proj_z', (value_dim, hidden), 'linear'),
                ('linear_attn.in_proj_b', (vh, hidden), 'linear'), ('linear_attn.in_proj_a', (vh, hidden), 'linear')]
    else:
        proj = [('linear_attn.in_proj_qkvz', (2 * key_dim + 2 * value_dim, hidden), 'linear'),
                ('linear_attn.in_proj_ba', (2 * vh, hidden), 'linear')]
    return proj + [
        ('linear_attn.conv1d', (2 * key_dim + value_dim, 1, f['conv_kernel']), 'conv'),
        ('linear_attn.A_log', (vh,), 'vector'), ('linear_attn.dt_bias', (vh,), 'vector'),
        ('linear_attn.norm', (f['lin_v_dim'],), 'norm'),
        ('linear_attn.out_proj', (hidden, value_dim), 'linear'),
    ]


def expert(f):
    """One routed expert (gpt-oss: gate and up fused, and a bias per projection)."""
    lay = _lay(f)
    hidden, inter = f['hidden'], f['moe_inter']
    if lay['fused_experts']:
        out = [('mlp.experts.gate_up_proj', (2 * inter, hidden), 'expert'), ('mlp.experts.down_proj', (hidden, inter), 'expert')]
    else:
        out = [('mlp.experts.0.gate_proj', (inter, hidden), 'expert'), ('mlp.experts.0.up_proj', (inter, hidden), 'expert'),
               ('mlp.experts.0.down_proj', (hidden, inter), 'expert')]
    if lay['expert_bias']:
        out += [('mlp.experts.gate_up_proj_bias', (2 * inter,), 'vector'), ('mlp.experts.down_proj_bias', (hidden,), 'vector')]
    return out


def _experts(f):
    """All routed experts of one layer: one record per tensor with the expert count, or (stored fused) one tensor
    whose first dimension spans every expert."""
    if _lay(f)['fused_experts']:
        return [(name, (f['experts'] * shape[0],) + tuple(shape[1:]), role) for name, shape, role in expert(f)]
    return [t + (f['experts'],) for t in expert(f)]


def moe_shared(f):
    """The per-layer MoE part every token uses: shared expert (and its gate), router (and its biases)."""
    lay = _lay(f)
    hidden, shared = f['hidden'], f['shared_inter']
    out = []
    if shared:
        name = 'mlp.shared_expert.' if lay['shared_gate'] else 'mlp.shared_experts.'
        out += [(name + 'gate_proj', (shared, hidden), 'linear'), (name + 'up_proj', (shared, hidden), 'linear'),
                (name + 'down_proj', (hidden, shared), 'linear')]
        if lay['shared_gate']:
            out.append(('mlp.shared_expert_gate', (1, hidden), 'router'))
    out.append(('mlp.router' if lay['router_bias'] else 'mlp.gate', (f['experts'], hidden), 'router'))
    if lay['router_bias']:
        out.append(('mlp.router.bias', (f['experts'],), 'vector'))
    if lay['score_bias']:
        out.append(('mlp.gate.e_score_correction_bias', (f['experts'],), 'fp32'))
    return out


def dense_mlp(f):
    hidden, inter = f['hidden'], f['dense_inter']
    return [('mlp.gate_proj', (inter, hidden), 'linear'), ('mlp.up_proj', (inter, hidden), 'linear'),
            ('mlp.down_proj', (hidden, inter), 'linear')]


def layer_norms(f):
    return [('input_layernorm', (f['hidden'],), 'norm'), ('post_attention_layernorm', (f['hidden'],), 'norm')]


def _layernorm(name, size):
    return [(name + '.weight', (size,), 'vision'), (name + '.bias', (size,), 'vision')]


def _moonvit(v):
    """Kimi-K2.5's MoonViT (kimi_k25.py: patch embed, learned 2-D position grid, biased blocks, patch-merger
    projector into the text hidden size)."""
    h, inter = v['vt_hidden_size'], v.get('vt_intermediate_size', 4 * v['vt_hidden_size'])
    patch = v.get('patch_size', 14)
    merge = 1
    for k in v.get('merge_kernel_size') or (2, 2):
        merge *= k
    tower = 'vision_tower.'
    out = [(tower + 'patch_embed.proj.weight', (h, 3, patch, patch), 'vision'),
           (tower + 'patch_embed.proj.bias', (h,), 'vision'),
           (tower + 'patch_embed.pos_emb.weight', (v.get('init_pos_emb_height', 64), v.get('init_pos_emb_width', 64), h),
            'vision')]
    block = [('attn.wqkv', (3 * h, h), 'vision'), ('attn.wqkv.bias', (3 * h,), 'vision'), ('attn.wo', (h, h), 'vision'),
             ('attn.wo.bias', (h,), 'vision'), ('mlp.fc0', (inter, h), 'vision'), ('mlp.fc0.bias', (inter,), 'vision'),
             ('mlp.fc1', (h, inter), 'vision'), ('mlp.fc1.bias', (h,), 'vision')] + _layernorm('norm0', h) + _layernorm('norm1', h)
    depth = v.get('vt_num_hidden_layers', 27)
    out += [(tower + 'encoder.blocks.N.' + name, shape, role, depth) for name, shape, role in block]
    wide, text = h * merge, v.get('text_hidden_size', h)
    projector = [('mm_projector.linear_1', (wide, wide), 'vision'), ('mm_projector.linear_1.bias', (wide,), 'vision'),
                 ('mm_projector.linear_2', (text, wide), 'vision'), ('mm_projector.linear_2.bias', (text,), 'vision')]
    return out + _layernorm(tower + 'encoder.final_layernorm', h) + _layernorm('mm_projector.pre_norm', h) + projector


def vision(v):
    """The vision tower: Qwen3-VL / Qwen3.5 layout (blocks, patch embed, position table, merger and deepstack
    mergers), or Kimi's MoonViT when the config names vt_* sizes. Shapes include biases and LayerNorm pairs."""
    if not v:
        return []
    if 'vt_hidden_size' in v:
        return _moonvit(v)
    h = v.get('hidden_size', 1152)
    inter = v.get('intermediate_size', 4 * h)
    depth = v.get('depth', v.get('num_hidden_layers', 24))
    block = [('attn.qkv', (3 * h, h)), ('attn.qkv.bias', (3 * h,)), ('attn.proj', (h, h)), ('attn.proj.bias', (h,)),
             ('mlp.linear_fc1', (inter, h)), ('mlp.linear_fc1.bias', (inter,)), ('mlp.linear_fc2', (h, inter)),
             ('mlp.linear_fc2.bias', (h,))] + [t[:2] for t in _layernorm('norm1', h) + _layernorm('norm2', h)]
    merge = v.get('spatial_merge_size', 2) ** 2
    out_h = v.get('out_hidden_size', h)
    merger = [t[:2] for t in _layernorm('norm', h)] + [
        ('linear_fc1', (h * merge, h * merge)), ('linear_fc1.bias', (h * merge,)), ('linear_fc2', (out_h, h * merge)),
        ('linear_fc2.bias', (out_h,))]
    mergers = 1 + len(v.get('deepstack_visual_indexes') or [])
    out = [('blocks.N.' + name, shape, 'vision', depth) for name, shape in block]
    out += [('patch_embed.proj', (h, v.get('in_channels', 3), v.get('temporal_patch_size', 2), v.get('patch_size', 16),
                                  v.get('patch_size', 16)), 'vision'),
            ('patch_embed.proj.bias', (h,), 'vision')]
    if v.get('num_position_embeddings'):
        out.append(('pos_embed', (v['num_position_embeddings'], h), 'vision'))
    return out + [('merger.' + name, shape, 'vision', mergers) for name, shape in merger]


def _mixer(f, layer):
    if f['n_linear'] and layer not in f['full_layer_ids']:
        return gdn(f)
    return attention(f, swa=layer in (f.get('swa_layer_ids') or ()))


def _mlp(f, layer):
    if f['experts'] and layer >= f['dense_layers']:
        return moe_shared(f) + _experts(f)
    return dense_mlp(f)


def mamba2_mixer(f):
    """One Mamba-2 mixer of NemotronH (models/nemotron_h.py NemotronHMambaDecoderLayer / MambaMixer2): in_proj to
    [z, x, B, C, dt], the causal conv over x/B/C (with bias), A_log, D, dt_bias, the gated norm and out_proj."""
    hidden, heads = f['hidden'], f['lin_v_heads']
    inner = heads * f['lin_v_dim']
    conv_dim = inner + 2 * f['lin_k_heads'] * f['lin_k_dim']
    return [('mixer.in_proj', (inner + conv_dim + heads, hidden), 'linear'),
            ('mixer.conv1d', (conv_dim, 1, f['conv_kernel']), 'conv'), ('mixer.conv1d.bias', (conv_dim,), 'vector'),
            ('mixer.A_log', (heads,), 'vector'), ('mixer.D', (heads,), 'vector'), ('mixer.dt_bias', (heads,), 'vector'),
            ('mixer.norm', (inner,), 'norm'), ('mixer.out_proj', (hidden, inner), 'linear')]


def _relu2_mlp(prefix, inter, hidden, role='linear'):
    return [(prefix + 'up_proj', (inter, hidden), role), (prefix + 'down_proj', (hidden, inter), role)]


def block_pattern_layer(f, kind):
    """One NemotronH block of hybrid_override_pattern: M Mamba-2, * attention, - relu2 MLP (up/down, no gate),
    E MoE (relu2 routed experts, a shared expert, the router and its score-correction bias); each with its norm."""
    hidden = f['hidden']
    out = [('norm', (hidden,), 'norm')]
    if kind == 'M':
        return out + mamba2_mixer(f)
    if kind == '*':
        return out + [('mixer.' + name[len('self_attn.'):], shape, role) for name, shape, role in attention(f)]
    if kind == '-':
        return out + _relu2_mlp('mixer.', f['dense_inter'], hidden)
    experts = [t + (f['experts'],) for t in _relu2_mlp('mixer.experts.0.', f['moe_inter'], hidden, 'expert')]
    shared = _relu2_mlp('mixer.shared_experts.', f['shared_inter'], hidden) if f['shared_inter'] else []
    return out + experts + shared + [('mixer.gate', (f['experts'], hidden), 'router'),
                                     ('mixer.gate.e_score_correction_bias', (f['experts'],), 'fp32')]


def checkpoint(f):
    """Every tensor of the checkpoint: dicts of part (language / vision / mtp), name, shape, role, count and
    checkpoint_only (in the files, not kept by SGLang: the DeepSeek MTP layer's own embedding and head)."""
    lay = _lay(f)
    out = []
    if f.get('block_pattern'):
        # NemotronH: backbone.embeddings, one block per pattern letter, backbone.norm_f, lm_head.
        vocab, hidden = f['vocab'], f['hidden']
        tensors = [('backbone.embeddings', (vocab, hidden), 'embed'), ('backbone.norm_f', (hidden,), 'norm')]
        if not f['tied']:
            tensors.append(('lm_head', (vocab, hidden), 'head'))
        for layer, kind in enumerate(f['block_pattern']):
            tensors += [('backbone.layers.%d.%s' % (layer, t[0]),) + tuple(t[1:]) for t in block_pattern_layer(f, kind)]
        return [dict(part='language', name=t[0], shape=tuple(t[1]), role=t[2], count=t[3] if len(t) > 3 else 1,
                     checkpoint_only=False) for t in tensors]

    def add(part, prefix, tensors, checkpoint_only=False):
        for tensor in tensors:
            out.append(dict(part=part, name=prefix + tensor[0], shape=tuple(tensor[1]), role=tensor[2],
                            count=tensor[3] if len(tensor) > 3 else 1, checkpoint_only=checkpoint_only))

    text = lay['text_prefix']
    vocab, hidden = f['vocab'], f['hidden']
    add('language', text, [('embed_tokens', (vocab, hidden), 'embed'), ('norm', (hidden,), 'norm')])
    if not f['tied']:
        add('language', '', [(lay['head_name'], (vocab, hidden), 'head')])
    for layer in range(f['layers']):
        add('language', '%slayers.%d.' % (text, layer), _mixer(f, layer) + _mlp(f, layer) + layer_norms(f))
    for k in range(f['mtp_layers']):
        if lay['mtp_style'] == 'deepseek':
            prefix = '%slayers.%d.' % (text, f['layers'] + k)
            add('mtp', prefix, [('eh_proj', (hidden, 2 * hidden), 'mtp_proj'), ('enorm', (hidden,), 'norm'),
                                ('hnorm', (hidden,), 'norm'), ('shared_head.norm', (hidden,), 'norm')])
            add('mtp', prefix, [('embed_tokens', (vocab, hidden), 'embed'), ('shared_head.head', (vocab, hidden), 'head')],
                checkpoint_only=True)
        else:
            prefix = 'mtp.layers.%d.' % k
            add('mtp', 'mtp.', [('fc', (hidden, 2 * hidden), 'mtp_proj'), ('pre_fc_norm_embedding', (hidden,), 'norm'),
                                ('pre_fc_norm_hidden', (hidden,), 'norm'), ('norm', (hidden,), 'norm')])
        add('mtp', prefix, attention(f) + (moe_shared(f) + _experts(f) if f['experts'] else dense_mlp(f))
            + layer_norms(f))
    add('vision', lay['vision_prefix'], vision(f['vision']))
    return out
