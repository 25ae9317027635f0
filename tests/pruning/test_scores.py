import numpy as np
import pytest

from fpgaprune.pruning import kernel_scores, weakest_kernels
from fpgaprune.pruning.scores import lamp_scores


def test_kernel_norms_by_hand():
    kernel = np.zeros((3, 3, 2, 2), np.float32)
    kernel[:, :, 0, 1] = [[1, -2, 0], [0, 0, 0], [0, 0, 2]]
    kernel[0, 0, 1, 0] = -4
    np.testing.assert_allclose(kernel_scores(kernel, "l1"), [[0, 5], [4, 0]])
    np.testing.assert_allclose(kernel_scores(kernel, "l2"), [[0, 3], [4, 0]])
    np.testing.assert_allclose(kernel_scores(kernel, "max"), [[0, 2], [4, 0]])


def test_weakest_kernels_picks_the_lowest_norms():
    kernel = np.arange(1, 3 * 3 * 4 * 5 + 1, dtype=np.float32).reshape(3, 3, 4, 5)
    kernel[:, :, 2, 3] = 0.01
    kernel[:, :, 1, 0] = -0.02
    mask = weakest_kernels(kernel, 0.1)  # 2 of 20 kernels
    assert mask.shape == kernel.shape
    assert {(ci, co) for ci, co in zip(*np.nonzero(mask[0, 0]))} == {(2, 3), (1, 0)}
    assert (mask == mask[:1, :1]).all()  # whole kernels, every tap


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown norm"):
        kernel_scores(np.zeros((3, 3, 1, 1)), "l3")
    with pytest.raises(ValueError, match="fraction must lie in"):
        weakest_kernels(np.zeros((3, 3, 1, 1)), 1.5)


@pytest.mark.parametrize("seed", range(20))
def test_lamp_scores_match_their_definition(seed):
    """LAMP of group i: s_i^2 over the sum of s_j^2 of the live groups with s_j >= s_i; pruned groups score 0."""
    rng = np.random.default_rng(seed)
    scores = rng.gamma(1.5, 1.0, int(rng.integers(1, 40))) * 10.0 ** rng.integers(-3, 3)
    live = rng.random(scores.size) > 0.3
    lamp = lamp_scores(scores, live)
    for i in range(scores.size):
        expected = scores[i] ** 2 / np.sum(scores[live & (scores >= scores[i])] ** 2) if live[i] else 0.0
        assert lamp[i] == pytest.approx(expected, rel=1e-9)
    if live.any():
        assert lamp[live].max() == pytest.approx(1.0)  # the strongest live group, at any scale of the layer
    order = np.argsort(scores[live])
    assert np.all(np.diff(lamp[live][order]) >= -1e-12)  # ranks within the layer are kept
