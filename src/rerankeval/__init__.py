"""rerankeval: evaluate rerankers on frozen candidates, per query, with honest uncertainty."""

__version__ = "0.1.0"
