"""``fairseq-generate --lm-path``: refuse a language model whose dictionary is not the
translation's target dictionary.

fairseq adds the LM's log-probabilities to the translation model's index by index
(``SequenceGenerator``: ``lprobs += lm_weight * lm_lprobs``) without comparing the two
vocabularies: a dictionary of another size fails with a shape error deep in beam search, one
of the same size with other words translates silently wrong. The check wraps the
generator's constructor, so it covers every LM (ours and fairseq's) once the plugin is loaded.
"""

from fairseq.sequence_generator import SequenceGenerator

from .errors import OptionError


def check_lm_dictionary(lm_model, target_dictionary) -> None:
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
        f"index {first} ({symbol(lm_symbols)} vs {symbol(target_symbols)}). Train the language "
        "model on target-side text binarised with the target dictionary (fairseq-preprocess "
        "--only-source --srcdict <data>/dict.<target-lang>.txt), as "
        "examples/translation/prepare_multi30k.py does."
    )


_unchecked_init = SequenceGenerator.__init__


def _checked_init(self, models, tgt_dict, *args, lm_model=None, **kwargs):
    if lm_model is not None:
        check_lm_dictionary(lm_model, tgt_dict)
    _unchecked_init(self, models, tgt_dict, *args, lm_model=lm_model, **kwargs)


if getattr(SequenceGenerator.__init__, "__name__", "") != "_checked_init":  # the plugin may load twice
    SequenceGenerator.__init__ = _checked_init
