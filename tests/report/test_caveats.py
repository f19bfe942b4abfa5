"""The report's skip line says what its counts count: samples, or queries for qvp."""

from __future__ import annotations

from abnirml.probes.built_in import MEASURE_MATCH, QUERY_VARIATION
from abnirml.report.caveats import family_caveats


def _record(family: str, probe: str, skipped: dict[str, int]) -> dict:
    return {"family": family, "probe": probe, "ranker": "bm25", "subset": "all", "n": 10,
            "skipped": skipped}


def test_query_variation_skips_are_reported_as_queries():
    """qvp skips a whole query when its variation does not apply (6 queries on DL19 stood
    for 889 samples), so "Skipped samples: not-applicable 6" understated what was left out."""
    records = [_record("qvp", "qvp:remove-stops", {"not-applicable": 6})]
    run_info = {"families": [QUERY_VARIATION.describe()]}
    (caveat,) = family_caveats(records, run_info, "qvp")
    assert caveat.text.startswith("Skipped queries: ")
    assert "not-applicable 6" in caveat.text


def test_other_families_still_count_samples_and_keep_their_run_json_labels():
    records = [_record("mmp", "mmp:tf:length", {"not-applicable": 3})]
    run_info = {"families": [MEASURE_MATCH.describe()]}
    (caveat,) = family_caveats(records, run_info, "mmp")
    assert caveat.text.startswith("Skipped samples: ")
    assert "skips_counted" not in MEASURE_MATCH.describe()


def test_a_run_folder_without_family_labels_falls_back_to_the_registered_family():
    records = [_record("qvp", "qvp:synonym", {"not-applicable": 2})]
    (caveat,) = family_caveats(records, {}, "qvp")
    assert caveat.text.startswith("Skipped queries: ")
