#ifndef NNET_FPGAPRUNE_SPARSE_H_
#define NNET_FPGAPRUNE_SPARSE_H_

// fpgaprune: kernel-sparse Dense and convolutions for hls4ml's Catapult backend (ac_types, C++11).
// fpgaprune_sparse_kernel computes one product per live weight of a layer: CONFIG_T::live_table (generated per
// layer into nnet_code_gen.h) gives each live weight's input and output, and the weights array holds the live
// weights only. Each output sums its bias and its own live products; an output with no live weight is its bias.
// The layers call it where hls4ml's Catapult code calls dense_latency / dense_resource: Dense (array and
// ac_channel), the io_parallel convolution (a window per output pixel, zero outside the image), and the
// io_stream convolutions (hls4ml's line buffer and kernel shift, the product replaced). Like hls4ml's Catapult
// code, the loops carry labels and no pragma: the project's directives set their unrolling.

#include "ac_channel.h"
#include "nnet_common.h"
#include "nnet_conv1d.h"
#include "nnet_conv1d_stream.h"
#include "nnet_conv2d.h"
#include "nnet_conv2d_stream.h"
#include "nnet_conv_stream.h"
#include "nnet_dense.h"
#include "nnet_mult.h"
#include "nnet_types.h"

namespace nnet {

template <class data_T, class res_T, typename CONFIG_T> class fpgaprune_sparse_kernel {
  public:
    static void dense(data_T data[CONFIG_T::n_in], res_T res[CONFIG_T::n_out],
                      typename CONFIG_T::weight_t weights[CONFIG_T::n_live],
                      typename CONFIG_T::bias_t biases[CONFIG_T::n_out]) {
        typedef typename CONFIG_T::live_table live;
        typename CONFIG_T::accum_t acc[CONFIG_T::n_out];
    Bias:
        for (unsigned i = 0; i < CONFIG_T::n_out; i++) {
            acc[i] = (typename CONFIG_T::accum_t)biases[i];
        }
    Product:
        for (unsigned p = 0; p < CONFIG_T::n_live; p++) {
            acc[live::output(p)] += static_cast<typename CONFIG_T::accum_t>(
                CONFIG_T::template product<data_T, typename CONFIG_T::weight_t>::product(data[live::input(p)],
                                                                                          weights[p]));
        }
    Result:
        for (unsigned i = 0; i < CONFIG_T::n_out; i++) {
            res[i] = cast<data_T, res_T, CONFIG_T>(acc[i]);
        }
    }
};

template <class data_T, class res_T, typename CONFIG_T>
void fpgaprune_sparse_dense(data_T data[CONFIG_T::n_in], res_T res[CONFIG_T::n_out],
                            typename CONFIG_T::weight_t weights[CONFIG_T::n_live],
                            typename CONFIG_T::bias_t biases[CONFIG_T::n_out]) {
    CONFIG_T::template kernel<data_T, res_T, CONFIG_T>::dense(data, res, weights, biases);
}

template <class data_T, class res_T, typename CONFIG_T>
void fpgaprune_sparse_dense(ac_channel<data_T> &data_stream, ac_channel<res_T> &res_stream,
                            typename CONFIG_T::weight_t weights[CONFIG_T::n_live],
                            typename CONFIG_T::bias_t biases[CONFIG_T::n_out]) {
    typename data_T::value_type data[CONFIG_T::n_in];
    typename res_T::value_type res[CONFIG_T::n_out];
DataPrepare:
    for (unsigned i_in = 0; i_in < CONFIG_T::n_in / data_T::size; i_in++) {
        data_T data_pack = data_stream.read();
    DataPack:
        for (unsigned i_pack = 0; i_pack < data_T::size; i_pack++) {
            data[i_in * data_T::size + i_pack] = data_pack[i_pack];
        }
    }
    CONFIG_T::template kernel<typename data_T::value_type, typename res_T::value_type, CONFIG_T>::dense(data, res, weights,
                                                                                                      biases);
ResWrite:
    for (unsigned i_out = 0; i_out < CONFIG_T::n_out / res_T::size; i_out++) {
        res_T res_pack;
    ResPack:
        for (unsigned i_pack = 0; i_pack < res_T::size; i_pack++) {
            res_pack[i_pack] = res[i_out * res_T::size + i_pack];
        }
        res_stream.write(res_pack);
    }
}

template <class data_T, class res_T, typename CONFIG_T>
void fpgaprune_sparse_conv_cl(data_T data[CONFIG_T::in_height * CONFIG_T::in_width * CONFIG_T::n_chan],
                              res_T res[CONFIG_T::out_height * CONFIG_T::out_width * CONFIG_T::n_filt],
                              typename CONFIG_T::weight_t weights[CONFIG_T::mult_config::n_live],
                              typename CONFIG_T::bias_t biases[CONFIG_T::n_filt]) {
    typedef typename CONFIG_T::mult_config mult_config;
    data_T window[mult_config::n_in];
    res_T pixel[CONFIG_T::n_filt];
OutputHeight:
    for (unsigned oh = 0; oh < CONFIG_T::out_height; oh++) {
    OutputWidth:
        for (unsigned ow = 0; ow < CONFIG_T::out_width; ow++) {
        FilterHeight:
            for (unsigned fh = 0; fh < CONFIG_T::filt_height; fh++) {
            FilterWidth:
                for (unsigned fw = 0; fw < CONFIG_T::filt_width; fw++) {
                    const int ih = int(oh * CONFIG_T::stride_height + fh) - int(CONFIG_T::pad_top);
                    const int iw = int(ow * CONFIG_T::stride_width + fw) - int(CONFIG_T::pad_left);
                    const bool inside = ih >= 0 && ih < int(CONFIG_T::in_height) && iw >= 0 && iw < int(CONFIG_T::in_width);
                Channel:
                    for (unsigned c = 0; c < CONFIG_T::n_chan; c++) {
                        window[(fh * CONFIG_T::filt_width + fw) * CONFIG_T::n_chan + c] =
                            inside ? data[(ih * int(CONFIG_T::in_width) + iw) * CONFIG_T::n_chan + c] : data_T(0);
                    }
                }
            }
            mult_config::template kernel<data_T, res_T, mult_config>::dense(window, pixel, weights, biases);
        Store:
            for (unsigned f = 0; f < CONFIG_T::n_filt; f++) {
                res[(oh * CONFIG_T::out_width + ow) * CONFIG_T::n_filt + f] = pixel[f];
            }
        }
    }
}

// hls4ml's compute_output_buffer_2d (nnet_conv_stream.h), with the layer's kernel as its product.
template <class data_T, class res_T, typename CONFIG_T>
void fpgaprune_sparse_output_buffer_2d(
    const data_T &in_elem,
    ap_shift_reg<typename data_T::value_type, CONFIG_T::in_width> line_buffer[MAX(CONFIG_T::filt_height - 1, 1)]
                                                                             [CONFIG_T::n_chan],
    ac_channel<res_T> &res_stream, typename CONFIG_T::weight_t weights[CONFIG_T::mult_config::n_live],
    typename CONFIG_T::bias_t biases[CONFIG_T::n_filt]) {
    const static int lShiftX = CONFIG_T::filt_width - 1;
    const static int lShiftY = CONFIG_T::filt_height - 1;
    static int pX = 0, pY = 0; // pixel
    static int sX = 0, sY = 0; // stride
    static typename data_T::value_type kernel_data[CONFIG_T::filt_height * CONFIG_T::filt_width * CONFIG_T::n_chan];
    typename res_T::value_type res_out[CONFIG_T::n_filt];
    res_T res_pack;

    nnet::shift_line_buffer<data_T, CONFIG_T>(in_elem, line_buffer, kernel_data);
    if ((sX - lShiftX) == 0 && (sY - lShiftY) == 0 && pY > lShiftY - 1 && pX > lShiftX - 1) {
        typedef typename CONFIG_T::mult_config mult_config;
        mult_config::template kernel<typename data_T::value_type, typename res_T::value_type, mult_config>::dense(
            kernel_data, res_out, weights, biases);
    CastLoop:
        for (unsigned i_ic = 0; i_ic < CONFIG_T::n_filt; i_ic++) {
            res_pack[i_ic] = res_out[i_ic];
        }
        res_stream.write(res_pack);
    }
    if (pX + 1 == CONFIG_T::in_width) {
        pX = 0;
        sX = 0;
        if (pY + 1 == CONFIG_T::in_height) {
            pY = 0;
            sY = 0;
        } else {
            pY = pY + 1;
            sY = ((sY - lShiftY) == 0) ? sY - CONFIG_T::stride_height + 1 : sY + 1;
        }
    } else {
        pX = pX + 1;
        sX = ((sX - lShiftX) == 0) ? sX - CONFIG_T::stride_width + 1 : sX + 1;
    }
}

// hls4ml's compute_output_buffer_1d (nnet_conv_stream.h), with the layer's kernel as its product.
template <class data_T, class res_T, typename CONFIG_T>
void fpgaprune_sparse_output_buffer_1d(const data_T &in_elem, ac_channel<res_T> &res_stream,
                                       typename CONFIG_T::weight_t weights[CONFIG_T::mult_config::n_live],
                                       typename CONFIG_T::bias_t biases[CONFIG_T::n_filt]) {
    const static int lShiftX = CONFIG_T::filt_width - 1;
    static int pX = 0; // pixel
    static int sX = 0; // stride
    static typename data_T::value_type kernel_data[CONFIG_T::filt_width * CONFIG_T::n_chan];
    typename res_T::value_type res_out[CONFIG_T::n_filt];
    res_T res_pack;

    nnet::kernel_shift_1d<data_T, CONFIG_T>(in_elem, kernel_data);
    if ((sX - lShiftX) == 0 && pX > lShiftX - 1) {
        typedef typename CONFIG_T::mult_config mult_config;
        mult_config::template kernel<typename data_T::value_type, typename res_T::value_type, mult_config>::dense(
            kernel_data, res_out, weights, biases);
    CastLoop:
        for (unsigned i_ic = 0; i_ic < CONFIG_T::n_filt; i_ic++) {
            res_pack[i_ic] = res_out[i_ic];
        }
        res_stream.write(res_pack);
    }
    if (pX + 1 == CONFIG_T::in_width) {
        pX = 0;
        sX = 0;
    } else {
        pX = pX + 1;
        sX = ((sX - lShiftX) == 0) ? sX - CONFIG_T::stride_width + 1 : sX + 1;
    }
}

template <class data_T, class res_T, typename CONFIG_T>
void fpgaprune_sparse_conv1d_stream(ac_channel<data_T> &data, ac_channel<res_T> &res,
                                    typename CONFIG_T::weight_t weights[CONFIG_T::mult_config::n_live],
                                    typename CONFIG_T::bias_t biases[CONFIG_T::n_filt]) {
    assert(CONFIG_T::pad_left == 0 && CONFIG_T::pad_right == 0);
ReadInputWidth:
    for (unsigned i_iw = 0; i_iw < CONFIG_T::in_width; i_iw++) {
        fpgaprune_sparse_output_buffer_1d<data_T, res_T, CONFIG_T>(data.read(), res, weights, biases);
    }
}

template <class data_T, class res_T, typename CONFIG_T>
void fpgaprune_sparse_conv2d_stream(ac_channel<data_T> &data, ac_channel<res_T> &res,
                                    typename CONFIG_T::weight_t weights[CONFIG_T::mult_config::n_live],
                                    typename CONFIG_T::bias_t biases[CONFIG_T::n_filt]) {
    assert(CONFIG_T::pad_top == 0 && CONFIG_T::pad_bottom == 0 && CONFIG_T::pad_left == 0 && CONFIG_T::pad_right == 0);
    static ap_shift_reg<typename data_T::value_type, CONFIG_T::in_width> line_buffer[MAX(CONFIG_T::filt_height - 1, 1)]
                                                                                    [CONFIG_T::n_chan];
ReadInputHeight:
    for (unsigned i_ih = 0; i_ih < CONFIG_T::in_height; i_ih++) {
    ReadInputWidth:
        for (unsigned i_iw = 0; i_iw < CONFIG_T::in_width; i_iw++) {
            if (CONFIG_T::filt_height > 1) {
                fpgaprune_sparse_output_buffer_2d<data_T, res_T, CONFIG_T>(data.read(), line_buffer, res, weights, biases);
            } else if (i_ih % CONFIG_T::stride_height == 0) { // one row high: every stride_height-th row is computed
                fpgaprune_sparse_output_buffer_1d<data_T, res_T, CONFIG_T>(data.read(), res, weights, biases);
            } else {
                data.read();
            }
        }
    }
}

} // namespace nnet

#endif
