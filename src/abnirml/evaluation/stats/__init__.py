"""Statistics: effects and probe scores, the tests as records, multiple-comparison corrections,
score intervals, δ calibration and sensitivity, ties, seed variance."""
