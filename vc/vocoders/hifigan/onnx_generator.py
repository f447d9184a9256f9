"""HiFi-GAN's generator run by onnxruntime: the same network and weights, written as an ONNX graph.

On a CPU without bfloat16 hardware the generator computes in float32, and there onnxruntime's
convolutions run it faster than torch's, and keep their pace beside a busy core. On the 2-core AMD
EPYC of family 23, per frame of its mel: 19.2-20.8 ms on one thread against torch's 23.4 (windows of
128 frames), 9.3-11.1 on two against 15.0, and 19.0 on two with the other core busy against torch's
28.3; its time per frame is flat in the window's length, where torch's grows; the whole conversion ran
at 1.6x torch's speed (docs/ablation.md, "HiFi-GAN through onnxruntime").

The graph is written here from the generator's modules, in the order of
vc.vocoders.hifigan.generator.HifiganGenerator.forward: a Conv per Conv1d, a ConvTranspose per ConvTranspose1d,
the leaky ReLUs, the multi-receptive-field sums and the tanh; its samples are torch's to rounding
(tested). The ONNX file format is protocol buffers (onnx.proto; the fields this graph needs are
numbered below), written by a few lines of ``_Message`` rather than by the onnx package, whose import
alone took 1.5 s on that CPU.

onnxruntime's threads do not spin while they wait: the recipe runs another process beside the
vocoder, and a spinning thread takes the core it needs.
"""

from __future__ import annotations

import struct

import numpy as np
import torch

from vc.errors import MissingPackageError
from vc.packages import missing
from vc.vocoders.hifigan.generator import LEAKY_SLOPE, HifiganGenerator
from vc.vocoders.hifigan.weights import EXTRA

OPSET = 17  # the ONNX operator set the nodes are read in
IR_VERSION = 8  # the ONNX file format's version (onnxruntime >= 1.11 reads it)
FLOAT = 1  # TensorProto.FLOAT
ATTRIBUTE_FLOAT, ATTRIBUTE_INTS = 1, 7  # AttributeProto.FLOAT, .INTS
RUNTIME_PACKAGE = "onnxruntime"  # the [neural] extra brings it


class _Message:
    """A protocol-buffers message being written: fields appended in order (the wire format of
    https://protobuf.dev/programming-guides/encoding/; varints, 32-bit floats, length-delimited)."""

    def __init__(self):
        self.parts: list[bytes] = []

    @staticmethod
    def _varint(value: int) -> bytes:
        out = bytearray()
        while True:
            byte, value = value & 0x7F, value >> 7
            out.append(byte | (0x80 if value else 0))
            if not value:
                return bytes(out)

    def add_int(self, field: int, value: int) -> _Message:
        self.parts += [self._varint(field << 3), self._varint(value)]
        return self

    def add_float(self, field: int, value: float) -> _Message:
        self.parts += [self._varint(field << 3 | 5), struct.pack("<f", value)]
        return self

    def add_bytes(self, field: int, value: bytes | str | _Message) -> _Message:
        if isinstance(value, _Message):
            value = value.serialize()
        elif isinstance(value, str):
            value = value.encode()
        self.parts += [self._varint(field << 3 | 2), self._varint(len(value)), value]
        return self

    def serialize(self) -> bytes:
        return b"".join(self.parts)


def _tensor(name: str, value: torch.Tensor | float) -> _Message:
    """TensorProto: dims 1, data_type 2, name 8, raw_data 9 (little-endian float32)."""
    array = np.asarray(value.detach().cpu() if isinstance(value, torch.Tensor) else value, "<f4")
    tensor = _Message()
    for size in array.shape:
        tensor.add_int(1, size)
    return tensor.add_int(2, FLOAT).add_bytes(8, name).add_bytes(9, array.tobytes())


def _value_info(name: str, dims: list[int | str]) -> _Message:
    """ValueInfoProto (name 1, type 2) of a float tensor: TypeProto.tensor_type 1 {elem_type 1,
    shape 2 {dim 1 {dim_value 1 | dim_param 2}}}."""
    shape = _Message()
    for dim in dims:
        shape.add_bytes(
            1, _Message().add_bytes(2, dim) if isinstance(dim, str) else _Message().add_int(1, dim)
        )
    return (
        _Message()
        .add_bytes(1, name)
        .add_bytes(2, _Message().add_bytes(1, _Message().add_int(1, FLOAT).add_bytes(2, shape)))
    )


class _Graph:
    """GraphProto: nodes (field 1) in order, initializers (5); each ``add`` names its output."""

    def __init__(self):
        self.nodes: list[_Message] = []
        self.weights: list[_Message] = []

    def add(self, op: str, inputs: list[str], **attributes: float | list[int]) -> str:
        """NodeProto: input 1, output 2, name 3, op_type 4, attribute 5 (AttributeProto: name 1,
        f 2, ints 8, type 20)."""
        name = f"{op.lower()}{len(self.nodes)}"
        node = _Message()
        for given in inputs:
            node.add_bytes(1, given)
        node.add_bytes(2, name).add_bytes(3, name).add_bytes(4, op)
        for key, value in attributes.items():
            attribute = _Message().add_bytes(1, key)
            if isinstance(value, list):
                for item in value:
                    attribute.add_int(8, item)
                attribute.add_int(20, ATTRIBUTE_INTS)
            else:
                attribute.add_float(2, value).add_int(20, ATTRIBUTE_FLOAT)
            node.add_bytes(5, attribute)
        self.nodes.append(node)
        return name

    def constant(self, name: str, value: torch.Tensor | float) -> str:
        self.weights.append(_tensor(name, value))
        return name

    def conv(self, x: str, conv: torch.nn.Conv1d | torch.nn.ConvTranspose1d, prefix: str) -> str:
        (kernel,), (stride,), (dilation,), (padding,) = (
            conv.kernel_size,
            conv.stride,
            conv.dilation,
            conv.padding,
        )
        weight = self.constant(f"{prefix}.weight", conv.weight)
        bias = self.constant(f"{prefix}.bias", conv.bias)
        op = "ConvTranspose" if isinstance(conv, torch.nn.ConvTranspose1d) else "Conv"
        return self.add(
            op,
            [x, weight, bias],
            kernel_shape=[kernel],
            strides=[stride],
            dilations=[dilation],
            pads=[padding, padding],
        )

    def leaky_relu(self, x: str, slope: float) -> str:
        return self.add("LeakyRelu", [x], alpha=slope)


def generator_graph(generator: HifiganGenerator) -> bytes:
    """The generator as a serialised ONNX model: input "mel" (B, n_mels, frames) -> "wave" (B, 1, samples)."""
    g = _Graph()
    x = g.conv("mel", generator.conv_pre, "conv_pre")
    n = generator.blocks_per_level
    divisor = g.constant("blocks_per_level", float(n))
    for level, up in enumerate(generator.ups):
        x = g.conv(g.leaky_relu(x, LEAKY_SLOPE), up, f"ups.{level}")
        fused = None
        for b, block in enumerate(generator.resblocks[level * n : (level + 1) * n]):
            y = x
            for k, (dilated, plain) in enumerate(zip(block.convs1, block.convs2, strict=True)):
                prefix = f"resblocks.{level * n + b}"
                inner = g.conv(g.leaky_relu(y, LEAKY_SLOPE), dilated, f"{prefix}.convs1.{k}")
                y = g.add("Add", [y, g.conv(g.leaky_relu(inner, LEAKY_SLOPE), plain, f"{prefix}.convs2.{k}")])
            fused = y if fused is None else g.add("Add", [fused, y])
        x = g.add("Div", [fused, divisor])
    # The last activation: leaky ReLU's default slope (0.01), as in the torch module.
    wave = g.add("Tanh", [g.conv(g.leaky_relu(x, 0.01), generator.conv_post, "conv_post")])
    graph = _Message()
    for node in g.nodes:
        graph.add_bytes(1, node)
    graph.add_bytes(2, "hifigan_generator")
    for weight in g.weights:
        graph.add_bytes(5, weight)
    graph.add_bytes(11, _value_info("mel", ["batch", generator.conv_pre.in_channels, "frames"]))
    graph.add_bytes(12, _value_info(wave, ["batch", 1, "samples"]))
    opset = _Message().add_bytes(1, "").add_int(2, OPSET)
    return _Message().add_int(1, IR_VERSION).add_bytes(8, opset).add_bytes(7, graph).serialize()


class OnnxGenerator:
    """``generator``'s forward pass in an onnxruntime session on the CPU, float32, ``threads`` threads.

    Shapes:
        mel: (B, n_mels, frames) float tensor on the CPU
        returns: (B, 1, frames * hop_length)
    """

    def __init__(self, generator: HifiganGenerator, threads: int):
        if missing(RUNTIME_PACKAGE):
            raise MissingPackageError(
                f"vocoder.hifigan.runtime onnxruntime needs onnxruntime, not installed here: {EXTRA}"
            )
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(
            generator_graph(generator), options, providers=["CPUExecutionProvider"]
        )
        self.output = self.session.get_outputs()[0].name
        self.threads = threads

    def __call__(self, mel: torch.Tensor) -> torch.Tensor:
        (wave,) = self.session.run([self.output], {"mel": np.ascontiguousarray(mel.float().numpy())})
        return torch.from_numpy(wave)
