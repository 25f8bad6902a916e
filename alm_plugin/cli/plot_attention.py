"""Draw a trained model's attention over its own history as heatmaps (Salton et al. Figs 2-3), one
panel per sentence.

    alm-plot-attention --path checkpoints/quickstart/checkpoint_best.pt --out attention.png \\
        "The game is set in Japan ." "It met with positive sales ."
"""

import argparse

import torch

from ..errors import ScoringError
from .model_loading import load_models, task_data
from .output_files import check_outputs, save_figure
from .tool import picture_path, run_tool


def check_has_history_attention(model, path):
    from ..models.history_language_model import HistoryAttentionLanguageModel

    if not isinstance(model, HistoryAttentionLanguageModel) or model.decoder.attention is None:
        raise ScoringError(
            f"{path} holds a {model.__class__.__name__}; alm-plot-attention draws the "
            "history attention of an attentive_lm or amsrn language model"
        )


def attention_rows(model, dictionary, sentence):
    """(inputs, predicted words, weights) for one sentence; weights is ``(T, S)``."""
    target = dictionary.encode_line(sentence, add_if_not_exist=False, append_eos=True).long()
    source = torch.cat([target.new([dictionary.eos()]), target[:-1]])
    with torch.no_grad():
        _, extra = model(source[None])
    weights = extra.get("history_attn", [None])[0] if isinstance(extra, dict) else None
    if weights is None:
        raise ScoringError(f"{model.__class__.__name__} has no history attention to draw")
    weights = weights[0]
    inputs = [dictionary[i] for i in source]
    if weights.size(1) == len(inputs) + 1:  # the memory starts with h_0 (AMSRN, sentinel)
        inputs = ["h0"] + inputs
    return inputs, [dictionary[i] for i in target], weights.numpy()


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="alm-plot-attention", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("sentences", nargs="+", help="tokenised sentences, as in the training data")
    parser.add_argument("--path", required=True, help="checkpoint of attentive_lm or amsrn")
    parser.add_argument(
        "--data", help="data-bin directory with the model's dict.txt (default: the one saved in the checkpoint)"
    )
    parser.add_argument("--out", default="attention.png", help="PNG file to write")
    args = parser.parse_args(argv)
    run_tool("alm-plot-attention", run, args)


def run(args):
    check_outputs({"--out": args.out}, {"--path": [args.path]}, data=[args.data])  # the name as given
    args.out = picture_path(args.out, "--out")  # the file savefig writes: no extension, .png added
    check_outputs({"--out": args.out}, {"--path": [args.path]}, data=[args.data])
    # on the CPU: a few sentences, and the weights are drawn from there
    ((model, task),) = load_models([args.path], args.data, use_cpu=True, tool="alm-plot-attention")
    check_outputs({"--out": args.out}, {"--path": [args.path]}, data=[task_data(task)])
    check_has_history_attention(model, args.path)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [attention_rows(model, task.source_dictionary, s) for s in args.sentences]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 5), squeeze=False)
    for ax, (inputs, predicted, weights) in zip(axes[0], panels):
        image = ax.imshow(weights, cmap="Greys", vmin=0.0, vmax=1.0, aspect="auto")
        ax.set_xticks(range(len(inputs)), inputs, rotation=90)
        ax.set_yticks(range(len(predicted)), predicted)
        ax.set_xlabel("input (memory slot)")
        ax.set_ylabel("predicted word")
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8, label="attention weight")
    fig.suptitle(f"{model.__class__.__name__}: attention over earlier states")
    save_figure(fig, args.out, dpi=110, bbox_inches="tight")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
