"""The backend an export was made for is one object (`hls.backend.Backend`) that the stages after the export ask:
its C-synthesis tools and command, its report reader, the tool whose checked models may judge it (or the rules
only), its resource names and board families. A backend fpgaprune does not know is one line."""

import os
import shutil
import subprocess
import sys
from dataclasses import replace

import pytest

from fpgaprune.errors import HlsConfigError
from fpgaprune.hls import backend as backend_registry
from fpgaprune.hls.backend import DEFAULT_BACKEND, Backend, backend_named, register_backend
from fpgaprune.hls.cost_models import BUILT_IN
from fpgaprune.hls.synth import find_hls_tool
from fpgaprune.resources.fit_verdict import design_model


@pytest.mark.parametrize(
    "name, tool, sparse", [("Vitis", "Vitis HLS", True), ("vivado", "Vivado HLS", True), ("Catapult", None, True)]
)
def test_each_built_in_backend_says_what_judges_it(name, tool, sparse):
    backend = backend_named(name)
    assert backend.model_tool == tool and backend.kernel_sparse is sparse
    assert backend.judged_by() == (f"{tool}'s checked C-synthesis model" if tool else "rules only")
    assert backend.families == ("7-series", "UltraScale+") and backend.resource_columns()[0] == ("DSP", "dsp")


def test_an_unknown_backend_is_one_line_naming_the_known_ones():
    with pytest.raises(HlsConfigError) as error:
        backend_named("oneAPI")
    assert str(error.value) == "hls backend 'oneAPI': fpgaprune knows Vitis, Vivado, VivadoAccelerator, Catapult, RTL"


def test_synthesis_commands_are_each_tools_own(tmp_path):
    vitis = backend_named("Vitis").synthesis_command(tmp_path, "vitis_hls")
    assert vitis[-2:] == ["-f", "build_prj.tcl"] or vitis[:2] == ["vitis-run", "--tcl"]
    assert (
        "synth 1" in (tmp_path / "build_opt.tcl").read_text() and "csim 0" in (tmp_path / "build_opt.tcl").read_text()
    )
    vivado = backend_named("Vivado").synthesis_command(tmp_path, "vivado_hls")
    assert vivado[:3] == ["vivado_hls", "-f", "build_prj.tcl"] and "synth=1" in vivado[3] and "csim=0" in vivado[3]
    catapult = backend_named("Catapult").synthesis_command(tmp_path, "catapult")
    assert catapult[:6] == ["catapult", "-product", "ultra", "-shell", "-f", "build_prj.tcl"]
    assert "synth=1" in catapult[-1] and "csim=0" in catapult[-1]


def test_the_tool_found_is_the_backends_own():
    assert find_hls_tool("Catapult") == (shutil.which("catapult") and "catapult")
    assert find_hls_tool() == find_hls_tool(DEFAULT_BACKEND)
    assert find_hls_tool("Vivado") in (None, "vivado_hls", "vitis_hls")


def test_a_backend_registered_is_asked_like_a_built_in():
    register_backend(Backend("ToyHLS", ("toy_hls_that_is_not_installed",), None, kernel_sparse=False))
    toy = backend_named("toyhls")
    assert (
        toy.synthesis_tool() is None and toy.not_found() == "skipped: toy_hls_that_is_not_installed not found on PATH"
    )
    assert toy.judged_by() == "rules only"


def test_a_registered_backend_is_judged_by_its_own_cost_models_and_no_other(monkeypatch):
    monkeypatch.setattr(backend_registry, "_BACKENDS", dict(backend_registry._BACKENDS))  # registered for this test
    own = replace(BUILT_IN["vitis 2024.1"], tool="ToyHLS 1.0")
    register_backend(Backend("ToyCosted", ("toy_costed_hls",), "ToyHLS", kernel_sparse=False, cost_models=(own,)))
    register_backend(Backend("ToyUncosted", ("toy_uncosted_hls",), "ToyHLS", kernel_sparse=False))
    dense = [("dense", "io_parallel", "latency")]
    assert backend_named("ToyCosted").judged_by() == "ToyHLS's checked C-synthesis model"
    assert design_model(dense, "ToyCosted", "LUT") is own
    assert design_model(dense, "Vitis", "LUT") is BUILT_IN["vitis 2024.1"]  # each its own, never another's
    assert design_model(dense, "Vivado", "LUT") is BUILT_IN["vivado_hls 2019.2"]
    assert backend_named("ToyUncosted").judged_by() == "rules only"
    assert design_model(dense, "ToyUncosted", "LUT") is None and design_model(dense, "Catapult", "LUT") is None


def test_the_run_config_takes_every_registered_backend_by_name_and_names_them_when_it_refuses(monkeypatch):
    from fpgaprune.pipeline.schema import ConfigError, parse_config

    monkeypatch.setattr(backend_registry, "_BACKENDS", dict(backend_registry._BACKENDS))  # registered for this test
    assert parse_config("hls: {backend: catapult}")[0].hls.backend == "Catapult"  # its own spelling
    register_backend(Backend("ToyRegistered", ("toy_registered_hls",), None, kernel_sparse=False))
    assert parse_config("hls: {backend: ToyRegistered}")[0].hls.backend == "ToyRegistered"
    with pytest.raises(ConfigError) as refused:
        parse_config("hls:\n  backend: Nope\n", "run.yaml")
    known = backend_registry.backend_names()
    assert {"Vitis", "Vivado", "VivadoAccelerator", "Catapult", "ToyRegistered"} <= set(known)
    assert (
        str(refused.value)
        == f"run.yaml:2: hls.backend: found 'Nope'; expected a backend fpgaprune knows: {', '.join(known)}"
    )


USER_PACKAGE = """
from fpgaprune.hls.backend import Backend

TOY = Backend("ToyInstalled", ("toy_installed_hls",), None, kernel_sparse=False)
"""
CHECK = """
from fpgaprune.hls.backend import backend_named
from fpgaprune.pipeline.schema import parse_config

print(parse_config("hls: {backend: toyinstalled}")[0].hls.backend, backend_named("ToyInstalled").judged_by())
"""


def test_a_backend_installed_through_the_entry_point_group_is_seen_by_a_fresh_process(tmp_path):
    """As a user's package declares it (`[project.entry-points."fpgaprune.backends"]`): a process that never
    registered it at run time knows it, and its run config may name it."""
    (tmp_path / "toy_backend").mkdir()
    (tmp_path / "toy_backend" / "__init__.py").write_text(USER_PACKAGE)
    info = tmp_path / "toy_backend-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-backend\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[fpgaprune.backends]\ntoy = toy_backend:TOY\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", CHECK], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["ToyInstalled", "rules", "only"]
