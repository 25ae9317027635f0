"""One process that runs `fpgaprune` command lines one after another, for tests that run many short ones.

A fresh `fpgaprune` process spends most of a short command importing TensorFlow. The host imports it once; each
command line then runs through the console script's own `entry`, with file descriptors 1 and 2 sent to files of
its own, so that a test sees the exit code, stdout and stderr of that command alone, as from a subprocess.
What a fresh process prints as it starts is seen by the host's first command only, so tests that check a first
start's output keep running `fpgaprune` as a subprocess.

Protocol: one JSON object per line on stdin ({"args": [...], "out": path, "err": path, "cwd": path or null});
one line per command on the host's own stdout ({"code": int}).
"""

import atexit
import json
import os
import select
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Completed:
    """What `subprocess.run(..., capture_output=True, text=True)` returns, for the fields the tests read."""

    returncode: int
    stdout: str
    stderr: str


class CliHost:
    """`run(args)` as `subprocess.run([fpgaprune, *args])` would, in one long-lived process."""

    def __init__(self, workdir: Path, env: dict):
        self.workdir, self.env, self.process, self.count = Path(workdir), env, None, 0

    def _start(self):
        self.process = subprocess.Popen(
            [sys.executable, __file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.workdir.joinpath("host.err").open("ab"),
            text=True,
            env=self.env,
        )

    def run(self, args: list, cwd=None, timeout: float = 900) -> Completed:
        if self.process is None or self.process.poll() is not None:
            self._start()
        self.count += 1
        out, err = self.workdir / f"{self.count}.out", self.workdir / f"{self.count}.err"
        request = {"args": [str(a) for a in args], "out": str(out), "err": str(err), "cwd": cwd and str(cwd)}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        if not select.select([self.process.stdout], [], [], timeout)[0]:  # a hang: the host is ended, not reused
            self.process.kill()
            self.process.wait()
            return Completed(-9, _read(out), _read(err) + f"\n(the command ran past {timeout} s and was killed)")
        reply = self.process.stdout.readline()
        if not reply:  # the host died with this command: what it printed is the test's to read
            self.process.wait()
            code = self.process.returncode
            return Completed(code, _read(out), _read(err) + _read(self.workdir / "host.err"))
        return Completed(json.loads(reply)["code"], _read(out), _read(err))

    def close(self):
        if self.process is not None and self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=60)


_shared = {}


def shared_host(env: dict) -> CliHost:
    """This test process's host for `env` (started on first use, closed at exit)."""
    key = json.dumps(sorted(env.items()))
    if key not in _shared:
        _shared[key] = CliHost(Path(tempfile.mkdtemp(prefix="fpgaprune-cli-host-")), env)
        atexit.register(_shared[key].close)
    return _shared[key]


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def _serve():
    from fpgaprune.cli import entry

    replies = os.fdopen(os.dup(1), "w")
    for line in sys.stdin:
        request = json.loads(line)
        saved, home = (os.dup(1), os.dup(2)), os.getcwd()
        os.chdir(request["cwd"] or home)
        with open(request["out"], "wb") as out, open(request["err"], "wb") as err:
            os.dup2(out.fileno(), 1), os.dup2(err.fileno(), 2)
            try:
                code = entry(request["args"])
            except SystemExit as done:
                code = done.code if isinstance(done.code, int) else 1
            finally:
                sys.stdout.flush(), sys.stderr.flush()
                os.dup2(saved[0], 1), os.dup2(saved[1], 2)
                os.close(saved[0]), os.close(saved[1])
                os.chdir(home)
        replies.write(json.dumps({"code": code}) + "\n")
        replies.flush()


if __name__ == "__main__":
    _serve()
