"""Conversion: the Converter (a trained model plus features, statistics and vocoder), files and
folders around it, and teacher forcing as an inference mode (teacher_forcing.py)."""

from vc.inference.converter import Conversion, Converter, pick_device
from vc.inference.files import (
    Failure,
    check_outputs,
    check_writable,
    collect_inputs,
    convert_files,
    save_alignment,
)

__all__ = [
    "Conversion",
    "Converter",
    "Failure",
    "check_outputs",
    "check_writable",
    "collect_inputs",
    "convert_files",
    "pick_device",
    "save_alignment",
]
