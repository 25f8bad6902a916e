"""``fairseq-generate --lm-path``: refuse a language model whose dictionary is not the translation's target
dictionary, since fairseq adds the two models' log-probabilities index by index."""

import glob
import os
from argparse import Namespace

import fairseq_cli.generate
from fairseq.data import Dictionary
from fairseq.dataclass.configs import GenerationConfig
from fairseq.sequence_generator import SequenceGenerator

from ..data.dictionary_fingerprint import dictionary_fingerprint
from ..errors import OptionError
from ..options.reading import read_options

TARGET_SIDE_ADVICE = (
    "Train the language model on target-side text binarised with the target dictionary (fairseq-preprocess "
    "--only-source --srcdict <data>/dict.<target-lang>.txt), as examples/translation/prepare_multi30k.py does."
)


def check_lm_dictionary(lm_model, target_dictionary) -> None:
    """Refuse ``lm_model`` whose dictionary is not ``target_dictionary``, naming the first index they differ at."""
    lm_dictionary = getattr(getattr(lm_model, "decoder", None), "dictionary", None)
    if lm_dictionary is None or lm_dictionary.symbols == target_dictionary.symbols:
        return
    lm_symbols, target_symbols = lm_dictionary.symbols, target_dictionary.symbols
    first = next(
        (i for i, (a, b) in enumerate(zip(lm_symbols, target_symbols)) if a != b),
        min(len(lm_symbols), len(target_symbols)),
    )

    def symbol(symbols):
        return repr(symbols[first]) if first < len(symbols) else "nothing"

    raise OptionError(
        f"--lm-path: the language model's dictionary ({len(lm_symbols)} types) is not the "
        f"translation's target dictionary ({len(target_symbols)} types); they first differ at "
        f"index {first} ({symbol(lm_symbols)} vs {symbol(target_symbols)}). " + TARGET_SIDE_ADVICE
    )


fused_lm_path = None  # the --lm-path of the fairseq-generate run in progress


def check_lm_fingerprint(path, state, overrides) -> None:
    """For the ``--lm-path`` checkpoint of a fairseq-generate run: refuse, before the LM is built, one
    whose dictionary fingerprints differ from the data directory's ``dict.txt``, which fairseq gives it."""
    if fused_lm_path is None or not os.path.exists(path) or not os.path.exists(fused_lm_path):
        return
    if not os.path.samefile(path, fused_lm_path):
        return
    data = (overrides or {}).get("data")
    from ..models.checkpoint_fit import saved_fingerprints

    saved = saved_fingerprints(state)
    given = os.path.join(str(data), "dict.txt")
    if not data or not saved or not os.path.isfile(given):
        return
    if fingerprint_of(given) in saved:
        return
    files = sorted(glob.glob(os.path.join(str(data), "dict.*.txt")))
    own = [os.path.basename(f) for f in files if fingerprint_of(f) in saved]
    copies = [os.path.basename(f) for f in files if fingerprint_of(f) == fingerprint_of(given)]
    problem = f"--lm-path: the language model's dictionary is not {given}, which fairseq-generate gives it" + (
        f" (a copy of {copies[0]})" if copies else ""
    )
    if own:
        raise OptionError(
            f"{problem}: the model was trained with {own[0]}. If that is the translation's target dictionary, "
            f"copy it to {given}; if not, the model does not fit this translation. " + TARGET_SIDE_ADVICE
        )
    raise OptionError(
        f"{problem}, nor any of {data}'s dictionaries ({', '.join(os.path.basename(f) for f in files)}), so it is "
        "not the translation's target dictionary. " + TARGET_SIDE_ADVICE
    )


def fingerprint_of(path) -> int:
    return dictionary_fingerprint(Dictionary.load(path))


_unchecked_init = SequenceGenerator.__init__


def _checked_init(self, models, tgt_dict, *args, lm_model=None, **kwargs):
    """``SequenceGenerator.__init__``, after checking the fused LM's dictionary (every LM, ours and fairseq's)."""
    if lm_model is not None:
        check_lm_dictionary(lm_model, tgt_dict)
    _unchecked_init(self, models, tgt_dict, *args, lm_model=lm_model, **kwargs)


if getattr(SequenceGenerator.__init__, "__name__", "") != "_checked_init":  # the plugin may load twice
    SequenceGenerator.__init__ = _checked_init


_generate_main = fairseq_cli.generate.main


def _generate_noting_the_lm(cfg):
    global fused_lm_path
    generation = read_options(GenerationConfig, cfg, "lm_path") if isinstance(cfg, Namespace) else cfg.generation
    fused_lm_path = generation.lm_path
    try:
        return _generate_main(cfg)
    finally:
        fused_lm_path = None


if getattr(fairseq_cli.generate.main, "__name__", "") != "_generate_noting_the_lm":  # the plugin may load twice
    fairseq_cli.generate.main = _generate_noting_the_lm
