"""Position alignment of a baseline and a perturbed input, as activation patching needs it.

Patching copies the perturbed run's activation at position *i* into the baseline run at
the same position *i*, so both inputs must have the same length and position *i* must mean
the same thing in both. The papers' recipe (Chen et al. 2024; Polyakov et al. 2025; MechIR)
works for perturbations that *add* or *substitute* tokens: where the perturbed input holds
tokens the baseline lacks, the baseline gets a filler token (``a`` by default) in their
place, so everything after them lines up again. The baseline that is patched is therefore
the filled one, and its score is the one the effect is measured against.

Perturbations that *remove* tokens (stopword removal, deleted sentences) or move them
around (shuffles, reversals) have no such alignment: a pair is refused with one line that
says why (:class:`NotAlignable`).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

#: Position classes of the residual-stream grid, in column order.
SPECIAL, QUERY, CHANGED, DOC_QUERY_TERM, DOC_OTHER = range(5)
CLASS_NAMES = ("special", "query", "changed", "doc-query-term", "doc-other")
#: Roles a target gives each position of its input before alignment.
ROLE_SPECIAL, ROLE_QUERY, ROLE_DOC = SPECIAL, QUERY, DOC_OTHER
#: A pair whose changed positions exceed this share of the document is a rewrite or a
#: reordering, not an insertion or substitution.
MAX_CHANGED_SHARE = 0.5
REMOVES = ("the perturbed text is shorter: it removes tokens of the original, and patching "
           "needs perturbations that add or substitute tokens")
MOVES = ("the perturbed text moves, removes or rewrites tokens of the original (not only "
         "additions and substitutions), so positions cannot be aligned")


class NotAlignable(Exception):
    """A pair that position-wise patching cannot use; the message is one line saying why."""


@dataclass(frozen=True)
class Encoded:
    """One input as a target feeds it to its model: token ids, a role per position
    (special / query / document) and extra per-position columns (``token_type_ids``)."""

    ids: list[int]
    roles: list[int]
    extras: dict[str, list[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class AlignedPair:
    """Baseline and perturbed ids of equal length and the class of every position."""

    base_ids: list[int]
    perturbed_ids: list[int]
    classes: np.ndarray            # int8 [length], values from CLASS_NAMES
    extras: dict[str, list[int]]
    inserted: int                  # filler tokens put into the baseline

    @property
    def length(self) -> int:
        return len(self.base_ids)

    def mask(self, klass: int | None) -> np.ndarray:
        """Positions of class ``klass`` (all positions for None)."""
        if klass is None:
            return np.ones(self.length, dtype=bool)
        positions: np.ndarray = self.classes == klass
        return positions


def align(base: Encoded, perturbed: Encoded, filler_id: int,
          query_terms: frozenset[int] = frozenset()) -> AlignedPair:
    """Align ``base`` to ``perturbed`` by inserting ``filler_id`` where the perturbed input
    added tokens; raise :class:`NotAlignable` when it removed or reordered tokens.

    ``query_terms`` are the query's token ids: document positions holding one of them (and
    not changed) form the ``doc-query-term`` class.
    """
    a, b = base.ids, perturbed.ids
    if a == b:
        raise NotAlignable("the model's tokenizer sees no difference between the two texts "
                           "(after truncation)")
    filled: list[int] = []
    changed: list[int] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            filled.extend(a[i1:i2])
            continue
        if tag == "delete" or (tag == "replace" and (j2 - j1) < (i2 - i1)):
            raise NotAlignable(REMOVES if len(b) < len(a) else MOVES)
        start = len(filled)
        kept = a[i1:i2] if tag == "replace" else []
        filled.extend(kept)
        filled.extend([filler_id] * ((j2 - j1) - len(kept)))
        changed.extend(range(start, start + (j2 - j1)))
    roles = np.asarray(perturbed.roles, dtype=np.int8)
    if any(roles[i] != ROLE_DOC for i in changed):
        raise NotAlignable("the two inputs differ outside the document (query or template)")
    doc_positions = int((roles == ROLE_DOC).sum())
    if len(changed) > MAX_CHANGED_SHARE * doc_positions:
        raise NotAlignable(f"{len(changed)} of {doc_positions} document tokens differ: a "
                           "rewrite or reordering, which position-wise patching cannot align")
    classes = roles.copy()
    doc = classes == ROLE_DOC
    in_query = np.fromiter((t in query_terms for t in b), dtype=bool, count=len(b))
    classes[doc & in_query] = DOC_QUERY_TERM
    classes[np.asarray(changed, dtype=np.int64)] = CHANGED
    return AlignedPair(filled, list(b), classes, dict(perturbed.extras),
                       inserted=len(b) - len(a))


def roles_from_spans(offsets: Sequence[tuple[int, int]], spans: Sequence[tuple[int, int, int]]
                     ) -> list[int]:
    """A role per token from its character ``offsets`` and the ``(start, end, role)`` spans
    of the query and the document in the text; tokens outside every span (template words)
    and tokens without characters (special tokens) are ``special``."""
    roles = []
    for start, end in offsets:
        role = ROLE_SPECIAL
        if end > start:
            for low, high, what in spans:
                if start < high and end > low:
                    role = what
                    break
        roles.append(role)
    return roles
