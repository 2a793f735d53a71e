"""Fixtures for the Python package's tests. ctest (tests/python/CMakeLists.txt) sets PYTHONPATH to
the build tree's package, CO_UP_PLUGIN_PATH to its plugins and CO_UP_BINARY to the co_up binary;
pytest's --basetemp puts every file a test writes under the build tree's scratch directory."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from tiny_model import write_tiny_model  # noqa: E402

# B and L: the two CPU cores on cpu-reference; G: a third processor (hosted on core 0) on
# cpu-reference too, so that three pipeline stages run on any machine and give exact results.
THREE_STAGE_PLATFORM = {
    "name": "three-stage",
    "processors": [
        {"letter": "B", "kind": "cpu", "backend": "cpu-reference", "cores": [0]},
        {"letter": "L", "kind": "cpu", "backend": "cpu-reference", "cores": [1]},
        {"letter": "G", "kind": "gpu", "backend": "cpu-reference", "host": "B"},
    ],
}


def _environment(name):
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: run these tests through ctest (tests/python)")
    return value


@pytest.fixture(scope="session")
def co_up_binary():
    return _environment("CO_UP_BINARY")


@pytest.fixture(scope="session")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("files")


@pytest.fixture(scope="session")
def platform_file(scratch):
    path = scratch / "three-stage.json"
    path.write_text(json.dumps(THREE_STAGE_PLATFORM))
    return path


@pytest.fixture(scope="session")
def tiny_model(scratch):
    return write_tiny_model(scratch / "tiny.onnx")


class Exit:
    def __init__(self, completed):
        self.code = completed.returncode
        self.out = completed.stdout
        self.err = completed.stderr

    def __repr__(self):
        return f"exit {self.code}\n--- stdout\n{self.out}\n--- stderr\n{self.err}"


@pytest.fixture(scope="session")
def run_cli(co_up_binary):
    """Runs the co_up binary with the given arguments (60 s at most)."""
    def run(*args):
        return Exit(subprocess.run([co_up_binary, *map(str, args)], capture_output=True, text=True,
                                   timeout=60))
    return run
