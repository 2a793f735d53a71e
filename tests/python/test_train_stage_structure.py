"""The Map-and-Conquer training script's width split (scripts/train_map_and_conquer.py): a
last-stage P entry of 1 makes the last stage compute that whole layer from every stage's features
of the layer before, so the path to the last exit has the static CNN's width there."""
import torch

from train_script import load_script


def test_a_last_stage_entry_of_one_is_the_whole_layer():
    t = load_script()
    p = [[0.25, 0.25, 0.25], [0.25, 0.25, 0.25], [0.5, 0.5, 1.0]]
    assert t.full_layers(p) == [False, False, True]
    assert t.stage_channels(p, [32, 64, 128]) == [[8, 16, 32], [8, 16, 32], [16, 32, 128]]
    # Without it the last stage takes the rest.
    assert t.stage_channels([[0.25] * 3, [0.25] * 3, [0.5] * 3], [32, 64, 128])[2] == [16, 32, 64]


def test_the_last_exit_sees_every_layer_2_channel_through_a_full_layer_3():
    t = load_script()
    torch.manual_seed(0)
    p = [[0.25, 0.25, 0.25], [0.25, 0.25, 0.25], [0.5, 0.5, 1.0]]
    model = t.MultiExitCnn(p, [[1, 1, 1], [1, 1, 1], [0, 0, 0]]).eval()
    # Stage 3's layer 3: all 128 channels of the static CNN's layer 3, from all 64 layer-2 channels
    # (stage 1's 16, stage 2's 16, its own 32); its exit also reads stages 1 and 2's layer 3 (I).
    assert tuple(model.stages[2][2].weight.shape) == (128, 64, 3, 3)
    assert model.exits[2].in_features == 32 + 32 + 128
    # The earlier stages are unchanged: stage 1 reads only itself, stage 2 stage 1 and itself.
    assert tuple(model.stages[0][2].weight.shape) == (32, 16, 3, 3)
    assert tuple(model.stages[1][2].weight.shape) == (32, 32, 3, 3)
    x = torch.rand(2, 1, 28, 28)
    outs = model(x)
    assert [tuple(o.shape) for o in outs] == [(2, 10)] * 3
    # The script's fixtures use this P: the committed stage plan is what it trains.
    assert t.PLAN_P == p
