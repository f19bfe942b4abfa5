"""What the tool writes to disk and may replace: output folders, their manifests and file names,
and the best-effort files of derived values kept between runs (docs/reliability.md)."""
