"""Stages 3 and 4 of the funnel: select a context from a system's ranking, generate an answer from it.

- ``config``: the ``rag`` block of params.yaml (select budget and caps, generator, claim judge, measures).
- ``passages``: the one reader of passage text (frozen candidates, and the corpus for neighbour expansion).
- ``select``: budgeted context selection with a per-parent cap, MMR diversity and neighbour expansion, and the
  context table of every query (``context_table``); ``similarity``: the dense similarity MMR may use.
- ``generators``: the registry of generator kinds (``extractive``, ``openai_compatible``); one file per kind.
- ``chat``: the OpenAI-compatible client behind the LLM generator and the LLM claim judge (retries within a deadline,
  a content-addressed response cache, the API key kept out of every written byte).
- ``claims``: claim splitting and the declared lexical support rule.
- ``answers``: the generate stage's answer and timing tables, and the answer and context measures per (system,
  query) computed from them.

The measures of both stages live in the measure registry (``rerankeval.eval.measures.answers``).
"""
