"""The seam: every module outside `fpgaprune/frontends/` imports with the frameworks blocked (tensorflow,
tf_keras, keras, qkeras, torch), so that a front end is the only place that names one."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BLOCKED = ("tensorflow", "tf_keras", "keras", "qkeras", "torch")
IMPORT_ALL = """
import importlib, sys
BLOCKED = set(sys.argv[1].split(","))

class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is blocked")

sys.meta_path.insert(0, Blocked())
failed = []
for module in sys.argv[2:]:
    try:
        importlib.import_module(module)
    except Exception as error:
        failed.append(f"{module}: {type(error).__name__}: {error}")
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


def core_modules() -> list:
    """Every fpgaprune module outside fpgaprune/frontends/, dotted."""
    package = ROOT / "fpgaprune"
    names = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[1:2] == ("frontends",):
            continue
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_every_module_outside_the_front_ends_imports_without_a_framework():
    modules = core_modules()
    assert len(modules) > 100 and "fpgaprune.hls.exporter" in modules and "fpgaprune.pipeline.stages" in modules
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_ALL, ",".join(BLOCKED), *modules, "hls4ml", "hls4ml.converters"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]


def test_the_blocker_blocks():
    """The check is not vacuous: a front end's module fails under the same blocker."""
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_ALL, ",".join(BLOCKED), "fpgaprune.frontends.qkeras.layers"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 1 and "tf_keras is blocked" in done.stdout, done.stdout + done.stderr


def test_no_module_outside_the_front_ends_imports_one():
    """The core finds front ends through the registry (`fpgaprune.framework`, by name or entry point), never by an
    import statement: no package-level cycle runs through `fpgaprune.frontends`."""
    import ast

    found = []
    for path in sorted((ROOT / "fpgaprune").rglob("*.py")):
        if "frontends" in path.relative_to(ROOT).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            found += [
                f"{path.relative_to(ROOT)}:{node.lineno}: {n}" for n in names if n.startswith("fpgaprune.frontends")
            ]
    assert not found, "\n".join(found)
