from . import amsrn, attentive_lm  # noqa: F401
