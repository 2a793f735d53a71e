"""The Map-and-Conquer training script's exit thresholds (scripts/train_map_and_conquer.py): the
cheapest whose paired accuracy difference d from the static CNN on validation clears the 1-point
target by the confidence margin 1.645 * sqrt(2) * SE; when none does, the cheapest that costs no
accuracy against the last exit alone on either half of the validation set."""
import math

import numpy as np

from train_script import load_script

LABELS = np.array([0, 1, 2, 3])  # halves: frames 0-1 and 2-3
MACS = [1, 1, 10]


def confident(label, right, p=0.9):
    """Logits whose softmax-max is p, on the label or on another class."""
    out = np.zeros(10, np.float32)
    out[label if right else (label + 1) % 10] = np.log(p * 9 / (1 - p))
    return out


def exit_logits(exit0_right):
    """Exit 0 confident (0.9) on every frame, right where exit0_right says; exit 1 never confident;
    the last exit right on frames 0 and 2 (one per half)."""
    return np.stack([np.stack([confident(y, exit0_right[f]), np.zeros(10, np.float32),
                               confident(y, f in (0, 2))]) for f, y in enumerate(LABELS)])


def test_an_exit_that_helps_one_half_and_hurts_the_other_is_not_taken():
    t = load_script()
    # Exit 0 is right on both frames of the first half, wrong on both of the second: as accurate
    # as the last exit on the whole set (2 of 4) but below it on the second half.
    logits = exit_logits([True, True, False, False])
    static_correct = np.ones(4, bool)  # the target is out of reach: the fallback decides
    cost, thresholds, acc, halves, met, _ = t.pick_thresholds(logits, LABELS, static_correct, MACS)
    assert not met
    assert thresholds[0] > 0.9  # exit 0 never stops a frame
    assert cost == 12 and acc == 0.5 and halves == [0.5, 0.5]


def test_an_exit_that_costs_neither_half_is_taken_at_its_cheapest():
    t = load_script()
    logits = exit_logits([True, False, True, False])  # as the last exit on each half
    cost, thresholds, acc, halves, met, _ = t.pick_thresholds(logits, LABELS, np.ones(4, bool), MACS)
    assert not met
    assert thresholds[0] == 0.5 and cost == 1 and halves == [0.5, 0.5]


def test_the_cheapest_thresholds_that_clear_the_margin_come_first():
    t = load_script()
    # Exit 0 right exactly where the static CNN is (d = 0, SE = 0: the margin is 0), so the
    # cheapest policy clears the target even where it costs a half against the last exit.
    logits = exit_logits([True, True, False, False])
    cost, thresholds, acc, halves, met, paired = t.pick_thresholds(logits, LABELS, np.array([1, 1, 0, 0], bool), MACS)
    assert met
    assert thresholds[0] == 0.5 and cost == 1 and halves == [1.0, 0.0]
    assert paired == (0.0, 0.0, 0.0)


def test_a_difference_within_half_a_point_but_inside_its_noise_does_not_meet_the_target():
    t = load_script()
    # Exit 0 is as accurate as the static CNN (d = 0, within static - 0.5 points) but wrong on a
    # frame the static CNN gets and right on one it misses: SE > 0, and d does not clear the margin.
    # The last exit alone is right exactly where the static CNN is (d = 0, SE = 0): it is chosen,
    # at the full cost, over the cheaper exit 0.
    static_correct = np.array([1, 0, 1, 0], bool)
    logits = exit_logits([False, True, True, False])
    cost, thresholds, acc, halves, met, paired = t.pick_thresholds(logits, LABELS, static_correct, MACS)
    assert met
    assert thresholds[0] > 0.9 and cost == 12  # exit 0 never stops a frame
    assert paired == (0.0, 0.0, 0.0)
    d, se, margin = t.paired_difference(np.array([0, 1, 1, 0], bool), static_correct)
    assert d == 0.0 and math.isclose(se, math.sqrt(2 / 3) / 2)
    assert math.isclose(margin, 1.645 * math.sqrt(2) * se) and d < -0.01 + margin
