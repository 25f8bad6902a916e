"""What a checkpoint must agree with to be loaded: its parameters and the options that define its function.

Every model of the plugin puts ``CheckpointFitMixin`` before fairseq's model class and builds through
``cls.complete_config`` (every option filled in and in range) and ``cls.record_options`` (the options that
define the function, saved beside the parameters and compared on load). Every refusal is an ``OptionError``.
"""

import argparse
import dataclasses
import difflib
import functools
import json

from fairseq.dataclass.utils import merge_with_parent
from omegaconf import DictConfig, OmegaConf, open_dict

from ..errors import OptionError
from ..options.checks import number

# the key under which an option's field metadata declares the value older checkpoints, saved without
# the option, hold, where it differs from the option's default (e.g. --combination-bias)
DEFAULT_BEFORE_THE_OPTION = "default_before_the_option"

OPTIONS_BUFFER = "architecture_options"  # its state-dict name in a checkpoint (uint8 JSON in older ones)
FINGERPRINT = "dictionary_fingerprint"  # a decoder's, under its module's prefix (int64 in older checkpoints)
CHECKPOINT_ENTRY = "alm_plugin"  # the checkpoint's own entry: {OPTIONS_BUFFER: JSON, "fingerprints": {key: int}}


def _may_differ(name: str) -> bool:
    """Options that change training only, not the function of trained parameters."""
    return "dropout" in name or name in (
        "init_range",
        "forget_gate_bias",
        "attend_dropped_states",
        "share_decoder_input_output_embed",
        "_name",
    )


def _meaning(name: str, value):
    """An option's value as the model reads it, for comparing a checkpoint's with the model being
    built: the cutoffs ``'2000, 4000'`` and ``'2000,4000'`` are one model."""
    if name == "adaptive_softmax_cutoff":
        from ..options.adaptive_softmax import parse_cutoff

        try:
            return parse_cutoff(value, given_blank_ok=True)
        except OptionError:  # not a list of ids: compared as written (the build refuses it by name)
            return value
    return value


def _before_the_option(model_class) -> dict:
    """``{option: value}`` for the options that declare ``DEFAULT_BEFORE_THE_OPTION``: the value
    older checkpoints, saved without the option, hold."""
    dataclass = getattr(model_class, "__dataclass", None)
    fields = dataclass.__dataclass_fields__ if dataclass is not None else {}
    return {
        name: f.metadata[DEFAULT_BEFORE_THE_OPTION]
        for name, f in fields.items()
        if DEFAULT_BEFORE_THE_OPTION in f.metadata
    }


def fill_options_older_than(state, overrides):
    """Give a checkpoint's saved model config the ``DEFAULT_BEFORE_THE_OPTION`` value of each such option
    it lacks, before fairseq fills the gap with the option's default."""
    from fairseq.models import ARCH_MODEL_REGISTRY

    configs = [(state.get("cfg") or {}).get("model"), state.get("args")]
    for cfg in configs:
        arch = getattr(cfg, "_name", None) or getattr(cfg, "arch", None)
        if cfg is None or arch not in ARCH_MODEL_REGISTRY:
            continue
        for name, value in _before_the_option(ARCH_MODEL_REGISTRY[arch]).items():
            if name in (overrides or {}):
                continue
            if isinstance(cfg, argparse.Namespace):
                if not hasattr(cfg, name):
                    setattr(cfg, name, value)
            elif name not in cfg:  # fairseq's loader has made the saved config an omegaconf one
                with open_dict(cfg):
                    cfg[name] = value


# the least value of an integer option (0 means "none" or "the default size" for these);
# every other integer option of our models is a size or a count: at least 1
LEAST = {"memory_window": 0, "attention_dim": 0, "cache_attention_dim": 0, "cache_size": 0}


def check_ranges(cfg, dataclass):
    """Refuse a negative size, a count below 1, a number that is not finite or a dropout outside [0, 1],
    by name, before torch fails on it with a traceback (or, for a window, silently does something else)."""
    for name, field in dataclass.__dataclass_fields__.items():
        value = getattr(cfg, name, None)
        if value is None or isinstance(value, bool):
            continue
        flag = "--" + name.replace("_", "-")
        help_text = field.metadata.get("help", "")
        about = f" ({flag}: {help_text})" if help_text else ""
        if field.type is int and isinstance(value, int):
            least = LEAST.get(name, 1)
            if value < least:
                raise OptionError(f"{flag} {value} is out of range: it must be at least {least}{about}")
        elif field.type is float and isinstance(value, (int, float)):
            number(flag, value, least=0 if name == "init_range" else None, why=help_text)
            if "dropout" in name and not 0 <= value <= 1:
                raise OptionError(f"{flag} {value} is out of range: a dropout probability lies in [0, 1]")


@functools.lru_cache(maxsize=1)
def _fairseq_option_names():
    """Every option name of fairseq's own config sections and of every registered task,
    criterion, optimizer, scheduler, tokenizer, BPE and scorer: what an override may name
    besides a model option."""
    from fairseq.dataclass.configs import FairseqConfig
    from fairseq.registry import REGISTRIES
    from fairseq.tasks import TASK_DATACLASS_REGISTRY

    names = {"_name", "arch", "generation_args", "is_vocoder"}  # the hub's keywords
    classes = list(TASK_DATACLASS_REGISTRY.values())
    for field in dataclasses.fields(FairseqConfig):
        names.add(field.name)
        if dataclasses.is_dataclass(field.type):
            classes.append(field.type)
    for registry in REGISTRIES.values():
        classes += list(registry["dataclass_registry"].values())
    for dataclass in classes:
        names.update(dataclass.__dataclass_fields__)
    return frozenset(names)


def check_overrides(state, overrides):
    """Refuse an override (``--model-overrides``, a ``from_pretrained`` keyword) of one of our models'
    checkpoints that names no option of the model nor of fairseq: fairseq would drop it without a word."""
    if not overrides or not state.get("cfg"):
        return
    from fairseq.models import ARCH_MODEL_REGISTRY

    cfg = state["cfg"]
    model_cfg = cfg.get("model")
    name = getattr(model_cfg, "_name", None) or getattr(model_cfg, "arch", None)
    model_class = ARCH_MODEL_REGISTRY.get(name)
    if model_class is None or not model_class.__module__.startswith("alm_plugin."):
        return
    options = set(getattr(model_class, "__dataclass").__dataclass_fields__)
    saved = {key for section in cfg.values() if isinstance(section, DictConfig) for key in section}
    for key in overrides:
        if key in options or key in saved or key in cfg or key in _fairseq_option_names():
            continue
        close = difflib.get_close_matches(key, sorted(options), n=1)
        raise OptionError(
            f"the override '{key}' (--model-overrides or a from_pretrained keyword) is not an option of "
            f"{name} nor of fairseq, so it would be ignored"
            + (f": did you mean '{close[0]}'?" if close else "")
            + f" {name}'s options: {', '.join(sorted(o for o in options if o != '_name'))}."
        )


class CheckpointFitMixin:
    """Completes a model's config and refuses a checkpoint whose options or parameters do not fit the
    model being built; put it before ``FairseqLanguageModel`` (or the encoder-decoder model) in the bases."""

    @classmethod
    def complete_config(cls, cfg):
        """``cfg`` with every option of the model's config, a missing one at its dataclass default (or
        its ``DEFAULT_BEFORE_THE_OPTION`` value), each in range (``check_ranges``)."""
        dataclass = getattr(cls, "__dataclass")
        names = dataclass.__dataclass_fields__
        if dataclasses.is_dataclass(cfg):  # built in Python: complete by construction
            check_ranges(cfg, dataclass)
            return cfg
        before = {
            name: f.metadata[DEFAULT_BEFORE_THE_OPTION]
            for name, f in names.items()
            if DEFAULT_BEFORE_THE_OPTION in f.metadata
        }
        if isinstance(cfg, argparse.Namespace):
            for name in names:
                if not hasattr(cfg, name):
                    setattr(cfg, name, before.get(name, getattr(dataclass, name, None)))
            check_ranges(cfg, dataclass)
            return cfg
        with open_dict(cfg):
            for name, value in before.items():
                if name not in cfg:
                    cfg[name] = value
        cfg = merge_with_parent(dataclass(), cfg, remove_missing=True)
        check_ranges(cfg, dataclass)
        return cfg

    @classmethod
    def record_options(cls, model, cfg):
        """Keep the function-defining options of ``cfg`` with the model (saved beside its parameters)."""
        names = getattr(cls, "__dataclass").__dataclass_fields__
        options = {name: getattr(cfg, name) for name in sorted(names) if not _may_differ(name)}
        if OmegaConf.is_config(cfg):
            options = {
                name: OmegaConf.to_container(value) if OmegaConf.is_config(value) else value
                for name, value in options.items()
            }
        model.recorded_options = json.dumps(options, sort_keys=True, default=str)
        return model

    def options_record(self) -> dict:
        """The options this model is built with, as a checkpoint saves them."""
        return json.loads(self.recorded_options)

    def saved_options(self, state_dict):
        """The options a checkpoint's state dict carries (handed in by the loader, or a buffer of an
        older checkpoint), or None."""
        saved = state_dict.get(OPTIONS_BUFFER)
        if saved is None:
            return None
        text = saved if isinstance(saved, str) else bytes(saved.tolist()).decode("utf-8", errors="replace")
        try:
            return json.loads(text)
        except ValueError:
            raise OptionError(
                "this checkpoint's options (its architecture_options buffer) are not readable JSON: the buffer "
                "has been summed or interpolated with other checkpoints' (fairseq's average_checkpoints.py, "
                "--store-ema). Average checkpoints saved by this version of the plugin, which keeps the options "
                "outside the state dict."
            ) from None

    def load_state_dict(self, state_dict, strict=True, model_cfg=None, args=None):
        state_dict = dict(state_dict)
        saved = self.saved_options(state_dict)
        state_dict.pop(OPTIONS_BUFFER, None)
        if getattr(self, "recorded_options", None) is not None:
            if saved is not None:
                wanted = self.options_record()
                # an option newer than the checkpoint: the checkpoint holds the value the option declares for it
                saved = {
                    **{name: value for name, value in _before_the_option(type(self)).items() if name not in saved},
                    **saved,
                }
                differ = [
                    name
                    for name in sorted(saved)
                    if name in wanted and _meaning(name, saved[name]) != _meaning(name, wanted[name])
                ]
                if differ:
                    name = differ[0]
                    flag = "--" + name.replace("_", "-")
                    raise OptionError(
                        f"this checkpoint was trained with {flag} {saved[name]}, but the model being "
                        f"built has {flag} {wanted[name]}"
                        + (f" (and {len(differ) - 1} more: {', '.join(differ[1:])})" if len(differ) > 1 else "")
                        + ". The option changes what the parameters compute, so the loaded model "
                        f"would score junk: drop {flag} (or the --model-overrides entry), or train "
                        "a new model with it."
                    )
        if strict:
            expected = set(self.state_dict())
            saved_names = {name for name in state_dict if not name.endswith(FINGERPRINT)}
            missing, unexpected = sorted(expected - saved_names), sorted(saved_names - expected)
            if missing or unexpected:
                raise OptionError(
                    f"this checkpoint does not fit {self.__class__.__name__}: {len(missing)} "
                    f"parameters missing (e.g. {missing[:2]}), {len(unexpected)} unexpected "
                    f"(e.g. {unexpected[:2]}). It was saved by another --arch or with other "
                    "options; load it with those, or train this one without --restore-file."
                )
        return super().load_state_dict(state_dict, strict=strict, model_cfg=model_cfg, args=args)


def checkpoint_entry(model):
    """What ``model`` carries beside its weights, for the checkpoint's own dict: its options (JSON
    text) and each decoder's dictionary fingerprint, under the state-dict names they load by; None
    for a model that is not ours."""
    options = getattr(model, "recorded_options", None)
    if options is None:
        return None
    fingerprints = {
        (name + "." if name else "") + FINGERPRINT: int(getattr(module, FINGERPRINT))
        for name, module in model.named_modules()
        if isinstance(getattr(module, FINGERPRINT, None), int)
    }
    return {OPTIONS_BUFFER: options, "fingerprints": fingerprints}


def saved_fingerprints(state) -> set:
    """The dictionary fingerprints a loaded checkpoint saved: in its entry (``CHECKPOINT_ENTRY``), which the
    loader hands to the model, else as state-dict buffers (older checkpoints)."""
    entry = state.get(CHECKPOINT_ENTRY) if isinstance(state.get(CHECKPOINT_ENTRY), dict) else {}
    if entry.get("fingerprints"):
        return {int(value) for value in entry["fingerprints"].values()}
    model = state.get("model") if isinstance(state.get("model"), dict) else {}
    return {int(value) for name, value in model.items() if name.endswith(FINGERPRINT)}


def hand_to_the_model(state):
    """A loaded checkpoint's entry (``CHECKPOINT_ENTRY``) put into its model state dict under the names
    the model's ``load_state_dict`` reads (those older checkpoints hold as buffers), where the checks run."""
    entry = state.get(CHECKPOINT_ENTRY)
    if not isinstance(entry, dict) or not isinstance(state.get("model"), dict):
        return
    if entry.get(OPTIONS_BUFFER) is not None:
        state["model"][OPTIONS_BUFFER] = entry[OPTIONS_BUFFER]
    for name, value in (entry.get("fingerprints") or {}).items():
        state["model"][name] = value


def save_beside_the_model():
    """fairseq's trainer writes the model's ``checkpoint_entry`` into every checkpoint it saves,
    beside (not inside) the model's state dict."""
    from fairseq.trainer import Trainer

    state_dict = Trainer.state_dict
    if getattr(state_dict, "saves_the_entry", False):  # the plugin may load twice
        return

    def state_dict_with_the_entry(self):
        state = state_dict(self)
        entry = checkpoint_entry(self.get_model())
        if entry is not None:
            state[CHECKPOINT_ENTRY] = entry
        return state

    state_dict_with_the_entry.saves_the_entry = True
    Trainer.state_dict = state_dict_with_the_entry


save_beside_the_model()
