"""One clear message when a checkpoint's parameters do not fit the model being built."""


class CheckpointFitMixin:
    """Put before ``FairseqLanguageModel`` in the bases of a model class."""

    def load_state_dict(self, state_dict, strict=True, model_cfg=None, args=None):
        if strict:
            expected, saved = set(self.state_dict()), set(state_dict)
            missing, unexpected = sorted(expected - saved), sorted(saved - expected)
            if missing or unexpected:
                raise ValueError(
                    f"this checkpoint does not fit {self.__class__.__name__}: {len(missing)} "
                    f"parameters missing (e.g. {missing[:2]}), {len(unexpected)} unexpected "
                    f"(e.g. {unexpected[:2]}). It was saved by another --arch; load it with that "
                    "architecture, or train this one without --restore-file.")
        return super().load_state_dict(state_dict, strict=strict, model_cfg=model_cfg, args=args)
