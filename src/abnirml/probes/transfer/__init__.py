"""Dataset-transfer probes (``dtp:``): text pairs from other datasets as pair tests."""
