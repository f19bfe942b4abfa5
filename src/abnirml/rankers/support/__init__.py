"""The scoring machinery every ranker family shares: the score cache, token and side stores,
pair joining, device batching, torch and Hugging Face loading, the HTTP client, lean and
background imports."""
