"""Learned systems: cross-encoders, FlagEmbedding rerankers and bi-encoders (see ``kinds``)."""
