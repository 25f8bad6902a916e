from . import attentive_lm  # noqa: F401
