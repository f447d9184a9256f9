"""The model section: the settings every model kind shares (ModelConfig) and each kind's own section,
the class the model section of that model.kind is read into (vc/kinds/ holds the kinds, each importing
its section from here), so a key of another kind is an error, not silently ignored.

MODEL_SECTIONS is what the config floor knows of the kinds: adding a kind is its section here and a line
there, its module in vc/kinds/ and a line in vc.kinds.KINDS (a test checks that the two agree).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from vc.errors import ConfigError
from vc.settings.section import Section

# What the attention model's encoder can read (model.encoder_input; vc/model/content.py builds each).
ENCODER_INPUTS = ("mels", "content", "both")


@dataclass
class ModelConfig(Section):
    """The model section's settings every kind shares: which kind, the encoder and the postnet.

    Each kind's own settings extend this class below (e.g. the attention model's decoder in
    AttentionConfig): the model section is read into the class of its model.kind."""

    # Which network: "attention" (vc/kinds/attention.py), "nonautoregressive", "recognition_synthesis"
    # (vc/kinds/).
    kind: str = "attention"
    # The number of mel bands comes from audio.n_mels.
    # Encoder: frame stacking, prenet, convolutions, bidirectional LSTM.
    encoder_reduction_factor: int = 2
    encoder_prenet_dim: int = 256
    encoder_conv_layers: int = 2
    encoder_conv_channels: int = 256
    encoder_conv_kernel: int = 5
    encoder_hidden_dim: int = 128  # per direction; annotations are 2x this
    encoder_dropout: float = 0.1
    # Postnet (Tacotron 2): residual conv stack on the predicted mels.
    postnet_layers: int = 5
    postnet_channels: int = 256
    postnet_kernel: int = 5
    postnet_dropout: float = 0.5

    NAME: ClassVar[str] = "model"
    # Keys that must be positive / odd (to keep lengths); a kind's class adds its own.
    POSITIVE: ClassVar[tuple[str, ...]] = (
        "encoder_reduction_factor", "encoder_conv_layers", "encoder_hidden_dim", "postnet_layers"
    )  # fmt: skip
    ODD: ClassVar[tuple[str, ...]] = ("encoder_conv_kernel", "postnet_kernel")
    # Keys that steer training (its losses, schedule and stopping rule), not what the network is: a run
    # resumed with another value is still one model (`vc average` averages its snapshots). A kind's class
    # adds its own.
    TRAINING_ONLY: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def network_settings(cls, settings: dict) -> dict:
        """``settings`` (a stored model section) without the keys of TRAINING_ONLY, this class's and its
        parents'."""
        dropped = {key for klass in cls.__mro__ for key in vars(klass).get("TRAINING_ONLY", ())}
        return {key: value for key, value in settings.items() if key not in dropped}


@dataclass
class AttentionConfig(ModelConfig):
    """The model section of kind attention: the shared encoder and postnet, its attention and decoder."""

    kind: str = "attention"
    # What the encoder reads (vc/model/content.py): mels, the source's log-mels; content, what the run's
    # phone recognizer (data.phones; the recognition-synthesis converter's, shared) hears of them, its
    # last hidden layer, and their pitch features; both, the two side by side (SCENT).
    encoder_input: str = "mels"
    # Self-reconstruction first: the first self_steps training steps read the target's own recordings as
    # input and learn to say them back through the same attention (a decoder that speaks before it
    # converts); the pairs from then on. 0: the pairs from the first step.
    self_steps: int = 0
    # Attention: location | content | dot | general | location_general.
    attention_type: str = "location"
    attention_dim: int = 128
    attention_location_filters: int = 32
    attention_location_kernel: int = 31
    # Decoder: prenet, attention RNN, two residual decoder RNN layers.
    reduction_factor: int = 2
    decoder_prenet_dim: int = 256
    decoder_prenet_dropout: float = 0.5  # stays on at inference (Tacotron 2)
    attention_rnn_dim: int = 256
    decoder_rnn_dim: int = 256
    # Its losses: the stop token's BCE with positives weighted by stop_pos_weight, and guided attention
    # (Tachibana et al. 2018): the attention mass outside a diagonal band of width guided_attention_sigma,
    # weighted by guided_attention_weight beside the spectral loss.
    stop_pos_weight: float = 5.0
    guided_attention_sigma: float = 0.4
    guided_attention_weight: float = 1.0
    # End training at the first evaluation where its free-running dev conversions show it converts
    # (vc/training/converts.py): their focus rate at least converts_focus, and their distance fallen by
    # less than converts_gain_db [dB] since the previous evaluation. train.max_minutes and
    # train.max_steps stay its cap. False: the budget alone ends it.
    until_converts: bool = False
    converts_focus: float = 0.75
    converts_gain_db: float = 0.2

    POSITIVE: ClassVar[tuple[str, ...]] = (
        "reduction_factor",
        "attention_dim",
        "attention_rnn_dim",
        "decoder_rnn_dim",
    )
    ODD: ClassVar[tuple[str, ...]] = ("attention_location_kernel",)
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"encoder_input": ENCODER_INPUTS}
    TRAINING_ONLY: ClassVar[tuple[str, ...]] = (
        "self_steps",
        "stop_pos_weight",
        "guided_attention_sigma",
        "guided_attention_weight",
        "until_converts",
        "converts_focus",
        "converts_gain_db",
    )

    def check(self) -> None:
        if self.self_steps < 0:
            raise ConfigError(f"model.self_steps must be 0 or more, got {self.self_steps}")


@dataclass
class ParallelDecoderConfig(ModelConfig):
    """The settings of the converters that decode all frames at once (this kind, the recognition-synthesis
    converter's parallel synthesizer): residual conv blocks over the output frames (FastSpeech, Ren et al.
    2019)."""

    parallel_decoder_layers: int = 6
    parallel_decoder_channels: int = 256
    parallel_decoder_kernel: int = 5
    parallel_decoder_dropout: float = 0.1

    POSITIVE: ClassVar[tuple[str, ...]] = ("parallel_decoder_layers", "parallel_decoder_channels")
    ODD: ClassVar[tuple[str, ...]] = ("parallel_decoder_kernel",)


@dataclass
class NonAutoregressiveConfig(ParallelDecoderConfig):
    """The model section of kind nonautoregressive: the parallel decoder and the duration predictor's
    conv blocks over the encoder steps."""

    kind: str = "nonautoregressive"
    duration_predictor_layers: int = 2
    duration_predictor_channels: int = 256
    duration_predictor_kernel: int = 3
    duration_loss_weight: float = 1.0  # its loss, the MSE of log(d + 1), beside the spectral L1 + L2

    POSITIVE: ClassVar[tuple[str, ...]] = ("duration_predictor_channels",)
    ODD: ClassVar[tuple[str, ...]] = ("duration_predictor_kernel",)
    TRAINING_ONLY: ClassVar[tuple[str, ...]] = ("duration_loss_weight",)


@dataclass
class RecognitionSynthesisConfig(ParallelDecoderConfig):
    """The model section of kind recognition_synthesis: which content features the synthesizer reads;
    the parallel synthesizer's settings (vc/model/parallel_synthesizer.py: parallel_decoder_*)."""

    kind: str = "recognition_synthesis"
    content: str = "hidden"  # the recognizer's last hidden layer, the one value (docs/ablation.md, "The
    # recognition-synthesis converter becomes the model")

    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"content": ("hidden",)}


# model.kind -> the class of its section (vc.kinds.KINDS names the same class for each kind).
MODEL_SECTIONS: dict[str, type[ModelConfig]] = {
    "attention": AttentionConfig,
    "nonautoregressive": NonAutoregressiveConfig,
    "recognition_synthesis": RecognitionSynthesisConfig,
}


def model_section(kind: str) -> type[ModelConfig]:
    """The class of model.kind's section; a ConfigError listing the kinds for an unknown name."""
    try:
        return MODEL_SECTIONS[kind]
    except KeyError:
        raise ConfigError(f"model.kind must be one of {', '.join(MODEL_SECTIONS)}, got {kind!r}") from None
