"""The same network through Python and through the co_up command line gives the same outputs."""

import numpy as np
import pytest

import co_up
from tiny_model import INPUT_SHAPE


@pytest.mark.parametrize("mode", ["pipeline", "switch"])
def test_zoo_network_equals_the_cli_output(mode, platform_file, scratch, run_cli):
    x = np.random.default_rng(1).uniform(-1, 1, (1, 3, 64, 64)).astype(np.float32)
    np.save(scratch / f"zoo-in-{mode}.npy", x)
    out = scratch / f"zoo-out-{mode}.npy"
    e = run_cli("--graph=alexnet", "--image-size=64", "--order=BBBLLLLL", f"--mode={mode}", "--n=1",
                f"--platform={platform_file}", f"--input={scratch / f'zoo-in-{mode}.npy'}", f"--output={out}")
    assert e.code == 0, e
    expected = np.load(out)

    with co_up.Session.zoo("alexnet", image_size=64, order="BBBLLLLL", mode=mode,
                           platform_file=platform_file) as s:
        y = s.run(x)
    assert y.dtype == np.float32
    assert y.shape == expected.shape == (1, 1000)
    assert np.array_equal(y, expected), f"max difference {np.max(np.abs(y - expected))}"
    assert np.any(y != 0)


def test_onnx_model_equals_the_cli_output(tiny_model, platform_file, scratch, run_cli):
    x = np.random.default_rng(2).uniform(-1, 1, INPUT_SHAPE).astype(np.float32)
    np.save(scratch / "tiny-in.npy", x)
    out = scratch / "tiny-out.npy"
    e = run_cli(f"--model={tiny_model}", "--order=BLG", "--n=1", f"--platform={platform_file}",
                f"--input={scratch / 'tiny-in.npy'}", f"--output={out}")
    assert e.code == 0, e

    s = co_up.Session(tiny_model, order="BLG", platform_file=str(platform_file))
    assert np.array_equal(s.run(x), np.load(out))
