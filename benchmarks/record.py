"""What a benchmark prints, kept in git: `benchmarks/results/<script>/<UTC time>-<revision>.txt`.

The README and docs/benchmarks.md quote these files. The machine that ran a benchmark may be gone by the next
session, and `benchmarks/out/` is not in git. `bench_budget_front.py` keeps its own records (`points.jsonl`).
"""

import datetime
import io
import os
import platform
import subprocess
import sys
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
NOT_RECORDED = ("-h", "--help")


class _Tee(io.TextIOBase):
    def __init__(self, *streams):
        self.streams = streams

    def write(self, text):
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self):
        for stream in self.streams:
            stream.flush()


def revision() -> str:
    """The checkout's short commit, with '-dirty' when fpgaprune/ or a benchmark script has uncommitted changes
    (results written under benchmarks/results/ do not count)."""
    root = Path(__file__).parent.parent

    def git(*args):
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    return commit + (
        "-dirty"
        if git("status", "--porcelain", "--untracked-files=no", "--", "fpgaprune", "benchmarks/*.py", "pyproject.toml")
        else ""
    )


def run_recorded(main, script: str, argv=None, results: Path = RESULTS) -> Path | None:
    """Run `main()`; what it prints also goes to the script's results folder (a temp file, renamed at the end;
    '-stopped' in the name when it raised). Nothing is recorded for --help."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(arg in NOT_RECORDED for arg in argv):
        main()
        return None
    name = Path(script).stem
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H%MZ")
    folder = results / name
    folder.mkdir(parents=True, exist_ok=True)
    commit = revision()
    base = f"{stamp}-{commit}"
    tmp = folder / f".{base}.tmp"
    stopped = None
    with tmp.open("w", buffering=1) as record:  # line by line: a run killed from outside keeps what it printed
        record.write(
            f"# python {' '.join([Path(script).name, *argv])}\n# revision {commit}, {stamp}, "
            f"{platform.node()}, {os.cpu_count()} CPUs\n\n"
        )
        saved, sys.stdout = sys.stdout, _Tee(sys.stdout, record)
        try:
            main()
        except BaseException as error:
            stopped = error
        finally:
            sys.stdout = saved
        if stopped is not None:
            record.write(f"\n# stopped: {type(stopped).__name__}{f': {stopped}' if str(stopped) else ''}\n")
    final = folder / f"{base}{'-stopped' if stopped is not None else ''}.txt"
    os.replace(tmp, final)
    if stopped is not None:
        raise stopped
    return final
