"""scripts/train_map_and_conquer.py loaded as a module, for the tests of its parts."""
import importlib.util
import os

SOURCE = os.environ.get("CO_UP_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def load_script():
    spec = importlib.util.spec_from_file_location("train_map_and_conquer",
                                                  os.path.join(SOURCE, "scripts", "train_map_and_conquer.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
