"""Paired statistics over per-query deltas: bootstrap intervals (also per slice), significance with family-wise
correction, descriptions of the deltas, and the comparison and release verdict built on them.

Pure numpy/scipy in ``resampling``, ``significance`` and ``deltas``: no I/O, no pandas. ``config`` holds the
``compare`` settings and the defaults alone, so reading params.yaml loads none of the statistics: import each
function from its module (``rerankeval.stats.resampling.bootstrap_ci``), not from this package.
"""
