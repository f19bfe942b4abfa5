"""Collections, text-pair sources and TREC file I/O."""
