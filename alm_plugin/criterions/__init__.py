from . import attention_cross_entropy  # noqa: F401
