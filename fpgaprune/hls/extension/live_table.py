"""The live-weight table of one kernel-sparse layer, the same C++ text for every backend.

`{input, output}` per live weight, in the order of the (trimmed) weights array; comments beside it name every
kernel by its index in the user's original layer. Each backend's generated product code reads it.
"""

LIVE_TABLE = "fpgaprune_live_{index}"
_LAYER_COMMENT = """
// {layer} (hls4ml node {node}): {n_live} live weights of {n_weights}; {n_dead} of {n_out} outputs are constant
// (every kernel pruned)
"""


def layer_comment(plan, node_name: str) -> str:
    """The comment above a layer's generated code: its live weights, and its outputs left constant."""
    n_dead = sum(1 for col in range(plan.n_out) if not (plan.cols == col).any())
    return _LAYER_COMMENT.format(
        layer=plan.origin.layer,
        node=node_name,
        n_live=plan.n_live,
        n_weights=plan.n_in * plan.n_out,
        n_dead=n_dead,
        n_out=plan.n_out,
    )


def _output_comment(plan, col: int) -> str:
    kept = plan.kept_kernels(col)
    name, co = plan.origin.layer, plan.origin.outputs[col]
    if plan.kind == "dense":
        what = f"{name}[:, {co}]: {len(kept)} of {plan.window[2]} inputs live"
    else:
        spatial = ":, " if plan.kind == "conv1d" else ":, :, "
        listed = ", ".join(str(c) for c in kept)
        what = f"{name}[{spatial}ci, {co}]: kernels kept for ci in {{{listed}}} ({len(kept)} of {plan.window[2]})"
    return (
        f"        // output {col} = {what}\n"
        if kept
        else (f"        // output {col} = {name}[..., {co}]: every kernel pruned, the constant bias\n")
    )


def live_table_source(plan, node_name: str, index: int) -> str:
    """`{input, output}` of each live weight, in the order of the weights array, with the kernels named."""
    index_type = "unsigned short" if max(plan.n_in, plan.n_out) <= 0xFFFF else "unsigned int"
    text = (
        f"\n// fpgaprune kernel-sparse product of {plan.origin.layer} (hls4ml node {node_name}): "
        f"live weight p multiplies input [p][0] into output [p][1]\n"
        f"static const {index_type} {LIVE_TABLE.format(index=index)}[{max(plan.n_live, 1)}][2] = {{\n"
    )
    position = 0
    for col in range(plan.n_out):
        text += _output_comment(plan, col)
        entries = []
        while position < plan.n_live and plan.cols[position] == col:
            entries.append(f"{{{int(plan.rows[position])}, {col}}}")
            position += 1
        for start in range(0, len(entries), 12):
            text += "        " + ", ".join(entries[start : start + 12]) + ",\n"
    if not plan.n_live:
        text += "        {0, 0}, // no live weight: the table is never read\n"
    return text + "};\n"
