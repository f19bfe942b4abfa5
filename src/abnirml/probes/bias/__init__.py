"""Ranking-bias probes: controlled pairs for the shortcuts recent rankers were shown to take
(early evidence, literal match, repetition, brevity, keyword stuffing, injected
instructions and ColDeR's biased foil)."""
