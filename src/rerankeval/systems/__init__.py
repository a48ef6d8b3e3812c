"""Systems: what scores a query's candidates.

``base`` is the seam (Query, QueryCandidates, Scores, System, the modes of a run's rows), ``registry`` configures,
registers and builds kinds (SystemConfig, BuildContext, register_system, build_system), ``roles`` holds what a
kind's systems are in a comparison (KindTraits, recorded in each run), ``pairs`` and ``pair_scoring`` are the pair
scorers' machinery and ``splits`` reads a split's candidates. This package imports none of them, so code that needs
the seam alone runs no kind.
"""
