"""Power options through the Python package: the Session wires them as co_up does. A DVFS level on a
simulated sysfs tree is the same writes, held while the session is open and restored when it
closes, and the same outputs as the command line; power wiring's errors arrive as the command
line's one-line messages."""

import json

import numpy as np
import pytest

import co_up

POLICY0 = "devices/system/cpu/cpufreq/policy0"
POLICY1 = "devices/system/cpu/cpufreq/policy1"
FILES = ["scaling_governor", "scaling_min_freq", "scaling_max_freq"]


def put(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


@pytest.fixture
def sysfs(tmp_path):
    """B on policy0 (userspace governor), L on policy1 (min/max clamp only), as tests/power/sim_sysfs.h."""
    root = tmp_path / "sys"
    for policy, freqs, governors in [(POLICY0, "408000 816000 1200000 1800000", "performance powersave schedutil userspace"),
                                     (POLICY1, "408000 600000 1008000", "performance powersave schedutil")]:
        values = freqs.split()
        d = root / policy
        put(d / "related_cpus", policy[-1])
        put(d / "affected_cpus", policy[-1])
        put(d / "scaling_available_frequencies", freqs)
        put(d / "cpuinfo_min_freq", values[0])
        put(d / "cpuinfo_max_freq", values[-1])
        put(d / "scaling_min_freq", values[0])
        put(d / "scaling_max_freq", values[-1])
        put(d / "scaling_governor", "schedutil")
        put(d / "scaling_available_governors", governors)
    put(root / POLICY0 / "scaling_setspeed", "<unsupported>")
    platform = tmp_path / "platform.json"
    platform.write_text(json.dumps({"name": "sim-py", "processors": [
        {"letter": "B", "kind": "cpu", "backend": "cpu-reference", "cores": [0], "threads": 1,
         "dvfs": {"driver": "cpufreq", "node": POLICY0, "frequencies_khz": [408000, 816000, 1200000, 1800000]}},
        {"letter": "L", "kind": "cpu", "backend": "cpu-reference", "cores": [1], "threads": 1,
         "dvfs": {"driver": "cpufreq", "node": POLICY1, "frequencies_khz": [408000, 600000, 1008000]}}]}))
    return root, platform


def levels(root):
    got = {f"{p}/{f}": (root / p / f).read_text().split()[0] for p in (POLICY0, POLICY1) for f in FILES}
    got[f"{POLICY0}/scaling_setspeed"] = (root / POLICY0 / "scaling_setspeed").read_text().split()[0]
    return got


UNTOUCHED = {f"{POLICY0}/scaling_governor": "schedutil", f"{POLICY0}/scaling_min_freq": "408000",
             f"{POLICY0}/scaling_max_freq": "1800000", f"{POLICY0}/scaling_setspeed": "<unsupported>",
             f"{POLICY1}/scaling_governor": "schedutil", f"{POLICY1}/scaling_min_freq": "408000",
             f"{POLICY1}/scaling_max_freq": "1008000"}
# scaling_setspeed keeps the last speed written (ignored under other governors): not restored.
RESTORED = dict(UNTOUCHED, **{f"{POLICY0}/scaling_setspeed": "1200000"})
HELD = dict(UNTOUCHED, **{f"{POLICY0}/scaling_governor": "userspace", f"{POLICY0}/scaling_setspeed": "1200000",
                          f"{POLICY1}/scaling_min_freq": "600000", f"{POLICY1}/scaling_max_freq": "600000"})


def test_a_frequency_level_is_held_while_open_and_gives_the_cli_outputs(sysfs, tmp_path, run_cli):
    root, platform = sysfs
    options = dict(image_size=32, platform_file=str(platform), sysfs_root=str(root),
                   state_dir=str(tmp_path / "state"), frequency="{3-2}")
    layers = len(co_up.Session.zoo("squeezenet", image_size=32, platform_file=str(platform)).order)
    order = "B" * (layers // 2) + "L" * (layers - layers // 2)
    x = np.random.default_rng(3).uniform(-1, 1, (1, 3, 32, 32)).astype(np.float32)
    assert levels(root) == UNTOUCHED
    with co_up.Session.zoo("squeezenet", order=order, **options) as s:
        assert levels(root) == HELD
        y = s.run(x)
        assert levels(root) == HELD
    assert levels(root) == RESTORED

    np.save(tmp_path / "in.npy", x)
    e = run_cli("--graph=squeezenet", "--image-size=32", f"--order={order}", "--n=1",
                f"--platform={platform}", f"--sysfs-root={root}", f"--state-dir={tmp_path / 'state'}",
                "--frequency={3-2}", f"--input={tmp_path / 'in.npy'}", f"--output={tmp_path / 'out.npy'}")
    assert e.code == 0, e
    assert levels(root) == RESTORED
    assert np.array_equal(y, np.load(tmp_path / "out.npy"))


def test_a_failed_level_write_is_the_cli_message(sysfs, tmp_path, run_cli):
    root, platform = sysfs
    setspeed = root / POLICY0 / "scaling_setspeed"
    setspeed.unlink()
    setspeed.mkdir()  # writes fail with EISDIR, even as root
    with pytest.raises(co_up.RuntimeFailure) as raised:
        co_up.Session.zoo("squeezenet", image_size=32, platform_file=str(platform), sysfs_root=str(root),
                          state_dir=str(tmp_path / "state"), frequency="max")
    message = str(raised.value)
    assert f"failed to write 1800000 to {setspeed}: EISDIR" in message
    assert (root / POLICY0 / "scaling_governor").read_text().split()[0] == "schedutil"
    e = run_cli("--graph=squeezenet", "--image-size=32", "--n=1", f"--platform={platform}",
                f"--sysfs-root={root}", f"--state-dir={tmp_path / 'state'}", "--frequency=max")
    assert e.code == 1, e
    assert e.err == f"co_up: failed: {message}\n"


def test_gpio_tags_without_lines_is_the_cli_input_error(sysfs, tmp_path, run_cli):
    root, platform = sysfs
    with pytest.raises(co_up.InputError) as raised:
        co_up.Session.zoo("squeezenet", image_size=32, platform_file=str(platform), sysfs_root=str(root),
                          gpio_tags="all", power=True)
    assert str(raised.value) == "--gpio-tags is set but platform 'sim-py' has no \"gpio\" section (chip and lines)"
    e = run_cli("--graph=squeezenet", "--image-size=32", "--n=1", f"--platform={platform}",
                f"--sysfs-root={root}", "--gpio-tags=all", "--power")
    assert e.code == 2, e
    assert e.err == f"co_up: error: {raised.value}\n"
