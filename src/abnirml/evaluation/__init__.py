"""Effects, δ calibration, statistics and the experiment engine."""
