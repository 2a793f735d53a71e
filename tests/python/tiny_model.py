"""A tiny ONNX network for the Python package's tests: three 3x3 convolutions with ReLU
(three layer units), an 8x8 input of 4 channels, weights from a fixed seed."""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

INPUT_SHAPE = (1, 4, 8, 8)
OUTPUT_SHAPE = (1, 4, 8, 8)
LAYERS = 3


def write_tiny_model(path):
    rng = np.random.default_rng(7)
    channels = [4, 8, 8, 4]
    nodes, weights = [], []
    previous = "input"
    for i in range(LAYERS):
        w = rng.uniform(-0.5, 0.5, (channels[i + 1], channels[i], 3, 3)).astype(np.float32)
        b = rng.uniform(-0.1, 0.1, (channels[i + 1],)).astype(np.float32)
        weights += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        conv, relu = f"conv{i}", "output" if i == LAYERS - 1 else f"relu{i}"
        nodes.append(helper.make_node("Conv", [previous, f"w{i}", f"b{i}"], [conv], name=conv,
                                      kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [conv], [relu], name=f"relu{i}"))
        previous = relu
    graph = helper.make_graph(
        nodes, "tiny",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, INPUT_SHAPE)],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, OUTPUT_SHAPE)],
        weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path
