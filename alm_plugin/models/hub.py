"""The hub interface (``from_pretrained``) of our language models, with defined behaviour
where fairseq's generic one returns NaN or a misleading error."""

import os

from fairseq import hub_utils

from ..data.task_reading import reads_streams
from ..errors import UnsupportedError
from ..evaluation.options import EvaluationOptions, refuse, refuse_sentences_alone


class LanguageModelHubInterface(hub_utils.GeneratorHubInterface):
    def score(self, sentences, replace_newline_with_eos: bool = False, **kwargs):
        """fairseq's ``score``, refusing an empty sentence (whose mean word score would be NaN). With
        dynamic evaluation (``from_pretrained(..., dynamic_eval_lr=...)``) each call is one text: it starts
        from the trained weights and an empty neural cache, adapts to its sentences in order, and
        restores the trained weights when it returns."""
        if reads_streams(self.task):
            refuse_sentences_alone(
                getattr(self, "checkpoint", "the model"),
                "the hub's score()",
                "score its text with alm-score (one stream) or fairseq-eval-lm --task document_language_modeling",
            )
        single = isinstance(sentences, str)
        for sentence in [sentences] if single else sentences:
            if not sentence.strip():
                raise ValueError(
                    "cannot score an empty sentence: the hub scores the words of a "
                    "sentence (not </s>), and an empty one has none; fairseq-eval-lm scores "
                    "the </s> of empty lines"
                )
        if all(getattr(m, "dynamic_eval", None) is None for m in self.models):
            return super().score(sentences, replace_newline_with_eos=replace_newline_with_eos, **kwargs)
        for model in self.models:
            model.start_text()
        try:  # one sentence (a segment) at a time, in the order given: fairseq's batches sort by length
            scores = [
                super(LanguageModelHubInterface, self).score([sentence], replace_newline_with_eos, **kwargs)[0]
                for sentence in ([sentences] if single else sentences)
            ]
        finally:
            for model in self.models:
                model.start_text()
        return scores[0] if single else scores


class ScoringOnlyHubInterface(hub_utils.GeneratorHubInterface):
    """The character-level word-stream models have no word softmax: no hub scoring or sampling."""

    def _refuse(self, *args, **kwargs):
        raise UnsupportedError(
            f"{self.models[0].__class__.__name__} scores text in streams through its task: use "
            "alm-score --path CHECKPOINT (plain text, bits per character), fairseq-eval-lm / "
            "fairseq-validate --task open_vocabulary_language_modeling, or alm-cache-posterior; "
            "the hub's score/sample/generate do not apply"
        )

    score = sample = generate = _refuse


def from_pretrained(interface, model_name_or_path, checkpoint_file="model.pt", data_name_or_path=".", **kwargs):
    if interface is LanguageModelHubInterface:
        # fairseq's hub batches each sentence alone (language_modeling's inference dataset), from a
        # fresh state: a segment of N tokens of a stream never arises, the keyword would be ignored
        given = EvaluationOptions(segment_given=kwargs.get("dynamic_eval_segment") is not None)
        refuse(given, segments_are_sentences=True)
    loaded = hub_utils.from_pretrained(model_name_or_path, checkpoint_file, data_name_or_path, **kwargs)
    if interface is LanguageModelHubInterface:  # as alm-score refuses them: dynamic evaluation of an ensemble
        refuse(EvaluationOptions.read(loaded["args"].task), models=len(loaded["models"]))
    hub = interface(loaded["args"], loaded["task"], loaded["models"])
    hub.checkpoint = os.path.join(model_name_or_path, checkpoint_file)  # what a refusal names
    return hub
