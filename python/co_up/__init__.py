"""co_up from Python: run a network across the processors of a heterogeneous SoC.

    import co_up, numpy as np
    s = co_up.Session.zoo("alexnet", image_size=64, order="BBBLLLLL", mode="pipeline")
    y = s.run(np.zeros(s.inputs[0][1], np.float32))       # one frame
    for frame, y in s.stream(frames):                      # frames overlap across processors
        ...
    print(s.profile["throughput_fps"])

Arrays are float32, C-contiguous, row-major, in the shapes the network declares (NCHW images).
Errors are co_up.Error: co_up.InputError (also a ValueError) for what the caller can fix,
co_up.RuntimeFailure (also a RuntimeError) for failures doing valid work; str(error) is the
message the co_up command line prints. docs/python.md has the details.
"""

import numbers as _numbers
import os as _os

from ._co_up import Error, InputError, RuntimeFailure, api_version, zeros
from ._co_up import _Session, _options

__all__ = ["Session", "Error", "InputError", "RuntimeFailure", "api_version", "zeros", "OPTIONS"]

# Keyword options: the SessionOptions setters' names without "set_", each with the command-line
# option it stands for (its values are checked, and refused with the same message, as there).
# Built from the one table of run options that the command line and SessionOptions read too; the
# command line's meter options are keywords as well, refused by the Session with one line saying so.
OPTIONS = {o["keyword"]: o["name"] for o in _options()}
# Options that are switches: True/False as the command line's flag.
_FLAGS = {o["keyword"] for o in _options() if o["flag"]}
# threads=(big, little) and cores=(big, little) set both clusters, as SessionOptions.set_threads.
_PAIRS = {"threads": "threads_little", "cores": "cores_little"}


def _option_text(name, value):
    """A keyword option's value as the command line would spell it."""
    if isinstance(value, bool) and name in _FLAGS:
        return "1" if value else "0"
    if isinstance(value, bool):
        raise InputError(f"option {name}={value!r}: give a number or a string, not a bool")
    if isinstance(value, str):
        return value
    if isinstance(value, _numbers.Integral):  # int, numpy integers
        return str(int(value))
    if name == "meter_window" and isinstance(value, _numbers.Real):
        return repr(float(value))
    if isinstance(value, _os.PathLike):
        return _os.fspath(value)
    if name == "input_shape" and isinstance(value, (list, tuple)):
        return ",".join(_option_text(name, d) for d in value)
    raise InputError(f"option {name}={value!r}: give a number, a string or a path")


def _option_pairs(options):
    pairs = []
    for name, value in options.items():
        if name not in OPTIONS:
            raise TypeError(f"unknown co_up option '{name}' (options: {', '.join(OPTIONS)})")
        if name in _PAIRS and isinstance(value, (list, tuple)):
            if len(value) != 2:
                raise InputError(f"option {name}={value!r}: give one number or (big, little)")
            pairs.append((OPTIONS[name], _option_text(name, value[0])))
            pairs.append((OPTIONS[_PAIRS[name]], _option_text(name, value[1])))
        else:
            pairs.append((OPTIONS[name], _option_text(name, value)))
    return pairs


class Session:
    """A network opened on the platform's processors: co_up::Session.

    Session(model, **options) opens an ONNX file; Session.zoo(name, **options) a built-in network
    ("alexnet", "googlenet", "mobilenet", "resnet50", "squeezenet", ...). Options are keywords named
    after SessionOptions' setters (co_up.OPTIONS lists them): order="BBBLLLLL",
    mode="pipeline"|"switch"|"overlap", image_size=64, threads=2 or threads=(big, little), input_shape=(1, 3,
    224, 224), ... Closing (close(), a with block, or the last reference going) stops what is in
    flight, joins the session's threads and restores DVFS levels.

    Like co_up::Session, a Session is used by one thread at a time, except that one thread may
    submit while another waits for results.
    """

    __slots__ = ("_s", "_single_input", "_single_output", "__weakref__")

    def __init__(self, model, **options):
        self._attach(_Session.open_model(_os.fspath(model), _option_pairs(options)))

    @classmethod
    def zoo(cls, name, **options):
        """Opens a zoo network by name, with the same keyword options."""
        session = cls.__new__(cls)
        session._attach(_Session.open_zoo(name, _option_pairs(options)))
        return session

    def _attach(self, s):
        self._s = s
        self._single_input = len(s.inputs()) == 1
        self._single_output = len(s.outputs()) == 1

    # ---- what the network takes and gives ----------------------------------------------------
    @property
    def inputs(self):
        """[(name, shape), ...] of the graph's inputs."""
        return self._s.inputs()

    @property
    def outputs(self):
        """[(name, shape), ...] of the graph's outputs."""
        return self._s.outputs()

    @property
    def order(self):
        """The order run: one processor letter per layer unit."""
        return self._s.order()

    def new_input(self, index=0):
        """A zero-filled array for input `index` that run() reads in place (no copy)."""
        return zeros(self._s.inputs()[index][1])

    # ---- one frame ---------------------------------------------------------------------------------
    def run(self, *inputs):
        """Runs one frame: one array per graph input. Returns the output array when the graph has
        one output, else a tuple of them. The arrays returned own their memory (no copy)."""
        return self._outputs(self._s.run(inputs))

    # ---- streaming -----------------------------------------------------------------------------------
    def stream(self, frames):
        """Yields (frame, outputs) for every item of `frames`, in order, while keeping up to
        queue_capacity frames in the pipeline. An item is an array (a graph of one input) or a
        sequence of arrays (one per input); outputs as run() returns them; frame counts the
        session's submitted frames from 0. Ending the loop early takes the frames still in flight
        and ends the stream, so the session is ready for the next run() or stream()."""
        s = self._s
        items = iter(frames)
        pending = None
        in_flight = 0
        exhausted = False
        try:
            while True:
                while not exhausted:
                    if pending is None:
                        try:
                            item = next(items)
                        except StopIteration:
                            exhausted = True
                            break
                        pending = s.prepare(self._input_list(item))
                    if not s.try_submit(pending):
                        break
                    pending = None
                    in_flight += 1
                if in_flight == 0:
                    break
                frame, outputs = s.wait_result()
                in_flight -= 1
                yield frame, self._outputs(outputs)
            s.drain()
        except BaseException:
            # Stopped early (break, an error in the loop's body or in the stream): leave the
            # session usable. The first error is the one the caller sees.
            try:
                for _ in range(in_flight):
                    s.wait_result()
                s.drain()
            except Error:
                pass
            raise

    def submit(self, *inputs):
        """Queues one frame (one array per input); blocks while queue_capacity frames are in
        flight. Results come from wait_result() in submission order."""
        self._s.submit(self._s.prepare(inputs))

    def try_submit(self, *inputs):
        """Queues one frame unless queue_capacity frames are in flight; True when queued."""
        return self._s.try_submit(self._s.prepare(inputs))

    def wait_result(self):
        """(frame, outputs) of the next submitted frame, in order; blocks until it is complete."""
        frame, outputs = self._s.wait_result()
        return frame, self._outputs(outputs)

    def try_result(self, timeout=0.0):
        """As wait_result, or None when the next result is not complete within timeout seconds."""
        result = self._s.try_result(timeout)
        if result is None:
            return None
        return result[0], self._outputs(result[1])

    def drain(self):
        """Waits for every submitted frame, then ends the stream (profile then covers it)."""
        self._s.drain()

    @property
    def in_flight(self):
        return self._s.in_flight()

    @property
    def queue_capacity(self):
        return self._s.queue_capacity()

    # ---- measurements -------------------------------------------------------------------------------
    @property
    def profile(self):
        """The last run()'s or drained stream's profile as a dict: order, mode, frames_completed,
        setup_ms, wall_ms, throughput_fps, latency_median_ms, layers [{index, name, processor,
        subgraph, median_ms}], subgraphs [{index, processor, backend, first_layer, last_layer,
        median_ms}]. Per-layer times need profile_level=2, per-sub-graph ones >= 1."""
        return self._s.profile()

    @property
    def profile_json(self):
        """The same profile as the JSON text the command line's --profile-out writes."""
        return self._s.profile_json()

    @property
    def input_copies(self):
        """How many input arrays this session copied into co_up memory (run() reads arrays from
        co_up.zeros(), new_input() or earlier outputs in place; submitted frames are always
        copied, since the pipeline keeps them)."""
        return self._s.input_copies()

    # ---- lifetime ------------------------------------------------------------------------------------
    def close(self):
        """Stops frames in flight, joins the session's threads, releases devices, restores DVFS."""
        self._s.close()

    @property
    def closed(self):
        return self._s.closed

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        if self._s.closed:
            return "<co_up.Session closed>"
        return f"<co_up.Session order {self.order!r}, inputs {self.inputs}, outputs {self.outputs}>"

    # ---- helpers -------------------------------------------------------------------------------------
    def _input_list(self, item):
        if self._single_input or not isinstance(item, (list, tuple)):
            return (item,)
        return item

    def _outputs(self, arrays):
        if self._single_output:
            return arrays[0]
        return tuple(arrays)
