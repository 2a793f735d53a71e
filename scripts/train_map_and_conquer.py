#!/usr/bin/python3
"""Trains the Map-and-Conquer fixtures on Fashion-MNIST: a static CNN and its width-partitioned
multi-exit version, and exports them as ONNX with PyTorch's reference outputs.

Debian packages: python3-torch python3-onnx dataset-fashion-mnist (the data lands in
/usr/share/datasets/fashion-mnist). CPU only, seeded (--seed, 1 thread per network by default:
the same seed and thread count give the same fixtures, with --jobs 1 or 2). About 80 s per epoch
and network on one idle core (batch 256); the two networks train side by side in two processes
(--jobs 2, the default), so the default 4 epochs take about 6 minutes on two idle cores; on this
project's shared, loaded 2-core host 15-25.

  scripts/train_map_and_conquer.py                      # -> tests/fixtures/map_and_conquer/
  scripts/train_map_and_conquer.py --out DIR --epochs 4 --seed 1
  scripts/train_map_and_conquer.py --rethreshold        # thresholds again, for the exported models

Training (both networks alike: the same epochs, schedule, flips, batches and seed): Adam with a
cosine schedule, batch normalisation after every convolution (folded into the convolution before
export, so the ONNX graphs are plain Conv/Relu/MaxPool/GlobalAveragePool/Gemm), random
horizontal flips, cross-entropy with the labels, on the first 50,000 training images (the last
10,000 are the validation set). The multi-exit network trains all exits jointly, the final exit
weighted --last-exit-weight (4) and each earlier one 1. --distill W mixes into each exit's loss distillation
from the trained static CNN's softened outputs (temperature 3) on the same, possibly flipped,
image, with weight W (the earlier recipe used 0.5; it cost the last exit accuracy at these
budgets, docs/map_and_conquer.md). The exit thresholds are chosen
on the validation split (never the test set): the softmax-max thresholds on a 0.01 grid with the
fewest mean multiply-accumulates per frame whose paired accuracy difference d from the static CNN
on validation clears the 1-point target by a confidence margin, d >= -0.01 + 1.645 * sqrt(2) * SE
(SE the paired standard error of d: a 95 % one-sided chance of staying within 1 point on an
independent set of the same size, such as the test set); if none, the cheapest no less accurate
than the last exit alone on each half of the validation set.

The static CNN has n = 3 convolution layers (32, 64, 128 channels; 3x3, ReLU, 2x2 max-pool after
the first two; 7.4 MMAC) and a classifier over the global average of the last layer. The multi-exit
version splits every layer along its width into M = 3 stages by the partitioning matrix P
(fraction of the layer's channels per stage) and the indicator matrix I (I[k][j] = 1: stage k's
layer-j features feed layer j+1 of every later stage; for the last layer j = n, they feed the
later stages' exit classifiers). Stage i's layer j reads the layer j-1 features of its own stage
plus those of every earlier stage k with I[k][j-1] = 1, and ends in an exit classifier over the
same set at layer n. A last-stage entry of 1 in P (the earlier stages keeping their shares) is a
full layer at the end: the last stage computes the whole layer again from every stage's features
of the layer before, so the path to the last exit has the static CNN's width there (a stage
otherwise never reads a later stage's channels, which cost the last exit about a point). The
fixtures' P has it in layer 3. Exits are the graph outputs exit0, exit1, exit2 (logits), in stage
order; the last one is the full network's classifier.

Files written (every one reproducible from this script and --seed):
  static.onnx, static_ref.npy        the static CNN, its logits for the first 16 test images
  multi_exit.onnx, multi_exit_ref.npy  the multi-exit CNN, its logits [16, exits, 10]
  stage_plan.json                    the P and I the multi-exit model was trained with
  partial_reuse.onnx                 an untrained twin with I[2][1] = 0 (for the stage-plan check)
  test_images.npy, test_labels.npy   1000 test-set images (uint8 [N,28,28]) and labels (int64 [N])
  val_exit_logits.npy, val_labels.npy  every exit's logits [N, exits, 10] on the 10,000 held-out
                                     training images (the validation set), and their labels
  accuracy.json                      test-set accuracy (all 10000 images): static and per exit,
                                     the thresholds chosen on validation ("policy") and their
                                     test accuracy and exit shares
Inputs are images scaled to [0, 1], shape [1, 1, 28, 28].
"""
import argparse
import gzip
import json
import multiprocessing
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = "/usr/share/datasets/fashion-mnist"
WIDTHS = [32, 64, 128]
# Stage plan: P[i][j] fraction of layer j's channels in stage i (columns sum to 1, or the last
# stage's entry is 1: it computes the whole layer); I[i][j]: stage i's layer-j features are reused
# by the later stages (the last row is all 0).
PLAN_P = [[0.25, 0.25, 0.25], [0.25, 0.25, 0.25], [0.5, 0.5, 1.0]]
PLAN_I = [[1, 1, 1], [1, 1, 1], [0, 0, 0]]
N_REF = 16
# Joint exit training: the earlier exits' loss weight (the last exit's is --last-exit-weight),
# distillation temperature and weight.
EARLY_EXIT_WEIGHT = 1.0
LAST_EXIT_WEIGHT = 4.0
KD_T = 3.0
KD_ALPHA = 0.5
N_SUBSET = 1000
N_VAL = 10000
# The target: the dynamic policy at most this much less accurate than the static CNN.
TARGET_LOSS = 0.01
# One-sided 95 % normal quantile: the confidence the target holds on a new set of the same size.
Z_ONE_SIDED_95 = 1.645


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
        self.norms = nn.ModuleList()
        c_in = 1
        for c in WIDTHS:
            self.convs.append(nn.Conv2d(c_in, c, 3, padding=1))
            self.norms.append(nn.BatchNorm2d(c))
            c_in = c
        self.fc = nn.Linear(c_in, 10)

    def fold_batch_norm(self):
        fold_batch_norms(self.convs, self.norms)

    def forward(self, x):
        for j, conv in enumerate(self.convs):
            x = F.relu(self.norms[j](conv(x)))
            if j + 1 < len(self.convs):
                x = F.max_pool2d(x, 2)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def fold_batch_norms(convs, norms):
    """Folds each (eval-mode) BatchNorm into the convolution before it and replaces it by Identity,
    so the exported graph has the same Conv/Relu nodes as a network trained without them."""
    with torch.no_grad():
        for j, (conv, bn) in enumerate(zip(convs, norms)):
            scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
            conv.weight.mul_(scale.view(-1, 1, 1, 1))
            conv.bias.copy_((conv.bias - bn.running_mean) * scale + bn.bias)
            norms[j] = nn.Identity()


def full_layers(p):
    """Layers the last stage computes whole (its P entry is 1 while earlier stages have a share)."""
    return [len(p) > 1 and p[-1][j] >= 1.0 for j in range(len(p[0]))]


def stage_channels(p, widths):
    """Channels per stage per layer: round(p * width), the last stage takes the remainder, or the
    whole width where its P entry is 1 (a full layer at the end)."""
    out = [[0] * len(widths) for _ in p]
    full = full_layers(p)
    for j, w in enumerate(widths):
        for i in range(len(p) - 1):
            out[i][j] = int(round(p[i][j] * w))
        out[-1][j] = w if full[j] else w - sum(out[i][j] for i in range(len(p) - 1))
    return out


class MultiExitCnn(nn.Module):
    def __init__(self, p, ind):
        super().__init__()
        self.ind = ind
        self.ch = stage_channels(p, WIDTHS)
        m, n = len(p), len(WIDTHS)
        self.stages = nn.ModuleList()
        self.norms = nn.ModuleList()
        self.exits = nn.ModuleList()
        for i in range(m):
            convs = nn.ModuleList()
            norms = nn.ModuleList()
            for j in range(n):
                c_in = 1 if j == 0 else self.ch[i][j - 1] + sum(
                    self.ch[k][j - 1] for k in range(i) if ind[k][j - 1])
                convs.append(nn.Conv2d(c_in, self.ch[i][j], 3, padding=1))
                norms.append(nn.BatchNorm2d(self.ch[i][j]))
            self.stages.append(convs)
            self.norms.append(norms)
            c_exit = self.ch[i][n - 1] + sum(self.ch[k][n - 1] for k in range(i) if ind[k][n - 1])
            self.exits.append(nn.Linear(c_exit, 10))

    def fold_batch_norm(self):
        for convs, norms in zip(self.stages, self.norms):
            fold_batch_norms(convs, norms)

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
                h = F.relu(self.norms[i][j](self.stages[i][j](h)))
                if j + 1 < n:
                    h = F.max_pool2d(h, 2)
                feats[i][j] = h
            parts = [feats[k][n - 1] for k in range(i) if self.ind[k][n - 1]]
            h = torch.cat(parts + [feats[i][n - 1]], 1) if parts else feats[i][n - 1]
            outs.append(self.exits[i](torch.flatten(F.adaptive_avg_pool2d(h, 1), 1)))
        return tuple(outs)


def to_input(images):
    return torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)


def teacher_targets(teacher, idx, flip):
    """The teacher's logits for a batch: teacher is (logits of the images, logits of the same images
    mirrored); a frame trained flipped is distilled from the teacher's view of the flipped image."""
    plain, mirrored = teacher
    return torch.where(flip.view(-1, 1), mirrored[idx], plain[idx])


def train(model, x, y, epochs, seed, multi, teacher=None, batch=256, kd_alpha=KD_ALPHA, exit_weights=None, name=""):
    """Adam with a cosine schedule. A multi-exit model trains every exit jointly: each exit's loss
    is cross-entropy with the labels plus (with teacher logits) distillation from the static
    network's softened outputs, weighted kd_alpha; later exits weigh more."""
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, epochs * ((len(x) + batch - 1) // batch))
    if multi and exit_weights is None:
        exit_weights = [EARLY_EXIT_WEIGHT] * (len(model.exits) - 1) + [LAST_EXIT_WEIGHT]
    model.train()
    for epoch in range(epochs):
        perm = torch.randperm(len(x), generator=gen)
        total = 0.0
        for b in range(0, len(x), batch):
            idx = perm[b:b + batch]
            xb = x[idx]
            # Horizontal flips (a garment mirrored is the same class), seeded.
            flip = torch.rand(len(idx), generator=gen) < 0.5
            xb = torch.where(flip.view(-1, 1, 1, 1), xb.flip(3), xb)
            out = model(xb)
            if teacher is not None:
                # The teacher's logits of the image as trained on: flipped for a flipped one.
                t_idx = teacher_targets(teacher, idx, flip)
            if not multi:
                loss = F.cross_entropy(out, y[idx])
            else:
                loss = 0.0
                for k, o in enumerate(out):
                    part = F.cross_entropy(o, y[idx])
                    if teacher is not None:
                        soft = F.kl_div(F.log_softmax(o / KD_T, 1), F.softmax(t_idx / KD_T, 1),
                                        reduction="batchmean") * KD_T * KD_T
                        part = (1.0 - kd_alpha) * part + kd_alpha * soft
                    loss = loss + exit_weights[k] * part
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss) * len(idx)
        print(f"  {name}epoch {epoch + 1}/{epochs}: loss {total / len(x):.4f}", flush=True)
    model.eval()


def stage_macs(model):
    """Multiply-accumulates of each stage (its convolutions and exit) on a 28x28 input."""
    out = []
    for convs, fc in zip(model.stages, model.exits):
        side, macs = 28, 0
        for j, conv in enumerate(convs):
            macs += conv.weight.numel() * side * side
            if j + 1 < len(convs):
                side //= 2
        out.append(macs + fc.weight.numel())
    return out


def exit_policy(exit_logits, thresholds):
    """Each frame's exit under softmax-max>=t_k (the runtime's rule; the final exit always stops)."""
    prob = torch.softmax(torch.from_numpy(exit_logits), 2).max(2).values.numpy()
    taken = np.full(len(exit_logits), exit_logits.shape[1] - 1)
    for k in reversed(range(exit_logits.shape[1] - 1)):
        taken = np.where(prob[:, k] >= thresholds[k], k, taken)
    return taken


def policy_accuracy(exit_logits, labels, thresholds):
    taken = exit_policy(exit_logits, thresholds)
    pred = exit_logits[np.arange(len(taken)), taken].argmax(1)
    return float((pred == labels).mean()), taken


def paired_difference(correct, static_correct):
    """The accuracy difference d = mean(c) over frames, c = correct - static_correct (-1, 0 or 1),
    its paired standard error SE = std(c, ddof=1) / sqrt(n), and the margin d must clear the target
    by: the difference measured on another set of n frames less the one measured here has a
    standard deviation of about sqrt(2) * SE, so d >= -TARGET_LOSS + margin keeps the other set
    within the target with 95 % (one-sided) confidence."""
    c = correct.astype(np.float64) - static_correct.astype(np.float64)
    se = float(c.std(ddof=1) / np.sqrt(len(c))) if len(c) > 1 else 0.0
    return float(c.mean()), se, Z_ONE_SIDED_95 * np.sqrt(2.0) * se


def pick_thresholds(val_logits, val_labels, static_correct, macs):
    """The softmax-max thresholds (grid 0.50..1.00 and off, one per exit before the final) with the
    fewest mean multiply-accumulates per frame whose validation accuracy difference d from the
    static CNN clears the target with the confidence margin of paired_difference (d >=
    -TARGET_LOSS + margin: a policy picked right at a bare bar on validation missed it on the test
    set); when none does, the cheapest whose accuracy on each half of the validation set is at
    least the last exit's alone there (the exits then cost no accuracy on either half: a pair lucky
    on one half has to be confirmed on the other, where taking the most accurate of 2,704 pairs
    overfits). Ties in cost go to the more accurate. Returns (MACs, thresholds, validation
    accuracy, accuracy per half, whether the target was met, (d, SE, margin) of the choice); a
    threshold of 2.0 is off (never stops)."""
    grid = [round(0.5 + 0.01 * i, 2) for i in range(51)] + [2.0]
    cum = np.cumsum(macs)
    n = len(val_labels)
    halves = [np.arange(n) < n // 2, np.arange(n) >= n // 2]
    half_acc = lambda correct: [float(correct[h].mean()) for h in halves]
    last = half_acc(val_logits[:, -1].argmax(1) == val_labels)
    best, fallback = None, None
    for t0 in grid:
        for t1 in grid:
            acc, taken = policy_accuracy(val_logits, val_labels, [t0, t1])
            correct = val_logits[np.arange(n), taken].argmax(1) == val_labels
            per_half = half_acc(correct)
            paired = paired_difference(correct, static_correct)
            d, _, margin = paired
            key = (float(cum[taken].mean()), -acc)
            candidate = (key, [t0, t1], acc, per_half, paired)
            if d >= -TARGET_LOSS + margin - 1e-12 and (best is None or key < best[0]):
                best = candidate
            if all(a >= l - 1e-12 for a, l in zip(per_half, last)) and (fallback is None or key < fallback[0]):
                fallback = candidate
    met = best is not None
    key, thresholds, acc, per_half, paired = best if met else fallback
    return key[0], thresholds, acc, per_half, met, paired


def logits(model, x, multi):
    with torch.no_grad():
        outs = [model(x[b:b + 1000]) for b in range(0, len(x), 1000)]
    if multi:
        return torch.stack([torch.cat([o[k] for o in outs]) for k in range(len(outs[0]))], 1)
    return torch.cat(outs)


# An untrained model with the trained one's P but a reuse matrix with a 0 where the trained one has
# a 1 (stage 2's layer-1 features are not reused): the stage-plan check's fixture for an I entry
# of 1 that the model does not have (the trained model reuses everything, so it cannot show it).
PARTIAL_I = [[1, 1, 1], [0, 1, 1], [0, 0, 0]]


def export_partial_reuse(out, seed):
    torch.manual_seed(seed)
    model = MultiExitCnn(PLAN_P, PARTIAL_I).eval()
    model.fold_batch_norm()
    names = [f"exit{k}" for k in range(len(PLAN_P))]
    torch.onnx.export(model, torch.zeros(1, 1, 28, 28), os.path.join(out, "partial_reuse.onnx"), opset_version=13,
                      input_names=["input"], output_names=names)


def train_both(args, x_train, y_train):
    """Trains the static CNN and the multi-exit CNN; returns both with batch norm folded."""
    # Both networks train alike: the same epochs, schedule, flips and seed, cross-entropy with the
    # labels (every exit's, for the multi-exit one); distillation from the static CNN only with
    # --distill (it needs the trained static CNN first, so the two then train one after the other).
    def train_static():
        torch.manual_seed(args.seed)
        static = StaticCnn()
        train(static, x_train, y_train, args.epochs, args.seed, multi=False, name="static: ")
        return static

    print(f"static CNN and multi-exit CNN (P {PLAN_P}, I {PLAN_I}), {args.epochs} epochs each"
          f"{f', distillation weight {args.distill:g}' if args.distill else ''}", flush=True)
    job = None
    # A fork after torch has started an OpenMP pool (--threads > 1) can hang in the child: two
    # jobs only with one thread each.
    if args.jobs > 1 and not args.distill and args.threads == 1:
        # The static CNN in a forked process beside the multi-exit one: the same numbers as one
        # after the other (each seeds its own initialisation and batches), in half the time.
        state = os.path.join(args.out, ".static_state.pt")

        def child():
            torch.set_num_threads(args.threads)
            torch.save(train_static().state_dict(), state)

        job = multiprocessing.get_context("fork").Process(target=child)
        job.start()
        static = None
    else:
        static = train_static()
    teacher = None
    if args.distill:
        with torch.no_grad():
            teacher = (logits(static, x_train, False), logits(static, x_train.flip(3), False))
    torch.manual_seed(args.seed)
    multi = MultiExitCnn(PLAN_P, PLAN_I)
    exit_weights = [EARLY_EXIT_WEIGHT] * (len(PLAN_P) - 1) + [args.last_exit_weight]
    train(multi, x_train, y_train, args.epochs, args.seed, multi=True, teacher=teacher, kd_alpha=args.distill,
          exit_weights=exit_weights,
          name="multi-exit: ")
    multi.fold_batch_norm()
    if job is not None:
        job.join()
        if job.exitcode != 0:
            if os.path.exists(state):
                os.remove(state)
            sys.exit(f"train_map_and_conquer.py: training the static CNN failed (exit {job.exitcode})")
        static = StaticCnn()
        static.load_state_dict(torch.load(state))
        os.remove(state)
        static.eval()
    static.fold_batch_norm()

    return static, multi


def load_exported(out):
    """The two networks with the weights of the exported (batch norm folded) ONNX models in out."""
    import onnx
    from onnx import numpy_helper
    nets = []
    for net, name in ((StaticCnn(), "static.onnx"), (MultiExitCnn(PLAN_P, PLAN_I), "multi_exit.onnx")):
        path = os.path.join(out, name)
        if not os.path.exists(path):
            sys.exit(f"train_map_and_conquer.py: --rethreshold: no {path}; train the fixtures first")
        net.fold_batch_norm()
        weights = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy())
                   for t in onnx.load(path).graph.initializer}
        net.load_state_dict(weights)
        nets.append(net.eval())
    return tuple(nets)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(HERE, "..", "tests", "fixtures", "map_and_conquer"))
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--last-exit-weight", type=float, default=LAST_EXIT_WEIGHT,
                    help="the last exit's loss weight in the multi-exit network (the earlier exits' is 1)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2, choices=(1, 2),
                    help="2: train the two networks in two processes (same results as 1)")
    ap.add_argument("--distill", type=float, default=0.0,
                    help="weight of distillation from the static CNN in each exit's loss (0: none)")
    ap.add_argument("--limit", type=int, default=0, help="train on the first N images only (smoke test)")
    ap.add_argument("--rethreshold", action="store_true",
                    help="no training: choose the exit thresholds again for the models in --out and rewrite "
                         "its accuracy.json")
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)

    train_images = read_idx("train-images-idx3-ubyte.gz")
    train_labels = read_idx("train-labels-idx1-ubyte.gz").astype(np.int64)
    test_images = read_idx("t10k-images-idx3-ubyte.gz")
    test_labels = read_idx("t10k-labels-idx1-ubyte.gz").astype(np.int64)
    # The last N_VAL training images are held out: the validation set for thresholds and planner.
    x_train, y_train = to_input(train_images[:-N_VAL]), torch.from_numpy(train_labels[:-N_VAL])
    x_val, y_val = to_input(train_images[-N_VAL:]), train_labels[-N_VAL:]
    x_test, y_test = to_input(test_images), test_labels
    if args.limit:
        x_train, y_train = x_train[:args.limit], y_train[:args.limit]

    if args.rethreshold:
        static, multi = load_exported(args.out)
        with open(os.path.join(args.out, "accuracy.json")) as f:
            trained = json.load(f)
        for key in ("seed", "epochs", "last_exit_weight", "distillation_weight"):
            if key not in trained:
                sys.exit(f"train_map_and_conquer.py: --rethreshold: {args.out}/accuracy.json has no '{key}'; "
                         "train the fixtures with this script first")
        args.seed, args.epochs, args.last_exit_weight, args.distill = (
            trained["seed"], trained["epochs"], trained["last_exit_weight"], trained["distillation_weight"])
    else:
        static, multi = train_both(args, x_train, y_train)

    static_test = logits(static, x_test, False).numpy()
    multi_test = logits(multi, x_test, True).numpy()
    static_val_correct = logits(static, x_val, False).numpy().argmax(1) == y_val
    static_val = float(static_val_correct.mean())
    val_logits = logits(multi, x_val, True).numpy().astype(np.float32)
    if args.rethreshold:
        saved = np.load(os.path.join(args.out, "val_exit_logits.npy"))
        if saved.shape != val_logits.shape or np.abs(saved - val_logits).max() > 1e-4:
            sys.exit(f"train_map_and_conquer.py: --rethreshold: the models in {args.out} do not give its "
                     "val_exit_logits.npy; retrain the fixtures")
    macs = stage_macs(multi)
    cost, thresholds, val_acc, val_halves, met, (val_d, val_se, val_margin) = pick_thresholds(
        val_logits, y_val, static_val_correct, macs)
    test_acc, test_taken = policy_accuracy(multi_test, y_test, thresholds)
    acc = {
        "test_images": int(len(y_test)),
        "static": float((static_test.argmax(1) == y_test).mean()),
        "exits": [float((multi_test[:, k].argmax(1) == y_test).mean()) for k in range(multi_test.shape[1])],
        "static_params": sum(p.numel() for p in static.parameters()),
        "multi_exit_params": sum(p.numel() for p in multi.parameters()),
        "seed": args.seed,
        "epochs": args.epochs,
        "last_exit_weight": args.last_exit_weight,
        "distillation_weight": args.distill,
        "validation_images": int(len(y_val)),
        "static_validation": static_val,
        "exits_validation": [float((val_logits[:, k].argmax(1) == y_val).mean()) for k in range(val_logits.shape[1])],
        "stage_macs": macs,
        "policy": {
            "exit": "softmax-max>=" + ",".join(f"{t:g}" if t <= 1 else "off" for t in thresholds),
            "target_met_on_validation": met,
            "chosen_on": f"validation: fewest mean MACs with d >= -{TARGET_LOSS:g} + {Z_ONE_SIDED_95:g} * sqrt(2) * SE "
                         "(d: paired accuracy difference from static, SE its standard error); "
                         "else fewest with accuracy >= the last exit's on each half",
            "validation_accuracy": val_acc,
            "validation_difference": val_d,
            "validation_difference_se": val_se,
            "validation_margin": val_margin,
            "validation_half_accuracy": val_halves,
            "test_accuracy": test_acc,
            "test_exit_shares": [float((test_taken == k).mean()) for k in range(multi_test.shape[1])],
            "test_mean_macs": float(np.cumsum(macs)[test_taken].mean()),
        },
    }
    print(json.dumps(acc, indent=1))
    if args.rethreshold:
        with open(os.path.join(args.out, "accuracy.json"), "w") as f:
            json.dump(acc, f, indent=1)
            f.write("\n")
        return 0

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
    np.save(os.path.join(args.out, "val_exit_logits.npy"), val_logits)
    np.save(os.path.join(args.out, "val_labels.npy"), y_val.copy())
    export_partial_reuse(args.out, args.seed)
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
