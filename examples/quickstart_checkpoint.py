"""Whether examples/quickstart.sh may use the checkpoint in its folder: only its own (the architecture,
score, task, data and epochs it trains), read as data (torch's weights_only=True), never unpickled.

    python3 examples/quickstart_checkpoint.py SAVE_DIR EPOCHS

prints one line: ``new`` (no checkpoint_last.pt), ``done N`` (its own, N epochs: nothing to train),
``resume N`` (its own, N of EPOCHS epochs: fairseq-train resumes it) or ``other WHY`` (not its own, or not
readable: the quickstart sets it aside and trains from the start)."""

import os
import sys

ARCH = "attentive_lm_small"
SCORE = "single"
TASK = "sentence_language_modeling"
DATA = "data-bin/wikitext-2-sample"  # from the repository root, where the quickstart runs


def saved_options(state):
    """The model's and the task's options of a checkpoint (its cfg; a legacy one's args)."""
    cfg = state.get("cfg") if isinstance(state, dict) else None
    if isinstance(cfg, dict) and isinstance(cfg.get("model"), (dict,)) and isinstance(cfg.get("task"), dict):
        model, task = cfg["model"], cfg["task"]
        return (
            model.get("_name") or model.get("arch"),
            model.get("attention_score"),
            task.get("_name"),
            task.get("data"),
        )
    args = state.get("args") if isinstance(state, dict) else None
    if args is not None:
        return (
            getattr(args, "arch", None),
            getattr(args, "attention_score", None),
            getattr(args, "task", None),
            (getattr(args, "data", None)),
        )
    return None


def verdict(save, epochs):
    """The line this script prints for the folder ``save`` and ``epochs`` to train."""
    last = os.path.join(save, "checkpoint_last.pt")
    if not os.path.lexists(last):
        return "new"
    from alm_plugin.checkpoint_safety import read_checkpoint

    try:
        state = read_checkpoint(last)
    except Exception as error:
        return f"other {last} is not a checkpoint read as data ({error.__class__.__name__})"
    options = saved_options(state)
    if options is None:
        return f"other {last} holds no fairseq-train options"
    arch, score, task, data = options
    if arch != ARCH or (score or "single") != SCORE:
        return f"other {last} is a {arch} (attention score {score}), not the quickstart's {ARCH} ({SCORE})"
    if task != TASK:
        return f"other {last} was trained under --task {task}, not {TASK}"
    if not data or os.path.realpath(data) != os.path.realpath(DATA) or not trained_on(state, DATA):
        return f"other {last} was trained on {data} (its dictionary), not {DATA}"
    try:
        iterator = state["extra_state"]["train_iterator"]
        trained = int(iterator["epoch"]) - 1
    except (KeyError, TypeError, ValueError):
        return f"other {last} records no finished epoch"
    if trained > epochs:
        return f"other {last} was trained for {trained} epochs, more than the {epochs} asked"
    if trained == epochs and not os.path.isfile(os.path.join(save, "checkpoint_best.pt")):
        return f"other {last} has no checkpoint_best.pt beside it"
    return f"{'done' if trained == epochs else 'resume'} {trained}"


def trained_on(state, data):
    """Whether the model's dictionary (its saved fingerprint) is ``data``'s dict.txt."""
    from fairseq.data import Dictionary

    from alm_plugin.models.checkpoint_fit import saved_fingerprints
    from alm_plugin.modules.dictionary_fingerprint import dictionary_fingerprint

    return dictionary_fingerprint(Dictionary.load(os.path.join(data, "dict.txt"))) in saved_fingerprints(state)


def main(argv):
    if len(argv) != 2 or not argv[1].isdigit():
        sys.exit("usage: python3 examples/quickstart_checkpoint.py SAVE_DIR EPOCHS")
    print(verdict(argv[0], int(argv[1])))


if __name__ == "__main__":
    main(sys.argv[1:])
