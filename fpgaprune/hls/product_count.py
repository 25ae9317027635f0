"""An instrumented C-sim build that counts the products each layer executes per inference.

Every product in hls4ml's C++ (stock and fpgaprune's generated code alike, the Vivado family's and Catapult's)
goes through one of the `product()` functions of `nnet_mult.h`. The instrumented build adds a counter to each,
and marks in the top function which layer is running; it is compiled with `-DFPGAPRUNE_COUNT_PRODUCTS`. Without
that flag the hooks compile to nothing. The instrumented project is written into a scratch directory, so an
exported project is never touched.
"""

import ctypes
import re
import tempfile
from pathlib import Path

import numpy as np

COUNTER_HEADER = """#ifndef FPGAPRUNE_COUNTER_H_
#define FPGAPRUNE_COUNTER_H_
#ifdef FPGAPRUNE_COUNT_PRODUCTS
namespace fpgaprune_count {
inline unsigned long long *counts() { static unsigned long long c[4096]; return c; }
inline int &layer() { static int l = 0; return l; }
} // namespace fpgaprune_count
#define FPGAPRUNE_COUNT_PRODUCT() (fpgaprune_count::counts()[fpgaprune_count::layer()]++)
#define FPGAPRUNE_LAYER(i) (fpgaprune_count::layer() = (i))
#else
#define FPGAPRUNE_COUNT_PRODUCT()
#define FPGAPRUNE_LAYER(i)
#endif
#endif
"""

BRIDGE_EXPORTS = """
#include "firmware/nnet_utils/fpgaprune_counter.h"
extern "C" {
unsigned long long fpgaprune_product_count(int layer) { return fpgaprune_count::counts()[layer]; }
void fpgaprune_reset_counts() {
    for (int i = 0; i < 4096; i++) fpgaprune_count::counts()[i] = 0;
}
}
"""

_PRODUCT = re.compile(r"(static [^;{]*\bproduct\([^)]*\)[^;{]*\{)")
_CFLAGS = re.compile(r'^(CFLAGS=")', re.MULTILINE)  # build_lib.sh's, Vivado's and Catapult's alike
_LAYER_CALL = re.compile(r"^(\s*)(nnet::\S.*;\s*//\s*(\S+)\s*)$")


def _instrument(project: Path) -> list:
    """Patch a written project; returns the layer names in the order of their counters."""
    utils = project / "firmware" / "nnet_utils"
    (utils / "fpgaprune_counter.h").write_text(COUNTER_HEADER)
    mult = (utils / "nnet_mult.h").read_text()
    mult, n_products = _PRODUCT.subn(r"\1 FPGAPRUNE_COUNT_PRODUCT();", mult)
    if n_products == 0:
        raise RuntimeError("fpgaprune: no product() function found in nnet_mult.h to instrument")
    (utils / "nnet_mult.h").write_text(
        mult.replace('#include "nnet_common.h"', '#include "nnet_common.h"\n#include "fpgaprune_counter.h"', 1)
    )
    top = next((project / "firmware").glob("*.cpp"))
    names, lines = [], []
    for line in top.read_text().splitlines():
        match = _LAYER_CALL.match(line)
        if match and "save_layer_output" not in line and "load_weights" not in line:
            names.append(match.group(3))
            line = f"{match.group(1)}FPGAPRUNE_LAYER({len(names)}); {match.group(2)}"
        lines.append(line)
    top.write_text("\n".join(lines) + "\n")
    bridge = next(project.glob("*_bridge.cpp"))
    bridge.write_text(bridge.read_text() + BRIDGE_EXPORTS)
    build = project / "build_lib.sh"
    script, n_flags = _CFLAGS.subn(r"\1-DFPGAPRUNE_COUNT_PRODUCTS ", build.read_text(), count=1)
    if n_flags == 0:
        raise RuntimeError(f"fpgaprune: no CFLAGS line found in {build} to add the product counters to")
    build.write_text(script)
    return names


def count_products(hls_model, x: np.ndarray) -> dict:
    """{hls4ml layer name: products executed per inference}, from an instrumented C-sim build run on `x`.

    The model's own project directory is left as it was; afterwards the model runs the instrumented
    library, whose outputs are the same. The instrumented project (and the tarball hls4ml writes beside
    it) lives in a scratch directory.
    """
    config = hls_model.config.config
    own_dir, own_trace = config["OutputDir"], hls_model.config.trace_output
    with tempfile.TemporaryDirectory(prefix="fpgaprune-count-") as scratch:
        project = Path(scratch) / "project"
        config["OutputDir"], hls_model.config.trace_output = str(project), False
        try:
            hls_model.write()
            names = _instrument(project)
            hls_model._compile()
        finally:
            config["OutputDir"], hls_model.config.trace_output = own_dir, own_trace
        lib = hls_model._top_function_lib
        lib.fpgaprune_product_count.restype = ctypes.c_ulonglong
        lib.fpgaprune_reset_counts()
        hls_model.predict(np.ascontiguousarray(x))
        per_layer = {name: lib.fpgaprune_product_count(i + 1) / len(x) for i, name in enumerate(names)}
    return {name: count for name, count in per_layer.items() if count}
