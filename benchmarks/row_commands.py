"""What every fairseq command of a table row gives besides the row's own arguments, trained or scored:
where it runs (``Device``), its task and batching (``task_args``) and its criterion (``criterion_args``)."""

from dataclasses import dataclass

BLOCK = "35"  # tokens a training sample (a sentence piece, a stream chunk, a fairseq block) holds


@dataclass(frozen=True)
class Device:
    """Where a row's commands run (fairseq's device flags) and how many scoring commands run at once."""

    flags: tuple
    jobs: int


CPU = Device(("--cpu",), 1)


def task_args(corpus, row, training, device):
    """The task and its batching (``rows.py`` says what each reading means); scored, a stream is one."""
    streams = str(corpus.streams if training else 1)
    OURS = ["--user-dir", "alm_plugin", *device.flags]
    if row.reading == "stream":
        return [*OURS, "--task", "document_language_modeling", "--batch-size", streams]
    if row.reading == "fairseq":  # no state between blocks: at the end each block gets BLOCK tokens of context
        # the plugin only lets torch >= 2.6 load fairseq's checkpoints; model, task, criterion are fairseq's
        # (eval-lm takes the context out of --tokens-per-sample: 70 - 35 scores blocks of 35 after 35 tokens)
        return [
            *OURS,
            "--task",
            "language_modeling",
            "--sample-break-mode",
            "none",
            "--batch-size",
            str(corpus.streams),
            *(
                ["--tokens-per-sample", BLOCK]
                if training
                else ["--tokens-per-sample", str(2 * int(BLOCK)), "--context-window", BLOCK]
            ),
        ]
    if row.reading == "characters":
        return [*OURS, "--task", "open_vocabulary_language_modeling", "--batch-size", streams]
    return [
        *OURS,
        "--task",
        "sentence_language_modeling",
        "--batch-size",
        "32" if training else "64",
        "--eval-tokens-per-sample",
        BLOCK if training else "0",
    ]


def criterion_args(row):
    if row.reading == "fairseq":  # fairseq builds its adaptive softmax only under adaptive_loss
        return ["--criterion", "adaptive_loss", "--ddp-backend", "legacy_ddp"]
    if row.reading == "characters":
        return ["--criterion", "open_vocabulary_cross_entropy"]
    return ["--criterion", "attention_cross_entropy"]
