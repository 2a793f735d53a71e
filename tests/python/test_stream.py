"""Streaming through a three-stage pipeline: every frame, in order, with its own outputs."""

import faulthandler
import threading

import numpy as np
import pytest

import co_up
from tiny_model import INPUT_SHAPE

FRAMES = 1000


def frames(count, seed=3):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, INPUT_SHAPE).astype(np.float32) for _ in range(count)]


def test_thousand_frames_arrive_in_order_none_lost(tiny_model, platform_file):
    inputs = frames(FRAMES)
    with co_up.Session(tiny_model, order="BBB", mode="switch", platform_file=platform_file) as reference:
        expected = [reference.run(x) for x in inputs]

    with co_up.Session(tiny_model, order="BLG", mode="pipeline", platform_file=platform_file) as s:
        capacity = s.queue_capacity
        assert capacity >= 3
        ids, most_in_flight = [], 0
        for i, (frame, y) in enumerate(s.stream(iter(inputs))):
            most_in_flight = max(most_in_flight, s.in_flight)
            ids.append(frame)
            assert np.array_equal(y, expected[i]), f"frame {frame}: outputs of another frame"
        assert ids == list(range(FRAMES))
        # The stream refills the queue before it hands out a result: the pipeline stays full.
        assert most_in_flight == capacity - 1
        p = s.profile
        assert p["frames_completed"] == FRAMES
        assert p["order"] == "BLG"
        assert [g["processor"] for g in p["subgraphs"]] == ["B", "L", "G"]


def test_a_stream_stopped_early_leaves_the_session_usable(tiny_model, platform_file):
    inputs = frames(50)
    with co_up.Session(tiny_model, order="BLG", platform_file=platform_file) as s:
        for frame, _ in s.stream(inputs):
            if frame == 9:
                break
        assert s.in_flight == 0
        expected = s.run(inputs[0])
        ids = [frame for frame, y in s.stream(inputs[:5])]
        assert len(ids) == 5 and ids == sorted(ids) and ids[0] > 9
        assert s.profile["frames_completed"] == 5


def test_submit_and_wait_result_in_order(tiny_model, platform_file):
    inputs = frames(8)
    with co_up.Session(tiny_model, order="BLG", platform_file=platform_file, queue_capacity=8) as s:
        for x in inputs:
            s.submit(x)
        results = [s.wait_result() for _ in inputs]
        assert [f for f, _ in results] == list(range(8))
        assert s.try_result(0.0) is None
        s.drain()
        for (_, y), x in zip(results, inputs):
            assert np.array_equal(y, s.run(x))


def test_blocking_calls_release_the_gil(tiny_model, platform_file):
    # One frame fills the queue; a second thread's submit then blocks until this thread takes the
    # first result. Were the GIL held while submit blocks, this thread could never take it: the
    # watchdog (a thread of faulthandler, which needs no GIL) ends the test after 60 s instead.
    faulthandler.dump_traceback_later(60, exit=True)
    try:
        inputs = frames(2)
        with co_up.Session(tiny_model, order="BLG", platform_file=platform_file, queue_capacity=1) as s:
            s.submit(inputs[0])
            submitted = threading.Event()

            def submit_second():
                s.submit(inputs[1])
                submitted.set()

            thread = threading.Thread(target=submit_second)
            thread.start()
            assert not submitted.wait(0.3), "submit did not wait for room in the queue"
            assert s.wait_result()[0] == 0
            thread.join()
            assert submitted.is_set()
            assert s.wait_result()[0] == 1
    finally:
        faulthandler.cancel_dump_traceback_later()


def test_closing_with_frames_in_flight_stops_them(tiny_model, platform_file):
    faulthandler.dump_traceback_later(60, exit=True)
    try:
        s = co_up.Session(tiny_model, order="BLG", platform_file=platform_file, queue_capacity=4)
        for x in frames(4):
            s.submit(x)
        s.close()
        assert s.closed
        with pytest.raises(co_up.InputError):
            s.wait_result()
    finally:
        faulthandler.cancel_dump_traceback_later()
