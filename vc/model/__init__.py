"""Tacotron-style attention model for voice conversion."""

from vc.model.seq2seq import Seq2SeqOutput, Seq2SeqVC, build_model, decoder_steps

__all__ = ["Seq2SeqOutput", "Seq2SeqVC", "build_model", "decoder_steps"]
