"""Patch targets on random-init models of the real architectures (no download), and a
hand-built BERT whose relevance is computed by one known head."""

from __future__ import annotations

from pathlib import Path

from tests._tiny_llms import save_causal_lm, save_masked_lm
from tests._tiny_models import _bert_config, _save_bert_tokenizer, save_cross_encoder, save_t5

FAMILIES = ("biencoder", "cross-encoder", "splade", "monot5", "lm-llama", "lm-qwen2",
            "lm-llama-score")


def save_biencoder(path: Path, seed: int = 0) -> Path:
    """A sentence-transformers bi-encoder (random BERT + mean pooling)."""
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import BertModel

    try:
        from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    except ImportError:                      # sentence-transformers before 6
        from sentence_transformers.models import Pooling, Transformer

    raw = path / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    vocab = _save_bert_tokenizer(raw)
    torch.manual_seed(seed)
    BertModel(_bert_config(len(vocab)), add_pooling_layer=False).save_pretrained(raw)
    encoder = Transformer(str(raw))
    pooling = Pooling(int(encoder.auto_model.config.hidden_size), "mean")
    SentenceTransformer(modules=[encoder, pooling], device="cpu").save(str(path / "st"))
    return path / "st"


def ranker_spec(family: str, root: Path) -> str:
    """Save a random model of ``family`` under ``root`` and return its ranker spec."""
    folder = root / family
    if family == "biencoder":
        return f"biencoder:{save_biencoder(folder)}"
    if family == "cross-encoder":
        return f"cross-encoder:{save_cross_encoder(folder)}"
    if family == "splade":
        return f"splade:{save_masked_lm(folder)}"
    if family == "monot5":
        return f"monot5:{save_t5(folder)}"
    kind = family.split("-")[1]
    labels = 1 if family.endswith("-score") else 0
    return f"lm:{save_causal_lm(folder, kind=kind, classifier_labels=labels)}"


def save_one_head_bert(path: Path, word: str = "vitamin") -> Path:
    """A 2-layer, 2-head BERT cross-encoder whose score is a monotone function of the share
    of ``word`` tokens in the input, computed by layer 1's head 1 alone.

    Every weight is zero except: ``word`` embeds as (1, −1, 0, 0) and [CLS] as
    (0, 0, 1, −1); layer 1, head 1 attends uniformly (zero queries and keys) and copies
    dimensions 0–1; the attention output projection passes head 1's slice to dimensions 0–1
    and drops head 2's (whose values are not zero, so it computes something that does not
    reach the score); layer 2 adds nothing; the pooler and classifier read dimension 0 at
    [CLS]. LayerNorms keep their unit scale.
    """
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    path.mkdir(parents=True, exist_ok=True)
    vocab = _save_bert_tokenizer(path)
    config = BertConfig(vocab_size=len(vocab), hidden_size=4, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=4,
                        max_position_embeddings=64, num_labels=1)
    model = BertForSequenceClassification(config)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            parameter.zero_()
            if "LayerNorm.weight" in name:
                parameter.fill_(1.0)
        bert = model.bert
        bert.embeddings.word_embeddings.weight[vocab[word]] = torch.tensor([1.0, -1.0, 0, 0])
        bert.embeddings.word_embeddings.weight[vocab["[CLS]"]] = torch.tensor([0, 0, 1.0, -1.0])
        first = bert.encoder.layer[0].attention
        first.self.value.weight[0, 0] = 1.0     # head 1 (dims 0-1) copies dims 0-1
        first.self.value.weight[1, 1] = 1.0
        first.self.value.weight[2, 0] = 0.7     # head 2 (dims 2-3) computes something …
        first.self.value.weight[3, 1] = -0.3
        first.output.dense.weight[0, 0] = 1.0   # … that the projection drops
        first.output.dense.weight[1, 1] = 1.0
        model.bert.pooler.dense.weight[0, 0] = 1.0
        model.classifier.weight[0, 0] = 1.0
    model.save_pretrained(path)
    return path
