"""The three forms a sentence takes in the translation pipeline: ``raw`` text, ``tok`` (sacremoses
tokens) and ``bpe`` (subword-nmt units over the tokens), and the moves between them. The example's
data preparation and ``alm-rescore`` share them, so a language model reads its training text's form."""

from typing import Optional

FORMS = ("raw", "tok", "bpe")
BPE_SEPARATOR = "@@"


def moses_languages():
    """The language codes sacremoses has rules for (its non-breaking prefix lists)."""
    from sacremoses.corpus import NonbreakingPrefixes

    return sorted(set(NonbreakingPrefixes().available_langs.values()))


def check_language(lang: str) -> str:
    """The language code ``lang``, refused unless sacremoses has rules for it (it would fall back to
    generic rules silently)."""
    known = moses_languages()
    if lang not in known:
        raise ValueError(
            f"sacremoses has no tokenisation rules for language '{lang}' (it knows "
            f"{', '.join(known)}); give one of those, or tokenise the text yourself "
            "and leave out the tokenise option"
        )
    return lang


def remove_bpe(text: str) -> str:
    """fairseq's ``--post-process subword_nmt``."""
    return (text + " ").replace(BPE_SEPARATOR + " ", "").rstrip()


class TextForms:
    """Moves a sentence between the forms (``convert``), with sacremoses and subword-nmt's codes."""

    def __init__(self, lang: str, bpe_codes: Optional[str] = None):
        from sacremoses import MosesDetokenizer, MosesTokenizer

        self.lang = check_language(lang)
        self.tokenizer = MosesTokenizer(lang=lang)
        self.detokenizer = MosesDetokenizer(lang=lang)
        self.bpe = None
        if bpe_codes is not None:
            from subword_nmt.apply_bpe import BPE

            with open(bpe_codes, encoding="utf-8") as codes:
                self.bpe = BPE(codes, separator=BPE_SEPARATOR)

    def tokenize(self, text: str) -> str:
        return self.tokenizer.tokenize(text, return_str=True, escape=False)

    def detokenize(self, text: str) -> str:
        return self.detokenizer.detokenize(text.split())

    def apply_bpe(self, text: str) -> str:
        if self.bpe is None:
            raise ValueError(
                "BPE codes are needed to turn tokens into BPE units: pass the codes "
                "file the data was prepared with (--bpe-codes)"
            )
        return self.bpe.process_line(text)

    def convert(self, text: str, source: str, target: str) -> str:
        """Move ``text`` from form ``source`` to form ``target`` (identity when they agree;
        otherwise down to the common form, then up)."""
        for form in (source, target):
            if form not in FORMS:
                raise ValueError(f"unknown text form '{form}': choose one of {', '.join(FORMS)}")
        if source == target:
            return text
        if source == "bpe":
            text, source = remove_bpe(text), "tok"
        if source == "tok" and target == "raw":
            return self.detokenize(text)
        if source == "raw":
            text, source = self.tokenize(text), "tok"
        return text if target == "tok" else self.apply_bpe(text)
