import numpy as np


def _w(rng, shape, sigma=6.0):
    # 6-bit signed fixed point quantized_bits(6,0): ints in [-32,31] * 2^-5
    return np.clip(np.round(rng.normal(0, sigma, shape)), -32, 31)


def conv(cin, cout, frac_zero, seed=0):
    rng = np.random.default_rng(seed)
    w = _w(rng, (3, 3, cin, cout))
    n = cin * cout
    nz = round(frac_zero * n)
    dead = rng.permutation(n)[:nz]
    for k in dead:
        w[:, :, k // cout, k % cout] = 0
    return w.reshape(9 * cin, cout) * 2.0**-5  # im2col rows ordered (kh, kw, cin)


def dense(n, m, frac_zero=0.0, seed=0):
    rng = np.random.default_rng(seed)
    w = _w(rng, (n, m))
    if frac_zero:
        idx = rng.permutation(n * m)[: round(frac_zero * n * m)]
        w.ravel()[idx] = 0
    return w * 2.0**-5


MATS = {
    "A_conv2": lambda: conv(8, 16, 0.6),
    "B_conv1": lambda: dense(9, 8),
    "C_fc": lambda: dense(64, 10),
    "D_qconv2": lambda: conv(32, 32, 0.5),
    "E_dense": lambda: dense(256, 64, 0.5),
}
if __name__ == "__main__":
    for k, f in MATS.items():
        W = f()
        print(k, W.shape, "live", int((W != 0).sum()), "min/max", W.min() * 32, W.max() * 32)
