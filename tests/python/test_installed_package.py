"""cmake --install puts the package where the build says; it imports from there and runs with the
installed libco_up and plugins (no build tree, no CO_UP_PLUGIN_PATH)."""

import os
import subprocess
import sys

SCRIPT = """
import co_up, numpy as np, sys
print(co_up.__file__)
s = co_up.Session(sys.argv[1], order="BLG", platform_file=sys.argv[2])
print(s.run(np.ones((1, 4, 8, 8), np.float32)).shape)
"""


def test_installed_package_imports_and_runs(tmp_path, tiny_model, platform_file):
    prefix = tmp_path / "prefix"
    cmake, build = os.environ["CO_UP_CMAKE_COMMAND"], os.environ["CO_UP_BUILD_DIR"]
    for component in ("runtime", "python"):
        done = subprocess.run([cmake, "--install", build, "--prefix", str(prefix), "--component", component],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
    package = prefix / os.environ["CO_UP_INSTALL_PYTHONDIR"] / "co_up"
    assert (package / "__init__.py").is_file()

    env = {k: v for k, v in os.environ.items() if k not in ("CO_UP_PLUGIN_PATH", "PYTHONPATH")}
    env["PYTHONPATH"] = str(package.parent)
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tiny_model), str(platform_file)],
                          capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [str(package / "__init__.py"), "(1, 4, 8, 8)"]
