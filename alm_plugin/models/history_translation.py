"""Translation models whose decoder is one of our history-attention decoders.

    encoder: fairseq's (bidirectional) ``LSTMEncoder``
    decoder: the attentive LM or AMSRN decoder (``--decoder-type``), started from the
             encoder's final state, with source attention (Luong "general", as fairseq's LSTM
             models) beside its attention over its own earlier states -- the Attentive LM
             paper's future-work item:

    h'_t = tanh(W_c [h_t ; c_t ; z_t] + b_c)          (attentive; AMSRN: W_1 h_t + W_2 r_t + W_3 z_t)

Decoder options keep the language models' names; the encoder's start with ``--encoder-``.
"""

from dataclasses import dataclass, field

from fairseq.dataclass import ChoiceEnum
from fairseq.models import FairseqEncoderDecoderModel, register_model, register_model_architecture
from fairseq.models.lstm import LSTMEncoder
from fairseq.tasks.language_modeling import LanguageModelingTask

from ..data.task_reading import reads_characters
from ..errors import OptionError
from ..modules.history_lstm_decoder import combination_bias_field
from ..options.adaptive_softmax import check_criterion_of
from .amsrn import AMSRNConfig, AMSRNDecoder
from .arch_defaults import set_arch_defaults
from .attentive_lm import AttentiveLMConfig, AttentiveLMDecoder
from .checkpoint_fit import CheckpointFitMixin

DECODERS = {"attentive": AttentiveLMDecoder, "amsrn": AMSRNDecoder}


@dataclass
class HistoryTranslationConfig(AttentiveLMConfig, AMSRNConfig):
    decoder_type: ChoiceEnum(list(DECODERS)) = field(
        default="attentive",
        metadata={
            "help": "attentive: the Attentive LM decoder (--attention-score ...); amsrn: the AMSRN "
            "decoder (--memory-selection ...)"
        },
    )
    encoder_embed_dim: int = field(default=256, metadata={"help": "source word embedding size"})
    encoder_hidden_size: int = field(default=256, metadata={"help": "encoder LSTM size (per direction)"})
    encoder_layers: int = field(default=1, metadata={"help": "number of encoder LSTM layers"})
    encoder_bidirectional: bool = field(default=True, metadata={"help": "bidirectional encoder"})
    encoder_dropout: float = field(default=0.3, metadata={"help": "dropout on the encoder's embeddings and outputs"})
    init_range: float = field(
        default=0.1,
        metadata={
            "help": "decoder weights start uniform in [-init_range, init_range], biases at 0 (the "
            "language models: 0.05)"
        },
    )
    combination_bias: bool = combination_bias_field(default=True)
    share_all_embeddings: bool = field(
        default=False,
        metadata={"help": "the encoder reads the decoder's (tied) embeddings: needs a joined dictionary"},
    )


@register_model("attentive_nmt", dataclass=HistoryTranslationConfig)
class HistoryTranslationModel(CheckpointFitMixin, FairseqEncoderDecoderModel):
    """LSTM encoder + attentive or AMSRN decoder; ``extra["attn"]`` holds the source
    attention (``--print-alignment``), ``extra["history_attn"]`` the attention over the
    decoder's own history (``--attention-entropy-weight`` works as for the LMs)."""

    @classmethod
    def build_model(cls, cfg, task):
        cfg = cls.complete_config(cfg)
        src_dict, tgt_dict = task.source_dictionary, task.target_dictionary
        if src_dict is None or tgt_dict is None or isinstance(task, LanguageModelingTask) or reads_characters(task):
            raise OptionError(
                f"--arch {cfg._name} is a translation model: train it with "
                "--task translation (source and target dictionaries)"
            )
        if cfg.share_all_embeddings:
            check_shared_embeddings(cfg, src_dict, tgt_dict)
        source_dim = cfg.encoder_hidden_size * (2 if cfg.encoder_bidirectional else 1)  # LSTMEncoder.output_units
        decoder = DECODERS[cfg.decoder_type](cfg, tgt_dict, source_dim=source_dim)
        encoder = LSTMEncoder(
            src_dict,
            embed_dim=cfg.encoder_embed_dim,
            hidden_size=cfg.encoder_hidden_size,
            num_layers=cfg.encoder_layers,
            dropout_in=cfg.encoder_dropout,
            dropout_out=cfg.encoder_dropout,
            bidirectional=cfg.encoder_bidirectional,
            left_pad=True,
            pretrained_embed=decoder.embed_tokens if cfg.share_all_embeddings else None,
            padding_idx=src_dict.pad(),
        )
        if decoder.adaptive_softmax is not None:
            check_criterion_of(task)  # fairseq's translation task would build any criterion
        return cls.record_options(cls(encoder, decoder), cfg)


def check_shared_embeddings(cfg, src_dict, tgt_dict):
    """One embedding for source, target and output, as fairseq's ``lstm`` shares them: one dictionary, one width."""
    if src_dict != tgt_dict:
        raise OptionError(
            "--share-all-embeddings needs one dictionary for both languages: binarise the data with "
            "fairseq-preprocess --joined-dictionary, or drop the option"
        )
    if cfg.encoder_embed_dim != cfg.embed_dim:
        raise OptionError(
            f"--share-all-embeddings: --encoder-embed-dim {cfg.encoder_embed_dim} must equal --embed-dim "
            f"{cfg.embed_dim}, the decoder's embedding it shares"
        )


# --arch attentive_nmt: the config's defaults (1 x 256 bi-LSTM encoder, 2 x 650 decoder).


@register_model_architecture("attentive_nmt", "attentive_nmt_small")
def attentive_nmt_small(args):
    """Sized for Multi30k on a CPU: 256-d embeddings, 1 x 256 bi-LSTM encoder, 1 x 256 decoder."""
    set_arch_defaults(
        args,
        embed_dim=256,
        hidden_size=256,
        num_layers=1,
        dropout=0.3,
        encoder_embed_dim=256,
        encoder_hidden_size=256,
        encoder_layers=1,
    )


@register_model_architecture("attentive_nmt", "amsrn_nmt")
def amsrn_nmt(args):
    args.decoder_type = "amsrn"


@register_model_architecture("attentive_nmt", "amsrn_nmt_small")
def amsrn_nmt_small(args):
    attentive_nmt_small(args)
    args.decoder_type = "amsrn"
