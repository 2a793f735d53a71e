"""co_up errors reach Python as co_up.InputError / co_up.RuntimeFailure with the command line's
message."""

import json
import os

import numpy as np
import pytest

import co_up
from tiny_model import INPUT_SHAPE

CLI_PREFIX = "co_up: error: "


def cli_message(e):
    """The one error line of a co_up run that failed with exit code 2, without its prefix."""
    assert e.code == 2, e
    lines = e.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(CLI_PREFIX), e
    return lines[0][len(CLI_PREFIX):]


def test_hierarchy():
    assert issubclass(co_up.InputError, co_up.Error) and issubclass(co_up.InputError, ValueError)
    assert issubclass(co_up.RuntimeFailure, co_up.Error) and issubclass(co_up.RuntimeFailure, RuntimeError)
    assert not issubclass(co_up.InputError, RuntimeError)
    assert co_up.InputError.__module__ == "co_up" and co_up.InputError.__name__ == "InputError"


def test_bad_order_has_the_cli_message(run_cli, platform_file):
    expected = cli_message(run_cli("--graph=alexnet", "--image-size=64", "--order=BBX", f"--platform={platform_file}"))
    with pytest.raises(co_up.InputError) as error:
        co_up.Session.zoo("alexnet", image_size=64, order="BBX", platform_file=platform_file)
    assert str(error.value) == expected
    assert "BBX" in expected


def test_unknown_letter_has_the_cli_message(run_cli, platform_file):
    expected = cli_message(run_cli("--graph=alexnet", "--image-size=64", "--order=BBBBBBBX",
                                   f"--platform={platform_file}"))
    with pytest.raises(co_up.InputError) as error:
        co_up.Session.zoo("alexnet", image_size=64, order="BBBBBBBX", platform_file=platform_file)
    assert str(error.value) == expected


def test_missing_model_has_the_cli_message(run_cli, scratch):
    missing = scratch / "missing.onnx"
    expected = cli_message(run_cli(f"--model={missing}"))
    with pytest.raises(co_up.InputError) as error:
        co_up.Session(missing)
    assert str(error.value) == expected
    assert "missing.onnx" in expected


def test_bad_mode_has_the_cli_message(run_cli):
    expected = cli_message(run_cli("--graph=alexnet", "--mode=sideways"))
    with pytest.raises(co_up.InputError) as error:
        co_up.Session.zoo("alexnet", mode="sideways")
    assert str(error.value) == expected


def test_wrong_input_shape_is_an_input_error(tiny_model, platform_file):
    with co_up.Session(tiny_model, order="BLG", platform_file=platform_file) as s:
        with pytest.raises(co_up.InputError) as error:
            s.run(np.zeros((1, 4, 4, 4), np.float32))
        assert "[1,4,4,4]" in str(error.value) and "[1,4,8,8]" in str(error.value)
        with pytest.raises(ValueError):  # what a caller that knows only Python's types catches
            s.run(np.zeros((1, 4, 8), np.float32))
        with pytest.raises(co_up.InputError) as error:
            s.submit(np.zeros((2, 4, 8, 8), np.float32))
        assert "[2,4,8,8]" in str(error.value)
        with pytest.raises(co_up.InputError) as error:
            s.run("not an array")
        assert "not an array of numbers" in str(error.value)
        # The session still works after refusing them.
        assert s.run(np.zeros(INPUT_SHAPE, np.float32)).shape == INPUT_SHAPE


def test_unknown_keyword_is_a_type_error():
    with pytest.raises(TypeError) as error:
        co_up.Session.zoo("alexnet", ordr="BBBBBBBB")
    assert "ordr" in str(error.value) and "order" in str(error.value)


def test_a_closed_session_refuses_calls(tiny_model, platform_file):
    s = co_up.Session(tiny_model, order="BLG", platform_file=platform_file)
    s.close()
    assert s.closed
    with pytest.raises(co_up.InputError) as error:
        s.run(np.zeros(INPUT_SHAPE, np.float32))
    assert str(error.value) == "the session is closed"
    s.close()  # twice is fine


def test_a_failing_plugin_is_a_runtime_failure_with_the_cli_message(tiny_model, scratch, run_cli):
    # tests/plugins' failing-npu: an accelerator whose compiler rejects the partition at setup.
    plugins = os.environ["CO_UP_TEST_PLUGIN_DIR"]
    platform = scratch / "failing-npu.json"
    platform.write_text(json.dumps({"name": "failing", "processors": [
        {"letter": "B", "kind": "cpu", "backend": "cpu-reference", "cores": [0]},
        {"letter": "N", "kind": "npu", "backend": "failing-npu", "host": "B"}]}))
    e = run_cli(f"--model={tiny_model}", "--order=BBN", f"--platform={platform}", f"--plugins={plugins}")
    assert e.code == 1, e
    lines = e.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("co_up: failed: "), e
    with pytest.raises(co_up.RuntimeFailure) as error:
        co_up.Session(tiny_model, order="BBN", platform_file=platform, plugins_dir=plugins)
    assert str(error.value) == lines[0][len("co_up: failed: "):]
    assert "compile failed" in str(error.value)
    assert isinstance(error.value, RuntimeError) and not isinstance(error.value, ValueError)


def test_a_wrong_frame_in_a_stream_raises_there_and_leaves_the_session_usable(tiny_model, platform_file):
    good = np.ones(INPUT_SHAPE, np.float32)
    frames = [good] * 5 + [np.ones((1, 4, 8, 9), np.float32)] + [good] * 5
    with co_up.Session(tiny_model, order="BLG", platform_file=platform_file) as s:
        received = []
        with pytest.raises(co_up.InputError) as error:
            for frame, _ in s.stream(frames):
                received.append(frame)
        assert "[1,4,8,9]" in str(error.value)
        assert received == list(range(len(received))) and len(received) <= 5
        assert s.in_flight == 0
        assert np.array_equal(s.run(good), s.run(good))


def test_option_values_are_checked_as_on_the_command_line(run_cli, tiny_model, platform_file):
    expected = cli_message(run_cli(f"--model={tiny_model}", "--buffers=0"))
    with pytest.raises(co_up.InputError) as error:
        co_up.Session(tiny_model, buffers=0)
    assert str(error.value) == expected
    with pytest.raises(co_up.InputError) as error:
        co_up.Session(tiny_model, buffers=2.5)
    assert "buffers=2.5" in str(error.value)
    with pytest.raises(co_up.InputError):
        co_up.Session(tiny_model, threads=(1, 2, 3))
    # numpy integers and path-likes are numbers and paths; a shape is a sequence of numbers.
    s = co_up.Session(tiny_model, order="BLG", platform_file=platform_file, buffers=np.int64(3),
                      input_shape=tuple(np.array(INPUT_SHAPE)))
    assert s.inputs[0][1] == INPUT_SHAPE
