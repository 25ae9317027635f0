"""benchmarks/record.py: what a benchmark prints is also written, whole or marked stopped, to its results folder."""

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).parent.parent / "benchmarks"


@pytest.fixture
def record(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import record

    return record


def test_the_printed_output_is_recorded_with_its_command_and_revision(record, tmp_path, capsys):
    def main():
        print("table row 1")
        print("ratio 2.5x")

    path = record.run_recorded(main, "benchmarks/bench_demo.py", ["--widths", "8,16"], results=tmp_path)
    assert capsys.readouterr().out == "table row 1\nratio 2.5x\n"  # the console still gets it
    assert not isinstance(sys.stdout, record._Tee)
    assert path.parent == tmp_path / "bench_demo" and path.name.endswith(f"-{record.revision()}.txt")
    lines = path.read_text().splitlines()
    assert lines[0] == "# python bench_demo.py --widths 8,16" and lines[1].startswith(f"# revision {record.revision()}")
    assert lines[-2:] == ["table row 1", "ratio 2.5x"]
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left


def test_a_run_that_raises_is_kept_marked_stopped_and_the_error_goes_on(record, tmp_path):
    def main():
        print("first point")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        record.run_recorded(main, "bench_demo.py", [], results=tmp_path)
    [path] = (tmp_path / "bench_demo").iterdir()
    assert path.name.endswith("-stopped.txt")
    assert path.read_text().splitlines()[-2:] == ["", "# stopped: KeyboardInterrupt"]
    assert record.run_recorded(lambda: None, "bench_demo.py", ["--help"], results=tmp_path) is None
    assert len(list((tmp_path / "bench_demo").iterdir())) == 1
