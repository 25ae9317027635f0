"""Recurrent, pooling, residual and branching models and layer names that are no C++ identifiers, end to end
through the CLI: bit-exact C-sim, or the tolerance their types give, stated in the C-sim line."""

import pytest
from user_cases import run_case, write_case


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("user_layers")


@pytest.mark.parametrize("name", ["average_pooling", "residual_add", "concatenate", "names"])
def test_the_model_runs_end_to_end_bit_exact(root, name):
    result, metrics = run_case(write_case(name, root))
    assert result.returncode == 0, result.stderr[-3000:]
    assert metrics["csim"]["bit_exact"], metrics["csim"]
    assert "C-sim:     bit-exact against QKeras at the logits" in result.stdout
    if name == "names":  # the user's names everywhere: summary, sparsity, report
        run = root / "runs" / "names"
        for text in ((run / "hls" / "summary.txt").read_text(), (run / "report" / "report.md").read_text()):
            assert "conv.2" in text and "dense-out" in text and "conv_2" not in text
        assert str(run / "hls" / "project") in (run / "hls" / "summary.txt").read_text()


@pytest.mark.parametrize("name", ["lstm", "gru"])
def test_a_recurrent_model_is_judged_by_the_recurrent_tolerance_and_says_so(root, name):
    result, metrics = run_case(write_case(name, root))
    assert result.returncode == 0, result.stderr[-3000:]
    csim = metrics["csim"]
    assert csim["within_tolerance"] and "sigmoid/tanh of rnn by tables" in csim["tolerance_reason"]
    assert "C-sim:     " in result.stdout and ("within its tolerance" in result.stdout or csim["bit_exact"])
    assert csim["argmax_agreement"] > 0.9
    sparsity = (root / "runs" / name / "prune" / "sparsity.txt").read_text()
    assert "rnn " in sparsity and "rnn/recurrent_kernel" in sparsity  # the pruned recurrent layer is listed
    assert "of weights pruned" in result.stdout and "conv kernels" not in result.stdout
    report = metrics["report"]  # the recurrent layer runs stock code: no fit over the other layers alone
    assert report["verdict"] == "cannot be judged" and not report["fits"], report


def test_global_average_pooling_over_36_values_is_judged_by_the_tolerance_of_its_types(root):
    result, metrics = run_case(write_case("global_average_pooling", root))
    assert result.returncode == 0, result.stderr[-3000:]
    csim = metrics["csim"]
    assert not csim["bit_exact"] and csim["within_tolerance"] and csim["max_abs_diff"] <= csim["tolerance"]
    assert csim["tolerance_reason"].startswith("averaging 'gap' (36 values) is not exact in fixed point")
    text = (root / "runs" / "global_average_pooling" / "csim" / "csim.txt").read_text()
    assert "to be exact: use a power-of-2 pooling window" in text
    table = next(line for line in result.stdout.splitlines() if line.startswith("csim "))
    assert "argmax agreement" in table and "averaging" not in table and len(table) < 160, table  # reasons: below
