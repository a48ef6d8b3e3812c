"""The rerank driver: score every query through a system, assemble each query's permutation, account latency."""
