"""Systems composed of other configured systems: ``blend`` (weighted normalised scores), ``routed`` (skip or send
each query by declared rules) and ``cascade`` (a second system rescores the first's shortlist). One file per kind;
``components`` holds what they share (components built once and memoised, costs that add up, the DVC rule).
each kind is imported when its name is looked up (the ``rerankeval.systems`` entry points)."""
