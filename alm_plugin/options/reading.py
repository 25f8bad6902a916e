"""Options read from a config that may lack them, each default written once: where its dataclass
declares it."""

import dataclasses
from types import SimpleNamespace


def declared_default(config_class, name: str):
    """The default ``config_class`` (a dataclass) declares for its field ``name``."""
    for option in dataclasses.fields(config_class):
        if option.name == name:
            if option.default is not dataclasses.MISSING:
                return option.default
            if option.default_factory is not dataclasses.MISSING:
                return option.default_factory()
            raise TypeError(f"{config_class.__name__}.{name} declares no default")
    raise AttributeError(f"{config_class.__name__} declares no option {name!r}")


def read_options(config_class, options, *names: str) -> SimpleNamespace:
    """The fields ``names`` of the dataclass ``config_class`` as ``options`` gives them; a field
    ``options`` lacks (``options`` may be ``None``) takes the default ``config_class`` declares."""
    missing = object()
    read = {}
    for name in names:
        value = getattr(options, name, missing)  # the one read of a field that ``options`` may lack
        read[name] = declared_default(config_class, name) if value is missing else value
    return SimpleNamespace(**read)
