"""Query-variation probes (``qvp:``): the same document under a varied query."""
