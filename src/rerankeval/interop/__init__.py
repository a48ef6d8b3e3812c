"""Bridges to the tools IR teams already run: PyTerrier (``pyterrier``: a transformer that reranks with any configured
system, and frames of the frozen candidates and of runs) and ranx (``ranx``: its ``Qrels`` and ``Run`` both ways).
Each imports its library only when used (the ``pyterrier`` and ``ranx`` extras)."""
