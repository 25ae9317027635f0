"""The quantizer texts most tests quantize with (6-bit kernels and activations, 8-bit biases), importable without
a framework (the PyTorch tests load no TensorFlow)."""

SPEC8 = {
    "default": {
        "kernel": "quantized_bits(6,0,alpha=1)",
        "bias": "quantized_bits(8,3,alpha=1)",
        "activation": "quantized_relu(6,2)",
    }
}
# 12-bit weights and lanes: under Multipliers "auto" the rules put the products after the first layer in DSPs
SPEC12 = {
    "default": {
        "kernel": "quantized_bits(12,1,alpha=1)",
        "bias": "quantized_bits(12,4,alpha=1)",
        "activation": "quantized_relu(12,4)",
    }
}
