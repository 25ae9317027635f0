"""Every third-party module imported under fpgaprune/ is declared in pyproject.toml by its own distribution: a
base dependency, or an extra's, imported only through `fpgaprune.support.extras.require_extra` (one line with the
install command when it is missing). A package reached only through another package's dependencies (psutil
through the dev extra, keras through tensorflow, platformdirs through yowasp-runtime) fails here, as the
README's `pip install -e .` would fail on a fresh machine."""

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

from fpgaprune.support.extras import DISTRIBUTIONS, EXTRAS

ROOT = Path(__file__).resolve().parents[1]


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared() -> tuple[set, dict]:
    """(base distributions, {extra: its distributions}) from pyproject.toml."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = {_normal(Requirement(text).name) for text in project["dependencies"]}
    extras = {
        name: {_normal(Requirement(text).name) for text in texts}
        for name, texts in project.get("optional-dependencies", {}).items()
    }
    return base, extras


def _imports(path: Path):
    """(top-level module, line, whether it is `require_extra`'s argument) of every import in a file."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((alias.name.split(".")[0], node.lineno, False) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0], node.lineno, False
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "require_extra" and node.args:
            if isinstance(node.args[0], ast.Constant):
                yield node.args[0].value.split(".")[0], node.lineno, True


def _third_party():
    """{(file, line, module, through require_extra): its distributions} for every third-party import."""
    owners = importlib.metadata.packages_distributions()
    found = {}
    for path in sorted((ROOT / "fpgaprune").rglob("*.py")):
        for module, line, guarded in _imports(path):
            if module in sys.stdlib_module_names or module == "fpgaprune":
                continue
            where = (str(path.relative_to(ROOT)), line, module, guarded)
            found[where] = {_normal(name) for name in owners.get(module, [DISTRIBUTIONS.get(module, module)])}
    return found


def test_every_import_is_declared_by_its_own_distribution():
    base, extras = _declared()
    problems = []
    for (path, line, module, guarded), dists in _third_party().items():
        if dists & base:
            continue
        extra = next((name for name, declared in extras.items() if dists & declared and name != "dev"), None)
        if extra is None:
            problems.append(
                f"{path}:{line}: imports {module} ({', '.join(sorted(dists))}), which pyproject.toml "
                "does not declare (not in dependencies, nor in an extra other than dev)"
            )
        elif not guarded and not path.startswith("fpgaprune/frontends/"):  # the registry guards a front end
            problems.append(
                f"{path}:{line}: imports {module} of the '{extra}' extra directly; import it with "
                "fpgaprune.support.extras.require_extra, which names the install command when it is missing"
            )
        elif EXTRAS.get(module) != extra:
            problems.append(
                f"{path}:{line}: fpgaprune.support.extras.EXTRAS names {EXTRAS.get(module)!r} for {module}, "
                f"pyproject.toml the '{extra}' extra"
            )
    assert not problems, "\n".join(problems)


def test_the_scan_sees_the_imports_it_judges():
    """The scan is not vacuous: it finds the base packages fpgaprune is built on, and the extra's guarded import."""
    modules = {module for (_, _, module, _) in _third_party()}
    assert {"numpy", "hls4ml", "tensorflow", "qkeras", "psutil", "yaml"} <= modules
    assert any(module == "ray" and guarded for (_, _, module, guarded) in _third_party())


def test_sweep_without_ray_stops_before_any_work_with_the_install_command(tmp_path):
    """`fpgaprune sweep` checks the `sweep` extra first: one line, exit 2, nothing trained or written."""
    import subprocess

    code = (
        "import sys; sys.modules['ray'] = None\n"  # `import ray` raises ImportError, as where it is not installed
        "from fpgaprune.cli import entry\n"
        f"sys.exit(entry(['sweep', '--grid', 'sparsity=0.3,0.6', '--out', {str(tmp_path / 'sweep')!r}]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 2, done.stderr[-2000:]
    assert lines == [
        "error: fpgaprune sweep needs ray, which the 'sweep' extra installs: pip install -e '.[sweep]' in a "
        "checkout (pip install 'fpgaprune[sweep]' otherwise)"
    ]
    assert "sweep:" not in done.stdout and not (tmp_path / "sweep").exists()


def test_the_hgq2_environment_is_the_base_without_qkeras_plus_the_hgq2_extra():
    """requirements/hgq2.txt (docs/hgq2.md) pins what pyproject.toml pins: every base requirement but QKeras and
    pyparsing (QKeras' own), the hgq2 extra (its keras pin over the base's), the sweep extra (a local Ray: sweeps
    and the HGQ2 benchmark's points), the rtl extra (an HGQ2 model's RTL simulated), and the test tools; nothing
    else."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = (ROOT / "requirements" / "hgq2.txt").read_text().splitlines()
    listed = {str(Requirement(line.split("#")[0].strip())) for line in lines if line.split("#")[0].strip()}
    base = {str(Requirement(text)) for text in project["dependencies"]}
    hgq2 = {str(Requirement(text)) for text in project["optional-dependencies"]["hgq2"]}
    sweep = {str(Requirement(text)) for text in project["optional-dependencies"]["sweep"]}
    rtl = {str(Requirement(text)) for text in project["optional-dependencies"]["rtl"]}
    dev = {_normal(Requirement(text).name): str(Requirement(text)) for text in project["optional-dependencies"]["dev"]}
    tools = {dev[name] for name in ("pytest", "pytest-xdist", "hypothesis", "packaging", "nbmake")}
    replaced = {"qkeras", "pyparsing"} | {_normal(Requirement(text).name) for text in hgq2}
    kept = {text for text in base if _normal(Requirement(text).name) not in replaced}
    assert len(base - kept) == 3  # qkeras, pyparsing, and keras (pinned higher by the extra)
    assert listed == kept | hgq2 | sweep | rtl | tools
