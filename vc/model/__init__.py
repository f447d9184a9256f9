"""The networks: the Tacotron-style attention model and the non-autoregressive converter it times."""

from vc.model.nonautoregressive import NonAutoregressiveOutput, NonAutoregressiveVC
from vc.model.seq2seq import Seq2SeqOutput, Seq2SeqVC, decoder_steps

__all__ = [
    "NonAutoregressiveOutput",
    "NonAutoregressiveVC",
    "Seq2SeqOutput",
    "Seq2SeqVC",
    "decoder_steps",
]
