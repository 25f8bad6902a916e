"""Whether examples/quickstart.sh may use the checkpoint in its folder: only its own (the architecture,
score, task, data and epochs it trains), read as data (torch's weights_only=True), never unpickled.

    python3 examples/quickstart_checkpoint.py SAVE_DIR EPOCHS

prints one line: ``new`` (no checkpoint_last.pt), ``done N`` (its own, N epochs: nothing to train),
``resume N`` (its own, N of EPOCHS epochs: fairseq-train resumes it) or ``other WHY`` (checkpoint_last.pt
or checkpoint_best.pt, the file it scores, not its own, or not readable: the quickstart sets them aside and
trains from the start)."""

import argparse
import os
import sys

ARCH = "attentive_lm_small"
SCORE = "single"
TASK = "sentence_language_modeling"
DATA = "data-bin/wikitext-2-sample"  # from the repository root, where the quickstart runs
SIZE = "2 x 256 (256-d embeddings)"  # attentive_lm_small's (alm_plugin/models/attentive_lm.py)


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


def foreign(path):
    """Why the checkpoint ``path`` is not the quickstart's own (its architecture, size, score, task and data),
    or None where it is; a file that is not a regular one (a pipe would block its read) is not."""
    if not os.path.isfile(path):
        return f"{path} is not a regular file"
    from alm_plugin.mends.checkpoint_safety import read_checkpoint

    try:
        state = read_checkpoint(path)
    except Exception as error:
        return f"{path} is not a checkpoint read as data ({error.__class__.__name__})"
    options = saved_options(state)
    if options is None:
        return f"{path} holds no fairseq-train options"
    arch, score, task, data = options
    if arch != ARCH or (score or "single") != SCORE:
        return f"{path} is a {arch} (attention score {score}), not the quickstart's {ARCH} ({SCORE})"
    size = saved_size(state)
    if size != SIZE:
        return f"{path} is a model of {size}, not the quickstart's {SIZE}"
    if task != TASK:
        return f"{path} was trained under --task {task}, not {TASK}"
    if not data or os.path.realpath(data) != os.path.realpath(DATA) or not trained_on(state, DATA):
        return f"{path} was trained on {data} (its dictionary), not {DATA}"
    return None


def verdict(save, epochs):
    """The line this script prints for the folder ``save`` and ``epochs`` to train: the model it trains from and
    the one it scores (checkpoint_best.pt) both checked."""
    last, best = os.path.join(save, "checkpoint_last.pt"), os.path.join(save, "checkpoint_best.pt")
    if not os.path.lexists(last):
        return f"other {best} is there without checkpoint_last.pt" if os.path.lexists(best) else "new"
    why = foreign(last) or (foreign(best) if os.path.lexists(best) else None)
    if why:
        return f"other {why}"
    from alm_plugin.mends.checkpoint_safety import read_checkpoint

    try:
        iterator = read_checkpoint(last)["extra_state"]["train_iterator"]
        trained = int(iterator["epoch"]) - 1
    except (KeyError, TypeError, ValueError):
        return f"other {last} records no finished epoch"
    if trained > epochs:
        return f"other {last} was trained for {trained} epochs, more than the {epochs} asked"
    if trained == epochs and not os.path.isfile(best):
        return f"other {last} has no checkpoint_best.pt beside it"
    return f"{'done' if trained == epochs else 'resume'} {trained}"


def saved_size(state):
    """``"L x H (E-d embeddings)"`` of a checkpoint's model options."""
    cfg = state.get("cfg") if isinstance(state, dict) else None
    model = cfg.get("model") if isinstance(cfg, dict) else vars(state.get("args") or argparse.Namespace())
    model = model if isinstance(model, dict) else {}
    return f"{model.get('num_layers')} x {model.get('hidden_size')} ({model.get('embed_dim')}-d embeddings)"


def trained_on(state, data):
    """Whether the model's dictionary (its saved fingerprint) is ``data``'s dict.txt."""
    from fairseq.data import Dictionary

    from alm_plugin.data.dictionary_fingerprint import dictionary_fingerprint
    from alm_plugin.models.checkpoint_fit import saved_fingerprints

    return dictionary_fingerprint(Dictionary.load(os.path.join(data, "dict.txt"))) in saved_fingerprints(state)


def main(argv):
    if len(argv) != 2 or not argv[1].isdigit():
        sys.exit("usage: python3 examples/quickstart_checkpoint.py SAVE_DIR EPOCHS")
    print(verdict(argv[0], int(argv[1])))


if __name__ == "__main__":
    main(sys.argv[1:])
