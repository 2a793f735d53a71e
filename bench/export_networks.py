#!/usr/bin/python3
"""Exports the full-size modern networks that bench/ort_compare.sh and bench/validate_modern.sh
run, with PyTorch's output.

  bench/export_networks.py DIR [NAME,...]

mobilenet_v3_large, efficientnet_b0, shufflenet_v2_x1_0, regnet_y_400mf, densenet121,
convnext_tiny, swin_t: torchvision's networks at 224x224 (opset 13; Swin-T 17).
yolo_320: a YOLOv5s-style detector (widths 32-512, C3 depths 1/2/3/1, SPPF, PAN neck with nearest
Upsample and Concat, the Detect head with 80 classes and box decoding) at 320x320, opset 13.
inception_v4: Inception-v4 as published (stem, 4x Inception-A, Reduction-A, 7x Inception-B,
Reduction-B, 3x Inception-C, 1000 classes) at 299x299, opset 13.
vit_b_16, bert_base: bench/export_transformers.py.

Weights are seeded; BatchNorm statistics are calibrated on seeded inputs (as the detector and
Inception fixtures of tests/fixtures/make_fixtures.py), so deep networks keep their activations in
range. No pretrained weights are downloaded. Same file layout as make_fixtures.py: NAME.onnx,
NAME_input.npy, NAME_output.npy.
"""
import os
import sys

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "fixtures"))
sys.path.insert(0, HERE)
import make_fixtures as mf  # noqa: E402

BasicConv = mf.BasicConv


class InceptionA(nn.Module):
    def __init__(self):
        super().__init__()
        self.b0 = BasicConv(384, 96, 1)
        self.b1 = nn.Sequential(BasicConv(384, 64, 1), BasicConv(64, 96, 3, p=1))
        self.b2 = nn.Sequential(BasicConv(384, 64, 1), BasicConv(64, 96, 3, p=1), BasicConv(96, 96, 3, p=1))
        self.b3 = nn.Sequential(nn.AvgPool2d(3, 1, 1, count_include_pad=False), BasicConv(384, 96, 1))

    def forward(self, x):
        return torch.cat((self.b0(x), self.b1(x), self.b2(x), self.b3(x)), 1)   # 384


class ReductionA(nn.Module):
    def __init__(self):
        super().__init__()
        self.b0 = BasicConv(384, 384, 3, 2)
        self.b1 = nn.Sequential(BasicConv(384, 192, 1), BasicConv(192, 224, 3, p=1), BasicConv(224, 256, 3, 2))
        self.b2 = nn.MaxPool2d(3, 2)

    def forward(self, x):
        return torch.cat((self.b0(x), self.b1(x), self.b2(x)), 1)    # 1024


class InceptionB(nn.Module):
    def __init__(self):
        super().__init__()
        self.b0 = BasicConv(1024, 384, 1)
        self.b1 = nn.Sequential(BasicConv(1024, 192, 1), BasicConv(192, 224, (1, 7), p=(0, 3)),
                                BasicConv(224, 256, (7, 1), p=(3, 0)))
        self.b2 = nn.Sequential(BasicConv(1024, 192, 1), BasicConv(192, 192, (7, 1), p=(3, 0)),
                                BasicConv(192, 224, (1, 7), p=(0, 3)), BasicConv(224, 224, (7, 1), p=(3, 0)),
                                BasicConv(224, 256, (1, 7), p=(0, 3)))
        self.b3 = nn.Sequential(nn.AvgPool2d(3, 1, 1, count_include_pad=False), BasicConv(1024, 128, 1))

    def forward(self, x):
        return torch.cat((self.b0(x), self.b1(x), self.b2(x), self.b3(x)), 1)   # 1024


class ReductionB(nn.Module):
    def __init__(self):
        super().__init__()
        self.b0 = nn.Sequential(BasicConv(1024, 192, 1), BasicConv(192, 192, 3, 2))
        self.b1 = nn.Sequential(BasicConv(1024, 256, 1), BasicConv(256, 256, (1, 7), p=(0, 3)),
                                BasicConv(256, 320, (7, 1), p=(3, 0)), BasicConv(320, 320, 3, 2))
        self.b2 = nn.MaxPool2d(3, 2)

    def forward(self, x):
        return torch.cat((self.b0(x), self.b1(x), self.b2(x)), 1)    # 1536


class InceptionC(nn.Module):
    def __init__(self):
        super().__init__()
        self.b0 = BasicConv(1536, 256, 1)
        self.b1_0 = BasicConv(1536, 384, 1)
        self.b1_1a = BasicConv(384, 256, (1, 3), p=(0, 1))
        self.b1_1b = BasicConv(384, 256, (3, 1), p=(1, 0))
        self.b2_0 = BasicConv(1536, 384, 1)
        self.b2_1 = BasicConv(384, 448, (3, 1), p=(1, 0))
        self.b2_2 = BasicConv(448, 512, (1, 3), p=(0, 1))
        self.b2_3a = BasicConv(512, 256, (1, 3), p=(0, 1))
        self.b2_3b = BasicConv(512, 256, (3, 1), p=(1, 0))
        self.b3 = nn.Sequential(nn.AvgPool2d(3, 1, 1, count_include_pad=False), BasicConv(1536, 256, 1))

    def forward(self, x):
        x1 = self.b1_0(x)
        x2 = self.b2_2(self.b2_1(self.b2_0(x)))
        return torch.cat((self.b0(x), self.b1_1a(x1), self.b1_1b(x1), self.b2_3a(x2), self.b2_3b(x2),
                          self.b3(x)), 1)                             # 1536


class InceptionV4(nn.Module):
    """Inception-v4 (Szegedy et al. 2016, Figure 9) for 299x299 inputs. The stem is
    make_fixtures.InceptionStem at w = 32, which has the published widths (32, 64, 96, 192, 384)."""
    def __init__(self, classes=1000):
        super().__init__()
        self.features = nn.Sequential(
            mf.InceptionStem(32), *(InceptionA() for _ in range(4)), ReductionA(),
            *(InceptionB() for _ in range(7)), ReductionB(), *(InceptionC() for _ in range(3)))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.last_linear = nn.Linear(1536, classes)

    def forward(self, x):
        return self.last_linear(torch.flatten(self.pool(self.features(x)), 1))


def yolo_320():
    """YOLOv5s's layout: make_fixtures.TinyYolo at width 32 (channels 32-512) with the backbone's
    third C3 three bottlenecks deep, 80 classes, at 320x320."""
    model = mf.TinyYolo(size=320, w=32, nc=80)
    model.b6 = mf.C3(256, 256, 3)
    return model


def torchvision_nets():
    import torchvision.models as tvm
    return {
        "mobilenet_v3_large": (tvm.mobilenet_v3_large, 13),
        "efficientnet_b0": (tvm.efficientnet_b0, 13),
        "shufflenet_v2_x1_0": (tvm.shufflenet_v2_x1_0, 13),
        "regnet_y_400mf": (tvm.regnet_y_400mf, 13),
        "densenet121": (tvm.densenet121, 13),
        "convnext_tiny": (tvm.convnext_tiny, 13),
        "swin_t": (tvm.swin_t, 17),
    }


ALL = ["mobilenet_v3_large", "efficientnet_b0", "shufflenet_v2_x1_0", "regnet_y_400mf", "densenet121",
       "convnext_tiny", "swin_t", "yolo_320", "inception_v4", "vit_b_16", "bert_base"]


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = sys.argv[1]
    only = sys.argv[2].split(",") if len(sys.argv) > 2 else ALL
    unknown = [n for n in only if n not in ALL]
    if unknown:
        print(f"export_networks.py: unknown network(s) {','.join(unknown)} (known: {','.join(ALL)})", file=sys.stderr)
        return 2
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    tv = torchvision_nets()
    for i, name in enumerate(ALL):
        if name not in only:
            continue
        seed = 300 + i
        torch.manual_seed(seed)
        if name in tv:
            make, opset = tv[name]
            mf.export_calibrated(out_dir, name, make(), (1, 3, 224, 224), opset, seed)
        elif name == "yolo_320":
            mf.export_calibrated(out_dir, name, yolo_320(), (1, 3, 320, 320), 13, seed)
        elif name == "inception_v4":
            mf.export_calibrated(out_dir, name, InceptionV4(), (1, 3, 299, 299), 13, seed)
        else:
            import export_transformers
            sys.argv = [sys.argv[0], out_dir, name]
            export_transformers.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
