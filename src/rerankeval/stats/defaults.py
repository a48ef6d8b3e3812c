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
