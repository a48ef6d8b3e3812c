"""Policy sweeps: settings of a configured system (depths, blend weights, routing thresholds, cascade sizes) tried in
one pass over stored scores, each a curve of points on the quality-cost frontier (``sweep``, ``points``)."""
