"""What a checkpoint must agree with to be loaded: its parameters and its options.

Every model of the plugin puts ``CheckpointFitMixin`` before fairseq's model class and
builds through ``cls.complete_config`` and ``cls.record_options``:

* ``complete_config``: a config saved before an option existed gets the option's dataclass
  default (fairseq merges only a model's own name with its dataclass, not a named
  ``--arch``), or, for an option whose default has changed since, the value such old
  checkpoints were trained with (its field's ``default_before_the_option``).
* ``record_options``: the options that define the function are saved with the parameters
  (a byte buffer). Loading compares them with the model being built, so a
  ``--restore-file``, ``--model-overrides`` or ``fairseq-eval-lm`` run with, say, another
  ``--concat-activation`` is refused by name instead of scoring junk; such options change no
  parameter shape, so nothing else would notice.
"""
import argparse
import dataclasses
import json

import torch
from fairseq.dataclass.utils import merge_with_parent
from omegaconf import OmegaConf, open_dict

# an option whose default changed declares, in its field's metadata under this key, the value
# checkpoints saved before the option existed were trained with (e.g. --combination-bias)
DEFAULT_BEFORE_THE_OPTION = "default_before_the_option"

OPTIONS_BUFFER = "architecture_options"


def _may_differ(name: str) -> bool:
    """Options that change training only, not the function of trained parameters."""
    return "dropout" in name or name in ("init_range", "_name")


class CheckpointFitMixin:
    """Put before ``FairseqLanguageModel`` (or the encoder-decoder model) in the bases."""

    @classmethod
    def complete_config(cls, cfg):
        dataclass = getattr(cls, "__dataclass")
        names = dataclass.__dataclass_fields__
        if dataclasses.is_dataclass(cfg):  # built in Python: complete by construction
            return cfg
        before = {name: f.metadata[DEFAULT_BEFORE_THE_OPTION] for name, f in names.items()
                  if DEFAULT_BEFORE_THE_OPTION in f.metadata}
        if isinstance(cfg, argparse.Namespace):
            for name in names:
                if not hasattr(cfg, name):
                    setattr(cfg, name, before.get(name, getattr(dataclass, name, None)))
            return cfg
        with open_dict(cfg):
            for name, value in before.items():
                if name not in cfg:
                    cfg[name] = value
        return merge_with_parent(dataclass(), cfg, remove_missing=True)

    @classmethod
    def record_options(cls, model, cfg):
        """Save the function-defining options of ``cfg`` with the model's parameters."""
        names = getattr(cls, "__dataclass").__dataclass_fields__
        options = {name: getattr(cfg, name) for name in sorted(names) if not _may_differ(name)}
        if OmegaConf.is_config(cfg):
            options = {name: OmegaConf.to_container(value) if OmegaConf.is_config(value) else value
                       for name, value in options.items()}
        encoded = json.dumps(options, sort_keys=True, default=str).encode("utf-8")
        model.register_buffer(OPTIONS_BUFFER, torch.tensor(list(encoded), dtype=torch.uint8))
        return model

    def saved_options(self, state_dict):
        saved = state_dict.get(OPTIONS_BUFFER)
        return None if saved is None else json.loads(bytes(saved.tolist()).decode("utf-8"))

    def load_state_dict(self, state_dict, strict=True, model_cfg=None, args=None):
        mine = getattr(self, OPTIONS_BUFFER, None)
        if mine is not None:
            saved = self.saved_options(state_dict)
            if saved is not None:
                wanted = self.saved_options({OPTIONS_BUFFER: mine})
                differ = [name for name in sorted(saved) if name in wanted and saved[name] != wanted[name]]
                if differ:
                    name = differ[0]
                    flag = "--" + name.replace("_", "-")
                    raise ValueError(
                        f"this checkpoint was trained with {flag} {saved[name]}, but the model being "
                        f"built has {flag} {wanted[name]}"
                        + (f" (and {len(differ) - 1} more: {', '.join(differ[1:])})" if len(differ) > 1 else "")
                        + ". The option changes what the parameters compute, so the loaded model "
                        f"would score junk: drop {flag} (or the --model-overrides entry), or train "
                        "a new model with it.")
            state_dict = dict(state_dict)
            state_dict[OPTIONS_BUFFER] = mine  # its length may differ from an older save's
        if strict:
            expected, saved_names = set(self.state_dict()), set(state_dict)
            missing, unexpected = sorted(expected - saved_names), sorted(saved_names - expected)
            if missing or unexpected:
                raise ValueError(
                    f"this checkpoint does not fit {self.__class__.__name__}: {len(missing)} "
                    f"parameters missing (e.g. {missing[:2]}), {len(unexpected)} unexpected "
                    f"(e.g. {unexpected[:2]}). It was saved by another --arch or with other "
                    "options; load it with those, or train this one without --restore-file.")
        return super().load_state_dict(state_dict, strict=strict, model_cfg=model_cfg, args=args)
