"""Named architectures set defaults only for the options the user did not give."""

from fairseq.utils import safe_getattr


def set_arch_defaults(args, **defaults):
    """For named architectures: set each option the user did not give on the command line."""
    for name, value in defaults.items():
        setattr(args, name, safe_getattr(args, name, value))
