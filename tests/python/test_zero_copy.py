"""Outputs reach Python without a copy; inputs whose layout allows it are read in place."""

import numpy as np
import pytest

import co_up
from co_up import _co_up
from tiny_model import INPUT_SHAPE


def is_tensor_capsule(base):
    return type(base).__name__ == "PyCapsule" and "co_up.Tensor" in repr(base)


def test_outputs_own_their_tensor(tiny_model, platform_file):
    s = co_up.Session(tiny_model, order="BLG", platform_file=platform_file)
    x = np.random.default_rng(4).uniform(-1, 1, INPUT_SHAPE).astype(np.float32)
    y = s.run(x)
    assert y.dtype == np.float32 and y.flags.c_contiguous and y.flags.writeable
    assert not y.flags.owndata and is_tensor_capsule(y.base)
    # Each output has its own tensor; the arrays outlive the session.
    z = s.run(x)
    assert z.base is not y.base and z.ctypes.data != y.ctypes.data
    kept = y.copy()
    s.close()
    del z
    assert np.array_equal(y, kept)


def test_stream_outputs_own_their_tensor(tiny_model, platform_file):
    with co_up.Session(tiny_model, order="BLG", platform_file=platform_file) as s:
        for _, y in s.stream([np.ones(INPUT_SHAPE, np.float32)] * 3):
            assert is_tensor_capsule(y.base)


def test_an_input_viewing_a_tensor_is_not_copied(tiny_model, platform_file):
    with co_up.Session(tiny_model, order="BLG", platform_file=platform_file) as s:
        x = s.new_input()
        assert x.shape == INPUT_SHAPE and is_tensor_capsule(x.base)
        x[...] = np.random.default_rng(5).uniform(-1, 1, INPUT_SHAPE)
        assert _co_up._input_data_address(x) == x.ctypes.data
        values = np.array(x)
        copies = s.input_copies
        y = s.run(x)
        assert s.input_copies == copies
        # The tensor was lent to the call and given back: x still views it, unchanged.
        assert _co_up._input_data_address(x) == x.ctypes.data
        assert np.array_equal(x, values)
        assert np.array_equal(s.run(x), y) and s.input_copies == copies
        # The same values in an ordinary array: read in place too, the same result.
        plain = np.array(x)
        assert _co_up._input_data_address(plain) == plain.ctypes.data
        assert np.array_equal(s.run(plain), y)
        assert s.input_copies == copies
        # A view of the whole tensor (numpy's base is then the array over it) is read in place too.
        assert _co_up._input_data_address(x[...]) == x.ctypes.data
        assert np.array_equal(s.run(x.reshape(INPUT_SHAPE)), y)
        assert s.input_copies == copies


def test_an_ordinary_float32_array_is_read_in_place(tiny_model, platform_file):
    with co_up.Session(tiny_model, order="BLG", platform_file=platform_file) as s:
        x = np.random.default_rng(7).uniform(-1, 1, INPUT_SHAPE).astype(np.float32)
        assert _co_up._input_data_address(x) == x.ctypes.data
        y = s.run(x)
        assert s.input_copies == 0
        # Read-only memory is fine (the API only reads): a frozen array, a bytes buffer.
        frozen = x.copy()
        frozen.flags.writeable = False
        assert np.array_equal(s.run(frozen), y)
        wrapped = np.frombuffer(x.tobytes(), np.float32).reshape(INPUT_SHAPE)
        assert _co_up._input_data_address(wrapped) == wrapped.ctypes.data
        assert np.array_equal(s.run(wrapped), y)
        assert s.input_copies == 0
        # What it read was the array's memory at the call: change it, the output follows.
        x2 = x.copy()
        x2 *= -1
        assert not np.array_equal(s.run(x2), y)
        assert s.input_copies == 0


def test_other_layouts_are_copied_and_converted(tiny_model, platform_file):
    with co_up.Session(tiny_model, order="BLG", platform_file=platform_file) as s:
        x = np.random.default_rng(6).uniform(-1, 1, INPUT_SHAPE).astype(np.float32)
        y = s.run(x)
        # float64, Fortran order, a strided view, and part of a co_up tensor: all copied.
        assert np.array_equal(s.run(x.astype(np.float64)), y)
        assert np.array_equal(s.run(np.asfortranarray(x)), y)
        wide = np.zeros((1, 4, 8, 16), np.float32)
        wide[..., ::2] = x
        assert np.array_equal(s.run(wide[..., ::2]), y)
        # Misaligned float32 (a byte offset into a buffer): copied.
        raw = np.zeros(x.size * 4 + 1, np.uint8)
        misaligned = raw[1:].view(np.float32).reshape(INPUT_SHAPE)
        misaligned[...] = x
        if not misaligned.flags.aligned:
            assert _co_up._input_data_address(misaligned) != misaligned.ctypes.data
        assert np.array_equal(s.run(misaligned), y)
        # Big-endian float32: copied (converted).
        assert np.array_equal(s.run(x.astype(">f4")), y)
        expected_copies = 5 if not misaligned.flags.aligned else 4
        # A C-contiguous part of a bigger array is read in place.
        bigger = co_up.zeros([2, 4, 8, 8])
        bigger[1] = x[0]
        part = bigger[1:]
        assert _co_up._input_data_address(part) == part.ctypes.data
        assert np.array_equal(s.run(part), y)
        assert s.input_copies == expected_copies


def test_a_refused_input_tensor_is_given_back(tiny_model, platform_file):
    with co_up.Session(tiny_model, order="BLG", platform_file=platform_file) as s:
        wrong = co_up.zeros([1, 4, 4, 4])
        wrong[...] = 1.5
        with pytest.raises(co_up.InputError):
            s.run(wrong)
        assert _co_up._input_data_address(wrong) == wrong.ctypes.data
        assert wrong.shape == (1, 4, 4, 4) and np.all(wrong == 1.5)
