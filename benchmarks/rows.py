"""The tables' rows, declared as data: for each corpus its recipe and, for each row, the model's
arguments and how it reads the text. ``table.py`` trains and scores them; ``report`` writes
the docs from their JSON (``benchmarks/results/<corpus>/<row>.json``).

A row reads the corpus in one of four ways (``Row.reading``):

* ``sentence``: one sentence per sample from a fresh state (``sentence_language_modeling``),
  batches of 32 sentences, cut at 35 tokens in training, scored whole at the end;
* ``stream``: the corpus as 20 parallel streams of 35-word chunks, the LSTM state and the last
  M memory states carried across chunks (``document_language_modeling``), 700 tokens an update
  like the sentence rows' 32 sentences; scored as one stream at the end;
* ``fairseq``: fairseq's own ``language_modeling`` task, ``--sample-break-mode none``: shuffled
  35-token blocks, no state carried between them, scored by ``fairseq-eval-lm --context-window``;
* ``characters``: the open-vocabulary models (``open_vocabulary_language_modeling``), the
  corpus's ``streams`` of 35 words (the paper: 25 on PTB, 10 on WikiText-2), scored in bits per
  character as one stream by ``fairseq-validate``.
"""

import argparse
import os
from dataclasses import dataclass, field

from benchmarks import ROOT
from benchmarks.fairseq_runs import fairseq_lstm_lm
from benchmarks.result_files import read_result

# the options whose value is a row's width, the first a row gives (its recipe's size in its JSON)
WIDTH_OPTIONS = ("--hidden-size", "--decoder-hidden-size", "--decoder-embed-dim")

SIZE, DROPOUT = "200", "0.2"
MEMORY, STREAMS = "100", 20  # M (and the pointer's L) = 100: the Pointer Sentinel-LSTM's window


# the dropout layout a row of our word decoders states in its JSON (docs/models.md, "Dropout"); a
# result that states another, or none, is set apart by the report
DROPOUT_LAYOUT = "each tensor once"


@dataclass(frozen=True)
class Row:
    description: str
    args: tuple  # the model's and the optimizer's arguments
    reading: str = "sentence"  # sentence | stream | fairseq | characters (see above)
    full_softmax_twin: str = None  # a row that only changes the output layer: the row it is compared with
    seed: int = 1  # fairseq-train --seed (a second seed's row: how far one seed's figures are from another's)

    @property
    def has_our_decoder(self):
        """Trained by our word decoder (``HistoryAttentionLSTMDecoder``): its dropout layout matters."""
        arch = self.args[self.args.index("--arch") + 1] if "--arch" in self.args else ""
        return arch.startswith(("alm_lstm", "attentive_lm", "amsrn", "pointer_sentinel_lm"))

    def before_the_dropout_fix(self, result):
        """A result of our word decoder trained with the old dropout layout (its JSON states no ``DROPOUT_LAYOUT``)."""
        return self.has_our_decoder and result.get("dropout_layout") != DROPOUT_LAYOUT


def grid_of(lrs, decays):
    """``(lrs, decays)`` as tuples of floats from their comma-separated text."""
    return tuple(float(v) for v in lrs.split(",")), tuple(float(v) for v in decays.split(","))


@dataclass(frozen=True)
class Corpus:
    name: str  # data-bin/<name>, benchmarks/results/<name>
    epochs: int
    anneal_after: int  # SGD's step halves every epoch after this one (None: a recipe without it)
    rows: dict  # name -> Row, in the tables' order
    paper: dict = field(default_factory=dict)  # row -> the paper's figures, as text
    cache_windows: str = "100,500,2000"  # alm-cache-grid --windows
    # dynamic evaluation's grid (SGD on a segment's mean NLL), narrowed on PTB's stream LSTM (docs/benchmarks.md)
    dynamic_lrs: str = "0.3,1"
    dynamic_decays: str = "0.01,0.03"
    data_name: str = None  # data-bin/<data_name> when the rows read another corpus's data (a slice)
    source: str = None  # ../shared/data/<source> that data-bin/<data_name> is prepared from
    sentences: int = 0  # a slice: the first N training sentences (valid and test: N / 10)
    sample_train_only: bool = False  # a slice scored on the whole valid and test, with the whole corpus's dictionary
    open_vocabulary: bool = False  # prepared for the character models
    max_update: int = None  # a slice: stop after this many updates (the rows' first epoch, cut)
    test_time: bool = True  # the neural cache and dynamic evaluation chosen on valid, scored on test
    streams: int = STREAMS  # parallel streams a training batch reads (stream and character rows)
    # dynamic evaluation's grid (lrs, decays, as text) of a committed row whose JSON records none (table.py
    # records it); None: the grid declared above
    unrecorded_grid: tuple = None
    label: str = ""  # the corpus and size a statement names, "full PTB, 2 x 200"
    spread_from: str = None  # a corpus without seeds of its own: the corpus whose seed ranges stand in for them
    names_commits: bool = False  # its comparisons name the commits their rows trained at (rows from several)

    @property
    def data(self):
        return os.path.join(ROOT, "data-bin", self.data_name or self.name)

    @property
    def results(self):
        return os.path.join(ROOT, "benchmarks", "results", self.name)

    @property
    def declared_grid(self):
        """``(lrs, decays)``: the dynamic-evaluation grid a row scored by ``table.py`` chooses from."""
        return grid_of(self.dynamic_lrs, self.dynamic_decays)

    def dynamic_grid(self, result):
        """``(lrs, decays)``: the dynamic-evaluation grid ``result``'s picks come from, as its JSON records,
        else the one the rows that record none are scored on (``unrecorded_grid``)."""
        if "dynamic_eval_grid" in result:
            return tuple(result["dynamic_eval_grid"]["lr"]), tuple(result["dynamic_eval_grid"]["decay"])
        return grid_of(*self.unrecorded_grid) if self.unrecorded_grid else self.declared_grid

    def load(self, results_dir=None):
        """The rows' JSON that exist, in the table's order."""
        found = {}
        for name in self.rows:
            path = os.path.join(results_dir or self.results, f"{name}.json")
            if os.path.exists(path):
                found[name] = read_result(path)  # checked: a broken file refused by name and key
        return found


def sgd(anneal_after):
    """The Attentive LM paper's recipe compressed to a 2-core CPU: SGD lr 1 on the NLL summed over
    each sentence (or chunk) and averaged over the batch (``--sentence-avg``, the authors' loss),
    clip 5, lr halved every epoch after ``anneal_after`` (fairseq's fixed scheduler shrinks from
    epoch ``--force-anneal`` on)."""
    return (
        "--optimizer",
        "sgd",
        "--lr",
        "1.0",
        "--lr-scheduler",
        "fixed",
        "--force-anneal",
        str(anneal_after + 1),
        "--lr-shrink",
        "0.5",
        "--clip-norm",
        "5",
        "--sentence-avg",
    )


OURS = ("--embed-dim", SIZE, "--hidden-size", SIZE, "--num-layers", "2", "--dropout", DROPOUT)
# the LSTM given the concat layer's parameters (W_c, 2H x H) as width: 2 x 205 has the layer row's count as
# held; under --zero-context W_c's context half never trains, so it trains more (benchmarks/trainable.py)
MATCHED_SIZE = "205"
MATCHED = ("--embed-dim", MATCHED_SIZE, "--hidden-size", MATCHED_SIZE, "--num-layers", "2", "--dropout", DROPOUT)
FAIRSEQ_LSTM = fairseq_lstm_lm(SIZE, 2, DROPOUT)


def model_rows(extra, recipe):
    """The models both tables share, with ``extra`` (an output layer) after the model arguments."""
    single = ("--arch", "attentive_lm", "--attention-score", "single")
    amsrn = ("--arch", "amsrn", "--memory-selection", "tied")
    return {
        "lstm": Row("LSTM (ours, `alm_lstm`)", ("--arch", "alm_lstm", *OURS, *extra, *recipe)),
        "single": Row("`attentive_lm` single (Eq. 7 tanh, no b_c)", (*single, *OURS, *extra, *recipe)),
        "combined": Row(
            "`attentive_lm` combined (Eq. 10)",
            ("--arch", "attentive_lm", "--attention-score", "combined", *OURS, *extra, *recipe),
        ),
        "single-zero-context": Row(
            "`attentive_lm` single, context zeroed: the layer without the attention",
            (*single, "--zero-context", *OURS, *extra, *recipe),
        ),
        "amsrn": Row("`amsrn` tied", (*amsrn, *OURS, *extra, *recipe)),
        "lstm-stream": Row(
            "LSTM (ours, `alm_lstm`), document streams", ("--arch", "alm_lstm", *OURS, *extra, *recipe), "stream"
        ),
        "single-stream": Row(
            f"`attentive_lm` single, document streams, M = {MEMORY}",
            (*single, "--memory-window", MEMORY, *OURS, *extra, *recipe),
            "stream",
        ),
        "amsrn-stream": Row(
            f"`amsrn` tied, document streams, M = {MEMORY}",
            (*amsrn, "--memory-window", MEMORY, *OURS, *extra, *recipe),
            "stream",
        ),
        "ps-lstm-stream": Row(
            f"Pointer Sentinel-LSTM (`pointer_sentinel_lm`), document streams, L = {MEMORY}",
            ("--arch", "pointer_sentinel_lm", "--pointer-window", MEMORY, *OURS, *extra, *recipe),
            "stream",
        ),
    }


def seeded(rows, names, seeds):
    """``<name>-seed<k>``: each of ``names`` again at another ``--seed`` (how far one seed's figures lie
    from another's)."""
    return {
        f"{name}-seed{seed}": Row(
            f"{rows[name].description} (seed {seed})", rows[name].args, rows[name].reading, seed=seed
        )
        for seed in seeds
        for name in names
    }


def at_dropout(rows, names, dropouts):
    """``<name>-dropout-<p>``: each of ``names`` again at dropout ``p`` (each model at its own best setting)."""

    def swap(args, p):
        at = args.index("--dropout") + 1
        return (*args[:at], p, *args[at + 1 :])

    return {
        f"{name}-dropout-{p}": Row(
            f"{rows[name].description}, dropout {p}", swap(rows[name].args, p), rows[name].reading
        )
        for p in dropouts
        for name in names
    }


# the dropouts beside DROPOUT each model of the short answer's steps is also trained at (picked on valid)
DROPOUTS = ("0.1", "0.3")

# Full PTB: 42,068 / 3,370 / 3,761 sentences, 10 epochs, the full softmax
PTB_RECIPE = sgd(4)
_ptb = {
    **model_rows((), PTB_RECIPE),
    "lstm-matched": Row(
        f"LSTM (ours, `alm_lstm`), 2 x {MATCHED_SIZE}: the concat layer's parameters as width",
        ("--arch", "alm_lstm", *MATCHED, *PTB_RECIPE),
    ),
}
PTB = Corpus(
    "ptb",
    label=f"full PTB, 2 x {SIZE}",
    epochs=10,
    anneal_after=4,
    rows={
        "lstm": _ptb["lstm"],
        "single": _ptb["single"],
        "single-bc": Row(
            "`attentive_lm` single, with b_c (Eq. 7 as printed)",
            ("--arch", "attentive_lm", "--attention-score", "single", "--combination-bias", *OURS, *PTB_RECIPE),
        ),
        "combined": _ptb["combined"],
        "single-linear": Row(
            "`attentive_lm` single, `--concat-activation linear`",
            (
                "--arch",
                "attentive_lm",
                "--attention-score",
                "single",
                "--concat-activation",
                "linear",
                *OURS,
                *PTB_RECIPE,
            ),
        ),
        "single-zero-context": _ptb["single-zero-context"],
        "amsrn": _ptb["amsrn"],
        **{
            f"amsrn-entropy-{weight}": Row(
                f"`amsrn` tied + entropy, lambda {float(weight):.1f}",
                (
                    "--arch",
                    "amsrn",
                    "--memory-selection",
                    "tied",
                    "--attention-entropy-weight",
                    f"{float(weight):.1f}",
                    *OURS,
                    *PTB_RECIPE,
                ),
            )
            for weight in ("0.1", "1")
        },
        "fairseq-lstm_lm": Row(
            "fairseq `lstm_lm` (tied, cross-check)", (*FAIRSEQ_LSTM, "--share-decoder-input-output-embed", *PTB_RECIPE)
        ),
        # Adam: SGD at lr 1.0 is not a transformer recipe; same size, epochs and batches
        "fairseq-transformer_lm": Row(
            "fairseq `transformer_lm` (2 layers, 200-d, FFN 512; Adam)",
            (
                "--arch",
                "transformer_lm",
                "--decoder-embed-dim",
                SIZE,
                "--decoder-input-dim",
                SIZE,
                "--decoder-output-dim",
                SIZE,
                "--decoder-ffn-embed-dim",
                "512",
                "--decoder-layers",
                "2",
                "--decoder-attention-heads",
                "4",
                "--share-decoder-input-output-embed",
                "--dropout",
                DROPOUT,
                "--optimizer",
                "adam",
                "--lr",
                "0.001",
                "--lr-scheduler",
                "inverse_sqrt",
                "--warmup-updates",
                "1000",
                "--clip-norm",
                "5",
                "--sentence-avg",
            ),
        ),
        **{name: _ptb[name] for name in ("lstm-stream", "single-stream", "amsrn-stream")},
        # the default sentinel scale, 0.1, as on WikiText-2: at the paper's 1 its gate never left 1; the
        # extra term at full length, the 3 epochs' pick (ptb-pointer-loss, below), differing in it alone
        **{
            "ps-lstm-stream" + ("" if loss == "off" else f"-{loss}"): Row(
                _ptb["ps-lstm-stream"].description + ("" if loss == "off" else f", `--pointer-loss {loss}`"),
                (*_ptb["ps-lstm-stream"].args, "--pointer-loss", loss, "--sentinel-scale", "0.1"),
                "stream",
            )
            for loss in ("off", "found")
        },
        # the output layer's cost in quality: head = PTB's 2,000 most frequent words, one tail of
        # the other 8,004 (not tuned on a slice)
        "lstm-stream-adaptive": Row(
            "LSTM (ours, `alm_lstm`), document streams, tied adaptive softmax (head 2000)",
            ("--arch", "alm_lstm", *OURS, *PTB_RECIPE, "--adaptive-softmax-cutoff", "2000"),
            "stream",
            full_softmax_twin="lstm-stream",
        ),
        "lstm-matched": _ptb["lstm-matched"],
        **seeded(_ptb, ("lstm", "single-zero-context", "single", "lstm-matched"), (2,)),
        # third seeds of the steps the short answer stands on (the layer, the attention, the width)
        **seeded(_ptb, ("lstm", "single-zero-context", "single"), (3,)),
        # the same three at the other dropouts: each model at its own best valid dropout
        **at_dropout(_ptb, ("lstm", "single", "single-zero-context"), DROPOUTS),
    },
    paper={"single": "71.7 / 70.1 (2 x 650, patience 10)", "combined": "72.6 / 70.7 (2 x 650)"},
)

# Full WikiText-2 (sentences split after . ? !; 2.14M training tokens, 33,278 words), every row
# with the tied adaptive softmax; 4 epochs (a little fewer tokens than the PTB rows' 10), lr halved
# after epoch 2.
WT2_CUTOFF = "2000,10000"
WT2_RECIPE = sgd(2)
_wt2 = model_rows(("--adaptive-softmax-cutoff", WT2_CUTOFF), WT2_RECIPE)
WIKITEXT2 = Corpus(
    "wikitext-2",
    label=f"WikiText-2, 2 x {SIZE}",
    spread_from="ptb",
    epochs=4,
    anneal_after=2,
    rows={
        **{name: _wt2[name] for name in ("lstm", "single", "combined", "amsrn", "lstm-stream", "single-stream")},
        "ps-lstm-stream": Row(
            _wt2["ps-lstm-stream"].description,
            # the PTB row's choice (the extra term at full length: PTB's ps-lstm-stream-found)
            (*_wt2["ps-lstm-stream"].args, "--pointer-loss", "off", "--sentinel-scale", "0.1"),
            "stream",
        ),
        # the peer: fairseq's LSTM LM with its own adaptive softmax (untied, as fairseq builds it under
        # adaptive_loss, which also needs legacy_ddp), the same cutoffs (its defaults exceed the vocabulary)
        "fairseq-lstm_lm": Row(
            "fairseq `lstm_lm`, its adaptive softmax (untied), `language_modeling` blocks",
            (*FAIRSEQ_LSTM, "--adaptive-softmax-cutoff", WT2_CUTOFF, *WT2_RECIPE),
            "fairseq",
        ),
    },
    paper={
        "lstm": "– / 99.3 (LSTM-LM, Grave et al.)",
        "single": "73.7 / 69.7 (50M)",
        "combined": "74.3 / 70.8 (50M)",
        "ps-lstm-stream": "84.8 / 80.8 (21M, L = 100)",
    },
    cache_windows="100,500,2000,3785",
)  # 3,785: awd-lstm-lm's WikiText-2 cache

# The Attentive LM paper's Table 1 at its own size, on a GPU (benchmarks/gpu/run.sh paper): full
# PTB, 2 x 650, tied, dropout 0.5 (the named architectures), the paper's recipe, 20 epochs, lr halved
# every epoch after epoch 12 (below 1/256 by epoch 20). Dynamic evaluation's grid: the rows trained first
# picked lr 1 alone and 0.3 or 1 with the cache, each an end of lr {0.3, 1}; the grid holds those points and
# one step of the 1-3-10 ladder beyond each end, at one decay, 0.01: its four runs (a learning rate each,
# reading valid once static and once adapting, as a run of the two-point grid does) go beside the three
# static commands within the 8 scoring commands a GPU row runs at once; a second decay would double each run.
PAPER_RECIPE = sgd(12)
PAPER_MATCHED_SIZE = "677"  # 2 x 677 holds the 2 x 650 layer row's parameter count (the nearest width), as 2 x 205 does
_paper = {
    "lstm": Row("LSTM (ours, `alm_lstm_ptb`)", ("--arch", "alm_lstm_ptb", *PAPER_RECIPE)),
    "single": Row(
        "`attentive_lm_ptb` single", ("--arch", "attentive_lm_ptb", "--attention-score", "single", *PAPER_RECIPE)
    ),
    "combined": Row(
        "`attentive_lm_ptb` combined", ("--arch", "attentive_lm_ptb", "--attention-score", "combined", *PAPER_RECIPE)
    ),
    "single-zero-context": Row(
        "`attentive_lm_ptb` single, context zeroed: the layer without the attention",
        ("--arch", "attentive_lm_ptb", "--attention-score", "single", "--zero-context", *PAPER_RECIPE),
    ),
    "lstm-matched": Row(
        f"LSTM (ours, `alm_lstm_ptb`), 2 x {PAPER_MATCHED_SIZE}: the concat layer's parameters as width",
        (
            "--arch",
            "alm_lstm_ptb",
            "--embed-dim",
            PAPER_MATCHED_SIZE,
            "--hidden-size",
            PAPER_MATCHED_SIZE,
            *PAPER_RECIPE,
        ),
    ),
}
# the same size read as document streams (20 streams of 35 tokens, the state carried), where the
# field's medium-size PTB figures stand; the pointer with its full-PTB row's settings
_paper_streams = {
    "lstm-stream": Row(f"{_paper['lstm'].description}, document streams", _paper["lstm"].args, "stream"),
    "single-zero-context-stream": Row(
        f"{_paper['single-zero-context'].description}, document streams", _paper["single-zero-context"].args, "stream"
    ),
    "single-stream": Row(
        f"`attentive_lm_ptb` single, document streams, M = {MEMORY}",
        ("--arch", "attentive_lm_ptb", "--attention-score", "single", "--memory-window", MEMORY, *PAPER_RECIPE),
        "stream",
    ),
    "ps-lstm-stream": Row(
        f"Pointer Sentinel-LSTM (`pointer_sentinel_lm_ptb`), document streams, L = {MEMORY}",
        ("--arch", "pointer_sentinel_lm_ptb", "--pointer-window", MEMORY, *PAPER_RECIPE)
        + ("--pointer-loss", "off", "--sentinel-scale", "0.1"),
        "stream",
    ),
}

PTB_PAPER = Corpus(
    "ptb-paper",
    label="full PTB, 2 x 650",
    epochs=20,
    anneal_after=12,
    data_name="ptb",
    source="ptb",
    rows={
        **_paper,
        # every row a declared comparison uses, at three seeds (benchmarks/comparisons.py)
        **seeded(_paper, ("lstm", "single-zero-context", "single", "combined", "lstm-matched"), (2, 3)),
        **_paper_streams,
    },
    paper=PTB.paper,
    dynamic_lrs="0.1,0.3,1,3",
    dynamic_decays="0.01",
    unrecorded_grid=("0.3,1", "0.01"),
    names_commits=True,
)

# The order in which `run.sh paper` trains the rows that have no JSON (its queue), by what each answers:
# first those trained (the queue passes over them), then the layer against its parameters spent as LSTM
# width and a second seed of the attention, then document streams, where the field's figures stand, then
# the second seeds left and the third seeds
PAPER_QUEUE = (
    "lstm",
    "single-zero-context",
    "single",
    "combined",
    "lstm-seed2",
    "single-zero-context-seed2",
    "lstm-matched",
    "single-seed2",
    "lstm-stream",
    "single-zero-context-stream",
    "single-stream",
    "ps-lstm-stream",
    "lstm-matched-seed2",
    "combined-seed2",
    "lstm-seed3",
    "single-zero-context-seed3",
    "single-seed3",
    "combined-seed3",
    "lstm-matched-seed3",
)


def without(args, recipe):
    """``args`` less the contiguous ``recipe`` within them (a row's own arguments may follow its recipe)."""
    at = next(i for i in range(len(args)) if args[i : i + len(recipe)] == recipe)
    return (*args[:at], *args[at + len(recipe) :])


# its dry run on a CPU (run.sh --dry-run paper): the same rows, route and grid at 2 x 32 on the shipped
# sample, 2 epochs
TINY = ("--embed-dim", "32", "--hidden-size", "32", "--num-layers", "2", "--dropout", "0.5")
PTB_PAPER_DRY = Corpus(
    "ptb-paper-dry",
    epochs=2,
    anneal_after=1,
    data_name="wikitext-2-sample",
    test_time=True,
    rows={
        name: Row(
            row.description.replace("_ptb", "") + " (2 x 32)",
            (*(a.replace("_ptb", "") for a in without(row.args, PAPER_RECIPE)), *TINY, *sgd(1)),
            row.reading,
            seed=row.seed,
        )
        for name, row in PTB_PAPER.rows.items()
    },
    cache_windows="100",
    dynamic_lrs=PTB_PAPER.dynamic_lrs,  # the same grid as the rows it stands in for
    dynamic_decays=PTB_PAPER.dynamic_decays,
)

# Slices that chose settings (the static figures only). The adaptive softmax's cutoffs on WikiText-2:
# the stream LSTM's first 600 updates with each of the two fastest (cpu/output_layer_speed.json)
WIKITEXT2_CUTOFFS = Corpus(
    "wikitext-2-cutoffs",
    epochs=1,
    anneal_after=2,
    data_name="wikitext-2",
    max_update=600,
    test_time=False,
    rows={
        f"lstm-stream-{cutoff.replace(',', '-')}": Row(
            f"LSTM, document streams, tied adaptive softmax {cutoff}",
            ("--arch", "alm_lstm", *OURS, "--adaptive-softmax-cutoff", cutoff, *WT2_RECIPE),
            "stream",
        )
        for cutoff in ("2000,10000", "1000,5000,15000")
    },
)
# the Pointer Sentinel's gate: the PTB stream row's first 3 epochs with each extra loss term and
# sentinel scale ('off' at scale 0.1 is the full-PTB row's own first 3: same seed, data order and lr)
POINTER_CHOICES = {
    "sentinel-1": ("off", "1"),
    "found": ("found", "1"),
    "all": ("all", "1"),
    "sentinel-0.1": ("off", "0.1"),
    "found-sentinel-0.1": ("found", "0.1"),
}
PTB_POINTER_LOSS = Corpus(
    "ptb-pointer-loss",
    epochs=3,
    anneal_after=4,
    data_name="ptb",
    test_time=False,
    rows={
        f"ps-lstm-stream-{choice}": Row(
            f"Pointer Sentinel-LSTM, document streams, `--pointer-loss {loss}"
            f"{'' if scale == '1' else f' --sentinel-scale {scale}'}`",
            (*_ptb["ps-lstm-stream"].args, "--pointer-loss", loss, "--sentinel-scale", scale),
            "stream",
        )
        for choice, (loss, scale) in POINTER_CHOICES.items()
    },
)

# the AMSRN paper's rows (a)-(d) and the Attentive LM's score functions and concat layer on the first
# 10,000 PTB sentences (Adam, which reaches a useful model in 3 epochs)
SLICE = ("--embed-dim", "256", "--hidden-size", "256", "--dropout", "0.3")
ADAM = ("--optimizer", "adam", "--lr", "0.002", "--clip-norm", "5")
PTB_SLICE = Corpus(
    "ptb-slice",
    label="a PTB slice (10,000 training sentences), 2 x 256, Adam",
    spread_from="ptb",
    epochs=3,
    anneal_after=None,
    data_name="ptb-10k",
    source="ptb",
    sentences=10000,
    test_time=False,
    rows={
        "fairseq-lstm_lm": Row(
            "(a) LSTM (fairseq `lstm_lm`)",
            (
                *fairseq_lstm_lm(256, 2, 0.3, tied=True),
                *ADAM,
            ),
        ),
        "amsrn-none": Row(
            "(b) LSTM + att (`amsrn --memory-selection none`)",
            ("--arch", "amsrn", *SLICE, "--memory-selection", "none", *ADAM),
        ),
        "amsrn": Row(
            "(c) LSTM + att + select (`amsrn --memory-selection tied`)",
            ("--arch", "amsrn", *SLICE, "--memory-selection", "tied", *ADAM),
        ),
        "amsrn-entropy-1": Row(
            "(d) (c) + entropy, `--attention-entropy-weight 1.0`",
            ("--arch", "amsrn", *SLICE, "--memory-selection", "tied", "--attention-entropy-weight", "1.0", *ADAM),
        ),
        **{
            f"{score}{suffix}": Row(
                f"`attentive_lm` {score}" + (", `--concat-activation linear`" if suffix else ""),
                (
                    "--arch",
                    "attentive_lm",
                    *SLICE,
                    "--attention-score",
                    score,
                    *(("--concat-activation", "linear") if suffix else ()),
                    *ADAM,
                ),
            )
            for score in ("single", "combined")
            for suffix in ("", "-linear")
        },
    },
)
# The dropout layout and the recipe's choices (docs/models.md, "Dropout" and "The recipe"): the first
# 10,000 PTB training sentences, the whole valid and test; each row one choice away from `single`.
CHOICE = ("--embed-dim", "256", "--hidden-size", "256", "--num-layers", "2", "--dropout", "0.5", *sgd(4))
SINGLE = ("--arch", "attentive_lm", "--attention-score", "single")
PTB_CHOICES = Corpus(
    "ptb-choices",
    label="PTB's first 10,000 sentences, 2 x 256",
    spread_from="ptb",
    epochs=4,
    anneal_after=None,
    data_name="ptb-10k-whole-dev",
    source="ptb",
    sentences=10000,
    sample_train_only=True,
    test_time=False,
    rows={
        "lstm": Row("LSTM (`alm_lstm`)", ("--arch", "alm_lstm", *CHOICE)),
        "single": Row("`attentive_lm` single", (*SINGLE, *CHOICE)),
        "single-attend-dropped": Row(
            "`attentive_lm` single, `--attend-dropped-states`", (*SINGLE, "--attend-dropped-states", *CHOICE)
        ),
        "amsrn": Row("`amsrn` tied", ("--arch", "amsrn", "--memory-selection", "tied", *CHOICE)),
        "amsrn-attend-dropped": Row(
            "`amsrn` tied, `--attend-dropped-states`",
            ("--arch", "amsrn", "--memory-selection", "tied", "--attend-dropped-states", *CHOICE),
        ),
        "single-zero-context": Row(
            "`attentive_lm` single, context zeroed: the layer without the attention",
            (*SINGLE, "--zero-context", *CHOICE),
        ),
        "single-forget-bias-1": Row(
            "`attentive_lm` single, `--forget-gate-bias 1` (the released code)",
            (*SINGLE, "--forget-gate-bias", "1", *CHOICE),
        ),
        "single-truncate": Row(
            "`attentive_lm` single, training sentences over 35 tokens truncated (the paper)",
            (*SINGLE, "--shorten-method", "truncate", "--shorten-data-split-list", "train", *CHOICE),
        ),
        "single-corpus-order": Row(
            "`attentive_lm` single, `--corpus-order` (the released code's batches)",
            (*SINGLE, "--corpus-order", *CHOICE),
        ),
    },
)
# Kawakami et al. (2017) Tables 4-5. One recipe for every character row: LSTMs of 256 with 128-d
# characters, dropout 0.3, Adam 0.002, clip 10, chunks of 35 words (the paper: 600-d, dropout 0.5);
# the epochs are set by the slowest row, the char LSTM, at one thread (docs/benchmarks.md).
CHARS = (
    "--char-embed-dim",
    "128",
    "--hidden-size",
    "256",
    "--dropout",
    "0.3",
    "--optimizer",
    "adam",
    "--lr",
    "0.002",
    "--clip-norm",
    "10",
)
CHAR_ROWS = {
    "char-lstm": Row("char LSTM (`char_lstm_lm`)", ("--arch", "char_lstm_lm", *CHARS), "characters"),
    "hclm": Row("HCLM (`hclm`)", ("--arch", "hclm", *CHARS), "characters"),
    "hclm-cache": Row("HCLM + cache (`char_cache_lm`)", ("--arch", "char_cache_lm", *CHARS), "characters"),
}
# full PTB (Mikolov's text: its <unk> is spelled as the five characters of a word, as the paper did)
PTB_CHARS = Corpus(
    "ptb-chars",
    epochs=6,
    anneal_after=None,
    data_name="ptb-open",
    source="ptb",
    open_vocabulary=True,
    test_time=False,
    streams=25,
    rows=CHAR_ROWS,
    paper={"char-lstm": "1.369 / 1.331", "hclm": "1.308 / 1.276", "hclm-cache": "1.266 / 1.247"},
)
# full WikiText-2 (its words seen < 3 times are already <unk>, spelled likewise; the paper read raw text)
WIKITEXT2_CHARS = Corpus(
    "wikitext-2-chars",
    epochs=2,
    anneal_after=None,
    data_name="wikitext-2-open",
    source="wikitext-2",
    open_vocabulary=True,
    test_time=False,
    streams=10,
    rows=CHAR_ROWS,
    paper={"char-lstm": "1.758 / 1.803", "hclm": "1.625 / 1.670", "hclm-cache": "1.480 / 1.500"},
)
# the first study: a WikiText-2 slice (first 12,000 sentences), the same recipe, 10 streams, 2 epochs
HCLM_SLICE = Corpus(
    "wikitext-2-open-slice",
    epochs=2,
    anneal_after=None,
    data_name="wikitext-2-open-12k",
    source="wikitext-2",
    sentences=12000,
    open_vocabulary=True,
    test_time=False,
    streams=10,
    rows=CHAR_ROWS,
    paper=WIKITEXT2_CHARS.paper,
)

# Where the field's medium-size PTB figures stand, each with the LSTM state carried across sentences and
# the standard count, as printed: (system, parameters, test)
PTB_MEDIUM_ANCHORS = [
    ("LSTM, medium (Zaremba et al. 2014)", "20M", "82.7"),
    ("LSTM, medium, tied + augmented loss (Inan et al. 2017)", "–", "73.2"),
    ("LSTM (Grave et al. 2017)", "–", "82.3"),
    ("the same + neural cache (Grave et al. 2017)", "–", "72.1"),
    ("Pointer Sentinel-LSTM, medium (Merity et al. 2017)", "21M", "70.9"),
]

# Salton et al. (2017) Table 2 as printed: (system, parameters, valid, test)
WIKITEXT2_PAPER = [
    ("Zoneout + Variational LSTM (Merity et al.)", "20M", "108.7", "100.9"),
    ("LSTM-LM (Grave et al.)", "–", "–", "99.3"),
    ("Variational LSTM (Merity et al.)", "20M", "101.7", "96.3"),
    ("Neural cache, size 100 (Grave et al.)", "–", "–", "81.6"),
    ("Pointer LSTM, window 100 (Merity et al.)", "21M", "84.8", "80.8"),
    ("Attentive LM, combined score", "50M", "74.3", "70.8"),
    ("Attentive LM, single score", "50M", "73.7", "69.7"),
    ("Neural cache, size 2000 (Grave et al.)", "–", "–", "68.9"),
]

CORPORA = {
    corpus.name: corpus
    for corpus in (
        PTB,
        PTB_PAPER,
        PTB_PAPER_DRY,
        WIKITEXT2,
        WIKITEXT2_CUTOFFS,
        PTB_POINTER_LOSS,
        PTB_SLICE,
        PTB_CHOICES,
        PTB_CHARS,
        WIKITEXT2_CHARS,
        HCLM_SLICE,
    )
}


def main(argv=None):
    parser = argparse.ArgumentParser(description="The tables' rows, declared as data (see the module's docstring).")
    parser.add_argument(
        "--paper-queue", action="store_true", help="print the paper step's rows in its queue's order, a row a line"
    )
    args = parser.parse_args(argv)
    if args.paper_queue:  # what benchmarks/gpu/run.sh reads: it holds no list of its own
        print("\n".join(PAPER_QUEUE))


if __name__ == "__main__":
    main()
