"""The statistics' defaults: the settings' (``config``) and the functions' own (``resampling``, ``significance``, ...).
A module of its own, so that code which only resamples (the freeze stage's RRF weight fit, a blend's weight) does not
hold the release rule's settings in its DVC code deps.
"""

DEFAULT_N_SAMPLES = 10_000
DEFAULT_SEED = 17
DEFAULT_CONFIDENCE = 0.95
DEFAULT_MIN_SLICE_SIZE = 20
DEFAULT_TIE_TOL = 1e-9
DEFAULT_WORST_N = 10

# The release rule's, where a rule states none (``rerankeval compare`` without ``--rule``); conf/compare/default.yaml
# states the pipeline's (tests/test_cli_compare.py keeps them equal).
DEFAULT_PRIMARY_METRIC = "nDCG@10"
DEFAULT_MIN_DELTA = 0.03
DEFAULT_UNJUDGED_MARGIN = 0.10
DEFAULT_UNJUDGED_MEASURE = "Judged@10"
DEFAULT_SLICE_BUDGET = 0.05
DEFAULT_MIN_RUN_COVERAGE = 0.5
DEFAULT_TRIALS = 400
