"""What each field of ``results.jsonl`` means: the file's public schema, in one place.

``results.jsonl`` is read by programs (``abnirml.load_results``, ``compare``, a user's own
scripts), so its field names are a public interface. This table is the documentation the
reference page is generated from, and a test runs every built-in family and checks that the
records hold exactly these fields, so neither the page nor the code can drift alone.
"""

from __future__ import annotations

#: Records of every family.
EVERY_RECORD = "every record"

#: field → (which records carry it, what it means)
FIELDS: dict[str, tuple[str, str]] = {
    "probe": (EVERY_RECORD, "the probe's name, e.g. `mmp:tf:length`"),
    "family": (EVERY_RECORD, "the probe's family key (`mmp`, `tmp`, `dtp`, `axiom`, `qvp` "
                             "or a plugin's)"),
    "ranker": (EVERY_RECORD, "the ranker's name: its spec, or the display name given with "
                             "`@name`"),
    "subset": (EVERY_RECORD, "`all`, or a grade band (`non-relevant`, `relevant` by "
                             "default; `--grade-bands` changes them); for a listwise ranker "
                             "whose probe lists are longer than its window also "
                             "`window-inside` and `window-straddle` (the sample's two "
                             "positions share a window of the sliding pass, or not)"),
    "score": (EVERY_RECORD, "mean effect in [−1, 1]: +1 per sample where R(q,d1) − R(q,d2) "
                            "> δ, −1 where < −δ, else 0 (symmetric probes: the share with "
                            "|diff| > δ, in [0, 1]); null without samples"),
    "n": (EVERY_RECORD, "samples scored"),
    "pos": (EVERY_RECORD, "samples with R(q,d1) − R(q,d2) > δ"),
    "neg": (EVERY_RECORD, "samples with R(q,d1) − R(q,d2) < −δ"),
    "neutral": (EVERY_RECORD, "samples within ±δ"),
    "mean_diff": (EVERY_RECORD, "mean of R(q,d1) − R(q,d2)"),
    "p_value": (EVERY_RECORD, "the test's uncorrected p-value (`--test`); null below 2 "
                              "samples"),
    "test_rounds": ("`--test clustered` (the default), `permutation` or `bootstrap`",
                    "rounds the resampling test drew "
                    "for this record's table: enough for its correction to reject at α, "
                    "or the count `--permutations`/`--bootstrap` named"),
    "significant": (EVERY_RECORD, "adjusted p < α after the correction over the table "
                                  "(`--correction`, Bonferroni by default; `--alpha`)"),
    "delta": (EVERY_RECORD, "the ranker's δ: calibrated from its candidate score gaps, or "
                            "fixed with `--delta`"),
    "symmetric": (EVERY_RECORD, "whether d1/d2 order is arbitrary (the score is then "
                                "unsigned)"),
    "skipped": (EVERY_RECORD, "reason → count of samples the probe skipped (on `all` rows; "
                              "query-variation probes count queries)"),
    "tests_in_table": (EVERY_RECORD, "how many tests the correction counted in this "
                                     "record's table"),
    "p_adjusted": (EVERY_RECORD, "the p-value after the correction"),
    "effect_size": (EVERY_RECORD, "Cohen's d_z: mean difference / SD of the differences; "
                                  "null for symmetric probes"),
    "ci_low": (EVERY_RECORD, "lower end of the query-clustered bootstrap interval of the "
                             "score (`--bootstrap`, `--ci`); with `--test clustered` the "
                             "test's own interval at the level the correction tested the "
                             "row at, so it excludes 0 exactly when the row is significant"),
    "ci_high": (EVERY_RECORD, "upper end of that interval"),
    "mean_diff_ci_low": (EVERY_RECORD, "lower end of the bootstrap interval of the mean "
                                       "difference"),
    "mean_diff_ci_high": (EVERY_RECORD, "upper end of that interval"),
    "nonrel_donor": ("`tmp:add-nonrel-sentence` probes", "where the added sentence came "
                                                         "from (`tmp.nonrel_donor`)"),
    "donor_query_term_rate": ("`tmp:add-nonrel-sentence` probes",
                              "share of samples whose added sentence holds a query term"),
    "satisfied": ("`axiom:` probes", "instances the ranker orders the axiom's way (strict, "
                                     "without δ)"),
    "violated": ("`axiom:` probes", "instances ordered the other way (strict)"),
    "ties": ("`axiom:` probes", "instances scored exactly equal"),
    "satisfied_delta": ("`axiom:` probes", "instances satisfied by more than δ"),
    "violated_delta": ("`axiom:` probes", "instances violated by more than δ"),
    "ties_delta": ("`axiom:` probes", "instances within ±δ"),
    "instances": ("`axiom:` probes", "instances mined (after `axiom.cap`)"),
    "instances_uncapped": ("`axiom:` probes", "instances before `axiom.cap`"),
    "instances_relevant": ("`axiom:` probes", "instances with a relevant document"),
    "relevance_agree": ("`axiom:` probes", "judged instances whose grades order the "
                                           "documents the axiom's way"),
    "relevance_disagree": ("`axiom:` probes", "judged instances whose grades order them the "
                                              "other way"),
    "relevance_ties": ("`axiom:` probes", "judged instances with equal grades"),
    "relevance_agreement": ("`axiom:` probes", "agree / judged instances (ties count as not "
                                               "agreeing)"),
    "relevance_agreement_decided": ("`axiom:` probes", "agree / (agree + disagree): equal "
                                                       "grades left out"),
    "axiom_queries": ("`axiom:` probes", "queries whose pools were mined"),
    "axiom_queries_with_instances": ("`axiom:` probes", "queries with at least one "
                                                        "instance"),
    "axiom_pool": ("`axiom:` probes", "`candidates` or `judged` (`axiom.pool`)"),
    "length_tolerance": ("`axiom:` probes", "δ_len, analysed tokens (`axiom.length_tolerance`)"),
    "axiom_label": ("a plugin's `axiom:` probes", "the name the axiom tables show"),
    "overlap_split": ("`axiom:` probes, `all` rows", "per query–term-overlap group: "
                      "`bucket`, `overlap_min`, `overlap_max`, `queries`, `n`, `satisfied`, "
                      "`violated`, `ties` and, with effectiveness, `ndcg10`, "
                      "`ndcg10_queries`, `ndcg10_retrieved`, `retrieved_queries`"),
    "qvp_depth": ("`qvp:` probes", "candidates per query in each pool (`qvp.depth`)"),
    "ndcg10_original": ("`qvp:` probes", "mean nDCG@10 of the pool ranked under the original "
                                         "queries"),
    "ndcg10_variation": ("`qvp:` probes", "the same under the varied queries"),
    "ndcg10_change": ("`qvp:` probes", "`ndcg10_variation` − `ndcg10_original`"),
    "ndcg10_queries": ("`qvp:` probes", "queries with a relevant judgment"),
    "ndcg10_ideal": ("`qvp:` probes", "how the ideal ranking of nDCG@10 is built (trec_eval's: "
                                      "every judgment of the query)"),
    "synonym_source": ("`qvp:synonym`", "where the synonyms come from (`wordnet` or "
                                        "`counter-fitted`)"),
    "synonym_rule": ("`qvp:synonym`", "how WordNet synonyms were chosen: `context` (GloVe and "
                                      "MiniLM closeness) or `usual-sense` (tag counts, without "
                                      "those models); `counter-fitted` for that source"),
    "synonym_content_words": ("`qvp:synonym`", "content words of the queries that were "
                                               "looked up"),
    "synonym_words_without": ("`qvp:synonym`", "content words with no synonym in the source"),
    "position_bias": ("pairwise and listwise rankers (not on `qvp:` probes for listwise "
                      "ones)", "share of samples whose verdict follows the input position: "
                               "the same verdict for the first (pairwise) or the "
                               "earlier-placed (listwise) document in both orders"),
}
