#!/usr/bin/env python3
"""Exports the real-model corpus: tiny random-weight models built from
`transformers` config classes (never downloaded), written by the real
exporters, with inputs as users pass them and onnxruntime's outputs.

Usage (environments from models/real/setup_export_env.sh):
  .venv-export/bin/python models/real/export_corpus.py --out models/real/corpus \
      [--arch gpt2,llama,...] [--exporter dynamo,torchscript,genai,ortopt]
  .venv-optimum/bin/python models/real/export_corpus.py --out models/real/corpus \
      --exporter optimum
  .venv-export/bin/python models/real/export_corpus.py --out models/real/corpus \
      --arch falcon,gptj,opt,gemma3,stablelm,olmo2,granite,starcoder2,bloom,gpt_bigcode,\
codegen,cohere,nemotron,persimmon,gpt_neo,olmo,glm,helium,smollm3,mixtral,\
qwen2_moe,qwen3_moe,deepseek_v3,gpt_oss,phimoe,xglm,roberta,distilbert,albert,\
modernbert,deberta_v2,mpnet,smollm,mpt,jetmoe,doge,olmoe,bitnet,cohere2,granitemoe,\
biogpt,diffllama,vaultgemma,nanochat,lfm2,nystromformer,granite_swa,mamba,mamba2,rwkv,\
zamba,xlnet,yoso,fnet,flaubert,xlstm,cpmant,gemma4_text,qwen3_5_text,nemotron_h,\
minicpm3,zamba2,gemma3n_text,funnel \
      --exporter dynamo,torchscript     (MORE: beyond the first ten, torch.onnx only)
  .venv-export/bin/python models/real/export_corpus.py --out models/real/corpus \
      --arch smollm --exporter genai    (and onnxruntime-genai's builder for SmolLM's layout)
  .venv-export/bin/python models/real/export_corpus.py --out models/real/corpus \
      --arch gpt_oss,granite,olmo,gemma,ernie4_5,hunyuan_v1_dense --exporter genai
                                         (the builder's gpt-oss: head_sink, the MoE op)
  .venv-optimum/bin/python models/real/export_corpus.py --out models/real/corpus \
      --arch cohere,glm,codegen,gpt_neo --exporter optimum    (transformers 4.57's archs beyond ARCHS)
  .venv-export/bin/python models/real/export_corpus.py --out models/real/corpus \
      --arch diffllama --exporter dynamo23   (RMSNormalization-23 with a scale of the input's shape)
  .venv-export-old/bin/python models/real/export_corpus.py --out models/real/corpus \
      --arch gpt2,bert --exporter dynamo --tag _torch26     (torch 2.6 with transformers 4.48)
  .venv-export-old/bin/python models/real/export_corpus.py --out models/real/corpus \
      --arch llama,gemma2,mixtral,qwen2_moe,olmoe,phimoe,gpt_bigcode --exporter torchscript \
      --tag _torch26
                                         (transformers 4.48's masks; experts routed by NonZero)
  .venv-export-old/bin/python models/real/export_corpus.py --out models/real/corpus \
      --arch llama,gpt_neox --exporter optimum --tag _torch26
                                         (optimum 1.24: the mask named past_sequence_length + 1)
  .venv-export-old/bin/python models/real/export_corpus.py --out models/real/corpus \
      --arch llama --exporter genai --tag _genai06   (onnxruntime-genai 0.6: seqlens_k [batch, 1])
  .venv-export/bin/python models/real/export_corpus.py --out models/real/corpus \
      --arch qwen3,gpt_neox --exporter ortopt,ortopt_eager   (the optimizer's qwen3 and gpt_neox types)
  .venv-export/bin/python models/real/export_corpus.py --out models/real/corpus \
      --arch clip_vision_model --exporter ortopt   (the optimizer's vit type: QuickGelu; bart, t5,
                                         vit, deit, swin and clip probed the same way)
  .venv-export/bin/python models/real/export_corpus.py --out models/real/corpus \
      --arch llama,qwen3,gemma2 --exporter genai_int4   (then genai_int4asym and genai_int8 for
      llama, genai_int4qdq for llama and qwen3: the builder's weight-only quantized forms,
      GENAI_QUANTIZED, at accuracy level 1; genai_fp16 for llama and qwen3: the builder's
      fp16 build for the cuda provider)

  .venv-export/bin/python models/real/export_corpus.py --out models/real/corpus \
      --arch wav2vec2,hubert,wavlm,sew --exporter dynamo,torchscript
                                         (AUDIO: speech encoders over raw samples; the
                                         corpus holds both exports of wav2vec2, WavLM and
                                         SEW, and HuBERT's TorchScript one; then sew-d)
  .venv-export/bin/python models/real/export_corpus.py --out models/real/corpus \
      --arch vit,deit,dinov2,beit,swin,clip_vision_model,siglip_vision_model,convnext \
      --exporter dynamo,torchscript
                                         (VISION: image encoders over 32 x 32 pixels)
  .venv-optimum/bin/python models/real/export_corpus.py --out models/real/corpus \
      --arch vit,swin,beit,clip_vision_model,segformer,convnext,resnet --exporter optimum
                                         (Optimum's feature-extraction of image encoders: the
                                         pixels' channels, height and width named)
  .venv-export/bin/python models/real/export_corpus.py --out models/real/corpus \
      --arch dinov2 --exporter dynamo_anyimage,torchscript_anyimage
                                         (an image encoder's height and width symbolic
                                         too: DINOv2 interpolates its position grid to
                                         the image's patches at any size)
  .venv-optimum/bin/python models/real/export_corpus.py --out models/real/corpus \
      --arch mobilevit --exporter optimum  (MobileViT resizes its feature maps to a
                                         multiple of its patch and back)
  .venv-export/bin/python models/real/export_corpus.py --out models/real/corpus \
      --arch llama,gpt2,bert,qwen3,gpt_neox --exporter qdynamic
  .venv-export/bin/python models/real/export_corpus.py --out models/real/corpus \
      --arch llama,bert --exporter qdynamic_pc,qdynamic_ortext
                                         (onnxruntime's quantize_dynamic over the dynamo
                                         export: 8-bit weights and activations quantized
                                         at run time, as Hub repositories' model_quantized.onnx;
                                         qdynamic_ortext: then saved by onnxruntime's
                                         extended optimisation, its fused forms)
  .venv-optimum/bin/python models/real/export_corpus.py --out models/real/corpus \
      --arch llama,qwen2 --exporter optimum_q8
                                         (Optimum's export with a KV cache, quantized by
                                         optimum-cli onnxruntime quantize --avx2)
  .venv-export/bin/python models/real/export_corpus.py --out models/real/corpus \
      --arch t5,bart,whisper --exporter dynamo,torchscript
                                         (SEQ2SEQ: encoder-decoders, a right-padded source
                                         of 5 tokens (Whisper: 16 x 32 log-mel features) and
                                         4 decoder tokens in, the logits out; then marian,
                                         longt5,switch_transformers,pegasus_x by dynamo and
                                         m2m_100,nllb-moe,fsmt,prophetnet,led by torchscript)
  .venv-export/bin/python models/real/export_corpus.py --out models/real/corpus \
      --arch clip,siglip --exporter dynamo,torchscript
                                         (DUAL: CLIP's and SigLIP's whole models, texts and
                                         images in, logits_per_image out)
  .venv-optimum/bin/python models/real/export_corpus.py --out models/real/corpus \
      --arch t5,bart,marian,whisper --exporter optimum
                                         (Optimum's encoder-decoders, each as four exports:
                                         ARCH-optimum_encoder, _decoder, _decoder_with_past,
                                         and _decoder_merged, the two decoders in one file as
                                         Optimum's post-processing merges them)
  .venv-export/bin/python models/real/export_corpus.py --out /tmp/probe \
      --arch electra,roformer --exporter dynamo --as-encoder
                                         (a probe: architectures the script has no case
                                         for, at generic sizes; --as-encoder for encoders)

Each export is a folder <arch>-<exporter>/ holding:
  model.onnx (+ model.onnx.data when the exporter writes external data)
  inputs/*.npy       the inputs: a left-padded batch of 2 with its
                     attention_mask and position ids (a speech encoder's: two
                     rows of 400 samples; an image encoder's: two 3 x 32 x 32
                     images; an encoder-decoder's: a right-padded source and
                     the decoder's tokens) (and, for KV-cache exports,
                     the cache of a real 4-token prefix and one new token (a decoding step))
  reference/*.npy    onnxruntime's outputs for them
  export.json        architecture, exporter and versions, the torch
                     cross-check (largest difference from torch's logits where
                     the attention mask keeps the token; padded positions'
                     apart, for information: --recheck recomputes both for
                     committed exports without exporting again)
and corpus/index.json lists every export with its status ("ok" or the
exporter's error, so a failed export is recorded rather than silently
missing).

Sizes: 2 layers, 4 heads of 16 (2 key/value heads where the architecture has
GQA), hidden 64, vocabulary 96 (GPT-2: hidden 32; BERT and the other encoders:
5 heads of 8, right-padded; Qwen3: 6 heads of 16, hidden 48, so that tp=3
divides its heads; SmolLM: 9 heads of 16 over 3 KV heads), so each model is
at most about 1.6 MB (the mixtures of experts, and LFM2 with its 4 layers; most are well
under 1 MB), but for Zamba's dynamo export (2.3 MB: 3 layers, and its shared attention
block written once per hybrid layer).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback

import numpy as np

SEED = 0
VOCAB = 96
BATCH, SEQ, PREFIX = 2, 5, 4  # KV-cache exports: a 4-token cache, one new token


# ---------------------------------------------------------------------------
# Configurations
# ---------------------------------------------------------------------------

def config_for(arch):
    import transformers as tf

    # Head dimension 16: onnxruntime's GroupQueryAttention needs a multiple
    # of 16.
    common = dict(vocab_size=VOCAB, num_hidden_layers=2, num_attention_heads=4,
                  hidden_size=64, intermediate_size=128, max_position_embeddings=64)
    if arch == "gpt2":
        return tf.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                             resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0), tf.GPT2LMHeadModel
    if arch == "llama":
        return tf.LlamaConfig(num_key_value_heads=2, **common), tf.LlamaForCausalLM
    if arch == "mistral":
        return tf.MistralConfig(num_key_value_heads=2, sliding_window=None, **common), \
            tf.MistralForCausalLM
    if arch == "qwen2":
        return tf.Qwen2Config(num_key_value_heads=2, **common), tf.Qwen2ForCausalLM
    if arch == "phi3":
        return tf.Phi3Config(num_key_value_heads=4, pad_token_id=0, **common), tf.Phi3ForCausalLM
    if arch == "gpt_neox":
        return tf.GPTNeoXConfig(rotary_pct=0.5, use_parallel_residual=True, **common), \
            tf.GPTNeoXForCausalLM
    if arch == "gemma2":
        # Softcaps small enough to bite at these weights; every other layer a
        # sliding window shorter than the prompt.
        return tf.Gemma2Config(num_key_value_heads=2, head_dim=16, sliding_window=3,
                               attn_logit_softcapping=5.0, final_logit_softcapping=3.0,
                               query_pre_attn_scalar=16, **common), tf.Gemma2ForCausalLM
    if arch == "qwen3":
        # 6 heads of 16 (no GQA; wider than the hidden 48, as Qwen3 allows)
        # and 96 MLP features: tp=2 and tp=3 divide them all, so this one
        # runs on tp=3 too. (A hidden size equal to the vocabulary makes
        # onnxruntime-genai's builder wire the lm_head to the first layer.)
        wide = dict(common, hidden_size=48, intermediate_size=96, num_attention_heads=6)
        return tf.Qwen3Config(num_key_value_heads=6, head_dim=16, **wide), tf.Qwen3ForCausalLM
    if arch == "phi":
        return tf.PhiConfig(partial_rotary_factor=0.5, resid_pdrop=0.0, embd_pdrop=0.0,
                            attention_dropout=0.0, **common), tf.PhiForCausalLM
    # Beyond the first ten: architectures no issue named, exported to see
    # what a user's model meets (torch.onnx's two exporters).
    if arch == "falcon":  # multi-query, fused qkv, parallel attention and MLP
        return tf.FalconConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2,
                               num_attention_heads=4, multi_query=True, parallel_attn=True,
                               bias=False, max_position_embeddings=64), tf.FalconForCausalLM
    if arch == "gptj":  # interleaved rotary from a position table, parallel residual
        return tf.GPTJConfig(vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, rotary_dim=8,
                             n_positions=64, resid_pdrop=0.0, embd_pdrop=0.0,
                             attn_pdrop=0.0), tf.GPTJForCausalLM
    if arch == "opt":  # learned positions with an offset, ReLU MLP
        return tf.OPTConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, ffn_dim=128,
                            num_attention_heads=4, max_position_embeddings=64,
                            word_embed_proj_dim=64, dropout=0.0), tf.OPTForCausalLM
    if arch == "gemma3":  # q/k norms, sliding window on most layers
        return tf.Gemma3TextConfig(num_key_value_heads=2, head_dim=16, sliding_window=3,
                                   query_pre_attn_scalar=16, **common), tf.Gemma3ForCausalLM
    if arch == "stablelm":  # partial rotary, layer norms with bias
        return tf.StableLmConfig(num_key_value_heads=2, partial_rotary_factor=0.25, **common), \
            tf.StableLmForCausalLM
    if arch == "olmo2":  # q/k norms over all heads, norms after the sublayers
        return tf.Olmo2Config(num_key_value_heads=2, **common), tf.Olmo2ForCausalLM
    if arch == "granite":  # scaled embeddings, residuals and logits
        return tf.GraniteConfig(num_key_value_heads=2, **common), tf.GraniteForCausalLM
    if arch == "starcoder2":  # GQA with biases, GELU MLP
        return tf.Starcoder2Config(num_key_value_heads=2, **common), tf.Starcoder2ForCausalLM
    if arch == "bloom":  # ALiBi position biases, no rotary
        return tf.BloomConfig(vocab_size=VOCAB, hidden_size=64, n_layer=2, n_head=4), \
            tf.BloomForCausalLM
    # And more spellings of the same parts (exported after the nine above).
    if arch == "gpt_bigcode":  # multi-query, one fused c_attn of q + one k/v head
        return tf.GPTBigCodeConfig(vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4,
                                   n_positions=64, multi_query=True, resid_pdrop=0.0,
                                   embd_pdrop=0.0, attn_pdrop=0.0), tf.GPTBigCodeForCausalLM
    if arch == "codegen":  # fused qkv in model-parallel blocks, interleaved rotary
        return tf.CodeGenConfig(vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, rotary_dim=8,
                                n_positions=64, n_ctx=64, resid_pdrop=0.0, embd_pdrop=0.0,
                                attn_pdrop=0.0), tf.CodeGenForCausalLM
    if arch == "cohere":  # parallel attention and MLP, interleaved rotary, logit scale
        return tf.CohereConfig(num_key_value_heads=2, **common), tf.CohereForCausalLM
    if arch == "nemotron":  # squared ReLU MLP, layernorm1p, partial rotary
        return tf.NemotronConfig(num_key_value_heads=2, partial_rotary_factor=0.5, **common), \
            tf.NemotronForCausalLM
    if arch == "persimmon":  # fused qkv per head, q/k layer norms, partial rotary
        return tf.PersimmonConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2,
                                  num_attention_heads=4, intermediate_size=128,
                                  max_position_embeddings=64, qk_layernorm=True,
                                  partial_rotary_factor=0.5), tf.PersimmonForCausalLM
    if arch == "gpt_neo":  # alternating global and local (windowed) attention
        return tf.GPTNeoConfig(vocab_size=VOCAB, hidden_size=64, num_layers=2, num_heads=4,
                               attention_types=[[["global", "local"], 1]], window_size=3,
                               max_position_embeddings=64, intermediate_size=128,
                               resid_dropout=0.0, embed_dropout=0.0,
                               attention_dropout=0.0), tf.GPTNeoForCausalLM
    if arch == "gemma":  # GeGLU, embeddings scaled by sqrt(hidden), (1 + w) norms
        return tf.GemmaConfig(num_key_value_heads=2, head_dim=16, pad_token_id=0, **common), \
            tf.GemmaForCausalLM
    if arch == "ernie4_5":  # Llama-like, interleaved rotary, no biases
        return tf.Ernie4_5Config(num_key_value_heads=2, pad_token_id=0, **common), \
            tf.Ernie4_5ForCausalLM
    if arch == "hunyuan_v1_dense":  # q/k norms after the rotary
        return tf.HunYuanDenseV1Config(num_key_value_heads=2, head_dim=16, pad_token_id=0,
                                       eos_token_id=2, **common), tf.HunYuanDenseV1ForCausalLM
    if arch == "olmo":  # layer norms without parameters
        return tf.OlmoConfig(num_key_value_heads=2, eos_token_id=2, **common), tf.OlmoForCausalLM
    if arch == "glm":  # partial interleaved rotary, fused gate_up
        return tf.GlmConfig(num_key_value_heads=2, head_dim=16, pad_token_id=0, **common), \
            tf.GlmForCausalLM
    if arch == "helium":
        return tf.HeliumConfig(num_key_value_heads=2, head_dim=16, **common), \
            tf.HeliumForCausalLM
    if arch == "smollm":
        # SmolLM-135M's head layout: 9 query heads over 3 KV heads, which
        # tp=2, 4 and 8 neither divide nor are a multiple of; tied
        # embeddings.
        return tf.LlamaConfig(num_key_value_heads=3, head_dim=16, tie_word_embeddings=True,
                              pad_token_id=0,
                              **dict(common, num_attention_heads=9, hidden_size=72)), \
            tf.LlamaForCausalLM
    if arch == "smollm3":  # no rotary on every fourth layer
        return tf.SmolLM3Config(num_key_value_heads=2, no_rope_layer_interval=2, pad_token_id=0,
                                **common), \
            tf.SmolLM3ForCausalLM
    if arch == "mixtral":  # a mixture of experts
        # batched_mm: every expert on every token, weighted by the routing (the
        # default grouped and eager implementations do not export).
        return tf.MixtralConfig(num_key_value_heads=2, num_local_experts=4, pad_token_id=0,
                                experts_implementation="batched_mm",
                                num_experts_per_tok=2, **common), tf.MixtralForCausalLM
    if arch == "qwen2_moe":  # routed experts beside a gated shared expert
        return tf.Qwen2MoeConfig(num_key_value_heads=2, num_experts=4, num_experts_per_tok=2,
                                 moe_intermediate_size=32, shared_expert_intermediate_size=64,
                                 experts_implementation="batched_mm", pad_token_id=0,
                                 **common), tf.Qwen2MoeForCausalLM
    if arch == "qwen3_moe":  # q/k norms, experts on every layer
        return tf.Qwen3MoeConfig(num_key_value_heads=2, head_dim=16, num_experts=4,
                                 num_experts_per_tok=2, moe_intermediate_size=32,
                                 experts_implementation="batched_mm", pad_token_id=0,
                                 **common), tf.Qwen3MoeForCausalLM
    if arch == "deepseek_v3":
        # Multi-head latent attention (low-rank q and kv, a rotary part
        # shared by the heads), a dense first layer, then routed experts
        # chosen within groups (ScatterElements) beside a shared expert.
        return tf.DeepseekV3Config(num_key_value_heads=4, n_routed_experts=4,
                                   num_experts_per_tok=2, moe_intermediate_size=32,
                                   n_shared_experts=1, first_k_dense_replace=1, kv_lora_rank=16,
                                   q_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=16,
                                   v_head_dim=16, n_group=2, topk_group=1,
                                   experts_implementation="batched_mm", pad_token_id=0,
                                   **common), tf.DeepseekV3ForCausalLM
    if arch == "gpt_oss":
        # Attention sinks (a learned column beside the scores), sliding
        # windows on every other layer, experts with interleaved gate and up
        # features and a clamped SwiGLU.
        return tf.GptOssConfig(num_key_value_heads=2, head_dim=16, num_local_experts=4,
                               num_experts_per_tok=2, sliding_window=3,
                               experts_implementation="batched_mm", pad_token_id=0,
                               **common), tf.GptOssForCausalLM
    if arch == "phimoe":  # a router of ArgMax and Abs (sparsemixer)
        return tf.PhimoeConfig(num_key_value_heads=2, num_local_experts=4,
                               num_experts_per_tok=2, experts_implementation="batched_mm",
                               pad_token_id=0, **common), tf.PhimoeForCausalLM
    if arch == "doge":
        # Dynamic-mask attention: a per-head gate of the values through
        # Softplus, added to the scores.
        return tf.DogeConfig(num_key_value_heads=2, pad_token_id=0, **common), \
            tf.DogeForCausalLM
    if arch == "olmoe":  # q/k norms over the whole projections, 4 experts
        return tf.OlmoeConfig(num_key_value_heads=2, num_experts=4, num_experts_per_tok=2,
                              experts_implementation="batched_mm", pad_token_id=0,
                              **common), tf.OlmoeForCausalLM
    if arch == "bitnet":
        # Sub-norms over features tp splits: the merged heads before the
        # output projection, the MLP's hidden features before the down one.
        return tf.BitNetConfig(num_key_value_heads=2, pad_token_id=0, **common), \
            tf.BitNetForCausalLM
    if arch == "cohere2":  # sliding windows, and no rotary on the global layers
        return tf.Cohere2Config(num_key_value_heads=2, sliding_window=3,
                                layer_types=["sliding_attention", "full_attention"],
                                pad_token_id=0, **common), tf.Cohere2ForCausalLM
    if arch == "granitemoe":  # scaled embeddings, residuals and logits; 4 experts
        return tf.GraniteMoeConfig(num_key_value_heads=2, num_local_experts=4,
                                   num_experts_per_tok=2, experts_implementation="batched_mm",
                                   pad_token_id=0, **common), \
            tf.GraniteMoeForCausalLM
    if arch == "biogpt":  # scaled embeddings, learned positions offset by 2
        return tf.BioGptConfig(pad_token_id=0, **common), tf.BioGptForCausalLM
    if arch == "diffllama":  # differential attention: two softmaxes per head, subtracted
        return tf.DiffLlamaConfig(num_key_value_heads=2, pad_token_id=0, **common), \
            tf.DiffLlamaForCausalLM
    if arch == "vaultgemma":  # Gemma-2's softcaps without the post-norms
        return tf.VaultGemmaConfig(num_key_value_heads=2, head_dim=16, pad_token_id=0,
                                   **common), tf.VaultGemmaForCausalLM
    if arch == "nanochat":  # norms without weights, relu squared, softcapped logits
        return tf.NanoChatConfig(num_key_value_heads=2, pad_token_id=0, **common), \
            tf.NanoChatForCausalLM
    if arch == "lfm2":  # short convolutions (depthwise, causal Conv1d) between attentions
        return tf.Lfm2Config(num_key_value_heads=2, pad_token_id=0,
                             **{**common, "num_hidden_layers": 4},
                             layer_types=["conv", "full_attention", "conv", "full_attention"]), \
            tf.Lfm2ForCausalLM
    if arch == "granite_swa":
        # Sliding-window layers whose attention adds a sink per head: the
        # probabilities scaled by sigmoid(logsumexp(scores) - sink).
        return tf.GraniteSWAConfig(num_key_value_heads=2, sliding_window=3,
                                   layer_types=["sliding_attention", "full_attention"],
                                   pad_token_id=0, **common), tf.GraniteSWAForCausalLM
    if arch == "jetmoe":
        # Mixtures of attention heads and of MLP experts: the router sorts
        # its batch's expert choices (a TopK whose K is the symbolic count
        # of choices), then splits the tokens by expert.
        return tf.JetMoeConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2,
                               num_key_value_heads=4, kv_channels=16, intermediate_size=64,
                               max_position_embeddings=64, num_local_experts=4,
                               num_experts_per_tok=2, pad_token_id=0), tf.JetMoeForCausalLM
    if arch == "mpt":
        # ALiBi from a table of max_seq_len positions, sliced at
        # max(0, max_seq_len - sequence_length): valid up to max_seq_len.
        return tf.MptConfig(vocab_size=VOCAB, d_model=64, n_heads=4, n_layers=2,
                            expansion_ratio=2, max_seq_len=64), tf.MptForCausalLM
    if arch == "xglm":  # sinusoidal positions, masked scores clamped at finfo.min
        return tf.XGLMConfig(vocab_size=VOCAB, d_model=64, num_layers=2, attention_heads=4,
                             ffn_dim=128, max_position_embeddings=64, dropout=0.0,
                             attention_dropout=0.0, activation_dropout=0.0,
                             layerdrop=0.0), tf.XGLMForCausalLM
    # State-space and recurrent decoders: no attention, tokens mix through
    # a scan (Mamba, Mamba-2 in chunks padded to a multiple of its chunk
    # size), a time shift and an unrolled recurrence (RWKV).
    if arch == "mamba":
        return tf.MambaConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2,
                              state_size=8, expand=2, conv_kernel=4, pad_token_id=0,
                              use_mambapy=False), tf.MambaForCausalLM
    if arch == "mamba2":
        return tf.Mamba2Config(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2,
                               state_size=8, expand=2, conv_kernel=4, num_heads=8, head_dim=16,
                               n_groups=1, chunk_size=4, pad_token_id=0), \
            tf.Mamba2ForCausalLM
    if arch == "rwkv":
        return tf.RwkvConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2,
                             attention_hidden_size=64, intermediate_size=128,
                             context_length=64, pad_token_id=0), tf.RwkvForCausalLM
    if arch == "zamba":
        # Mamba layers with two mamba heads, and a shared attention block
        # on the hybrid layers.
        return tf.ZambaConfig(num_key_value_heads=4, attention_head_dim=32, pad_token_id=0,
                              layers_block_type=["mamba", "hybrid", "hybrid"],
                              mamba_d_state=8, mamba_d_conv=4, mamba_expand=2,
                              mamba_dt_rank=8, n_mamba_heads=2, attn_layer_period=2,
                              attn_layer_offset=1, use_mamba_kernels=False,
                              **{**common, "num_hidden_layers": 3}), tf.ZambaForCausalLM
    if arch == "xlnet":
        # Relative attention written with Einsum, positions counting down.
        return tf.XLNetConfig(vocab_size=VOCAB, d_model=64, n_layer=2, n_head=4, d_inner=128,
                              dropout=0.0, pad_token_id=0, mem_len=None), tf.XLNetLMHeadModel
    enc = dict(vocab_size=VOCAB, hidden_size=40, num_hidden_layers=2, num_attention_heads=5,
               intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=0.0,
               attention_probs_dropout_prob=0.0)
    if arch == "yoso":  # attention by the acos of normalised scores
        return tf.YosoConfig(pad_token_id=1, use_expectation=True, use_fast_hash=False,
                             **{**enc, "max_position_embeddings": 80}), tf.YosoModel
    if arch == "fnet":  # token mixing by a 2-D Fourier transform (DFT)
        return tf.FNetConfig(pad_token_id=1, **{k: v for k, v in enc.items()
                                                 if k not in ("num_attention_heads",
                                                              "attention_probs_dropout_prob")}), \
            tf.FNetModel
    if arch == "xlstm":  # mLSTM blocks: exponential gates, soft caps, no attention
        return tf.xLSTMConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2,
                              num_heads=4, pad_token_id=0), tf.xLSTMForCausalLM
    if arch == "cpmant":  # prompt tokens put first, the mask built with bitwise
        # ops on int32 from the ids (0 pads), a relative position bias every
        # layer reads
        return tf.CpmAntConfig(vocab_size=VOCAB, hidden_size=64, num_attention_heads=4,
                               dim_head=16, dim_ff=128, num_hidden_layers=2, prompt_length=4,
                               prompt_types=4, segment_types=4, position_bias_num_buckets=32,
                               position_bias_max_distance=64), tf.CpmAntForCausalLM
    if arch == "flaubert":  # XLM's attention: the mask expanded to the scores' heads
        return tf.FlaubertConfig(vocab_size=VOCAB, emb_dim=40, n_layers=2, n_heads=5,
                                 max_position_embeddings=64, dropout=0.0,
                                 attention_dropout=0.0, pad_token_id=1, layerdrop=0.0), \
            tf.FlaubertModel
    if arch == "roberta":  # positions counted from the padding id
        return tf.RobertaConfig(pad_token_id=1, **enc), tf.RobertaModel
    if arch == "albert":  # factorised embeddings, one layer's weights shared
        return tf.AlbertConfig(embedding_size=24, **enc), tf.AlbertModel
    if arch == "distilbert":  # no token types
        return tf.DistilBertConfig(vocab_size=VOCAB, dim=40, n_layers=2, n_heads=5,
                                   hidden_dim=64, max_position_embeddings=64, dropout=0.0,
                                   attention_dropout=0.0), tf.DistilBertModel
    if arch == "modernbert":  # rotary, GeGLU, local attention every other layer
        return tf.ModernBertConfig(vocab_size=VOCAB, hidden_size=40, num_hidden_layers=2,
                                   num_attention_heads=5, intermediate_size=64,
                                   max_position_embeddings=64, global_attn_every_n_layers=2,
                                   local_attention=4, pad_token_id=0), tf.ModernBertModel
    if arch == "deberta_v2":  # disentangled relative-position attention
        return tf.DebertaV2Config(**enc), tf.DebertaV2Model
    if arch == "mpnet":  # relative position buckets
        return tf.MPNetConfig(**enc), tf.MPNetModel
    if arch == "nystromformer":  # landmark attention, a depthwise Conv2d of the values
        return tf.NystromformerConfig(conv_kernel_size=3, **enc), tf.NystromformerModel
    if arch == "bert":
        return tf.BertConfig(vocab_size=VOCAB, hidden_size=40, num_hidden_layers=2,
                             num_attention_heads=5, intermediate_size=64,
                             max_position_embeddings=64, hidden_dropout_prob=0.0,
                             attention_probs_dropout_prob=0.0), tf.BertModel
    if arch == "falcon_h1":  # attention and a Mamba-2 mixer side by side in every layer
        return tf.FalconH1Config(num_key_value_heads=2, head_dim=16, mamba_d_ssm=64,
                                 mamba_n_heads=4, mamba_d_head=16, mamba_d_state=16,
                                 mamba_chunk_size=8, pad_token_id=0, **common), \
            tf.FalconH1ForCausalLM
    if arch == "gemma4_text":
        # Norms as x * pow(mean(x^2) + eps, -0.5); a sliding layer (head
        # dimension 16) then a full one (its own head dimension, 32, and a
        # rotary over a quarter of it); per-layer input embeddings.
        return tf.Gemma4TextConfig(num_key_value_heads=2, head_dim=16, global_head_dim=32,
                                   sliding_window=3, vocab_size_per_layer_input=VOCAB,
                                   hidden_size_per_layer_input=16, final_logit_softcapping=3.0,
                                   layer_types=["sliding_attention", "full_attention"],
                                   **common), tf.Gemma4ForCausalLM
    if arch == "qwen3_5_text":
        # A gated delta-rule (linear attention) layer, then a gated full one.
        return tf.Qwen3_5TextConfig(num_key_value_heads=2, head_dim=16, linear_key_head_dim=16,
                                    linear_value_head_dim=16, linear_num_key_heads=2,
                                    linear_num_value_heads=4,
                                    layer_types=["linear_attention", "full_attention"],
                                    **common), tf.Qwen3_5ForCausalLM
    if arch == "nemotron_h":
        # Mamba-2, a mixture of experts, attention and an MLP, one layer each.
        return tf.NemotronHConfig(
            vocab_size=VOCAB, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
            head_dim=16, intermediate_size=128, max_position_embeddings=64,
            layers_block_type=["mamba", "moe", "attention", "mlp"], ssm_state_size=16,
            mamba_num_heads=8, mamba_head_dim=16, n_groups=2, chunk_size=8, n_routed_experts=4,
            n_shared_experts=1, moe_intermediate_size=64,
            moe_shared_expert_intermediate_size=64, num_experts_per_tok=2,
            experts_implementation="batched_mm", pad_token_id=0), tf.NemotronHForCausalLM
    if arch == "funnel":  # an encoder that pools the sequence between its blocks
        return tf.FunnelConfig(vocab_size=VOCAB, block_sizes=[1, 1], d_model=64, n_head=4,
                               d_head=16, d_inner=128, num_decoder_layers=1,
                               max_position_embeddings=64, pad_token_id=0), tf.FunnelModel
    # Architectures whose configs need sizes that agree with each other (the
    # generic sizes below do not); MiniCPM3, Zamba2 and Gemma-3n are in the
    # corpus, the others probed.
    mla = dict(kv_lora_rank=16, q_lora_rank=32, qk_rope_head_dim=8, head_dim=8,
               qk_nope_head_dim=16, v_head_dim=16)
    moe = dict(num_experts_per_tok=2, moe_intermediate_size=32,
               experts_implementation="batched_mm", pad_token_id=0)
    if arch == "deepseek_v2":  # latent attention; greedy routing over 4 experts
        return tf.DeepseekV2Config(num_key_value_heads=4, n_routed_experts=4,
                                   n_shared_experts=1, first_k_dense_replace=1,
                                   **mla, **moe, **common), tf.DeepseekV2ForCausalLM
    if arch == "minicpm3":  # latent attention, scaled embeddings and residuals
        return tf.MiniCPM3Config(num_key_value_heads=4, pad_token_id=0, **mla, **common), \
            tf.MiniCPM3ForCausalLM
    if arch == "dots1":  # a dense first layer, then routed and shared experts
        return tf.Dots1Config(num_key_value_heads=2, head_dim=16, n_routed_experts=4,
                              n_shared_experts=1, first_k_dense_replace=1,
                              layer_types=["full_attention"] * 2, **moe, **common), \
            tf.Dots1ForCausalLM
    if arch == "lfm2_moe":  # short convolutions and attention; experts after a dense layer
        return tf.Lfm2MoeConfig(num_key_value_heads=2, num_dense_layers=1, num_experts=4,
                                layer_types=["conv", "full_attention"], **moe, **common), \
            tf.Lfm2MoeForCausalLM
    if arch == "dbrx":  # fused qkv clipped, experts of a top-2 router
        return tf.DbrxConfig(
            d_model=64, n_heads=4, n_layers=2, max_seq_len=64, vocab_size=VOCAB,
            attn_config=dict(kv_n_heads=2, clip_qkv=8.0, rope_theta=10000.0),
            ffn_config=dict(ffn_hidden_size=64, moe_num_experts=4, moe_top_k=2),
            pad_token_id=0, experts_implementation="batched_mm"), tf.DbrxForCausalLM
    if arch == "zamba2":  # Mamba-2, then a shared attention block on [h, embeddings]
        return tf.Zamba2Config(
            vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2,
            layers_block_type=["mamba", "hybrid"], hybrid_layer_ids=[1], num_attention_heads=4,
            num_key_value_heads=4, attention_head_dim=32, intermediate_size=128,
            mamba_d_state=16, mamba_headdim=16, n_mamba_heads=8, mamba_ngroups=1,
            chunk_size=8, use_mamba_kernels=False, max_position_embeddings=64,
            pad_token_id=0), tf.Zamba2ForCausalLM
    if arch == "gemma3n_text":  # AltUp, Laurel, per-layer inputs, sparse activations
        return tf.Gemma3nTextConfig(
            vocab_size=VOCAB, vocab_size_per_layer_input=VOCAB, hidden_size=64,
            hidden_size_per_layer_input=16, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16, intermediate_size=[128, 128],
            layer_types=["sliding_attention", "full_attention"], sliding_window=3,
            num_kv_shared_layers=0, laurel_rank=8, activation_sparsity_pattern=[0.95, 0.0],
            max_position_embeddings=64, pad_token_id=0), tf.Gemma3nForCausalLM
    if arch == "longcat_flash":  # latent attention, two sublayers, zero experts
        return tf.LongcatFlashConfig(
            vocab_size=VOCAB, hidden_size=64, num_layers=2, num_attention_heads=4,
            num_key_value_heads=4, ffn_hidden_size=128, n_routed_experts=4, zero_expert_num=2,
            expert_ffn_hidden_size=32, moe_topk=2, max_position_embeddings=64,
            experts_implementation="batched_mm", pad_token_id=0, **mla), \
            tf.LongcatFlashForCausalLM
    if arch in AUDIO:
        return audio_config(arch)
    if arch in VISION:
        return vision_config(arch)
    if arch in SEQ2SEQ:
        return seq2seq_config(arch)
    if arch in DUAL:
        return dual_config(arch)
    return generic_config(arch, common)


def audio_config(arch):
    """A speech encoder (wav2vec2 and its kin): the bare model over raw
    samples, a feature encoder of three strided convolutions (kernel 10
    stride 5, kernel 3 stride 2, kernel 2 stride 2: 20 samples per frame)
    and a grouped positional convolution, at sizes of its own."""
    import transformers as tf
    from transformers.models.auto import modeling_auto as auto

    cls = tf.AutoConfig.for_model(arch).__class__
    defaults = cls().to_dict()
    sizes = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=128, conv_dim=(16, 16, 16), conv_stride=(5, 2, 2),
                 conv_kernel=(10, 3, 2), num_conv_pos_embeddings=16,
                 num_conv_pos_embedding_groups=4, vocab_size=VOCAB, mask_time_prob=0.0,
                 num_buckets=32, max_bucket_distance=64, squeeze_factor=2)
    config = cls(**{k: v for k, v in sizes.items() if k in defaults})
    return config, getattr(tf, auto.MODEL_MAPPING_NAMES[arch])


def vision_config(arch):
    """An image encoder (ViT and its kin, Swin, ConvNeXt): the bare model
    over IMAGE x IMAGE pixels of 3 channels, patches of 8 (Swin's of 4 in
    windows of 2, ConvNeXt's stem of 4), at sizes of its own."""
    import transformers as tf
    from transformers.models.auto import modeling_auto as auto

    cls = tf.AutoConfig.for_model(arch).__class__
    defaults = cls().to_dict()
    sizes = dict(image_size=IMAGE, patch_size=8, num_channels=3, hidden_size=64,
                 num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                 hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    if arch == "swin":
        sizes.update(patch_size=4, embed_dim=32, depths=[1, 1], num_heads=[2, 4],
                     window_size=2)
    if arch in ("convnext", "convnextv2"):
        sizes.update(patch_size=4, hidden_sizes=[16, 32], depths=[1, 1], num_stages=2)
    # CNNs and hierarchical encoders: two stages of 16 and 32 channels.
    two = dict(hidden_sizes=[16, 32], depths=[1, 1], embedding_size=16)
    if arch == "resnet":
        sizes.update(two, out_features=None, out_indices=None)
    if arch == "regnet":
        sizes.update(two, groups_width=8)
    if arch == "bit":
        sizes.update(two, num_groups=4, out_features=None, out_indices=None)
    if arch == "mobilenet_v2":
        sizes.update(depth_multiplier=0.25)
    if arch == "efficientnet":
        sizes.update(width_coefficient=0.25, depth_coefficient=0.1, hidden_dim=320)
    if arch == "segformer":
        sizes.update(two, num_encoder_blocks=2, sr_ratios=[2, 1], patch_sizes=[7, 3],
                     strides=[4, 2], num_attention_heads=[1, 2], mlp_ratios=[4, 4],
                     decoder_hidden_size=32)
    if arch == "poolformer":
        sizes.update(two, num_encoder_blocks=2, patch_sizes=[7, 3], strides=[4, 2],
                     padding=[2, 1])
    if arch == "hiera":
        sizes.update(embed_dim=16, depths=[1, 1, 1, 1])
    if arch == "mobilevit":
        sizes.update(hidden_sizes=[16, 24, 32], neck_hidden_sizes=[8, 8, 16, 16, 24, 24, 32])
    chosen = {}
    for k, v in sizes.items():
        if k not in defaults:
            continue
        if v is not None and isinstance(defaults[k], (list, tuple)) \
                and not isinstance(v, (list, tuple)):
            # A size per stage (SegFormer's heads, PVT's): the class's own,
            # but an image's size, which is the image's.
            if k != "image_size":
                continue
            v = [v] * len(defaults[k])
        chosen[k] = v
    config = cls(**chosen)
    return config, getattr(tf, auto.MODEL_MAPPING_NAMES[arch])


def seq2seq_config(arch):
    """An encoder-decoder (T5, BART and their kin; Whisper over log-mel
    features): 2 encoder and 2 decoder layers of 4 heads of 16, hidden 64,
    as its conditional-generation class (the language-model head's logits
    over the decoder's tokens)."""
    import transformers as tf
    from transformers.models.auto import modeling_auto as auto

    cls = tf.AutoConfig.for_model(arch).__class__
    defaults = cls().to_dict()
    sizes = dict(vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2,
                 num_decoder_layers=2, num_heads=4, encoder_layers=2, decoder_layers=2,
                 encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                 decoder_ffn_dim=128, max_position_embeddings=64, relative_attention_num_buckets=8,
                 relative_attention_max_distance=16, num_mel_bins=MELS,
                 max_source_positions=FRAMES // 2, max_target_positions=64, dropout=0.0,
                 dropout_rate=0.0, attention_dropout=0.0, activation_dropout=0.0,
                 input_feat_per_channel=MELS, conv_channels=32,
                 pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
                 forced_eos_token_id=None, tie_word_embeddings=False,
                 # FSMT's vocabularies, ProphetNet's and LED's own names.
                 src_vocab_size=VOCAB, tgt_vocab_size=VOCAB, hidden_size=64,
                 num_encoder_layers=2, num_encoder_attention_heads=4,
                 num_decoder_attention_heads=4, attention_window=4,
                 max_encoder_position_embeddings=64, max_decoder_position_embeddings=64)
    config = cls(**{k: v for k, v in sizes.items() if k in defaults})
    for table in ("MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
                  "MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES"):
        name = getattr(auto, table).get(arch)
        if name:
            return config, getattr(tf, name if isinstance(name, str) else name[0])
    raise SystemExit(f"no conditional-generation class for {arch}")


def dual_config(arch):
    """A text and an image tower (CLIP, SigLIP), as the whole model: 2
    layers of 4 heads of 16 each, 32 x 32 images in patches of 8, the
    logits of each image against each text out."""
    import transformers as tf

    tower = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=4)
    text = dict(tower, vocab_size=VOCAB, max_position_embeddings=64)
    vision = dict(tower, image_size=IMAGE, patch_size=8)
    if arch == "clip":
        return tf.CLIPConfig(text_config=text, vision_config=vision,
                             projection_dim=32), tf.CLIPModel
    return tf.SiglipConfig(text_config=text, vision_config=vision), tf.SiglipModel


def generic_config(arch, common):
    """Any other architecture transformers registers, as a causal LM (else
    the bare model): its config class with the tiny sizes above where it
    takes them (2 KV heads, head dimension 16), experts cut to 4 of 2 (every
    expert on every token), and every other setting left at the class's
    default. A probe of architectures nobody listed; one that needs more is
    given a case above."""
    import transformers as tf
    from transformers.models.auto import modeling_auto as auto

    try:
        cls = tf.AutoConfig.for_model(arch).__class__
    except ValueError:
        raise SystemExit(f"unknown architecture {arch}")
    defaults = cls().to_dict()
    sizes = dict(common, num_key_value_heads=2, head_dim=16, n_routed_experts=4,
                 num_local_experts=4, num_experts=4, num_experts_per_tok=2,
                 moe_intermediate_size=64, shared_expert_intermediate_size=64,
                 pad_token_id=0, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)
    chosen = {k: v for k, v in sizes.items()
              if k in defaults or k in getattr(cls, "attribute_map", {})}
    if any("expert" in k for k in chosen):
        # Every expert on every token, weighted by the routing: the default
        # grouped implementation does not export.
        chosen["experts_implementation"] = "batched_mm"
    config = cls(**chosen)
    tables = ("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "MODEL_MAPPING_NAMES")
    if arch in ENCODERS:  # --as-encoder: the bare model
        tables = tables[1:]
    for table in tables:
        name = getattr(auto, table).get(arch)
        if name:
            return config, getattr(tf, name if isinstance(name, str) else name[0])
    raise SystemExit(f"no model class for {arch}")


ARCHS = ["gpt2", "llama", "mistral", "qwen2", "phi3", "gpt_neox", "gemma2", "qwen3", "phi",
         "bert"]
# Exported with torch.onnx's two exporters only (--arch MORE --exporter dynamo,torchscript).
MORE = ["falcon", "gptj", "opt", "gemma3", "stablelm", "olmo2", "granite", "starcoder2", "bloom",
        "gpt_bigcode", "codegen", "cohere", "nemotron", "persimmon", "gpt_neo", "olmo", "glm",
        "helium", "smollm3", "mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v3", "gpt_oss",
        "phimoe", "xglm", "roberta", "distilbert", "albert", "modernbert", "deberta_v2", "mpnet",
        "smollm", "mpt", "jetmoe", "doge", "olmoe", "bitnet", "cohere2", "granitemoe",
        "biogpt", "diffllama", "vaultgemma", "nanochat", "lfm2", "nystromformer",
        "granite_swa", "mamba", "mamba2", "rwkv", "zamba", "xlnet", "yoso", "fnet", "flaubert",
        "xlstm", "cpmant",
        # At the generic sizes (generic_config), but Falcon-H1's.
        "falcon_h1", "apertus", "arcee", "exaone4", "glm4", "internlm3", "ministral", "olmo3",
        "openai-gpt", "seed_oss",
        # Sizes of their own again (the class defaults are too large to commit).
        "gemma4_text", "qwen3_5_text", "nemotron_h", "minicpm3", "zamba2", "gemma3n_text",
        "funnel"]
# Encoders: right-padded, token type ids where the model takes them, the
# last hidden state as output.
ENCODERS = {"bert", "roberta", "distilbert", "albert", "modernbert", "deberta_v2", "mpnet",
            "nystromformer", "yoso", "fnet", "flaubert", "funnel"}
# Speech encoders (audio_config): raw samples in, the last hidden state out.
AUDIO = {"wav2vec2", "hubert", "data2vec-audio", "wavlm", "unispeech", "sew", "wav2vec2-conformer",
         "unispeech-sat", "sew-d"}
ENCODERS |= AUDIO
# Image encoders (vision_config): pixels in, the last hidden state out.
VISION = {"vit", "deit", "dinov2", "beit", "data2vec-vision", "swin", "clip_vision_model",
          "siglip_vision_model", "convnext", "resnet", "regnet", "mobilenet_v2", "efficientnet",
          "levit", "poolformer", "segformer", "mobilevit", "yolos", "vit_mae", "focalnet",
          "swinv2", "convnextv2", "dinov2_with_registers", "pvt", "bit", "cvt", "dpt", "vit_msn",
          "ijepa", "hiera", "mobilenet_v1", "efficientformer", "glpn", "van", "nat", "textnet"}
ENCODERS |= VISION
# Encoder-decoders (seq2seq_config): a right-padded source batch with its
# mask and the decoder's tokens in, the logits out. Whisper's source is
# MELS x FRAMES log-mel features.
SEQ2SEQ = {"t5", "mt5", "umt5", "longt5", "bart", "mbart", "marian", "pegasus", "m2m_100",
           "blenderbot", "blenderbot-small", "plbart", "fsmt", "led", "prophetnet",
           "bigbird_pegasus", "switch_transformers", "pegasus_x", "whisper", "nllb-moe",
           "speech_to_text"}
SPEECH2SEQ = {"whisper", "speech_to_text"}
# Text and image towers as one model (dual_config): a right-padded batch of
# texts (SigLIP's unpadded, as it is trained) and a batch of images in, the
# logits of each image against each text out.
DUAL = {"clip", "siglip"}
# Speech encoder-decoders whose features are [batch, frames, bins] with an
# attention mask over the frames (right-padded), the frames symbolic
# (Whisper's are [batch, bins, frames] at a fixed length, with no mask).
FRAMES_FIRST = {"speech_to_text"}
NO_TOKEN_TYPES = {"distilbert", "modernbert", "mpnet", "flaubert"}
# Decoders whose forward takes no position ids.
NO_POSITION_IDS = {"mamba", "mamba2", "rwkv", "xlnet", "cpmant"}
DECODERS = [a for a in ARCHS if a not in ENCODERS]
# What the onnxruntime-genai builder takes.
GENAI_ARCHS = ["llama", "mistral", "qwen2", "phi3", "gemma2", "qwen3", "phi", "smollm", "gemma3",
               "gpt_oss", "granite", "lfm2", "nemotron", "olmo", "smollm3", "phimoe", "gemma",
               "ernie4_5", "hunyuan_v1_dense"]


def build_model(arch):
    import torch

    torch.manual_seed(SEED)
    config, cls = config_for(arch)
    model = cls(config).eval()
    # Random weights at a scale where differences show: transformers
    # initialises with std 0.02, which makes every logit nearly equal.
    with torch.no_grad():
        gen = torch.Generator().manual_seed(SEED)
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.2)
    return config, model


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------

# Samples per row of a speech encoder's batch (19 frames).
SAMPLES = 400
# An image encoder's images: IMAGE x IMAGE pixels.
IMAGE = 32
# Whisper's features: MELS log-mel bins by FRAMES frames (the encoder's
# positions are FRAMES / 2, and it takes no other length); the decoder's
# tokens: DECODER_SEQ.
MELS, FRAMES, DECODER_SEQ = 16, 32, 4


def prompt_inputs(arch):
    """A left-padded batch: row 0 has SEQ tokens, row 1 has SEQ - 2. A
    speech encoder's: two rows of SAMPLES random samples (ids; no mask)."""
    rng = np.random.default_rng(SEED)
    if arch in AUDIO:
        return rng.standard_normal((BATCH, SAMPLES)).astype(np.float32), None, None
    if arch in VISION:
        return rng.standard_normal((BATCH, 3, IMAGE, IMAGE)).astype(np.float32), None, None
    if arch in FRAMES_FIRST:
        mask = np.ones((BATCH, FRAMES), np.int64)
        mask[1, -4:] = 0
        return rng.standard_normal((BATCH, FRAMES, MELS)).astype(np.float32), mask, None
    if arch in SPEECH2SEQ:
        return rng.standard_normal((BATCH, MELS, FRAMES)).astype(np.float32), None, None
    ids = rng.integers(1, VOCAB, size=(BATCH, SEQ)).astype(np.int64)
    mask = np.ones((BATCH, SEQ), np.int64)
    if arch not in ENCODERS and arch not in SEQ2SEQ and arch not in DUAL:
        mask[1, :2] = 0
        ids[1, :2] = 0
    else:
        mask[1, -2:] = 0  # encoders pad on the right
    pos = np.clip(np.cumsum(mask, axis=1) - 1, 0, None).astype(np.int64)
    return ids, mask, pos


# ---------------------------------------------------------------------------
# Exporters
# ---------------------------------------------------------------------------

def decoder_ids():
    """The decoder's tokens of an encoder-decoder: the start token, then
    DECODER_SEQ - 1 tokens of the target (every row full, as in teacher
    forcing)."""
    rng = np.random.default_rng(SEED + 1)
    ids = rng.integers(3, VOCAB, size=(BATCH, DECODER_SEQ)).astype(np.int64)
    ids[:, 0] = 1
    return ids


def torch_inputs(arch, ids, mask, pos):
    import torch

    if arch in FRAMES_FIRST:
        return dict(input_features=torch.tensor(ids), attention_mask=torch.tensor(mask),
                    decoder_input_ids=torch.tensor(decoder_ids()))
    if arch in SPEECH2SEQ:
        return dict(input_features=torch.tensor(ids),
                    decoder_input_ids=torch.tensor(decoder_ids()))
    if arch in SEQ2SEQ:
        return dict(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                    decoder_input_ids=torch.tensor(decoder_ids()))
    if arch in AUDIO:
        return dict(input_values=torch.tensor(ids))
    if arch in VISION:
        return dict(pixel_values=torch.tensor(ids))
    kw = dict(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask))
    if arch in ENCODERS:
        if arch not in NO_TOKEN_TYPES:
            kw["token_type_ids"] = torch.zeros_like(kw["input_ids"])
    elif arch not in NO_POSITION_IDS:
        kw["position_ids"] = torch.tensor(pos)
    return kw


def torch_output(arch, model, kw):
    """The output the exports return: the encoders' last hidden state, the
    decoders' logits (without a cache)."""
    if arch in ENCODERS:
        return model(**kw, return_dict=True).last_hidden_state
    return model(**kw, use_cache=False, return_dict=True).logits


def export_seq2seq(arch, model, out, dynamo, opset=None):
    """An encoder-decoder as one graph: source (token ids and mask, or
    Whisper's features) and the decoder's tokens in, the logits out. The
    batch, the source's length (not Whisper's, which is fixed) and the
    decoder's length are symbolic."""
    import torch

    ids, mask, _ = prompt_inputs(arch)
    kw = torch_inputs(arch, ids, mask, None)
    names = list(kw)
    path = os.path.join(out, "model.onnx")

    class Wrapper(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, source, second, third=None):
            args = (source, second) if third is None else (source, second, third)
            return torch_output(arch, self.inner, dict(zip(names, args)))

    speech = arch in SPEECH2SEQ and arch not in FRAMES_FIRST
    batch = torch.export.Dim("batch_size", max=64)
    src = (torch.export.Dim("frames", min=8, max=200) if arch in FRAMES_FIRST
           else torch.export.Dim("sequence_length", max=60))
    tgt = torch.export.Dim("decoder_sequence_length", max=60)
    dyn = [{0: batch} if speech else {0: batch, 1: src}, {0: batch, 1: tgt}]
    if not speech:
        dyn.insert(1, {0: batch, 1: src})
    axes = {n: {0: "batch_size", 1: "frames" if arch in FRAMES_FIRST
                else "sequence_length"} for n in names}
    if speech:
        axes["input_features"] = {0: "batch_size"}
    axes["decoder_input_ids"] = {0: "batch_size", 1: "decoder_sequence_length"}
    axes["logits"] = {0: "batch_size", 1: "decoder_sequence_length"}
    return export_graph(Wrapper(model).eval(), kw, "logits", path, dynamo, opset, dyn, axes)


def export_dual(arch, model, out, dynamo, opset=None):
    """CLIP or SigLIP as one graph: the texts (ids, and CLIP's mask) and the
    images in, logits_per_image out; the batch and the texts' length
    symbolic (the image's size fixed)."""
    import torch

    ids, mask, _ = prompt_inputs(arch)  # (SigLIP reads no mask: its texts are not padded)
    pixels = np.random.default_rng(SEED + 2).standard_normal(
        (BATCH, 3, IMAGE, IMAGE)).astype(np.float32)
    kw = dict(input_ids=torch.tensor(ids), pixel_values=torch.tensor(pixels))
    if arch == "clip":
        kw["attention_mask"] = torch.tensor(mask)
    names = list(kw)
    path = os.path.join(out, "model.onnx")

    class Wrapper(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, pixel_values, attention_mask=None):
            extra = {} if attention_mask is None else dict(attention_mask=attention_mask)
            return self.inner(input_ids=input_ids, pixel_values=pixel_values, **extra,
                              return_dict=True).logits_per_image

    batch = torch.export.Dim("batch_size", max=64)
    seq = torch.export.Dim("sequence_length", max=60)
    dyn = [{0: batch, 1: seq}, {0: batch}] + ([{0: batch, 1: seq}] if len(kw) > 2 else [])
    axes = {n: {0: "batch_size", 1: "sequence_length"} for n in names}
    axes["pixel_values"] = {0: "batch_size"}
    axes["logits_per_image"] = {0: "batch_size", 1: "batch_size"}
    return export_graph(Wrapper(model).eval(), kw, "logits_per_image", path, dynamo, opset,
                        dyn, axes)


def export_graph(wrapped, kw, out_name, path, dynamo, opset, dynamic, axes):
    """`wrapped` (its parameters the inputs `kw`, in order; one output,
    `out_name`) exported to `path`: by torch.onnx's dynamo exporter with
    `dynamic` shapes (opset: its default, or `opset`), or by TorchScript
    with `dynamic` axes (opset 17, or `opset`). The feeds and torch's output."""
    import torch

    names = list(kw)
    args = tuple(kw[n] for n in names)
    if dynamo:
        kwargs = dict(dynamo=True, dynamic_shapes=tuple(dynamic), input_names=names,
                      output_names=[out_name], external_data=False)
        if opset:
            kwargs["opset_version"] = opset
        torch.onnx.export(wrapped, args, **kwargs).save(path)
    else:
        torch.onnx.export(wrapped, args, path, dynamo=False, opset_version=opset or 17,
                          input_names=names, output_names=[out_name], dynamic_axes=axes)
    feeds = {n: kw[n].numpy() for n in names}
    with torch.no_grad():
        want = {out_name: wrapped(*args).numpy()}
    return feeds, want


def export_torch(arch, model, out, dynamo, opset=None, any_image=False):
    """torch.onnx's export of a decoder, an encoder or an image encoder;
    `any_image`: an image encoder's height and width symbolic too (the
    `_anyimage` exporters), so that the model takes images of any size, as
    DINOv2 interpolates its position embeddings to the image's patches."""
    import torch

    ids, mask, pos = prompt_inputs(arch)
    if any_image:
        # Traced on an image that is not square: a square one lets torch.export
        # specialise the size where the model branches on height == width
        # (DINOv2's interpolation, skipped when the grid is its own).
        ids = np.random.default_rng(SEED).standard_normal(
            (BATCH, 3, IMAGE, IMAGE + 8)).astype(np.float32)
    kw = torch_inputs(arch, ids, mask, pos)
    names = list(kw)
    path = os.path.join(out, "model.onnx")

    class Wrapper(torch.nn.Module):
        """The model with named tensor inputs and one output, as exporters
        want it (no cache objects, no dict output)."""

        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask=None, position_ids=None,
                    token_type_ids=None):
            if arch in AUDIO:
                return torch_output(arch, self.inner, dict(input_values=input_ids))
            if arch in VISION:
                return torch_output(arch, self.inner, dict(pixel_values=input_ids))
            kw = dict(input_ids=input_ids, attention_mask=attention_mask)
            if position_ids is not None:
                kw["position_ids"] = position_ids
            if token_type_ids is not None:
                kw["token_type_ids"] = token_type_ids
            return torch_output(arch, self.inner, kw)

    wrapped = Wrapper(model).eval()
    args = tuple(kw[n] for n in names)
    if names[2:] == ["token_type_ids"]:  # BERT: no position ids
        args = (args[0], args[1], None, args[2])
    out_name = "logits" if arch not in ENCODERS else "last_hidden_state"
    if dynamo:
        batch = torch.export.Dim("batch_size", max=64)
        seq = (torch.export.Dim("samples", min=SAMPLES // 4, max=100000) if arch in AUDIO
               else torch.export.Dim("sequence_length", max=60))
        params = ["input_ids", "attention_mask", "position_ids", "token_type_ids"]
        params = params[:len(args)]
        # (A speech encoder's samples and an image encoder's pixels come in
        # as the first parameter; an image's size is fixed.)
        dyn = {n: ({0: batch, 1: seq} if n in names or (arch in AUDIO and not i) else None)
               for i, n in enumerate(params)}
        if arch in VISION:
            pixels = {0: batch}
            if any_image:
                pixels.update({2: torch.export.Dim("height", min=16, max=512),
                               3: torch.export.Dim("width", min=16, max=512)})
            dyn = {n: (pixels if not i else None) for i, n in enumerate(params)}
        kwargs = dict(dynamo=True, dynamic_shapes=dyn, input_names=names,
                      output_names=[out_name], external_data=False)
        if opset:
            kwargs["opset_version"] = opset
        prog = torch.onnx.export(wrapped, args, **kwargs)
        prog.save(path)
    else:
        length = "samples" if arch in AUDIO else "sequence_length"
        axes = {n: {0: "batch_size", 1: length} for n in names}
        axes[out_name] = {0: "batch_size", 1: "frames" if arch in AUDIO else length}
        if arch in VISION:
            axes = {n: {0: "batch_size"} for n in [*names, out_name]}
            if any_image:
                axes[names[0]].update({2: "height", 3: "width"})
                with torch.no_grad():
                    rank = wrapped(*args).dim()
                axes[out_name].update({d: f"{out_name}_{d}" for d in range(1, rank)})
        torch.onnx.export(wrapped, args, path, dynamo=False, opset_version=opset or 17,
                          input_names=names, output_names=[out_name], dynamic_axes=axes)
    feeds = {n: kw[n].numpy() for n in names}
    with torch.no_grad():
        want = {out_name: wrapped(*args).numpy()}
    return feeds, want


def export_optimum(arch, model, out):
    """optimum-cli on a local save_pretrained folder, text-generation-with-past
    (feature-extraction of an encoder: the text, speech and image encoders;
    Optimum names an image's pixels [batch_size, num_channels, height,
    width])."""
    with tempfile.TemporaryDirectory() as src:
        model.save_pretrained(src)
        task = "feature-extraction" if arch in ENCODERS else "text-generation-with-past"
        cmd = [sys.executable, "-m", "optimum.exporters.onnx", "--model", src, "--task", task,
               "--no-post-process", out]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
    if arch in ENCODERS:
        # The inputs as the torch exports take them (a right-padded batch of
        # two texts with token type ids, two 3 x 32 x 32 images, two clips
        # of samples), and torch's last hidden state to cross-check.
        import torch

        ids, mask, pos = prompt_inputs(arch)
        kw = torch_inputs(arch, ids, mask, pos)
        with torch.no_grad():
            want = {"last_hidden_state": torch_output(arch, model, kw).numpy()}
        return {n: v.numpy() for n, v in kw.items()}, want
    return None, None


# Optimum's encoder-decoder files, each a corpus export of its own
# (ARCH-optimum_<part>): the encoder, the decoder over a prefix (which
# returns its presents, self- and cross-attention), and the decoder that
# takes them as its past for one more token.
OPTIMUM_SEQ2SEQ_PARTS = ("encoder", "decoder", "decoder_with_past", "decoder_merged")


def export_optimum_seq2seq(arch, model, root, tag):
    """optimum-cli on a local save_pretrained folder (text2text- or
    automatic-speech-recognition-with-past, --no-post-process: three files,
    and the two decoders merged as its post-processing would),
    then onnxruntime's outputs of each part over the corpus inputs: the
    encoder over the source, the decoder over the first PREFIX_DECODER
    decoder tokens with the encoder's hidden states, the decoder with past
    over the next token with the decoder's presents. Returns
    {part: (folder, feeds, outputs, torch check)}."""
    import onnxruntime as ort
    import torch

    speech = arch in SPEECH2SEQ
    task = ("automatic-speech-recognition-with-past" if speech
            else "text2text-generation-with-past")
    with tempfile.TemporaryDirectory() as src, tempfile.TemporaryDirectory() as dst:
        model.save_pretrained(src)
        cmd = [sys.executable, "-m", "optimum.exporters.onnx", "--model", src, "--task", task,
               "--no-post-process", dst]
        if speech:
            # Optimum's dummy features are 80 x 3000 unless told: Whisper
            # takes only its own MELS x FRAMES.
            cmd[-1:-1] = ["--feature_size", str(MELS), "--nb_max_frames", str(FRAMES)]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        source, mask, _ = prompt_inputs(arch)
        dec = decoder_ids()
        first = DECODER_SEQ - 1
        kw = torch_inputs(arch, source, mask, None)
        # Optimum exports the checkpoint as transformers reads it back (which
        # ties Marian's embeddings to the shared one): the cross-check is
        # with the model read back. It holds only where reading is
        # deterministic: transformers 4.57 reads BART's checkpoint with its
        # encoder and decoder embeddings missing and draws them anew each
        # time (the ONNX files are the reference either way).
        with torch.no_grad():
            logits, again = (
                type(model).from_pretrained(src).eval()(**kw, use_cache=False,
                                                        return_dict=True).logits.numpy()
                for _ in range(2))
        if np.abs(logits - again).max() > 1e-5:
            logits = None
        available = dict(input_ids=source, attention_mask=mask, input_features=source,
                         encoder_attention_mask=mask)
        parts = {}

        def run(part, feeds, want=None):
            name = f"{arch}-optimum_{part}{tag}"
            folder = os.path.join(root, name)
            shutil.rmtree(folder, ignore_errors=True)
            os.makedirs(os.path.join(folder, "inputs"))
            os.makedirs(os.path.join(folder, "reference"))
            shutil.copy(os.path.join(dst, f"{part}_model.onnx"),
                        os.path.join(folder, "model.onnx"))
            sess = ort.InferenceSession(os.path.join(folder, "model.onnx"),
                                        providers=["CPUExecutionProvider"])
            feeds = {i.name: feeds[i.name] for i in sess.get_inputs()}
            outs = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
            for n, v in feeds.items():
                np.save(os.path.join(folder, "inputs", f"{n}.npy"), v)
            for n, v in outs.items():
                np.save(os.path.join(folder, "reference", f"{n}.npy"), v)
            check = {} if logits is not None else {
                "torch_check_skipped": "transformers reads the checkpoint back with weights "
                                       "drawn anew each time"}
            if want is not None and logits is not None:
                check = {"torch_max_abs_diff": float(np.abs(
                    outs["logits"].astype(np.float64) - want).max())}
            parts[part] = (name, check)
            return outs

        encoded = run("encoder", {k: v for k, v in available.items()
                                  if k in ("input_ids", "attention_mask", "input_features")})
        state = encoded["last_hidden_state"]
        # The decoders read the mask of the encoder's states, which a speech
        # encoder subsamples from the frames' (Speech2Text), as transformers
        # passes it.
        subsample = getattr(getattr(model, "model", None),
                            "_get_feature_vector_attention_mask", None)
        if subsample is not None and state.shape[1] != mask.shape[1]:
            with torch.no_grad():
                available["encoder_attention_mask"] = subsample(
                    state.shape[1], torch.from_numpy(mask)).numpy().astype(mask.dtype)
        prefix = run("decoder", dict(available, input_ids=dec[:, :first],
                                     encoder_hidden_states=state),
                     None if logits is None else logits[:, :first])
        past = {k.replace("present", "past_key_values"): v for k, v in prefix.items()
                if k.startswith("present")}
        run("decoder_with_past", dict(available, **past, input_ids=dec[:, first:],
                                      encoder_hidden_states=state),
            None if logits is None else logits[:, first:])
        # Optimum's default post-processing merges the two decoders into one
        # file, an If on the input use_cache_branch choosing between them
        # (what ORTModelForSeq2SeqLM loads by default): here over the with-past
        # step, the branch meshc compiles with --input-value
        # use_cache_branch=true (the index's input_values), with the
        # config files Optimum writes beside it.
        from optimum.onnx import merge_decoders
        merge_decoders(os.path.join(dst, "decoder_model.onnx"),
                       os.path.join(dst, "decoder_with_past_model.onnx"),
                       save_path=os.path.join(dst, "decoder_merged_model.onnx"), strict=False)
        run("decoder_merged", dict(available, **past, input_ids=dec[:, first:],
                                   encoder_hidden_states=state,
                                   use_cache_branch=np.array([True])),
            None if logits is None else logits[:, first:])
        name = parts["decoder_merged"][0]
        for config in ("config.json", "generation_config.json"):
            if os.path.exists(os.path.join(dst, config)):
                shutil.copy(os.path.join(dst, config), os.path.join(root, name, config))
        parts["decoder_merged"][1]["input_values"] = {"use_cache_branch": "true"}
    return parts


def save_tiny_tokenizer(folder):
    """A word-level tokenizer of VOCAB made-up tokens, saved beside a model:
    the genai builder writes the tokenizer into its output, and there is no
    hub to fetch a real one from."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {f"t{i}": i for i in range(VOCAB)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="t0"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="t0", pad_token="t0",
                                   bos_token="t1", eos_token="t2")
    fast.save_pretrained(folder)


# onnxruntime-genai's builder's weight-only quantized forms (exporter ->
# precision and extra options): its usual CPU form (int4, symmetric: no zero
# points), with zero points, 8-bit, and ONNX's QDQ form (DequantizeLinear of
# INT4 blocks before each MatMul).
GENAI_QUANTIZED = {"genai_int4": ("int4", []), "genai_int4asym": ("int4", ["is_symmetric=false"]),
                   "genai_int8": ("int8", []), "genai_int4qdq": ("int4", ["use_qdq=true"]),
                   "genai_fp16": ("fp16", [])}


def export_genai(arch, model, out, precision="fp32", options=()):
    """onnxruntime-genai's builder for the cpu, from a local folder: fp32, or
    quantized (MatMulNBits, and GatherBlockQuantized for a tied embedding:
    blocks of 32 with scales and zero points) at accuracy level 1, the
    products in f32, as meshc computes them (level 4, the builder's default,
    has onnxruntime round the activations to int8, which no f32 reference
    reproduces); or fp16 for the cuda execution provider, the form a GPU
    user builds (GroupQueryAttention, f16 weights, caches and logits;
    onnxruntime's cpu provider runs it too, for the reference)."""
    with tempfile.TemporaryDirectory() as src, tempfile.TemporaryDirectory() as cache:
        model.save_pretrained(src)
        save_tiny_tokenizer(src)
        model.config.save_pretrained(src)
        provider = "cuda" if precision == "fp16" else "cpu"
        cmd = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", src, "-o", out,
               "-p", precision, "-e", provider, "-c", cache]
        if precision not in ("fp32", "fp16"):
            cmd += ["--extra_options", "accuracy_level=1", *options]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        if precision == "fp16" and fused_qk_norm(out):
            # The cuda build folds Qwen3's per-head Q/K norms into
            # GroupQueryAttention (q_norm_weight, k_norm_weight), which
            # onnxruntime's cpu provider refuses: the references come from
            # the same build with the norms left as nodes.
            ref = os.path.join(out, "reference_model")
            subprocess.run(cmd[:cmd.index("-o") + 1] + [ref] + cmd[cmd.index("-o") + 2:] +
                           ["--extra_options", "fuse_qk_norm_gqa=false"],
                           check=True, capture_output=True, text=True)
            for extra in ("tokenizer.json", "tokenizer_config.json"):
                if os.path.exists(os.path.join(ref, extra)):
                    os.remove(os.path.join(ref, extra))
    if "use_qdq=true" in options:
        # onnxruntime fuses a weight's DequantizeLinear and its MatMul into a
        # MatMulNBits at accuracy level 4 (8-bit activations), which
        # onnxruntime-genai (no config entries in its session options) cannot
        # turn off but with the graph optimizations: its loop then computes
        # in f32, as ONNX defines the pair (run_reference sets the level).
        path = os.path.join(out, "genai_config.json")
        config = json.load(open(path))
        config["model"]["decoder"]["session_options"]["graph_optimization_level"] = \
            "ORT_DISABLE_ALL"
        json.dump(config, open(path, "w"), indent=4)
    return None, None


def fused_qk_norm(out):
    """Whether the export's GroupQueryAttention takes q_norm_weight."""
    import onnx

    graph = onnx.load(os.path.join(out, "model.onnx"), load_external_data=False).graph
    return any(n.op_type == "GroupQueryAttention" and len(n.input) > 14 and n.input[14]
               for n in graph.node)


def reference_model(out):
    """The model onnxruntime takes the export's references from: the export
    itself, or its `reference_model/` (the same build in a form
    onnxruntime's cpu provider runs)."""
    ref = os.path.join(out, "reference_model", "model.onnx")
    return ref if os.path.exists(ref) else os.path.join(out, "model.onnx")


# The optimizer's model type for each architecture it fuses.
ORTOPT_TYPES = {"gpt2": "gpt2", "bert": "bert", "roberta": "bert", "distilbert": "bert",
                "gpt_neox": "gpt_neox", "qwen3": "qwen3", "phi": "phi", "bart": "bart",
                "t5": "t5", "vit": "vit", "deit": "vit", "swin": "swin", "clip": "clip",
                "clip_vision_model": "vit"}


def export_ortopt(arch, model, out, attn):
    """onnxruntime's transformer optimizer over a TorchScript export (ORTOPT_TYPES)."""
    from onnxruntime.transformers import optimizer

    if attn == "eager":
        # transformers' own attention (no SDPA): the form the optimizer fuses
        # into com.microsoft Attention and EmbedLayerNormalization.
        model.set_attn_implementation("eager")
    with tempfile.TemporaryDirectory() as tmp:
        export = (export_seq2seq if arch in SEQ2SEQ else
                  export_dual if arch in DUAL else export_torch)
        feeds, want = export(arch, model, tmp, dynamo=False, opset=17)
        # 0: the optimizer reads them off the graph (an encoder-decoder's or
        # a dual model's config has no single pair).
        heads = getattr(model.config, "num_attention_heads", 0)
        hidden = getattr(model.config, "hidden_size", 0)
        if arch in SEQ2SEQ or arch in DUAL or not isinstance(heads, int):
            heads = hidden = 0
        opt = optimizer.optimize_model(os.path.join(tmp, "model.onnx"),
                                       model_type=ORTOPT_TYPES[arch],
                                       num_heads=heads, hidden_size=hidden, opt_level=1)
        opt.save_model_to_file(os.path.join(out, "model.onnx"))
    return feeds, want


# onnxruntime's dynamic quantization (quantize_dynamic) over the torch.onnx
# dynamo export, as Hub repositories ship `onnx/model_quantized.onnx`:
# activations quantized per tensor at run time (DynamicQuantizeLinear),
# weights to 8 bits (MatMulInteger; the embedding tables a Gather of 8-bit
# rows then DequantizeLinear). qdynamic: signed weights, one scale per
# matrix; qdynamic_pc: unsigned weights, one scale and zero point per column.
QDYNAMIC = {"qdynamic": dict(per_channel=False, weight_type="QInt8"),
            "qdynamic_pc": dict(per_channel=True, weight_type="QUInt8")}


def export_qdynamic_ortext(arch, model, out):
    """qdynamic, then saved by onnxruntime at its extended optimisation level
    (as a user keeps an optimized session's model): com.microsoft
    DynamicQuantizeMatMul, MatMulIntegerToFloat and FusedMatMul."""
    import onnxruntime as ort

    with tempfile.TemporaryDirectory() as tmp:
        feeds, want = export_qdynamic(arch, model, tmp, **QDYNAMIC["qdynamic"])
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        options.optimized_model_filepath = os.path.join(out, "model.onnx")
        ort.InferenceSession(os.path.join(tmp, "model.onnx"), options,
                             providers=["CPUExecutionProvider"])
    return feeds, want


def export_qdynamic(arch, model, out, per_channel, weight_type):
    """quantize_dynamic over the dynamo export. torch's output is the
    unquantized model's, so the torch cross-check measures the quantization
    error; the references are onnxruntime's on the quantized model."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as tmp:
        feeds, want = export_torch(arch, model, tmp, dynamo=True)
        quantize_dynamic(os.path.join(tmp, "model.onnx"), os.path.join(out, "model.onnx"),
                         per_channel=per_channel, weight_type=getattr(QuantType, weight_type))
    return feeds, want


def export_qstatic(arch, model, out):
    """quantize_static over the dynamo export, calibrated on the export's own
    inputs: onnxruntime's QDQ form (QuantizeLinear and DequantizeLinear of
    the activations around each quantized op, 8-bit weights through
    DequantizeLinear), at its defaults. The references are onnxruntime's
    with its graph optimisations off (run_reference: the QDQ pairs computed
    as ONNX defines them, in f32, not fused into integer kernels)."""
    from onnxruntime.quantization import CalibrationDataReader, quantize_static

    with tempfile.TemporaryDirectory() as tmp:
        feeds, want = export_torch(arch, model, tmp, dynamo=True)

        class Reader(CalibrationDataReader):
            def __init__(self):
                self.items = [feeds]

            def get_next(self):
                return self.items.pop() if self.items else None

        quantize_static(os.path.join(tmp, "model.onnx"), os.path.join(out, "model.onnx"),
                        Reader())
    return feeds, want


def export_optimum_q8(arch, model, out):
    """Optimum's export (export_optimum), then its dynamic quantization,
    `optimum-cli onnxruntime quantize --avx2`: MatMuls of weights and of two
    activations (the rotary's positions by frequencies) quantized at run time."""
    with tempfile.TemporaryDirectory() as tmp:
        feeds, want = export_optimum(arch, model, tmp)
        quantized = os.path.join(tmp, "quantized")
        cli = os.path.join(os.path.dirname(sys.executable), "optimum-cli")
        subprocess.run([cli, "onnxruntime", "quantize", "--avx2", "--onnx_model", tmp,
                        "-o", quantized],
                       check=True, capture_output=True, text=True)
        shutil.copy(os.path.join(quantized, "model_quantized.onnx"),
                    os.path.join(out, "model.onnx"))
        for f in os.listdir(tmp):
            if f.endswith(".json") and not os.path.exists(os.path.join(out, f)):
                shutil.copy(os.path.join(tmp, f), out)
    return feeds, want


# The variants a Hub repository's onnx/ folder ships beside model.onnx
# (transformers.js's conversion: model_fp16, model_q4, model_q4f16,
# model_bnb4), each made from the dynamo export by onnxruntime's own tools.
# optimum_hub_*: the same of Optimum's export with a KV cache (the decoder a
# repository ships for generation).
HUB_VARIANTS = {"hub_fp16", "hub_q4", "hub_q4f16", "hub_bnb4"}
HUB_VARIANTS |= {"optimum_" + v for v in HUB_VARIANTS}


def export_hub_variant(arch, model, out, kind):
    """hub_fp16: every float in f16 but the inputs and outputs
    (onnxruntime.transformers.float16, keep_io_types: Casts at the edges);
    hub_q4: each MatMul of a weight as a MatMulNBits, 4-bit symmetric blocks
    of 32 (MatMulNBitsQuantizer); hub_q4f16: hub_q4 of hub_fp16; hub_bnb4:
    MatMulBnb4, NF4 codes in blocks of 64 with absmax scales
    (MatMulBnb4Quantizer). torch's output is the unconverted model's, so the
    torch cross-check measures the conversion's error."""
    import onnx
    from onnxruntime.transformers import float16

    with tempfile.TemporaryDirectory() as tmp:
        if kind.startswith("optimum_"):
            kind = kind[len("optimum_"):]
            feeds, want = export_optimum(arch, model, tmp)
            for f in os.listdir(tmp):
                if f.endswith(".json"):
                    shutil.copy(os.path.join(tmp, f), out)
        else:
            feeds, want = export_torch(arch, model, tmp, dynamo=True)
        m = onnx.load(os.path.join(tmp, "model.onnx"))
        if kind in ("hub_fp16", "hub_q4f16"):
            m = float16.convert_float_to_float16(m, keep_io_types=True)
        if kind in ("hub_q4", "hub_q4f16"):
            from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

            q = MatMulNBitsQuantizer(m, block_size=32, is_symmetric=True)
            q.process()
            m = q.model.model
        if kind == "hub_bnb4":
            from onnxruntime.quantization.matmul_bnb4_quantizer import MatMulBnb4Quantizer

            q = MatMulBnb4Quantizer(m, quant_type=MatMulBnb4Quantizer.NF4, block_size=64)
            q.process()
            m = q.model.model
        onnx.save(m, os.path.join(out, "model.onnx"))
    return feeds, want


# ---------------------------------------------------------------------------
# KV-cache inputs for exports that take them
# ---------------------------------------------------------------------------

def cache_feeds(session, model, arch, ids, mask, pos):
    """Feeds for a session whose inputs include past keys/values: the cache of
    a real PREFIX-token prefix (computed by torch), then the rest of the
    prompt as the new tokens."""
    import torch

    from transformers import DynamicCache

    with torch.no_grad():
        # A cache of every layer's full prefix: the config's own cache would
        # keep only the last window of a sliding-window layer (Gemma-2),
        # while the exports take the whole past for every layer.
        kw = dict(input_ids=torch.tensor(ids[:, :PREFIX]),
                  attention_mask=torch.tensor(mask[:, :PREFIX]), use_cache=True,
                  past_key_values=DynamicCache())
        if arch != "gpt2":
            kw["position_ids"] = torch.tensor(pos[:, :PREFIX])
        past = model(**kw).past_key_values
    layers = []
    for layer in range(model.config.num_hidden_layers):
        if hasattr(past, "layers"):
            k, v = past.layers[layer].keys, past.layers[layer].values
        else:
            k, v = past[layer]
        layers.append((k.numpy(), v.numpy()))
    feeds = {}
    new = SEQ - PREFIX
    for inp in session.get_inputs():
        n = inp.name
        if n == "input_ids":
            feeds[n] = ids[:, PREFIX:]
        elif n == "attention_mask":
            feeds[n] = mask
        elif n == "position_ids":
            feeds[n] = pos[:, PREFIX:]
        elif "past" in n and ("key" in n or "value" in n):
            idx = int("".join(c for c in n.split(".")[1] if c.isdigit())) if "." in n else 0
            which = 0 if "key" in n else 1
            half = inp.type == "tensor(float16)"
            feeds[n] = layers[idx][which].astype(np.float16 if half else np.float32)
        elif n == "token_type_ids":
            feeds[n] = np.zeros_like(ids)
        else:
            raise RuntimeError(f"no feed for input {n}")
    return feeds


def mark_unspecified(out, feeds, outputs):
    """NaN where onnxruntime leaves a reference output unspecified: the rows
    of a sliding-window cache's present past the kept ones (onnxruntime
    writes nothing there; check_corpus.py skips NaN in a reference)."""
    import onnx

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from ort_reference import kept_rows

    graph = onnx.load(os.path.join(out, "model.onnx"), load_external_data=False).graph
    if "attention_mask" not in feeds:
        return
    seen = feeds["attention_mask"].sum(axis=1)  # tokens of each row, past and new
    for node in graph.node:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type != "GroupQueryAttention" or not attrs.get("sliding_window_cache"):
            continue
        for name in node.output[1:3]:
            if name not in outputs:
                continue
            present = outputs[name]
            for b, n in enumerate(seen):
                present[b, :, kept_rows(int(n), present.shape[2],
                                        attrs["local_window_size"]):] = np.nan


def run_reference(out, model, arch, feeds, optimize=True):
    import onnxruntime as ort

    # A DequantizeLinear of a weight before a MatMul (the builder's QDQ
    # form) computes in f32, as ONNX defines it: onnxruntime would fuse the
    # pair into a MatMulNBits at accuracy level 4 (8-bit activations) unless
    # told otherwise. Without `optimize` (static quantization's QDQ pairs of
    # activations) no fusion at all: onnxruntime would turn the pairs and
    # their MatMuls into integer kernels that requantize by other roundings.
    options = ort.SessionOptions()
    options.add_session_config_entry("session.qdq_matmulnbits_accuracy_level", "1")
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(reference_model(out), options,
                                providers=["CPUExecutionProvider"])
    names = {i.name for i in sess.get_inputs()}
    if feeds is not None and names < set(feeds):
        # Inputs the export dropped (Mamba and RWKV read no attention mask).
        feeds = {k: v for k, v in feeds.items() if k in names}
    if feeds is None or set(feeds) != names:
        ids, mask, pos = prompt_inputs(arch)
        feeds = cache_feeds(sess, model, arch, ids, mask, pos)
    outs = sess.run(None, feeds)
    mark_unspecified(out, feeds, dict(zip([o.name for o in sess.get_outputs()], outs)))
    os.makedirs(os.path.join(out, "inputs"), exist_ok=True)
    os.makedirs(os.path.join(out, "reference"), exist_ok=True)
    for n, v in feeds.items():
        np.save(os.path.join(out, "inputs", f"{n}.npy"), v)
    for o, v in zip(sess.get_outputs(), outs):
        np.save(os.path.join(out, "reference", f"{o.name}.npy"), v)
    return feeds, dict(zip([o.name for o in sess.get_outputs()], outs))


def traced_shapes_only(out, feeds):
    """None if onnxruntime runs the export on prompts 3 and 11 tokens longer
    than the traced one; else the first line of its error. Some exports bake
    shapes of the trace into the graph (TorchScript writes JetMoE's tokens
    per expert as constant Split sizes; Falcon-H1's dynamo export its
    Mamba-2 chunk count, which the longer prompt changes), so they hold only
    at those shapes; check_generate.py, whose prompts have other lengths,
    skips them."""
    import onnxruntime as ort

    if any(n.startswith("past_key_values") for n in feeds):
        return None
    sess = ort.InferenceSession(os.path.join(out, "model.onnx"),
                                providers=["CPUExecutionProvider"])
    for extra in (3, 11):
        longer = {}
        for n, v in feeds.items():
            if n == "pixel_values" and "input_ids" not in feeds:  # images: batches of 4 and 6
                longer[n] = np.concatenate([v, v[:1].repeat(extra // 3 + 1, axis=0)], axis=0)
            elif n == "input_features" and v.ndim == 3 and "attention_mask" in feeds \
                    and feeds["attention_mask"].shape[1] == v.shape[1]:
                # [batch, frames, bins] features under a mask over the frames.
                longer[n] = np.concatenate(
                    [v, np.full((v.shape[0], extra, v.shape[2]), 0.5, v.dtype)], axis=1)
            elif n == "input_values":  # samples: 1 and 4 more frames' worth
                longer[n] = np.concatenate(
                    [v, np.full((v.shape[0], 20 * extra // 3), 0.5, v.dtype)], axis=1)
            elif v.ndim == 2 and n in ("input_ids", "attention_mask", "token_type_ids",
                                       "decoder_input_ids"):
                longer[n] = np.concatenate([v, np.ones((v.shape[0], extra), v.dtype)], axis=1)
            elif n == "position_ids":
                longer[n] = np.concatenate([v, v[:, -1:] + np.arange(1, extra + 1)], axis=1)
            else:
                longer[n] = v
        try:
            sess.run(None, longer)
        except Exception as e:  # the export holds only at its traced shapes
            return str(e).strip().splitlines()[0][:300]
    return None


def torch_check(want, got, feeds):
    """The cross-check of onnxruntime's output against torch's: the largest
    difference where the attention mask keeps the token. A padded
    position's output is not the model's (its query attends to nothing the
    mask keeps, and torch and onnxruntime fill such rows differently), so
    its difference is recorded apart, for information."""
    key = next(iter(want))
    diff = np.abs(got[key].astype(np.float64) - want[key].astype(np.float64))
    mask = feeds.get("attention_mask")
    if mask is None or mask.shape != diff.shape[:2]:
        return {"torch_max_abs_diff": float(diff.max())}
    keep = mask.astype(bool)
    check = {"torch_max_abs_diff": float(diff[keep].max())}
    if (~keep).any():
        check["torch_max_abs_diff_padded"] = float(diff[~keep].max())
    return check


def recheck(out_dir, index, names):
    """Recomputes the torch cross-check of committed exports from their
    stored inputs and references (the weights are rebuilt from the seed),
    without exporting again. Exports with a KV cache are skipped (their
    torch outputs need the cache objects the export step builds)."""
    import torch

    for name in names:
        meta = index.get(name)
        folder = os.path.join(out_dir, name)
        if not meta or meta.get("status") != "ok" or not os.path.isdir(folder):
            continue
        inputs = {f[:-4]: np.load(os.path.join(folder, "inputs", f))
                  for f in sorted(os.listdir(os.path.join(folder, "inputs")))}
        refs = {f[:-4]: np.load(os.path.join(folder, "reference", f))
                for f in sorted(os.listdir(os.path.join(folder, "reference")))}
        if not set(inputs) <= {"input_ids", "attention_mask", "position_ids",
                               "token_type_ids"} or len(refs) != 1:
            print(f"{name}: skipped (inputs {sorted(inputs)})", flush=True)
            continue
        _, model = build_model(meta["arch"])
        kw = {n: torch.tensor(v) for n, v in inputs.items()}
        with torch.no_grad():
            want = torch_output(meta["arch"], model, kw).numpy()
        key = next(iter(refs))
        for k in ("torch_max_abs_diff", "torch_max_abs_diff_padded"):
            meta.pop(k, None)
        meta.update(torch_check({key: want}, refs, inputs))
        json.dump(meta, open(os.path.join(folder, "export.json"), "w"), indent=1)
        print(f"{name}: torch {meta['torch_max_abs_diff']:.2g}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--arch", default=",".join(ARCHS))
    ap.add_argument("--exporter",
                    default="dynamo,dynamo23,torchscript,genai,ortopt,ortopt_eager")
    ap.add_argument("--tag", default="",
                    help="appended to each export's name (ARCH-EXPORTER + TAG): exports "
                    "of another exporter version beside the others, e.g. _torch26")
    ap.add_argument("--as-encoder", action="store_true",
                    help="export the --arch architectures the script has no case for as "
                    "encoders: the bare model, a right-padded batch with token type ids, "
                    "the last hidden state (a probe of encoders nobody listed)")
    ap.add_argument("--recheck", action="store_true",
                    help="recompute the torch cross-check of the exports already in "
                    "--out (of --arch by --exporter) instead of exporting")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    index_path = os.path.join(args.out, "index.json")
    index = json.load(open(index_path)) if os.path.exists(index_path) else {}
    if args.recheck:
        names = [f"{a}-{e}{args.tag}" for a in args.arch.split(",") for e in args.exporter.split(",")]
        recheck(args.out, index, names)
        json.dump(index, open(index_path, "w"), indent=2, sort_keys=True)
        open(index_path, "a").write("\n")
        return
    import torch
    import transformers

    if args.as_encoder:
        ENCODERS.update(args.arch.split(","))
    for arch in args.arch.split(","):
        for exporter in args.exporter.split(","):
            if (exporter == "genai" or exporter in GENAI_QUANTIZED) and arch not in GENAI_ARCHS:
                continue
            if exporter.startswith("ortopt") and arch not in ORTOPT_TYPES:
                continue
            if exporter == "optimum" and arch in SEQ2SEQ:
                # Four exports of one Optimum run (OPTIMUM_SEQ2SEQ_PARTS).
                meta = dict(arch=arch, exporter=exporter, torch=torch.__version__,
                            transformers=transformers.__version__)
                try:
                    _, model = build_model(arch)
                    parts = export_optimum_seq2seq(arch, model, args.out, args.tag)
                    results = {name: dict(meta, exporter=f"optimum_{part}", status="ok",
                                          **check)
                               for part, (name, check) in parts.items()}
                except Exception as e:  # recorded, as a single export's failure is
                    detail = getattr(e, "stderr", None) or traceback.format_exc()
                    line = str(detail).strip().splitlines()[-1]
                    results = {f"{arch}-optimum_{part}{args.tag}":
                               dict(meta, exporter=f"optimum_{part}",
                                    status="export failed: " + line[:300])
                               for part in OPTIMUM_SEQ2SEQ_PARTS}
                for name, entry in results.items():
                    folder = os.path.join(args.out, name)
                    os.makedirs(folder, exist_ok=True)
                    json.dump(entry, open(os.path.join(folder, "export.json"), "w"), indent=1)
                    index[name] = entry
                    print(f"{name}: {entry['status']}", flush=True)
                json.dump(index, open(index_path, "w"), indent=2, sort_keys=True)
                open(index_path, "a").write("\n")
                continue
            name = f"{arch}-{exporter}{args.tag}"
            out = os.path.join(args.out, name)
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            meta = dict(arch=arch, exporter=exporter, torch=torch.__version__,
                        transformers=transformers.__version__)
            try:
                config, model = build_model(arch)
                torch_exporter = re.fullmatch(r"(dynamo|torchscript)(\d*)(_anyimage)?",
                                              exporter)
                if torch_exporter:
                    # At the exporter's default opset (export_torch: dynamo's
                    # own, TorchScript 17), or the number's (dynamo23 writes
                    # Attention and RotaryEmbedding; torchscript14 comes
                    # before LayerNormalization, as older export scripts pin).
                    kind, opset, any_image = torch_exporter.groups()
                    export = (export_seq2seq if arch in SEQ2SEQ else
                              export_dual if arch in DUAL else export_torch)
                    extra = {}
                    if any_image:
                        if arch not in VISION:
                            raise SystemExit(f"{exporter}: {arch} is not an image encoder")
                        extra["any_image"] = True
                    feeds, want = export(arch, model, out, dynamo=kind == "dynamo",
                                         opset=int(opset) if opset else None, **extra)
                elif exporter == "optimum":
                    feeds, want = export_optimum(arch, model, out)
                elif exporter == "genai":
                    feeds, want = export_genai(arch, model, out)
                elif exporter in GENAI_QUANTIZED:
                    precision, options = GENAI_QUANTIZED[exporter]
                    feeds, want = export_genai(arch, model, out, precision, options)
                elif exporter in HUB_VARIANTS:
                    feeds, want = export_hub_variant(arch, model, out, exporter)
                    if exporter.endswith(("hub_fp16", "hub_q4f16")):
                        meta["computes_in"] = "f16"  # f32 only at the edges
                elif exporter == "optimum_q8":
                    feeds, want = export_optimum_q8(arch, model, out)
                elif exporter == "qstatic":
                    feeds, want = export_qstatic(arch, model, out)
                elif exporter == "qdynamic_ortext":
                    feeds, want = export_qdynamic_ortext(arch, model, out)
                elif exporter in QDYNAMIC:
                    feeds, want = export_qdynamic(arch, model, out, **QDYNAMIC[exporter])
                elif exporter == "ortopt":
                    feeds, want = export_ortopt(arch, model, out, attn="sdpa")
                elif exporter == "ortopt_eager":
                    feeds, want = export_ortopt(arch, model, out, attn="eager")
                else:
                    raise SystemExit(f"unknown exporter {exporter}")
                feeds, got = run_reference(out, model, arch, feeds,
                                           optimize=exporter != "qstatic")
                fixed = traced_shapes_only(out, feeds)
                if fixed:
                    meta["traced_shapes_only"] = fixed
                if want:
                    meta.update(torch_check(want, got, feeds))
                meta["status"] = "ok"
                print(f"{name}: ok", flush=True)
            except Exception as e:  # recorded, so a failed export is visible
                detail = getattr(e, "stderr", None) or traceback.format_exc()
                line = str(detail).strip().splitlines()[-1]
                if "full stack trace" in line:
                    # torch.onnx's own summary: its first line, and the cause.
                    line = re.sub(r"\x1b\[[0-9;]*m", "", str(e).strip().splitlines()[0])
                    if e.__cause__ is not None:
                        line += " (" + (str(e.__cause__).strip().splitlines() or [""])[0] + ")"
                meta["status"] = "export failed: " + line[:300]
                print(f"{name}: {meta['status']}", flush=True)
            json.dump(meta, open(os.path.join(out, "export.json"), "w"), indent=1)
            index[name] = meta
            json.dump(index, open(index_path, "w"), indent=2, sort_keys=True)
            open(index_path, "a").write("\n")


if __name__ == "__main__":
    main()
