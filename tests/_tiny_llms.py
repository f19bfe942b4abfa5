"""Tiny, randomly initialised decoder-only (Llama, Qwen2) and masked-LM models written to a
directory, for the SPLADE, causal-LM and pairwise rankers' real loading and scoring code."""

from __future__ import annotations

import json
from pathlib import Path

from tests._tiny_models import PUNCTUATION, WORDS, _bert_config, _save_bert_tokenizer

SPECIALS = ["<pad>", "<s>", "</s>", "<unk>"]
PROMPT_WORDS = ["Query:", "Document:", "Document0:", "Document1:", "Relevant:", "Answer:",
                "Is", "answer", "or", "relevant?", "Which", "more", "first", "second"]


def causal_vocab() -> list[str]:
    return [*SPECIALS, *WORDS, *PUNCTUATION, *PROMPT_WORDS]


def _save_word_tokenizer(path: Path, bos: bool) -> None:
    """A whitespace word-level tokenizer; ``bos`` makes it prepend ``<s>`` like Llama's."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = causal_vocab()
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    if bos:
        backend.post_processor = processors.TemplateProcessing(
            single="<s> $A", pair="<s> $A $B", special_tokens=[("<s>", 1)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>",
                                        bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    tokenizer.save_pretrained(path)
    # Name the generic fast class, or AutoTokenizer builds the model type's own tokenizer
    # (e.g. Qwen2's byte-level BPE) around this word-level vocabulary.
    config_file = path / "tokenizer_config.json"
    settings = json.loads(config_file.read_text(encoding="utf-8"))
    settings["tokenizer_class"] = "PreTrainedTokenizerFast"
    config_file.write_text(json.dumps(settings), encoding="utf-8")


def _save_qwen2_tokenizer(path: Path) -> int:
    """A real Qwen2 tokenizer (byte-level BPE, ``<|endoftext|>`` as end and padding token)
    trained on the test words; returns its size."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import Qwen2Tokenizer

    words = [*WORDS, *PUNCTUATION, *PROMPT_WORDS]
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    backend.train_from_iterator([" ".join(words)] * 5 + words + [" " + w for w in words],
                                trainer)
    model = json.loads(backend.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split()) for m in model["merges"]]
    tokenizer = Qwen2Tokenizer(vocab=model["vocab"], merges=merges)
    tokenizer.save_pretrained(path)
    return len(tokenizer)


def save_causal_lm(path: Path, kind: str = "llama", seed: int = 0,
                   classifier_labels: int = 0) -> Path:
    """A 2-layer Llama or Qwen2 causal LM (``classifier_labels`` > 0: a sequence classifier)."""
    import torch
    import transformers

    path.mkdir(parents=True, exist_ok=True)
    if kind == "qwen2":
        vocab_size = _save_qwen2_tokenizer(path)
        ids = dict(pad_token_id=0, bos_token_id=None, eos_token_id=0)
    else:
        _save_word_tokenizer(path, bos=True)
        vocab_size = len(causal_vocab())
        ids = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)
    common = dict(vocab_size=vocab_size, hidden_size=32, intermediate_size=64,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  max_position_embeddings=256, tie_word_embeddings=False,
                  initializer_range=0.3, **ids)
    if kind == "llama":
        config = transformers.LlamaConfig(**common)
        cls = (transformers.LlamaForSequenceClassification if classifier_labels
               else transformers.LlamaForCausalLM)
    elif kind == "qwen2":
        config = transformers.Qwen2Config(**common)
        cls = (transformers.Qwen2ForSequenceClassification if classifier_labels
               else transformers.Qwen2ForCausalLM)
    else:
        raise ValueError(kind)
    if classifier_labels:
        config.num_labels = classifier_labels
    torch.manual_seed(seed)
    cls(config).save_pretrained(path)
    return path


def save_masked_lm(path: Path, seed: int = 0) -> Path:
    """A 2-layer BERT with its masked-language-model head (a random SPLADE)."""
    import torch
    from transformers import BertForMaskedLM

    path.mkdir(parents=True, exist_ok=True)
    vocab = _save_bert_tokenizer(path)
    torch.manual_seed(seed)
    BertForMaskedLM(_bert_config(len(vocab))).save_pretrained(path)
    return path
