"""The first stage: BM25 and dense retrieval fused with RRF, frozen as each query's candidates with exact text."""
