"""What the criterion counts in a batch, counted on the host where the batch is collated: on a GPU
``attention_cross_entropy`` would otherwise read each count from the device in every update."""

import torch


def count_on_host(batch, dictionary):
    """Adds to a collated ``batch``, still on the host, what the criterion counts: ``scored_rows``
    (the samples that hold a scored token, an int) and ``first_words`` (the flat positions of the
    targets read from a sentence boundary, as ``_first_words`` finds them). A batch without one
    ``target`` tensor is left as it is. Returns the batch."""
    target = batch.get("target") if isinstance(batch, dict) else None
    if not isinstance(target, torch.Tensor) or "net_input" not in batch:
        return batch
    net_input = batch["net_input"]
    inputs = net_input.get("prev_output_tokens", net_input.get("src_tokens"))
    real = target.ne(dictionary.pad())
    if real.dim() != 2:
        return batch
    batch["scored_rows"] = int(real.any(1).sum())
    if inputs is not None and inputs.shape == target.shape:
        first = (inputs.eq(dictionary.eos()) | inputs.eq(dictionary.bos())) & real
        batch["first_words"] = first.flatten().nonzero().squeeze(1)
    return batch


class CountedCollate:
    """A dataset's collater followed by ``count_on_host``: the batch as it is finally collated
    (whatever wraps the dataset, e.g. fairseq's context windows) gets the criterion's counts."""

    def __init__(self, collate, dictionary):
        self.collate, self.dictionary = collate, dictionary

    def __call__(self, samples):
        return count_on_host(self.collate(samples), self.dictionary)
