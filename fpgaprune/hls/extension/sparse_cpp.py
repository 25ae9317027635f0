"""The C++ text of the kernel-sparse code: the generated product class of one layer, and the config templates.

The product class has one multiplication site per live weight and nothing else: each output sums its
bias and its own live products; an output with no live weight is its bias. Comments name every product
by its index in the user's original layer.
"""

PRODUCT_CLASS = "fpgaprune_sparse_dense_{index}"

_CLASS_HEAD = """
// fpgaprune kernel-sparse product of {layer} (hls4ml node {node}):
//   {n_live} live weights of {n_weights}; {n_dead} of {n_out} outputs are constant (every kernel pruned)
template <class data_T, class res_T, typename CONFIG_T>
class {cls} : public DenseKernel<data_T, res_T, CONFIG_T> {{
  public:
    static typename CONFIG_T::accum_t mul(data_T x, typename CONFIG_T::weight_t w) {{
        #pragma HLS INLINE
        return static_cast<typename CONFIG_T::accum_t>(
            CONFIG_T::template product<data_T, typename CONFIG_T::weight_t>::product(x, w));
    }}

    static void dense(data_T data[CONFIG_T::n_in], res_T res[CONFIG_T::n_out],
                      typename CONFIG_T::weight_t weights[CONFIG_T::n_live],
                      typename CONFIG_T::bias_t biases[CONFIG_T::n_out]) {{
        #pragma HLS PIPELINE II=CONFIG_T::reuse_factor
        #pragma HLS ALLOCATION operation instances=mul limit=CONFIG_T::multiplier_limit
        #pragma HLS ARRAY_PARTITION variable=biases complete
        typename CONFIG_T::accum_t acc[CONFIG_T::n_out];
        #pragma HLS ARRAY_PARTITION variable=acc complete
"""

_CLASS_TAIL = """
    Result:
        for (unsigned i = 0; i < CONFIG_T::n_out; i++) {
            #pragma HLS UNROLL
            res[i] = cast<data_T, res_T, CONFIG_T>(acc[i]);
        }
    }
};
"""


def _output_comment(plan, col: int) -> str:
    kept = plan.kept_kernels(col)
    name, co = plan.origin.layer, plan.origin.outputs[col]
    if plan.kind == "dense":
        what = f"{name}[:, {co}]: {len(kept)} of {plan.window[2]} inputs live"
    else:
        spatial = ":, " if plan.kind == "conv1d" else ":, :, "
        listed = ", ".join(str(c) for c in kept)
        what = f"{name}[{spatial}ci, {co}]: kernels kept for ci in {{{listed}}} ({len(kept)} of {plan.window[2]})"
    return f"        // output {col} = {what}\n" if kept else (
        f"        // output {col} = {name}[..., {co}]: every kernel pruned, the constant bias\n")


def product_class_source(plan, node_name: str, index: int) -> str:
    """The generated product class of one layer (for nnet_code_gen.h)."""
    n_dead = sum(1 for col in range(plan.n_out) if not (plan.cols == col).any())
    text = _CLASS_HEAD.format(layer=plan.origin.layer, node=node_name, n_live=plan.n_live,
                              n_weights=plan.n_in * plan.n_out, n_dead=n_dead, n_out=plan.n_out,
                              cls=PRODUCT_CLASS.format(index=index))
    position = 0
    for col in range(plan.n_out):
        text += _output_comment(plan, col)
        text += f"        acc[{col}] = (typename CONFIG_T::accum_t)biases[{col}];\n"
        while position < plan.n_live and plan.cols[position] == col:
            row = int(plan.rows[position])
            text += (f"        acc[{col}] += mul(data[{row}], weights[{position}]); "
                     f"// {plan.original_index(row, col)}\n")
            position += 1
    return text + _CLASS_TAIL


PARALLEL_CONV_CONFIG = """struct config{index}_mult : nnet::dense_config {{
    static const unsigned n_in = {n_in};
    static const unsigned n_out = {n_filt};
    static const unsigned n_live = {n_live};
    static const unsigned reuse_factor = {reuse};
    static const unsigned strategy = nnet::{strategy};
    static const unsigned n_zeros = 0;
    static const unsigned multiplier_limit = DIV_ROUNDUP(n_live, reuse_factor);
    typedef {accum_t.name} accum_t;
    typedef {bias_t.name} bias_t;
    typedef {weight_t.name} weight_t;
    template<class data_T, class res_T, class CONFIG_T>
    using kernel = {namespace}::{product_class}<data_T, res_T, CONFIG_T>;
    template<class x_T, class y_T>
    using product = nnet::product::{product_type}<x_T, y_T>;
}};

struct config{index} {{
    static const unsigned in_height = {in_height};
    static const unsigned in_width = {in_width};
    static const unsigned n_chan = {n_chan};
    static const unsigned filt_height = {filt_height};
    static const unsigned filt_width = {filt_width};
    static const unsigned n_filt = {n_filt};
    static const unsigned stride_height = {stride_height};
    static const unsigned stride_width = {stride_width};
    static const unsigned pad_top = {pad_top};
    static const unsigned pad_left = {pad_left};
    static const unsigned out_height = {out_height};
    static const unsigned out_width = {out_width};
    static const unsigned reuse_factor = {reuse};
    typedef {accum_t.name} accum_t;
    typedef {bias_t.name} bias_t;
    typedef {weight_t.name} weight_t;
    typedef config{index}_mult mult_config;
}};
"""

DENSE_CALL = "nnet::fpgaprune_sparse_dense<{input_t}, {output_t}, {config}>({input}, {output}, {w}, {b});"
STREAM_CONV_CALL = ("nnet::fpgaprune_sparse_conv{dim}d_stream<{input_t}, {output_t}, {config}>"
                    "({input}, {output}, {w}, {b});")
PARALLEL_CONV_CALL = "nnet::fpgaprune_sparse_conv_cl<{input_t}, {output_t}, {config}>({input}, {output}, {w}, {b});"

SPARSE_HEADER = "nnet_utils/nnet_fpgaprune_sparse.h"
