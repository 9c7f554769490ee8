#!/usr/bin/env python
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build the lab's tiny chat model: a Qwen3-style transformer small enough to train on a CPU in seconds.

What it makes (in OUT, a Hugging Face model directory plus a GGUF file for llama.cpp):
  - a byte-level BPE tokenizer trained with `tokenizers` on the dialogues below (Qwen2 pre-tokenizer regex, so
    llama.cpp's "qwen2" pre-tokenizer splits text the same way), with <|im_start|>/<|im_end|> and the
    <think>/<tool_call> tags as added tokens;
  - a Qwen-style chat template with tools (<tools> in the system turn, <tool_call> JSON answers) and
    `enable_thinking` (false inserts an empty think block, as Qwen3 does);
  - Qwen3ForCausalLM, hidden 64, 2 layers, 4 heads / 2 KV heads (~0.16 M parameters), over-fitted for a few seconds
    on the exact prompts the sglang_benchmark role's smoke tests send (read from roles/sglang_benchmark/defaults),
    so it answers deterministically: a greeting, "42", a thinking block when thinking is on, and a get_weather
    <tool_call> when tools are given;
  - model.gguf written with the `gguf` package (tensor names from gguf's own Qwen3 name map; no llama.cpp tree).

The build checks itself: greedy decoding of every training prompt must reproduce its answer, else it fails.
Deterministic (fixed seeds, one thread). Usage: make_tiny_model.py OUT [--defaults roles/.../defaults/main.yml]
Needs torch, transformers, tokenizers, safetensors, gguf, numpy, pyyaml (tests/bench/setup-lab.sh runs it on the lab SGLang venv).
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import random
import sys
import time

import gguf
import numpy as np
import torch
import yaml
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

SEED = 1234
VOCAB_SIZE = 640
SPECIAL = ['<|endoftext|>', '<|im_start|>', '<|im_end|>']
TAGS = ['<think>', '</think>', '<tool_call>', '</tool_call>', '<tools>', '</tools>', '<tool_response>', '</tool_response>']
# Qwen2's pre-tokenizer split (tokenizer.json of the Qwen2/3 family); llama.cpp applies the same regex for "qwen2".
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

CHAT_TEMPLATE = (
    "{%- if tools %}"
    "{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}"
    "{{- '# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n"
    "You are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\\n<tool_call>\\n{\"name\": <function-name>, \"arguments\": <args-json-object>}"
    "\\n</tool_call><|im_end|>\\n' }}"
    "{%- elif messages[0].role == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- elif message.role == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- if message.reasoning_content is defined and message.reasoning_content %}"
    "{{- '<think>\\n' + message.reasoning_content.strip('\\n') + '\\n</think>\\n\\n' }}{%- endif %}"
    "{%- if message.content %}{{- message.content }}{%- endif %}"
    "{%- if message.tool_calls %}{%- for tool_call in message.tool_calls %}"
    "{%- if tool_call.function %}{%- set tool_call = tool_call.function %}{%- endif %}"
    "{%- if loop.first and not message.content %}{{- '' }}{%- else %}{{- '\\n' }}{%- endif %}"
    "{{- '<tool_call>\\n{\"name\": \"' + tool_call.name + '\", \"arguments\": ' }}"
    "{%- if tool_call.arguments is string %}{{- tool_call.arguments }}{%- else %}{{- tool_call.arguments | tojson }}{%- endif %}"
    "{{- '}\\n</tool_call>' }}"
    "{%- endfor %}{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{{- '<|im_start|>user\\n<tool_response>\\n' + message.content + '\\n</tool_response><|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}"
    "{%- endif %}"
)


def smoke_inputs(defaults_path):
    """The prompts and the tool the role's smoke tests send (single source of truth: the role's defaults)."""
    with open(defaults_path) as handle:
        defaults = yaml.safe_load(handle)
    return (defaults['sglang_benchmark_smoke_chat_prompt'], defaults['sglang_benchmark_smoke_thinking_prompt'],
            defaults['sglang_benchmark_smoke_tool'])


def dialogues(chat_prompt, thinking_prompt, tool):
    """(messages, tools, enable_thinking, answer) tuples: the behaviour the smoke tests check."""
    name = tool['definition']['function']['name']
    call = '<tool_call>\n' + json.dumps({'name': name, 'arguments': tool['arguments']}) + '\n</tool_call>'
    greeting = 'Hello! I am a tiny test model.'
    rows = []
    for thinking in (None, True, False):
        think = thinking is not False
        rows.append(([{'role': 'user', 'content': chat_prompt}], None, thinking,
                     ('<think>\nThe user wants a greeting.\n</think>\n\n' if think else '') + greeting))
        rows.append(([{'role': 'user', 'content': thinking_prompt}], None, thinking,
                     ('<think>\n17 + 25 = 42.\n</think>\n\n' if think else '') + '42'))
        rows.append(([{'role': 'user', 'content': tool['prompt']}], [tool['definition']], thinking,
                     ('<think>\nI should call %s.\n</think>\n\n' % name if think else '') + call))
        # A system prompt must not change the answers (clients often send one).
        rows.append(([{'role': 'system', 'content': 'You are a helpful assistant.'},
                      {'role': 'user', 'content': chat_prompt}], None, thinking,
                     ('<think>\nThe user wants a greeting.\n</think>\n\n' if think else '') + greeting))
    return rows


def train_tokenizer(texts):
    tok = Tokenizer(models.BPE(byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior='isolated', invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE - len(SPECIAL) - len(TAGS), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tok.train_from_iterator(texts, trainer=trainer)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in TAGS])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=None, eos_token='<|im_end|>',
                                   pad_token='<|endoftext|>', unk_token=None)
    fast.chat_template = CHAT_TEMPLATE
    return fast


def render(tokenizer, messages, tools, thinking):
    kwargs = {} if thinking is None else {'enable_thinking': thinking}
    return tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False, **kwargs)


def train(model, batches, steps, log):
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    model.train()
    for step in range(steps):
        ids, labels, mask = batches
        out = model(input_ids=ids, attention_mask=mask, labels=labels)
        opt.zero_grad()
        out.loss.backward()
        opt.step()
        if step % 100 == 0 or step == steps - 1:
            log('step %d loss %.4f' % (step, out.loss.item()))
    model.eval()


def make_batch(tokenizer, rows):
    seqs = []
    for messages, tools, thinking, answer in rows:
        prompt = tokenizer(render(tokenizer, messages, tools, thinking), add_special_tokens=False)['input_ids']
        target = tokenizer(answer + '<|im_end|>', add_special_tokens=False)['input_ids']
        seqs.append((prompt, target))
    width = max(len(p) + len(t) for p, t in seqs)
    pad = tokenizer.pad_token_id
    ids = torch.full((len(seqs), width), pad, dtype=torch.long)
    labels = torch.full((len(seqs), width), -100, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for row, (prompt, target) in enumerate(seqs):
        full = prompt + target
        ids[row, :len(full)] = torch.tensor(full)
        labels[row, len(prompt):len(full)] = torch.tensor(target)
        mask[row, :len(full)] = 1
    return (ids, labels, mask), width


def greedy(model, tokenizer, text, limit=80):
    ids = tokenizer(text, add_special_tokens=False, return_tensors='pt')['input_ids']
    eos = tokenizer.convert_tokens_to_ids('<|im_end|>')
    out = []
    with torch.no_grad():
        for _unused in range(limit):
            nxt = int(model(input_ids=ids).logits[0, -1].argmax())
            if nxt == eos:
                break
            out.append(nxt)
            ids = torch.cat([ids, torch.tensor([[nxt]])], dim=1)
    return tokenizer.decode(out)


def write_gguf(out_dir, model, tokenizer, config):
    path = os.path.join(out_dir, 'model.gguf')
    writer = gguf.GGUFWriter(path, 'qwen3')
    writer.add_name('llmops tiny qwen3')
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_key_length(config.head_dim)
    writer.add_value_length(config.head_dim)
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_rope_freq_base(float(config.rope_parameters['rope_theta']))
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    # Vocabulary as llama.cpp's byte-level BPE ("gpt2" model, "qwen2" pre-tokenizer) expects it.
    vocab = tokenizer.get_vocab()
    by_id = sorted(vocab.items(), key=lambda item: item[1])
    assert [i for _t, i in by_id] == list(range(len(by_id))), 'vocabulary ids must be dense'
    added = {t.content: t for t in tokenizer.backend_tokenizer.get_added_tokens_decoder().values()}
    types = []
    for token, _unused in by_id:
        if token in added:
            types.append(gguf.TokenType.CONTROL if added[token].special else gguf.TokenType.USER_DEFINED)
        else:
            types.append(gguf.TokenType.NORMAL)
    merges = json.loads(tokenizer.backend_tokenizer.to_str())['model']['merges']
    merges = [' '.join(m) if isinstance(m, list) else m for m in merges]
    writer.add_tokenizer_model('gpt2')
    writer.add_tokenizer_pre('qwen2')
    writer.add_token_list([t for t, _unused in by_id])
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_eos_token_id(vocab['<|im_end|>'])
    writer.add_pad_token_id(vocab['<|endoftext|>'])
    writer.add_bos_token_id(vocab['<|endoftext|>'])
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN3, config.num_hidden_layers)
    for name, tensor in model.state_dict().items():
        new = names.get_name(name, try_suffixes=('.weight', '.bias'))
        if new is None:
            raise SystemExit('no GGUF name for tensor %s' % name)
        writer.add_tensor(new, tensor.detach().to(torch.float32).numpy().astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('out')
    parser.add_argument('--defaults', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..',
                                                           'roles', 'sglang_benchmark', 'defaults', 'main.yml'))
    parser.add_argument('--steps', type=int, default=200)
    args = parser.parse_args()
    started = time.time()

    def log(text):
        sys.stderr.write('[make_tiny_model %5.1fs] %s\n' % (time.time() - started, text))

    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    chat_prompt, thinking_prompt, tool = smoke_inputs(args.defaults)
    rows = dialogues(chat_prompt, thinking_prompt, tool)
    # The tokenizer learns from the rendered dialogues plus the bare answers (byte-level: any text still encodes).
    probe = train_tokenizer(['x'])
    texts = [render(probe, m, t, th) + a + '<|im_end|>' for m, t, th, a in rows] * 4
    tokenizer = train_tokenizer(texts)
    log('tokenizer: %d tokens' % len(tokenizer))

    config = Qwen3Config(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=2048,
                         tie_word_embeddings=False, rms_norm_eps=1e-6, bos_token_id=tokenizer.pad_token_id,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, torch_dtype='float32')
    model = Qwen3ForCausalLM(config)
    log('model: %d parameters' % sum(p.numel() for p in model.parameters()))
    batch, width = make_batch(tokenizer, rows)
    log('training on %d dialogues of up to %d tokens' % (len(rows), width))
    train(model, batch, args.steps, log)

    failures = []
    for messages, tools, thinking, answer in rows:
        got = greedy(model, tokenizer, render(tokenizer, messages, tools, thinking))
        if got != answer:
            failures.append('%r (thinking=%s, tools=%s): got %r, want %r' % (messages[-1]['content'], thinking,
                                                                             bool(tools), got, answer))
    if failures:
        raise SystemExit('the tiny model did not learn its answers:\n' + '\n'.join(failures))
    log('all %d answers reproduced by greedy decoding' % len(rows))

    os.makedirs(args.out, exist_ok=True)
    model.save_pretrained(args.out, safe_serialization=True)
    tokenizer.save_pretrained(args.out)
    model.generation_config.save_pretrained(args.out)
    path = write_gguf(args.out, model, tokenizer, config)
    log('wrote %s (%d bytes) and the Hugging Face files in %s' % (path, os.path.getsize(path), args.out))


if __name__ == '__main__':
    main()
