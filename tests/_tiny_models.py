"""Tiny, randomly initialised Hugging Face models written to a directory, for exercising the
neural rankers' real loading and scoring code without any download."""

from __future__ import annotations

from pathlib import Path

WORDS = (
    "the", "a", "an", "of", "in", "on", "and", "is", "to", "for", "what", "how", "why", "do",
    "does", "are", "with", "from", "by", "it", "that", "this", "as", "vitamin", "d",
    "deficiency", "symptoms", "adults", "sun", "light", "fish", "bone", "bones", "tired",
    "tiredness", "bread", "dough", "rise", "yeast", "hours", "warm", "oven", "bake", "flour",
    "roman", "empire", "split", "east", "west", "rome", "emperor", "capital", "cat", "dog",
    "car", "river", "music", "paint", "true", "false", "yes", "no", "query", "document",
    "relevant",
)
PUNCTUATION = list(".,?!:;'\"()-")


def bert_vocab() -> dict[str, int]:
    tokens = ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokens += [*WORDS, *PUNCTUATION]
    return {t: i for i, t in enumerate(tokens)}


def _bert_config(vocab_size: int, **extra):
    from transformers import BertConfig

    return BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2,
                      num_attention_heads=2, intermediate_size=64, max_position_embeddings=256,
                      **extra)


def _save_bert_tokenizer(path: Path) -> dict[str, int]:
    from transformers import BertTokenizer

    vocab = bert_vocab()
    BertTokenizer(vocab=dict(vocab)).save_pretrained(path)
    return vocab


def save_cross_encoder(path: Path, num_labels: int = 1, seed: int = 0) -> Path:
    import torch
    from transformers import BertForSequenceClassification

    path.mkdir(parents=True, exist_ok=True)
    vocab = _save_bert_tokenizer(path)
    torch.manual_seed(seed)
    model = BertForSequenceClassification(_bert_config(len(vocab), num_labels=num_labels))
    model.save_pretrained(path)
    return path


def save_colbert(path: Path, dim: int = 16, seed: int = 0, projection: bool = True) -> Path:
    """The ColBERT Hugging Face layout: ``bert.*`` encoder weights plus ``linear.weight``."""
    import torch
    from safetensors.torch import save_file
    from transformers import BertModel

    path.mkdir(parents=True, exist_ok=True)
    vocab = _save_bert_tokenizer(path)
    config = _bert_config(len(vocab))
    torch.manual_seed(seed)
    encoder = BertModel(config, add_pooling_layer=False)
    config.save_pretrained(path)
    state = {f"bert.{k}": v.contiguous() for k, v in encoder.state_dict().items()}
    if projection:
        state["linear.weight"] = torch.randn(dim, config.hidden_size)
    save_file(state, str(path / "model.safetensors"))
    return path


def t5_vocab() -> list[str]:
    return ["<pad>", "</s>", "<unk>", *WORDS, *PUNCTUATION, "Query:", "Document:", "Relevant:"]


def save_t5(path: Path, seed: int = 0) -> Path:
    """A T5 with a whitespace word-level tokenizer (T5 layout: pad 0, eos 1, unk 2)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    path.mkdir(parents=True, exist_ok=True)
    vocab = t5_vocab()
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.post_processor = processors.TemplateProcessing(
        single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", 1)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>",
                                        eos_token="</s>", unk_token="<unk>")
    tokenizer.save_pretrained(path)
    config = T5Config(vocab_size=len(vocab), d_model=32, d_ff=64, d_kv=8, num_layers=2,
                      num_decoder_layers=2, num_heads=2, decoder_start_token_id=0,
                      pad_token_id=0, eos_token_id=1)
    torch.manual_seed(seed)
    T5ForConditionalGeneration(config).save_pretrained(path)
    return path
