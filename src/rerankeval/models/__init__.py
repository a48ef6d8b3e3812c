"""Where model weights come from: one resolver for every model reference (bundled MiniLM, a local directory, a hub
id at a pinned revision), the checks a checkpoint must pass, and the environment it runs in.

Used by the dense retriever, the learned systems and the train stage; torch and transformers are imported only
inside the functions that need them.
"""
