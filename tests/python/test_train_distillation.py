"""The Map-and-Conquer training script's distillation targets (scripts/train_map_and_conquer.py):
a training image that is flipped is distilled from the teacher's logits of the flipped image, not
of the image as stored."""
import torch

from train_script import load_script


def test_flipped_images_take_the_teachers_logits_of_the_flipped_image():
    t = load_script()
    plain = torch.arange(40, dtype=torch.float32).view(4, 10)
    mirrored = -plain - 1
    idx = torch.tensor([2, 0, 3])
    flip = torch.tensor([True, False, True])
    got = t.teacher_targets((plain, mirrored), idx, flip)
    assert torch.equal(got[0], mirrored[2])
    assert torch.equal(got[1], plain[0])
    assert torch.equal(got[2], mirrored[3])


def test_training_distils_each_image_as_it_was_trained():
    # One epoch on 6 images; the teacher's "logits" are the image sums of the image as stored and
    # as mirrored, made different by an asymmetric image. Every target the loss used must be the
    # one of the image the model saw (flipped or not).
    t = load_script()
    torch.manual_seed(0)
    x = torch.zeros(6, 1, 28, 28)
    x[:, :, :, :7] = torch.rand(6, 1, 28, 7)  # content on the left only: a flip moves it right
    y = torch.arange(6) % 10
    left = x[:, 0, :, :14].sum((1, 2))
    plain = torch.stack([left] * 10, 1)
    mirrored = torch.stack([x.flip(3)[:, 0, :, :14].sum((1, 2))] * 10, 1)
    seen = []
    original = t.teacher_targets

    def recording(teacher, idx, flip):
        out = original(teacher, idx, flip)
        seen.append((idx.clone(), flip.clone(), out.clone()))
        return out

    t.teacher_targets = recording
    model = t.MultiExitCnn(t.PLAN_P, t.PLAN_I)
    t.train(model, x, y, 1, 1, multi=True, teacher=(plain, mirrored), batch=3)
    assert len(seen) == 2
    flips = 0
    for idx, flip, out in seen:
        for i, f, o in zip(idx.tolist(), flip.tolist(), out):
            want = mirrored[i] if f else plain[i]
            assert torch.equal(o, want)
            flips += int(f)
    assert 0 < flips < 6  # both cases were exercised
