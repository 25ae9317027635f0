#ifndef NNET_FPGAPRUNE_SPARSE_H_
#define NNET_FPGAPRUNE_SPARSE_H_

// fpgaprune: Dense and io_parallel convolution over a kernel-sparse product.
// CONFIG_T::kernel (Dense) and CONFIG_T::mult_config::kernel (convolution) are classes generated per layer
// into nnet_code_gen.h; they compute only the products of the live weights.
//
// Convolution: the window of each output pixel is gathered (zero outside the image, as 'same' padding needs), then
// CONFIG_T::mult_config::kernel computes its outputs. The weights array holds the live weights only.
// io_stream convolutions use hls4ml's own line buffer, with the generated class as their kernel.

#include "hls_stream.h"
#include "nnet_common.h"
#include "nnet_conv1d.h"
#include "nnet_conv1d_stream.h"
#include "nnet_conv2d.h"
#include "nnet_conv2d_stream.h"
#include "nnet_dense.h"
#include "nnet_mult.h"
#include "nnet_types.h"

namespace nnet {

template <class data_T, class res_T, typename CONFIG_T>
void fpgaprune_sparse_dense(data_T data[CONFIG_T::n_in], res_T res[CONFIG_T::n_out],
                            typename CONFIG_T::weight_t weights[CONFIG_T::n_live],
                            typename CONFIG_T::bias_t biases[CONFIG_T::n_out]) {
    #pragma HLS INLINE
    CONFIG_T::template kernel<data_T, res_T, CONFIG_T>::dense(data, res, weights, biases);
}

template <class data_T, class res_T, typename CONFIG_T>
void fpgaprune_sparse_dense(hls::stream<data_T> &data_stream, hls::stream<res_T> &res_stream,
                            typename CONFIG_T::weight_t weights[CONFIG_T::n_live],
                            typename CONFIG_T::bias_t biases[CONFIG_T::n_out]) {
    typename data_T::value_type data[CONFIG_T::n_in];
    #pragma HLS ARRAY_PARTITION variable=data complete
    typename res_T::value_type res[CONFIG_T::n_out];
    #pragma HLS ARRAY_PARTITION variable=res complete

ReadInput:
    for (unsigned i_in = 0; i_in < CONFIG_T::n_in / data_T::size; i_in++) {
        #pragma HLS PIPELINE
        data_T data_pack = data_stream.read();
        for (unsigned i_pack = 0; i_pack < data_T::size; i_pack++) {
            #pragma HLS UNROLL
            data[i_in * data_T::size + i_pack] = data_pack[i_pack];
        }
    }
    CONFIG_T::template kernel<typename data_T::value_type, typename res_T::value_type, CONFIG_T>::dense(data, res, weights,
                                                                                                      biases);
WriteOutput:
    for (unsigned i_out = 0; i_out < CONFIG_T::n_out / res_T::size; i_out++) {
        #pragma HLS PIPELINE
        res_T res_pack;
        PRAGMA_DATA_PACK(res_pack)
        for (unsigned i_pack = 0; i_pack < res_T::size; i_pack++) {
            #pragma HLS UNROLL
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
    #pragma HLS ARRAY_PARTITION variable=window complete
    res_T pixel[CONFIG_T::n_filt];
    #pragma HLS ARRAY_PARTITION variable=pixel complete

OutputHeight:
    for (unsigned oh = 0; oh < CONFIG_T::out_height; oh++) {
    OutputWidth:
        for (unsigned ow = 0; ow < CONFIG_T::out_width; ow++) {
            #pragma HLS PIPELINE II=CONFIG_T::reuse_factor
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

template <class data_T, class res_T, typename CONFIG_T>
void fpgaprune_sparse_conv1d_stream(hls::stream<data_T> &data, hls::stream<res_T> &res,
                                    typename CONFIG_T::weight_t weights[CONFIG_T::mult_config::n_live],
                                    typename CONFIG_T::bias_t biases[CONFIG_T::n_filt]) {
    #pragma HLS INLINE recursive
    conv_1d_cl<data_T, res_T, CONFIG_T>(data, res, weights, biases);
}

template <class data_T, class res_T, typename CONFIG_T>
void fpgaprune_sparse_conv2d_stream(hls::stream<data_T> &data, hls::stream<res_T> &res,
                                    typename CONFIG_T::weight_t weights[CONFIG_T::mult_config::n_live],
                                    typename CONFIG_T::bias_t biases[CONFIG_T::n_filt]) {
    #pragma HLS INLINE recursive
    if (CONFIG_T::filt_height > 1 || CONFIG_T::stride_height == 1) {
        conv_2d_cl<data_T, res_T, CONFIG_T>(data, res, weights, biases);
        return;
    }
    // A kernel one row high with a vertical stride (a strided 1x1 shortcut): hls4ml's line buffer passes every row to
    // its 1-D path, which knows no vertical stride; only every stride_height-th row is computed here, the others read.
    assert(CONFIG_T::pad_top == 0 && CONFIG_T::pad_bottom == 0 && CONFIG_T::pad_left == 0 && CONFIG_T::pad_right == 0);
ReadInputHeight:
    for (unsigned i_ih = 0; i_ih < CONFIG_T::in_height; i_ih++) {
    ReadInputWidth:
        for (unsigned i_iw = 0; i_iw < CONFIG_T::in_width; i_iw++) {
            #pragma HLS LOOP_FLATTEN
            #pragma HLS PIPELINE II=CONFIG_T::reuse_factor
            if (i_ih % CONFIG_T::stride_height == 0) {
                compute_output_buffer_1d<data_T, res_T, CONFIG_T>(data.read(), res, weights, biases);
            } else {
                data.read();
            }
        }
    }
}

} // namespace nnet

#endif
