"""Running a battery: the workspace every command shares, the engine, scoring through the
cache, worker processes and Ray, the per-sample score files."""
