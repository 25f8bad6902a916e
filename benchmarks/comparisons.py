"""The comparisons the docs make, declared as data: each names its corpus, the baseline row, the row set
beside it and what the two differ in. ``report`` writes every statement that sets two rows side by side
from these declarations and credits a change only to the declared difference; a model that differs from
the LSTM in two things is two comparisons (two steps), or one that says it cannot tell the two apart.

A row's seeds (``<row>-seed<k>`` in the same corpus, ``rows.seeded``) are read together: a comparison
uses their means and calls the two rows apart only when the means differ by more than the widest seed range
measured on that split for that corpus and size (where it has no seeds: the corpus it borrows them from,
``Corpus.spread_from``), and never by less than ``FLOOR`` (``report.statements.spread``)."""

from dataclasses import dataclass

from benchmarks.rows import DROPOUT, DROPOUTS

FLOOR = 1.0  # % either way that counts as level however close two seeds happened to fall


@dataclass(frozen=True)
class Comparison:
    corpus: str  # rows.CORPORA's name
    baseline: str
    row: str
    things: tuple  # what ``row`` changes from ``baseline``: one thing, or the things no row separates
    note: str = ""  # the mechanism behind the difference, where the docs explain it
    parameters: bool = False  # a step in parameters: the statement gives both rows' counts, held and trained


def compare(corpus, baseline, row, *things, note="", parameters=False):
    return Comparison(corpus, baseline, row, things, note, parameters)


LAYER = "the concat layer alone (`--zero-context`: the attention's context zeroed)"
ATTENTION = "the attention (single score) on top of the concat layer"
COMBINED = "the combined score (Eq. 10) in place of the single score"
PARAMETERS = (
    "the LSTM widened to the concat layer row's parameter count (matched on those it holds, not those it trains)"
)
LAYER_FOR_WIDTH = "the concat layer in place of as many parameters held, spent on LSTM width"
LINEAR = "a linear concat layer in place of tanh (`--concat-activation linear`)"
DROPPED = "the attention reading dropped states (`--attend-dropped-states`)"
CARRIED = "the LSTM state carried across sentences (20 document streams, scored as one stream)"
POINTER = "the pointer (a sentinel mixture over the last 100 words)"
ATTENTION_ACROSS = "the attention (single score) over the last 100 states, across sentence boundaries"
MEMORY_ACROSS = "attention across sentence boundaries (`--memory-window 100`)"
# AMSRN's output layer W_1 h_t + W_2 r_t acts on h_t even where r_t is zero (docs/models.md)
AMSRN = ("AMSRN's output layer", "its attention with memory selection")


def from_the_lstm(corpus):
    """The steps from the LSTM to the attentive models, one thing each, and the parameters' own step."""
    return (
        compare(corpus, "lstm", "single-zero-context", LAYER),
        compare(corpus, "single-zero-context", "single", ATTENTION),
        compare(corpus, "single", "combined", COMBINED),
        compare(corpus, "lstm", "lstm-matched", PARAMETERS, parameters=True),
        compare(corpus, "lstm-matched", "single-zero-context", LAYER_FOR_WIDTH, parameters=True),
    )


COMPARISONS = (
    # full PTB, 2 x 200, one sentence at a time
    *from_the_lstm("ptb"),
    compare(
        "ptb",
        "single",
        "single-bc",
        "the bias b_c of Eq. 7 as printed (`--combination-bias`)",
        note="through the tied output b_c is a unigram shortcut that takes the clipped SGD steps, which is why "
        "`--combination-bias` is off by default",
    ),
    compare("ptb", "single", "single-linear", LINEAR),
    compare("ptb", "lstm", "amsrn", *AMSRN),
    compare("ptb", "amsrn", "amsrn-entropy-0.1", "the entropy regularizer on the attention weights, lambda 0.1"),
    compare("ptb", "amsrn", "amsrn-entropy-1", "the entropy regularizer on the attention weights, lambda 1"),
    compare(
        "ptb",
        "lstm",
        "fairseq-lstm_lm",
        "fairseq's own `lstm_lm` model code in place of ours (its initialisation, no output bias when tied), on our "
        "task and batching",
    ),
    compare(
        "ptb",
        "lstm",
        "fairseq-transformer_lm",
        "fairseq's `transformer_lm` of about the same size in place of the LSTM",
        "Adam (lr 0.001) in place of SGD (lr 1), one run not tuned here",
        "an inverse square-root schedule with 1,000 warm-up updates in place of halving the step after epoch 4",
    ),
    # full PTB, 2 x 200, document streams
    compare("ptb", "lstm", "lstm-stream", CARRIED),
    compare("ptb", "lstm-stream", "single-stream", "the concat layer", MEMORY_ACROSS),
    compare("ptb", "lstm-stream", "amsrn-stream", *AMSRN, MEMORY_ACROSS),
    compare("ptb", "lstm-stream", "ps-lstm-stream", POINTER),
    compare(
        "ptb",
        "ps-lstm-stream",
        "ps-lstm-stream-found",
        "the pointer's extra loss on found words (`--pointer-loss found`)",
    ),
    # full PTB at the paper's 2 x 650, one sentence at a time
    *from_the_lstm("ptb-paper"),
    # the recipe's choices on a PTB slice, each a row one choice away from its reference
    compare("ptb-choices", "lstm", "single-zero-context", LAYER),
    compare("ptb-choices", "single-zero-context", "single", ATTENTION),
    compare("ptb-choices", "lstm", "amsrn", *AMSRN),
    compare("ptb-choices", "single", "single-attend-dropped", DROPPED),
    compare("ptb-choices", "amsrn", "amsrn-attend-dropped", DROPPED),
    compare("ptb-choices", "single", "single-forget-bias-1", "the forget-gate bias 1 of the released code"),
    compare("ptb-choices", "single", "single-truncate", "training sentences over 35 tokens truncated (the paper)"),
    compare("ptb-choices", "single", "single-corpus-order", "the released code's batches (`--corpus-order`)"),
    # the AMSRN paper's rows (a)-(d) and the Attentive LM's variants on a PTB slice, Adam
    compare(
        "ptb-slice",
        "fairseq-lstm_lm",
        "amsrn-none",
        "our decoder (fairseq's `lstm_lm` is the peer)",
        "AMSRN's output layer",
        "its attention without memory selection",
    ),
    compare("ptb-slice", "amsrn-none", "amsrn", "memory selection (`--memory-selection tied`)"),
    compare("ptb-slice", "amsrn", "amsrn-entropy-1", "the entropy regularizer on the attention weights, lambda 1"),
    compare("ptb-slice", "single", "combined", COMBINED),
    compare("ptb-slice", "single", "single-linear", LINEAR),
    compare("ptb-slice", "combined", "combined-linear", LINEAR),
    # full PTB at 2 x 650, document streams
    compare("ptb-paper", "lstm", "lstm-stream", CARRIED),
    compare("ptb-paper", "lstm-stream", "single-zero-context-stream", LAYER),
    compare("ptb-paper", "single-zero-context-stream", "single-stream", ATTENTION_ACROSS),
    compare("ptb-paper", "lstm-stream", "ps-lstm-stream", POINTER),
    # WikiText-2, 2 x 200 (no context-zeroed row: the layer and the attention together)
    compare("wikitext-2", "lstm", "single", "the concat layer", "the attention (single score)"),
    compare("wikitext-2", "single", "combined", COMBINED),
    compare("wikitext-2", "lstm", "amsrn", *AMSRN),
    compare("wikitext-2", "lstm", "lstm-stream", CARRIED),
    compare("wikitext-2", "lstm-stream", "single-stream", "the concat layer", MEMORY_ACROSS),
    compare("wikitext-2", "lstm-stream", "ps-lstm-stream", POINTER),
    compare(
        "wikitext-2",
        "lstm-stream",
        "fairseq-lstm_lm",
        "fairseq's own `lstm_lm` model code in place of ours",
        "fairseq's `language_modeling` task: shuffled 35-token blocks, no state carried, in place of our streams",
        "its untied adaptive softmax in place of our tied one",
    ),
)


@dataclass(frozen=True)
class Tuned:
    """Steps taken again with each model at the setting its own valid ppl picks among its rows (same seed,
    the setting alone differing): whether an answer survives each model's best setting (Melis et al. 2018)."""

    corpus: str
    setting: str  # what each model's rows differ in
    choices: dict  # model -> {value: row}
    steps: tuple  # (baseline model, model, the thing the step changes)


def at_dropouts(model):
    """``{dropout: row}`` of ``model`` (``rows.at_dropout``'s names; ``DROPOUT`` is the model's own row)."""
    return {p: model if p == DROPOUT else f"{model}-dropout-{p}" for p in sorted((DROPOUT, *DROPOUTS))}


BEST_DROPOUT = Tuned(
    "ptb",
    "dropout",
    {model: at_dropouts(model) for model in ("lstm", "single-zero-context", "single")},
    (("lstm", "single-zero-context", LAYER), ("single-zero-context", "single", ATTENTION)),
)


def declared(corpus_name, rows=None):
    """The comparisons of ``corpus_name`` in their declared order (``rows``: only those whose row is among them)."""
    return [c for c in COMPARISONS if c.corpus == corpus_name and (rows is None or c.row in rows)]


@dataclass(frozen=True)
class Goal:
    block: str  # the docs/benchmarks.md block that states it (its marker)
    subject: str  # what the figure is of: a model, a row, a set of rows
    figure: str  # the figure and the side of the bound that meets the goal
    bound: float  # the figure's bound, as the block prints it


# the goals the report states, read by its blocks (``goal``, ``goals``): the bound of each, not its verdict
GOALS = (
    Goal("train-speed", "alm_lstm", "training step's speed against a bare nn.LSTM LM's, at least", 0.95),
    Goal("train-speed", "attentive_lm single", "training step's speed against a bare nn.LSTM LM's, at least", 0.85),
    Goal("train-speed", "attentive_lm combined", "training step's speed against a bare nn.LSTM LM's, at least", 0.75),
    Goal("train-speed", "amsrn tied", "training step's speed against a bare nn.LSTM LM's, at least", 0.85),
    Goal("host-overhead", "update", "the host's ms an update against the first plugin's, at most", 0.5),
    Goal("ptb-paper-stream", "best stream row", "test ppl with the cache and dynamic evaluation, at most", 65.0),
    Goal("ptb-stream", "memory across sentences", "% test ppl ahead of the stream LSTM, at least", 3.0),
    Goal("ptb-stream", "attention, training", "the stream step's speed against alm_lstm's, at least", 0.85),
    Goal("ptb-stream", "neural cache, scoring", "eval speed against scoring without the cache, at least", 0.8),
    Goal("ptb-stream", "dynamic evaluation", "% below the static test ppl on every stream row, at least", 10),
    Goal("ptb-stream", "lstm-stream, cache and dynamic", "test ppl, below", 80),
    Goal("ptb-stream", "dynamic evaluation, speed", "eval tokens/s against static scoring, at least", 0.35),
    Goal(
        "adaptive-softmax", "speed", "WikiText-2 training step's speed against a PTB full-softmax step's, at least", 1.5
    ),
    Goal("adaptive-softmax", "pointer", "the pointer's step's speed against alm_lstm's, at least", 0.85),
    Goal("adaptive-softmax", "quality", "% change in the PTB stream LSTM's test ppl, at most", 3.0),
    Goal("wikitext-2", "cache", "% below each stream row's static test ppl, at least", 25),
    Goal("wikitext-2", "dynamic", "% below each stream row's static test ppl, at least", 15),
    Goal("wikitext-2", "pointer", "% test ppl ahead of the stream LSTM, at least", 10),
    Goal("wikitext-2", "best", "% the best combination's test ppl below the sentence-level LSTM's, at least", 40),
    Goal("wikitext-2", "fairseq-lstm_lm", "% the peer's test ppl above the stream LSTM's, at least", 0),
    Goal("char-speed", "char_cache_lm (K=100)", "speed against HCLM's in training and scoring, above", 0.5),
)


def goals(block):
    """``{subject: bound}`` of ``block``'s goals, in their declared order."""
    return {g.subject: g.bound for g in GOALS if g.block == block}


def goal(block, subject):
    """The bound of ``block``'s goal for ``subject``."""
    return goals(block)[subject]
