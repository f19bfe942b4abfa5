"""Probes: sets of ⟨q, d1, d2⟩ samples that differ in one controlled characteristic."""
