"""The stream's Verilog. Each stage's circuit is da4ml's, cut into pipeline steps by its latency cutoff; the
registers between the steps, the line buffers, counters and the handshake are written here.

The top module's interface (`stream` layout):
    input clk, input rst (synchronous, active high)
    input in_valid, output in_ready, input [IN-1:0] in_data: one input pixel (all its channels) per beat, the
        pixels of a sample in raster order (rows, then columns), samples back to back;
    output out_valid, input out_ready, output [OUT-1:0] out_data: one output position per beat (one per sample
        after a Flatten).
A beat passes where valid and ready are both high on a rising edge. The pipeline never stalls (its registers have
no enable, so no signal fans out to all of them): its outputs go into a FIFO that out_valid/out_ready drain, and
in_ready holds back a new pixel unless the FIFO has room for every output still on its way (one per beat taken in
the last `latency` cycles, at most). A first convolution with padding gets the padded raster: the top inserts the
zero beats itself (`_padder`). Values are packed value by value, the first at the lowest bits, each in two's
complement of its own width (`Stage.in_kifs`, `out_kifs`)."""

import re
from math import ceil, log2

import numpy as np

from fpgaprune.errors import ExportError

TIMESCALE = "`timescale 1 ns / 1 ps"


def width(kifs) -> int:
    """The bits of a packed beat of values of the types `kifs`."""
    return int(sum(int(np.sum(v)) for v in kifs))


def stream_verilog(stages, name: str, latency_cutoff: float, trace: bool = False) -> dict:
    """{module name: Verilog text} of the stream (with `trace`: every stage's output also a port of the top, for
    the simulation's layer-by-layer check)."""
    from da4ml.trace import to_pipeline

    modules, latencies = {}, []
    for n, stage in enumerate(stages):
        stem = f"{name}_s{n}"
        if stage.kind in ("gather", "pad"):
            modules[stem] = _gather(stem, stage) if stage.kind == "gather" else ""
            latencies.append(1)
            continue
        pipe = to_pipeline(stage.logic, latency_cutoff, verbose=False)
        modules.update(_circuit(f"{stem}_circuit", pipe))
        write = _merge if stage.kind == "merge" else _window
        modules[stem] = write(stem, stage, len(pipe.solutions) + 1, pipe.solutions[0].inp_qint)
        latencies.append(len(pipe.solutions) + 1)
    for n, stage in enumerate(stages):
        if stage.kind == "pad":
            modules[f"{name}_s{n}"] = _pad(f"{name}_s{n}", stage)
    one_at_a_time = any(stage.kind in ("pad", "merge") for stage in stages)
    modules[name] = _top(name, stages, trace, sum(latencies), one_at_a_time)
    return modules


def _bits(count: int) -> int:
    return max(1, ceil(log2(max(count, 2))))


def _bus(bits: int) -> str:
    return f"[{max(bits, 1) - 1}:0]"


def _wrap(pointer: str, depth: int) -> str:
    """The next place of a pointer that goes round `depth` places."""
    return f"({pointer} == {depth - 1}) ? 0 : {pointer} + 1"


def _raster_step(height: int, width_: int, indent: str) -> list:
    """A row and column counter's step to the next place of a (height x width) raster, raster order."""
    return [
        f"{indent}if (col == {width_ - 1}) begin",
        f"{indent}    col <= 0; row <= {_wrap('row', height)};",
        f"{indent}end else col <= col + 1;",
    ]


def _inside(stage) -> str:
    """Where a raster counter over a padded map (`stage.in_shape` or a pad stage's `out_shape`) is inside it."""
    height, width_, _ = stage.out_shape if stage.kind == "pad" else stage.in_shape
    top, left, bottom, right = stage.pad
    within = [f"row >= {top}"] * bool(top) + [f"row < {height - bottom}"] * bool(bottom)
    within += [f"col >= {left}"] * bool(left) + [f"col < {width_ - right}"] * bool(right)
    return " && ".join(within)


def _circuit(name: str, pipe) -> dict:
    """The circuit's steps (da4ml's combinational modules) between registers."""
    from da4ml.codegen.rtl.verilog import comb_logic_gen, table_mem_gen
    from da4ml.types import minimal_kif

    steps = pipe.solutions
    widths = [sum(map(sum, map(minimal_kif, s.inp_qint))) for s in steps]
    widths.append(sum(map(sum, map(minimal_kif, pipe.out_qint))))
    modules = {}
    for i, step in enumerate(steps):
        text, tables = inline_tables(comb_logic_gen(step, f"{name}_step{i}", timescale=TIMESCALE), table_mem_gen(step))
        modules.update({f"{name}_step{i}": text, **tables})
    lines = [f"    reg {_bus(w)} held{i};" for i, w in enumerate(widths)]
    lines += [f"    wire {_bus(w)} step{i}_out;" for i, w in enumerate(widths[1:])]
    lines += [f"    {name}_step{i} step{i} (.model_inp(held{i}), .model_out(step{i}_out));" for i in range(len(steps))]
    moves = ["held0 <= inp;"] + [f"held{i + 1} <= step{i}_out;" for i in range(len(steps))]
    modules[name] = "\n".join(
        [
            TIMESCALE,
            f"module {name} (input clk, input {_bus(widths[0])} inp, output {_bus(widths[-1])} out);",
            *lines,
            "    always @(posedge clk) begin",
            *(f"        {move}" for move in moves),
            "    end",
            f"    assign out = held{len(steps)};",
            "endmodule",
            "",
        ]
    )
    return modules


TABLE = re.compile(r'lookup_table #\((\d+), (\d+), "table_([0-9a-f-]+)\.mem"\)')


def inline_tables(text: str, memfiles: dict) -> tuple[str, dict]:
    """da4ml's lookup tables (`lookup_table` instances reading a `.mem` file at elaboration) as modules of their
    own whose entries are written in them, so a project reads no file from where a tool runs: (the text, {module
    name: its Verilog})."""
    modules = {}

    def module(match) -> str:
        width_in, width_out, key = int(match[1]), int(match[2]), match[3]
        name = f"table_{key.replace('-', '')[:16]}"
        entries = [int(e, 16) if "X" not in e else 0 for e in memfiles[f"table_{key}.mem"].split()]
        entries += [0] * ((1 << width_in) - len(entries))
        modules[name] = _table_module(name, width_in, width_out, entries)
        return name

    return TABLE.sub(module, text), modules


CONSTANT_BITS = 1 << 16  # the widest constant Verilator takes by default (--max-num-width)


def _table_module(name: str, width_in: int, width_out: int, entries: list) -> str:
    """A table as constants (entry 0 at the lowest bits), in parts of at most CONSTANT_BITS, the input's high bits
    choosing the part."""
    low = min(width_in, max(0, (CONSTANT_BITS // width_out).bit_length() - 1))  # input bits within a part
    size, lines = 1 << low, []
    for part in range(len(entries) // size):
        packed = sum(e << (n * width_out) for n, e in enumerate(entries[part * size : (part + 1) * size]))
        index = f"in[{low - 1}:0]" if low else "0"
        lines += [
            f"    localparam {_bus(size * width_out)} PART{part} = {size * width_out}'h{packed:x};",
            f"    wire {_bus(width_out)} part{part} = PART{part}[{index} * {width_out} +: {width_out}];",
        ]
    parts = len(entries) // size
    choice = "part0" if parts == 1 else f"parts[in[{width_in - 1}:{low}]]"
    if parts > 1:
        lines.insert(0, f"    wire {_bus(width_out)} parts [0:{parts - 1}];")
        lines += [f"    assign parts[{p}] = part{p};" for p in range(parts)]
    header = f"module {name} (input {_bus(width_in)} in, output {_bus(width_out)} out);"
    return "\n".join([TIMESCALE, header, *lines, f"    assign out = {choice};", "endmodule", ""])


def _window(name: str, stage, latency: int, circuit_inputs) -> str:
    """A window stage: a line buffer of the last (rows - 1) x width + columns - 1 pixels, a row and column
    counter, the window's taps into the circuit, and a valid bit that travels with the circuit's registers."""
    height, width_, _ = stage.in_shape
    rows, cols = stage.size
    pixel, out = width(stage.in_kifs), width(stage.out_kifs)
    kept = (rows - 1) * width_ + cols - 1
    taps = []
    for r in range(rows):
        for c in range(cols):
            back = (rows - 1 - r) * width_ + (cols - 1 - c)
            taps.append("in_data" if back == 0 else f"line[{back - 1}]")
    window = _circuit_input(taps, stage.in_kifs, circuit_inputs)
    row_fires = "".join("1" if f else "0" for f in reversed(stage.fires(0)))
    col_fires = "".join("1" if f else "0" for f in reversed(stage.fires(1)))
    lines = [
        TIMESCALE,
        f"module {name} (input clk, input rst, input in_valid, input {_bus(pixel)} in_data,",
        f"    output out_valid, output {_bus(out)} out_data);",
        f"    localparam [{height - 1}:0] ROW_FIRES = {height}'b{row_fires};",
        f"    localparam [{width_ - 1}:0] COL_FIRES = {width_}'b{col_fires};",
        f"    reg [{_bits(height) - 1}:0] row;",
        f"    reg [{_bits(width_) - 1}:0] col;",
        f"    reg [{latency - 1}:0] valid;",
        "    wire fire = in_valid && ROW_FIRES[row] && COL_FIRES[col];",
    ]
    if kept:
        lines += [f"    reg {_bus(pixel)} line [0:{kept - 1}];", "    integer i;"]
    lines += [
        f"    {name}_circuit circuit (.clk(clk), .inp({window}), .out(out_data));",
        f"    assign out_valid = valid[{latency - 1}];",
        "    always @(posedge clk) begin",
        "        if (rst) begin",
        "            row <= 0; col <= 0; valid <= 0;",
        "        end else begin",
        f"            valid <= {{valid[{latency - 2}:0], fire}};" if latency > 1 else "            valid <= fire;",
        "            if (in_valid) begin",
        *_raster_step(height, width_, " " * 16),
        "            end",
        "        end",
        "    end",
    ]
    if kept:
        lines += [
            "    always @(posedge clk) if (in_valid) begin",
            "        line[0] <= in_data;",
            f"        for (i = 1; i < {kept}; i = i + 1) line[i] <= line[i - 1];",
            "    end",
        ]
    return "\n".join([*lines, "endmodule", ""])


def _merge(name: str, stage, latency: int, circuit_inputs) -> str:
    """A merge stage: a FIFO per map it reads (each a whole map: one sample at a time is in the stages); when
    every FIFO holds a beat, their oldest beats go into the circuit side by side (the first map's at the lowest
    bits), with a valid bit that travels with the circuit's registers."""
    bits = [int(sum(int(np.sum(v)) for v in part)) for part in _split_kifs(stage)]
    depth, out = stage.in_shape[0] * stage.in_shape[1], width(stage.out_kifs)
    inputs = ", ".join(f"input in_valid{k}, input {_bus(b)} in_data{k}" for k, b in enumerate(bits))
    go = " && ".join(f"count{k} != 0" for k in range(len(bits)))
    heads = "{" + ", ".join(f"fifo{k}[head{k}]" for k in reversed(range(len(bits)))) + "}"
    lines = [
        TIMESCALE,
        f"module {name} (input clk, input rst, {inputs},",
        f"    output out_valid, output {_bus(out)} out_data);",
    ]
    for k, b in enumerate(bits):
        lines += [
            f"    reg {_bus(b)} fifo{k} [0:{depth - 1}];",
            f"    reg [{_bits(depth) - 1}:0] head{k}, tail{k};",
            f"    reg [{_bits(depth + 1) - 1}:0] count{k};",
        ]
    lines += [
        f"    wire go = {go};",
        f"    wire {_bus(sum(bits))} beat = {heads};",
        f"    reg [{latency - 1}:0] valid;",
        f"    {name}_circuit circuit (.clk(clk), .inp({_circuit_input(['beat'], stage.in_kifs, circuit_inputs)}), "
        ".out(out_data));",
        f"    assign out_valid = valid[{latency - 1}];",
        "    always @(posedge clk) begin",
        "        if (rst) begin",
        "            valid <= 0;" + "".join(f" head{k} <= 0; tail{k} <= 0; count{k} <= 0;" for k in range(len(bits))),
        "        end else begin",
        f"            valid <= {{valid[{latency - 2}:0], go}};" if latency > 1 else "            valid <= go;",
    ]
    for k in range(len(bits)):
        lines += [
            f"            if (in_valid{k}) begin fifo{k}[tail{k}] <= in_data{k}; "
            f"tail{k} <= {_wrap(f'tail{k}', depth)}; end",
            f"            if (go) head{k} <= {_wrap(f'head{k}', depth)};",
            f"            count{k} <= count{k} + in_valid{k} - go;",
        ]
    return "\n".join([*lines, "        end", "    end", "endmodule", ""])


def _split_kifs(stage) -> list:
    """A merge stage's input kifs, map by map."""
    cuts = np.cumsum(stage.parts)[:-1]
    return [tuple(part) for part in zip(*(np.split(v, cuts) for v in stage.in_kifs))]


def _circuit_input(taps: list, pixel_kifs, circuit_inputs) -> str:
    """The circuit's input bus from the window's taps: each value it reads, sliced from its tap's pixel. A value
    the circuit does not read (a removed kernel's) has no bits in its input (da4ml drops it)."""
    from da4ml.types import minimal_kif

    slices = _slices(pixel_kifs)
    parts = []  # lowest bits first
    for n, qint in enumerate(circuit_inputs):
        kif = tuple(int(v) for v in minimal_kif(qint))
        if not sum(kif):
            continue
        tap, value = divmod(n, len(slices))
        if kif != tuple(int(v[value]) for v in pixel_kifs):
            raise ExportError(f"a circuit reads input {n} as {kif}, which its pixel packs otherwise (a defect)")
        parts.append(f"{taps[tap]}{slices[value]}")
    return "{" + ", ".join(reversed(parts)) + "}" if parts else "1'b0"


def _slices(kifs) -> list:
    """Each value's bits in a packed pixel, "[high:low]" ("" for a value of no bits)."""
    sizes = [int(k + i + f) for k, i, f in zip(*kifs)]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    return [f"[{starts[n + 1] - 1}:{starts[n]}]" if size else "" for n, size in enumerate(sizes)]


def _gather(name: str, stage) -> str:
    """A Flatten: the pixels of a map held as they come, sent as one beat with the last of them, each value where
    the stage's order puts it (pixel by pixel; PyTorch's: channel by channel)."""
    count, channels = stage.in_shape[0] * stage.in_shape[1], stage.in_shape[2]
    pixel, out = width(stage.in_kifs), width(stage.out_kifs)
    slices = _slices(stage.in_kifs)
    parts = []  # lowest bits first
    for source in np.asarray(stage.order).tolist():
        place, channel = divmod(source, channels)
        if slices[channel]:
            bus = "in_data" if place == count - 1 else f"line[{count - 2 - place}]"
            parts.append(f"{bus}{slices[channel]}")
    held = ", ".join(reversed(parts)) or "1'b0"
    return "\n".join(
        [
            TIMESCALE,
            f"module {name} (input clk, input rst, input in_valid, input {_bus(pixel)} in_data,",
            f"    output reg out_valid, output reg {_bus(out)} out_data);",
            f"    reg {_bus(pixel)} line [0:{count - 2}];",
            f"    reg [{_bits(count) - 1}:0] seen;",
            "    integer i;",
            "    always @(posedge clk) begin",
            "        if (rst) begin",
            "            seen <= 0; out_valid <= 0;",
            "        end else begin",
            f"            out_valid <= in_valid && seen == {count - 1};",
            "            if (in_valid) begin",
            f"                seen <= (seen == {count - 1}) ? 0 : seen + 1;",
            f"                if (seen == {count - 1}) out_data <= {{{held}}};",
            "                line[0] <= in_data;",
            f"                for (i = 1; i < {count - 1}; i = i + 1) line[i] <= line[i - 1];",
            "            end",
            "        end",
            "    end",
            "endmodule",
            "",
        ]
    )


def _top(name: str, stages, trace: bool, latency: int, one_at_a_time: bool = False) -> str:
    """The stages in a chain, their outputs into a FIFO with room for `latency` beats in flight and a few more
    (`one_at_a_time`, with a pad stage inside: room for two samples' outputs, one sample in the stages at a time)."""
    first, last = width(stages[0].in_kifs), width(stages[-1].out_kifs)
    depth = 2 * stages[-1].beats + FIFO_SLACK if one_at_a_time else latency + FIFO_SLACK
    ports = [
        "input clk",
        "input rst",
        "input in_valid",
        "output in_ready",
        f"input {_bus(first)} in_data",
        "output out_valid",
        "input out_ready",
        f"output {_bus(last)} out_data",
    ]
    if trace:
        for n, stage in enumerate(stages):
            ports += [f"output trace{n}_valid", f"output {_bus(width(stage.out_kifs))} trace{n}_data"]
    lines = [TIMESCALE, f"module {name} (", ",\n".join(f"    {p}" for p in ports), ");", "    reg ready;"]
    lines += (
        _padder(stages[0])
        if stages[0].top_pads
        else ["    assign in_ready = ready;", "    wire taken = in_valid && in_ready;"]
    )
    network = ("taken", "beat" if stages[0].top_pads else "in_data")
    for n, stage in enumerate(stages):
        lines += [f"    wire s{n}_valid;", f"    wire {_bus(width(stage.out_kifs))} s{n}_data;"]
        feeds = [network if m < 0 else (f"s{m}_valid", f"s{m}_data") for m in stage.sources]
        ports = [f".in_valid({feeds[0][0]}), .in_data({feeds[0][1]})"]
        if stage.kind == "merge":
            ports = [f".in_valid{k}({valid}), .in_data{k}({data})" for k, (valid, data) in enumerate(feeds)]
        lines.append(
            f"    {name}_s{n} s{n} (.clk(clk), .rst(rst), {', '.join(ports)}, .out_valid(s{n}_valid), "
            f".out_data(s{n}_data));"
        )
        if trace:
            lines += [f"    assign trace{n}_valid = s{n}_valid;", f"    assign trace{n}_data = s{n}_data;"]
    source = (f"s{len(stages) - 1}_valid", f"s{len(stages) - 1}_data")
    if one_at_a_time:
        lines += _fifo_by_sample(source, last, depth, stages[0], stages[-1].beats)
    else:
        lines += _fifo(source, last, depth, latency)
    return "\n".join([*lines, "endmodule", ""])


FIFO_SLACK = 4  # the output FIFO's entries beyond the pipeline's latency


def _padder(stage) -> list:
    """The zeros around the input of a first convolution with padding: a row and column counter over the padded
    raster; at a padding place a zero beat enters the pipeline without waiting for a pixel, inside it a pixel is
    taken. A beat enters only while `ready` (so `taken` counts beats, each at most one output, for the FIFO)."""
    height, width_, _ = stage.in_shape
    top, left, bottom, right = stage.pad
    return [
        f"    // zeros around the input ({top}, {left}, {bottom}, {right}): the pipeline takes the padded raster",
        f"    reg [{_bits(height) - 1}:0] row;",
        f"    reg [{_bits(width_) - 1}:0] col;",
        f"    wire pixel = {_inside(stage)};  // not a padding place",
        "    wire taken = ready && (pixel ? in_valid : 1'b1);",
        "    assign in_ready = ready && pixel;",
        f"    wire {_bus(width(stage.in_kifs))} beat = pixel ? in_data : 0;",
        "    always @(posedge clk) begin",
        "        if (rst) begin",
        "            row <= 0; col <= 0;",
        "        end else if (taken) begin",
        *_raster_step(height, width_, " " * 12),
        "        end",
        "    end",
    ]


def _pad(name: str, stage) -> str:
    """A pad stage: a row and column counter over the padded map; at a padding place it sends a zero, inside it the
    oldest beat of its FIFO (or nothing while the FIFO is empty), one beat a cycle; the beats that arrive meanwhile
    wait in the FIFO, which holds a whole map (the top lets one sample at a time into the stages)."""
    height, width_, _ = stage.out_shape
    top, left, bottom, right = stage.pad
    bits, depth = width(stage.in_kifs), stage.in_shape[0] * stage.in_shape[1]
    return "\n".join(
        [
            TIMESCALE,
            f"module {name} (input clk, input rst, input in_valid, input {_bus(bits)} in_data,",
            f"    output reg out_valid, output reg {_bus(bits)} out_data);",
            f"    // {'least values' if stage.lowest else 'zeros'} around the map ({top}, {left}, {bottom}, {right})",
            f"    reg {_bus(bits)} fifo [0:{depth - 1}];",
            f"    reg [{_bits(depth) - 1}:0] head, tail;",
            f"    reg [{_bits(depth + 1) - 1}:0] count;",
            f"    reg [{_bits(height) - 1}:0] row;",
            f"    reg [{_bits(width_) - 1}:0] col;",
            f"    wire pixel = {_inside(stage)};  // not a padding place",
            "    wire send = !pixel || count != 0;",
            "    always @(posedge clk) begin",
            "        if (rst) begin",
            "            head <= 0; tail <= 0; count <= 0; row <= 0; col <= 0; out_valid <= 0;",
            "        end else begin",
            f"            if (in_valid) begin fifo[tail] <= in_data; tail <= {_wrap('tail', depth)}; end",
            "            out_valid <= send;",
            f"            out_data <= pixel ? fifo[head] : {_lowest(stage) if stage.lowest else 0};",
            f"            if (send && pixel) head <= {_wrap('head', depth)};",
            "            count <= count + in_valid - (send && pixel);",
            "            if (send) begin",
            *_raster_step(height, width_, " " * 16),
            "            end",
            "        end",
            "    end",
            "endmodule",
            "",
        ]
    )


def _lowest(stage) -> str:
    """A beat of each value's least (its type's most negative, or 0 unsigned), packed."""
    word, shift = 0, 0
    for k, i, f in zip(*(np.asarray(v, np.int64).tolist() for v in stage.in_kifs)):
        size = k + i + f
        word |= (1 << (size - 1) if k and size else 0) << shift
        shift += size
    return f"{max(shift, 1)}'h{word:x}"


def _fifo_registers(bits: int, depth: int) -> list:
    """The output FIFO's memory, pointers and count."""
    return [
        f"    reg {_bus(bits)} fifo [0:{depth - 1}];",
        f"    reg [{_bits(depth) - 1}:0] head, tail;",
        f"    reg [{_bits(depth + 1) - 1}:0] count;",
    ]


def _fifo_moves(data: str, depth: int) -> list:
    """The output FIFO's push of `data` and pop, in its clocked block."""
    return [
        f"            if (push) begin fifo[tail] <= {data}; tail <= {_wrap('tail', depth)}; end",
        f"            if (pop) head <= {_wrap('head', depth)};",
    ]


def _fifo_by_sample(source, bits: int, depth: int, first, beats: int) -> list:
    """The output FIFO where a pad stage inside makes outputs of its own (its zeros) and holds beats back (its
    FIFO): a sample may start (its first beat be taken) only once every output of the samples before is in the FIFO,
    and the FIFO has room for all its `beats` outputs; its other beats are always taken. in_ready is a register."""
    places = first.in_shape[0] * first.in_shape[1]
    place_bits, owed_bits = _bits(places), _bits(beats + 1)
    return [
        *_fifo_registers(bits, depth),
        f"    reg [{owed_bits - 1}:0] owed;  // the outputs of the sample in the stages not yet in the FIFO",
        f"    reg [{place_bits - 1}:0] place;  // the next beat's place in its sample",
        f"    wire push = {source[0]};",
        "    wire pop = out_valid && out_ready;",
        "    wire starting = taken && place == 0;",
        f"    wire [{place_bits - 1}:0] place_next = taken ? ({_wrap('place', places)}) : place;",
        f"    wire [{owed_bits - 1}:0] owed_next = owed + (starting ? {beats} : 0) - push;",
        f"    wire [{_bits(depth + 1) - 1}:0] count_next = count + push - pop;",
        "    assign out_valid = count != 0;",
        "    assign out_data = fifo[head];",
        "    always @(posedge clk) begin",
        "        if (rst) begin",
        "            head <= 0; tail <= 0; count <= 0; owed <= 0; place <= 0; ready <= 0;",
        "        end else begin",
        *_fifo_moves(source[1], depth),
        "            count <= count_next; owed <= owed_next; place <= place_next;",
        f"            ready <= place_next != 0 || (owed_next == 0 && count_next + {beats} <= {depth});",
        "        end",
        "    end",
    ]


def _fifo(source, bits: int, depth: int, latency: int) -> list:
    """The output FIFO, and in_ready: room for every output of the pixels taken in the last `latency` cycles. It is
    a register, set where the FIFO and the outputs on their way leave room for one more after this cycle (at most
    one pixel comes in per cycle), so no path runs from the counters through in_ready into the first stage."""
    flight_bits = _bits(latency + 1)
    return [
        *_fifo_registers(bits, depth),
        f"    reg [{latency - 1}:0] recent;  // the pixels taken in the last {latency} cycles",
        f"    reg [{flight_bits - 1}:0] flight;  // how many: at most one output beat each",
        f"    wire push = {source[0]};",
        "    wire pop = out_valid && out_ready;",
        "    assign out_valid = count != 0;",
        "    assign out_data = fifo[head];",
        "    always @(posedge clk) begin",
        "        if (rst) begin",
        "            head <= 0; tail <= 0; count <= 0; recent <= 0; flight <= 0; ready <= 0;",
        "        end else begin",
        *_fifo_moves(source[1], depth),
        "            count <= count + push - pop;",
        f"            recent <= {{recent[{latency - 2}:0], taken}};" if latency > 1 else "            recent <= taken;",
        f"            flight <= flight + taken - recent[{latency - 1}];",
        f"            ready <= count + flight + 1 < {depth};",
        "        end",
        "    end",
    ]
