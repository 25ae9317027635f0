"""Catapult's generated code of one kernel-sparse layer: its live-weight table and a class that reads it.

Catapult's `nnet_code_gen.h` is included before any of hls4ml's headers, so the generated code holds data only:
the table, and `fpgaprune_live_table_{index}` giving each live weight's input and output. The arithmetic is the
header's `nnet::fpgaprune_sparse_kernel`, which the layer's config names with the table. Its loops carry labels
and no pragma: like hls4ml's Catapult code, their unrolling is set by the project's directives.
"""

from fpgaprune.hls.extension.live_table import LIVE_TABLE, layer_comment, live_table_source

TABLE_CLASS = "fpgaprune_live_table_{index}"

_TABLE_CLASS = """struct {cls} {{
    static unsigned input(unsigned p) {{ return {table}[p][0]; }}
    static unsigned output(unsigned p) {{ return {table}[p][1]; }}
}};
"""


def table_class_source(plan, node_name: str, index: int, fabric_pragma: str = "") -> str:
    """The live-weight table and the class the header's kernel reads it through (for nnet_code_gen.h).
    `fabric_pragma` is always empty: Catapult has none (`SparseKernels.fabric_pragma` refuses the setting)."""
    text = _TABLE_CLASS.format(cls=TABLE_CLASS.format(index=index), table=LIVE_TABLE.format(index=index))
    return live_table_source(plan, node_name, index) + layer_comment(plan, node_name) + text


def kernel_lines(index: int) -> str:
    """The lines of a multiplication config that point it at layer `index`'s table and the sparse kernel."""
    return (
        f"    typedef nnet::{TABLE_CLASS.format(index=index)} live_table;\n"
        "    template<class data_T, class res_T, class CONFIG_T>\n"
        "    using kernel = nnet::fpgaprune_sparse_kernel<data_T, res_T, CONFIG_T>;"
    )
