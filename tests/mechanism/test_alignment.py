"""Position alignment: appended and substituted tokens line up, anything else is refused."""

from __future__ import annotations

import numpy as np
import pytest

from abnirml.mechanism.alignment import (
    CHANGED,
    DOC_OTHER,
    DOC_QUERY_TERM,
    QUERY,
    ROLE_DOC,
    ROLE_QUERY,
    ROLE_SPECIAL,
    SPECIAL,
    Encoded,
    NotAlignable,
    align,
    roles_from_spans,
)
from abnirml.mechanism.targets import fill_template

FILLER = 99


def doc(*ids: int) -> Encoded:
    """[CLS]=1 … [SEP]=2 around document ids."""
    return Encoded([1, *ids, 2], [ROLE_SPECIAL, *[ROLE_DOC] * len(ids), ROLE_SPECIAL])


def test_append_puts_fillers_into_the_baseline_at_the_end():
    pair = align(doc(10, 11, 12, 13), doc(10, 11, 12, 13, 20, 21), FILLER, frozenset({11}))
    assert pair.base_ids == [1, 10, 11, 12, 13, FILLER, FILLER, 2]
    assert pair.perturbed_ids == [1, 10, 11, 12, 13, 20, 21, 2]
    assert pair.inserted == 2
    assert pair.classes.tolist() == [SPECIAL, DOC_OTHER, DOC_QUERY_TERM, DOC_OTHER, DOC_OTHER,
                                     CHANGED, CHANGED, SPECIAL]


def test_prepend_and_middle_insertions_align_after_them():
    pair = align(doc(10, 11, 12, 13), doc(20, 10, 11, 21, 12, 13), FILLER)
    assert pair.base_ids == [1, FILLER, 10, 11, FILLER, 12, 13, 2]
    assert np.flatnonzero(pair.classes == CHANGED).tolist() == [1, 4]


def test_substitution_keeps_the_length_and_marks_only_changed_tokens():
    pair = align(doc(10, 11, 12, 13, 14), doc(10, 30, 12, 13, 14), FILLER)
    assert pair.inserted == 0 and pair.base_ids == [1, 10, 11, 12, 13, 14, 2]
    assert np.flatnonzero(pair.classes == CHANGED).tolist() == [2]


def test_a_longer_replacement_is_padded_with_fillers():
    # a typo split into more word pieces: 11 → 30 31
    pair = align(doc(10, 11, 12, 13, 14), doc(10, 30, 31, 12, 13, 14), FILLER)
    assert pair.base_ids == [1, 10, 11, FILLER, 12, 13, 14, 2]
    assert np.flatnonzero(pair.classes == CHANGED).tolist() == [2, 3]


@pytest.mark.parametrize(("base", "perturbed", "why"), [
    (doc(10, 11, 12, 13), doc(10, 12, 13), "removes tokens"),            # deletion
    (doc(10, 11, 12, 13), doc(10, 30, 13), "removes tokens"),            # shorter replacement
    (doc(10, 11, 12, 13), doc(10, 11, 12, 13), "sees no difference"),
    (doc(10, 11, 12, 13, 14, 15), doc(15, 14, 13, 12, 11, 10), "moves"),  # reversal
    (doc(10, 11, 12, 13, 14, 15), doc(11, 10, 12, 13, 14, 15, 16), "moves"),  # swap + add
    (doc(10, 11, 12, 13, 14, 15), doc(30, 31, 32, 33, 14, 15), "rewrite or reordering"),
])
def test_pairs_that_cannot_be_aligned_are_refused_with_a_reason(base, perturbed, why):
    with pytest.raises(NotAlignable, match=why):
        align(base, perturbed, FILLER)


def test_differences_outside_the_document_are_refused():
    base = Encoded([1, 5, 2, 10, 11, 2], [0, ROLE_QUERY, 0, ROLE_DOC, ROLE_DOC, 0])
    other = Encoded([1, 6, 2, 10, 11, 2], [0, ROLE_QUERY, 0, ROLE_DOC, ROLE_DOC, 0])
    with pytest.raises(NotAlignable, match="outside the document"):
        align(base, other, FILLER)


def test_joint_inputs_keep_query_positions_as_the_query_class():
    base = Encoded([1, 5, 2, 10, 11, 12, 2], [0, ROLE_QUERY, 0, ROLE_DOC, ROLE_DOC, ROLE_DOC, 0])
    pert = Encoded([1, 5, 2, 10, 11, 12, 5, 2],
                   [0, ROLE_QUERY, 0, ROLE_DOC, ROLE_DOC, ROLE_DOC, ROLE_DOC, 0])
    pair = align(base, pert, FILLER, frozenset({5}))
    assert pair.classes.tolist() == [SPECIAL, QUERY, SPECIAL, DOC_OTHER, DOC_OTHER, DOC_OTHER,
                                     CHANGED, SPECIAL]


def test_template_spans_and_roles_from_offsets():
    text, spans = fill_template("Q: {query} D: {document} R:", "cat", "dog run")
    assert text == "Q: cat D: dog run R:"
    assert [text[a:b] for a, b, _ in spans] == ["cat", "dog run"]
    offsets = [(0, 2), (3, 6), (7, 9), (10, 13), (14, 17), (18, 20), (0, 0)]
    assert roles_from_spans(offsets, spans) == [ROLE_SPECIAL, ROLE_QUERY, ROLE_SPECIAL,
                                                ROLE_DOC, ROLE_DOC, ROLE_SPECIAL, ROLE_SPECIAL]


def test_a_mask_token_written_in_the_text_is_a_document_token(tmp_path):
    pytest.importorskip("transformers")
    from transformers import BertTokenizer

    from abnirml.mechanism.targets import _special_roles
    from tests._tiny_models import _save_bert_tokenizer

    _save_bert_tokenizer(tmp_path)
    tokenizer = BertTokenizer.from_pretrained(str(tmp_path))
    ids = tokenizer("the [MASK] is warm")["input_ids"]
    assert _special_roles(tokenizer, ids) == [ROLE_SPECIAL, ROLE_DOC, ROLE_DOC, ROLE_DOC,
                                              ROLE_DOC, ROLE_SPECIAL]
