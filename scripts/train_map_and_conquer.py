#!/usr/bin/python3
"""Trains the Map-and-Conquer fixtures on Fashion-MNIST: a static CNN and its width-partitioned
multi-exit version, and exports them as ONNX with PyTorch's reference outputs.

Debian packages: python3-torch python3-onnx dataset-fashion-mnist (the data lands in
/usr/share/datasets/fashion-mnist). CPU only, seeded (--seed, 2 threads by default). The
committed fixtures took 46 minutes in all on a shared, heavily loaded 2-core host (14 for the
static CNN, 32 for the multi-exit one, whose many small convolutions cost more per image).

  scripts/train_map_and_conquer.py                      # -> tests/fixtures/map_and_conquer/
  scripts/train_map_and_conquer.py --out DIR --epochs 4 --seed 1

The static CNN has n = 3 convolution layers (16, 32, 64 channels; 3x3, ReLU, 2x2 max-pool after
the first two) and a classifier over the global average of the last layer. The multi-exit
version splits every layer along its width into M = 3 stages by the partitioning matrix P
(fraction of the layer's channels per stage) and the indicator matrix I (I[k][j] = 1: stage k's
layer-j features feed layer j+1 of every later stage; for the last layer j = n, they feed the
later stages' exit classifiers). Stage i's layer j reads the layer j-1 features of its own stage
plus those of every earlier stage k with I[k][j-1] = 1, and ends in an exit classifier over the
same set at layer n. Exits are the graph outputs exit0, exit1, exit2 (logits), in stage order;
the last one is the full network's classifier.

Files written (every one reproducible from this script and --seed):
  static.onnx, static_ref.npy        the static CNN, its logits for the first 16 test images
  multi_exit.onnx, multi_exit_ref.npy  the multi-exit CNN, its logits [16, exits, 10]
  stage_plan.json                    the P and I the multi-exit model was trained with
  test_images.npy, test_labels.npy   1000 test-set images (uint8 [N,28,28]) and labels (int64 [N])
  val_exit_logits.npy, val_labels.npy  every exit's logits [N, exits, 10] on 1000 held-out training
                                     images (the planner's validation set), and their labels
  accuracy.json                      test-set accuracy (all 10000 images): static and per exit
Inputs are images scaled to [0, 1], shape [1, 1, 28, 28].
"""
import argparse
import gzip
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = "/usr/share/datasets/fashion-mnist"
WIDTHS = [16, 32, 64]
# Stage plan: P[i][j] fraction of layer j's channels in stage i (columns sum to 1);
# I[i][j]: stage i's layer-j features are reused by the later stages (the last row is all 0).
PLAN_P = [[0.25, 0.25, 0.25], [0.25, 0.25, 0.25], [0.5, 0.5, 0.5]]
PLAN_I = [[1, 1, 1], [0, 1, 1], [0, 0, 0]]
N_REF = 16
N_SUBSET = 1000


def read_idx(name):
    with gzip.open(os.path.join(DATA, name), "rb") as f:
        data = f.read()
    magic = int.from_bytes(data[0:4], "big")
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(magic & 0xFF)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * len(dims)).reshape(dims)


class StaticCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList()
        c_in = 1
        for c in WIDTHS:
            self.convs.append(nn.Conv2d(c_in, c, 3, padding=1))
            c_in = c
        self.fc = nn.Linear(c_in, 10)

    def forward(self, x):
        for j, conv in enumerate(self.convs):
            x = F.relu(conv(x))
            if j + 1 < len(self.convs):
                x = F.max_pool2d(x, 2)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def stage_channels(p, widths):
    """Channels per stage per layer: round(p * width), the last stage takes the remainder."""
    out = [[0] * len(widths) for _ in p]
    for j, w in enumerate(widths):
        for i in range(len(p) - 1):
            out[i][j] = int(round(p[i][j] * w))
        out[-1][j] = w - sum(out[i][j] for i in range(len(p) - 1))
    return out


class MultiExitCnn(nn.Module):
    def __init__(self, p, ind):
        super().__init__()
        self.ind = ind
        self.ch = stage_channels(p, WIDTHS)
        m, n = len(p), len(WIDTHS)
        self.stages = nn.ModuleList()
        self.exits = nn.ModuleList()
        for i in range(m):
            convs = nn.ModuleList()
            for j in range(n):
                c_in = 1 if j == 0 else self.ch[i][j - 1] + sum(
                    self.ch[k][j - 1] for k in range(i) if ind[k][j - 1])
                convs.append(nn.Conv2d(c_in, self.ch[i][j], 3, padding=1))
            self.stages.append(convs)
            c_exit = self.ch[i][n - 1] + sum(self.ch[k][n - 1] for k in range(i) if ind[k][n - 1])
            self.exits.append(nn.Linear(c_exit, 10))

    def forward(self, x):
        m, n = len(self.stages), len(WIDTHS)
        feats = [[None] * n for _ in range(m)]
        outs = []
        for i in range(m):
            for j in range(n):
                if j == 0:
                    h = x
                else:
                    parts = [feats[k][j - 1] for k in range(i) if self.ind[k][j - 1]]
                    h = torch.cat(parts + [feats[i][j - 1]], 1) if parts else feats[i][j - 1]
                h = F.relu(self.stages[i][j](h))
                if j + 1 < n:
                    h = F.max_pool2d(h, 2)
                feats[i][j] = h
            parts = [feats[k][n - 1] for k in range(i) if self.ind[k][n - 1]]
            h = torch.cat(parts + [feats[i][n - 1]], 1) if parts else feats[i][n - 1]
            outs.append(self.exits[i](torch.flatten(F.adaptive_avg_pool2d(h, 1), 1)))
        return tuple(outs)


def to_input(images):
    return torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)


def train(model, x, y, epochs, seed, multi):
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, epochs * ((len(x) + 127) // 128))
    model.train()
    for epoch in range(epochs):
        perm = torch.randperm(len(x), generator=gen)
        total = 0.0
        for b in range(0, len(x), 128):
            idx = perm[b:b + 128]
            out = model(x[idx])
            # Every exit learns the labels; later exits weigh a little more (the final classifier).
            loss = sum((1.0 + 0.5 * k) * F.cross_entropy(o, y[idx]) for k, o in enumerate(out)) \
                if multi else F.cross_entropy(out, y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss) * len(idx)
        print(f"  epoch {epoch + 1}/{epochs}: loss {total / len(x):.4f}", flush=True)
    model.eval()


def logits(model, x, multi):
    with torch.no_grad():
        outs = [model(x[b:b + 1000]) for b in range(0, len(x), 1000)]
    if multi:
        return torch.stack([torch.cat([o[k] for o in outs]) for k in range(len(outs[0]))], 1)
    return torch.cat(outs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(HERE, "..", "tests", "fixtures", "map_and_conquer"))
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="train on the first N images only (smoke test)")
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)

    train_images = read_idx("train-images-idx3-ubyte.gz")
    train_labels = read_idx("train-labels-idx1-ubyte.gz").astype(np.int64)
    test_images = read_idx("t10k-images-idx3-ubyte.gz")
    test_labels = read_idx("t10k-labels-idx1-ubyte.gz").astype(np.int64)
    # The last N_SUBSET training images are held out: the planner's validation set.
    x_train, y_train = to_input(train_images[:-N_SUBSET]), torch.from_numpy(train_labels[:-N_SUBSET])
    x_val, y_val = to_input(train_images[-N_SUBSET:]), train_labels[-N_SUBSET:]
    x_test, y_test = to_input(test_images), test_labels
    if args.limit:
        x_train, y_train = x_train[:args.limit], y_train[:args.limit]

    print(f"static CNN, {args.epochs} epochs", flush=True)
    torch.manual_seed(args.seed)
    static = StaticCnn()
    train(static, x_train, y_train, args.epochs, args.seed, multi=False)
    print(f"multi-exit CNN (P {PLAN_P}, I {PLAN_I}), {args.epochs} epochs", flush=True)
    torch.manual_seed(args.seed)
    multi = MultiExitCnn(PLAN_P, PLAN_I)
    train(multi, x_train, y_train, args.epochs, args.seed, multi=True)

    static_test = logits(static, x_test, False).numpy()
    multi_test = logits(multi, x_test, True).numpy()
    acc = {
        "test_images": int(len(y_test)),
        "static": float((static_test.argmax(1) == y_test).mean()),
        "exits": [float((multi_test[:, k].argmax(1) == y_test).mean()) for k in range(multi_test.shape[1])],
        "static_params": sum(p.numel() for p in static.parameters()),
        "multi_exit_params": sum(p.numel() for p in multi.parameters()),
        "seed": args.seed,
        "epochs": args.epochs,
    }
    print(json.dumps(acc, indent=1))

    x1 = x_test[:1]
    torch.onnx.export(static, x1, os.path.join(args.out, "static.onnx"), opset_version=13,
                      input_names=["input"], output_names=["output"])
    names = [f"exit{k}" for k in range(len(PLAN_P))]
    torch.onnx.export(multi, x1, os.path.join(args.out, "multi_exit.onnx"), opset_version=13,
                      input_names=["input"], output_names=names)
    np.save(os.path.join(args.out, "static_ref.npy"), static_test[:N_REF].astype(np.float32))
    np.save(os.path.join(args.out, "multi_exit_ref.npy"), multi_test[:N_REF].astype(np.float32))
    np.save(os.path.join(args.out, "test_images.npy"), test_images[:N_SUBSET].copy())
    np.save(os.path.join(args.out, "test_labels.npy"), y_test[:N_SUBSET].copy())
    np.save(os.path.join(args.out, "val_exit_logits.npy"), logits(multi, x_val, True).numpy().astype(np.float32))
    np.save(os.path.join(args.out, "val_labels.npy"), y_val.copy())
    with open(os.path.join(args.out, "stage_plan.json"), "w") as f:
        json.dump({"P": PLAN_P, "I": PLAN_I}, f)
        f.write("\n")
    with open(os.path.join(args.out, "accuracy.json"), "w") as f:
        json.dump(acc, f, indent=1)
        f.write("\n")
    for name in sorted(os.listdir(args.out)):
        print(f"  {name}: {os.path.getsize(os.path.join(args.out, name))} bytes")


if __name__ == "__main__":
    sys.exit(main())
