"""The T5 forward pass monoT5 and duoT5 share: one decoding step, two answer tokens.

Both families feed a filled prompt to a T5 encoder-decoder, run the decoder for a single
step from its start token, and read the logits of two answer words ("true" and "false" by
default) at that step. They differ only in the prompt and in what they make of the two
logits (monoT5: the log-probability of "true"; duoT5: its probability), so loading the
model, checking the answer words and the forward pass itself live here, once.
"""

from __future__ import annotations

from typing import Any

from abnirml.errors import ConfigError
from abnirml.rankers.families.causal_lm import single_token
from abnirml.rankers.support.device_batching import DeviceSettings, cast_model
from abnirml.rankers.support.hf import ModelRef, load_pretrained, model_identity
from abnirml.rankers.support.torch_support import import_or_explain, import_torch


class T5AnswerScorer:
    """A sequence-to-sequence checkpoint on the settings' device, asked for one token.

    :meth:`answer_logits` maps a padded batch (``input_ids``, ``attention_mask`` on the
    device) to float32 logits ``[n, 2]``: column 0 the "true" word, column 1 the "false" word.
    """

    def __init__(self, ref: ModelRef, name: str, settings: DeviceSettings,
                 true_token: str = "true", false_token: str = "false"):
        self.torch = import_torch(name)
        transformers = import_or_explain("transformers", name, "neural")
        self.tokenizer = load_pretrained(transformers.AutoTokenizer.from_pretrained, ref, name)
        model = load_pretrained(transformers.AutoModelForSeq2SeqLM.from_pretrained, ref, name)
        start = model.config.decoder_start_token_id
        if start is None:
            raise ConfigError(f"ranker {name}: the model defines no decoder start token")
        self.decoder_start = int(start)
        self.token_ids = (single_token(self.tokenizer, true_token, name, "true"),
                          single_token(self.tokenizer, false_token, name, "false"))
        if self.token_ids[0] == self.token_ids[1]:
            raise ConfigError(f"ranker {name}: {true_token!r} and {false_token!r} are the "
                              "same token")
        self.model = cast_model(model, settings, name)
        self.pad_values = {"input_ids": int(self.tokenizer.pad_token_id or 0)}
        self.identity = model_identity(ref, model.config)

    def answer_logits(self, tensors: dict[str, Any]) -> Any:
        """The first decoded position's logits of the two answer words, ``[n, 2]`` float32
        (the encoder reads the whole padded batch; the decoder sees only its start token)."""
        torch = self.torch
        ids = tensors["input_ids"]
        decoder = torch.full((ids.shape[0], 1), self.decoder_start, dtype=torch.long,
                             device=ids.device)
        logits = self.model(input_ids=ids, attention_mask=tensors["attention_mask"],
                            decoder_input_ids=decoder).logits[:, 0, :].float()
        return logits[:, list(self.token_ids)]
