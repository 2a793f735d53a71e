#!/usr/bin/python3
"""Exports the transformer networks the benches measure, with PyTorch's output.

  bench/export_transformers.py DIR [NAME,...]

vit_b_16: torchvision's ViT-B/16 at 224x224 (86 M parameters, 17.6 GMACs), seeded weights, opset 17.
bert_base: a BERT-base encoder from torch.nn (12 layers, d_model 768, 12 heads, feed-forward 3072,
GELU) over 128 token embeddings [1, 128, 768] plus a [CLS] classifier of 2 classes (11.2 GMACs);
the token embedding lookup itself is not part of it (co_up gathers with constant indices only).
vit_tiny_SIZE (e.g. vit_tiny_64): torchvision's VisionTransformer in the ViT-Tiny (DeiT-Ti)
configuration (12 layers, d_model 192, 3 heads, MLP 768, 1000 classes, 5.5 M parameters) at
SIZExSIZE, patches of 8 below 128 (64x64: 64 patches + [CLS] = 65 tokens, 0.36 GMACs) and of 16
from 128 (224x224: the published ViT-Tiny, 197 tokens); the transformer of
bench/workload_bench.sh's mix, at the mix's image size.
Same file layout as tests/fixtures/make_fixtures.py: NAME.onnx, NAME_input.npy, NAME_output.npy.
"""
import os
import re
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures"))
from make_fixtures import export_torch  # noqa: E402


class BertBase(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 12, enable_nested_tensor=False)
        self.head = nn.Linear(768, 2)
        # TransformerEncoder deep-copies one layer: every layer would hold the same weights (and
        # the exporter would store them once). Each layer gets its own.
        with torch.no_grad():
            for p in self.encoder.parameters():
                if p.dim() > 1:
                    nn.init.xavier_uniform_(p)
                else:
                    p.add_(torch.empty_like(p).uniform_(-0.05, 0.05))

    def forward(self, x):  # [1, 128, 768] token embeddings
        return self.head(self.encoder(x)[:, 0])


def vit_b_16():
    import torchvision.models as tvm
    vit = tvm.vit_b_16()
    with torch.no_grad():  # torchvision zero-initialises the head: every output would be 0
        vit.heads.head.weight.normal_(0.0, 0.02)
        vit.heads.head.bias.uniform_(-0.1, 0.1)
    return vit


def vit_tiny(size):
    from torchvision.models.vision_transformer import VisionTransformer
    patch = 8 if size < 128 else 16
    if size % patch != 0:
        raise SystemExit(f"export_transformers.py: vit_tiny_{size}: the image size must be a multiple of {patch}")
    vit = VisionTransformer(image_size=size, patch_size=patch, num_layers=12, num_heads=3, hidden_dim=192,
                            mlp_dim=768, num_classes=1000)
    with torch.no_grad():  # torchvision zero-initialises the head: every output would be 0
        vit.heads.head.weight.normal_(0.0, 0.02)
        vit.heads.head.bias.uniform_(-0.1, 0.1)
    return vit


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = sys.argv[1]
    only = sys.argv[2].split(",") if len(sys.argv) > 2 else ["vit_b_16", "bert_base"]
    unknown = [n for n in only if n not in ("vit_b_16", "bert_base") and not re.fullmatch(r"vit_tiny_[0-9]+", n)]
    if unknown:
        print(f"export_transformers.py: unknown network(s) {','.join(unknown)} (known: vit_b_16, bert_base, "
              "vit_tiny_SIZE)", file=sys.stderr)
        return 2
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    if "vit_b_16" in only:
        torch.manual_seed(200)
        export_torch(out_dir, "vit_b_16", vit_b_16(), (1, 3, 224, 224), 17)
    if "bert_base" in only:
        torch.manual_seed(201)
        export_torch(out_dir, "bert_base", BertBase(), (1, 128, 768), 17)
    for name in only:
        if re.fullmatch(r"vit_tiny_[0-9]+", name):
            size = int(name.rsplit("_", 1)[1])
            torch.manual_seed(202)
            export_torch(out_dir, name, vit_tiny(size), (1, 3, size, size), 17)
    return 0


if __name__ == "__main__":
    sys.exit(main())
