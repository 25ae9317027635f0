"""A user's own model and data, end to end through the CLI: the output activation and the labels decide the loss,
the metric and what the console and the report show; unscaled inputs get a saturation warning."""

import pytest
from user_cases import run_case, write_case


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("user_outputs")


def _headline(stdout: str) -> dict:
    lines = stdout.strip().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("report:"))
    return {line.split(":")[0]: line for line in lines[start:]}


@pytest.mark.parametrize("name", ["softmax", "one_hot"])
def test_a_softmax_output_is_trained_on_probabilities_with_integer_or_one_hot_labels(root, name):
    result, metrics = run_case(write_case(name, root))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "from_logits" not in result.stderr + result.stdout  # tf_keras warns when a softmax is trained as logits
    labels = "one-hot labels" if name == "one_hot" else "integer class labels"
    assert metrics["train"]["task"] == (
        "classification (softmax output, " + labels + "): sparse categorical crossentropy, metric accuracy"
    )
    assert metrics["quantize"]["metric"] == "accuracy" and metrics["quantize"]["accuracy"] > 0.8
    assert metrics["csim"]["bit_exact"] and metrics["csim"]["agreement"] == "argmax agreement"
    headline = _headline(result.stdout)
    assert headline["accuracy"].startswith("accuracy:  dense ") and "saturates" not in headline  # scaled inputs
    assert headline["C-sim"].startswith("C-sim:     bit-exact against QKeras at the logits (argmax agreement")
    if metrics["csim"]["argmax_agreement"] < 1:  # the softmax table's ties say why the argmax differs
        assert "tie at the top" in headline["C-sim"]


def test_a_single_sigmoid_output_is_a_binary_task_and_compares_decisions(root):
    result, metrics = run_case(write_case("sigmoid", root))
    assert result.returncode == 0, result.stderr[-3000:]
    assert metrics["train"]["task"].startswith("binary (sigmoid output, 0/1 labels): binary crossentropy")
    assert metrics["quantize"]["accuracy"] > 0.8
    csim = metrics["csim"]
    assert csim["bit_exact"] and csim["agreement"] == "decision agreement" and csim["argmax_agreement"] > 0.95
    headline = _headline(result.stdout)
    assert "decision agreement" in headline["C-sim"] and "argmax" not in result.stdout


def test_regression_targets_are_trained_with_mse_and_reported_as_an_error(root):
    result, metrics = run_case(write_case("regression", root))
    assert result.returncode == 0, result.stderr[-3000:]
    assert metrics["train"]["task"] == "regression (linear output, float targets): mse, metric RMSE"
    assert metrics["quantize"]["metric"] == "rmse" and "accuracy" not in metrics["quantize"]
    assert 0 < metrics["quantize"]["rmse"] < 0.3  # targets are digit / 9: a trained model, not the mean
    assert metrics["csim"]["bit_exact"] and metrics["csim"]["argmax_agreement"] is None
    headline = _headline(result.stdout)
    assert headline["RMSE"].startswith("RMSE:      dense ") and headline["RMSE"].endswith("(lower is better)")
    assert "accuracy" not in headline and "agreement" not in headline["C-sim"]
    report = (root / "runs" / "regression" / "report" / "report.md").read_text()
    assert "RMSE (lower is better): dense " in report and "Accuracy" not in report


def test_unscaled_inputs_get_one_saturation_line_naming_the_layer_and_the_fix(root):
    result, metrics = run_case(write_case("unscaled", root))
    assert result.returncode == 0, result.stderr[-3000:]
    warnings = [line for line in result.stdout.splitlines() if line.startswith("saturates:")]
    assert len(warnings) == 1, result.stdout
    assert warnings[0].startswith("saturates: relu1: ") and "scale the inputs (they reach 255" in warnings[0]
    assert metrics["csim"]["saturation"] and metrics["csim"]["bit_exact"]  # exact, and still clipping
    report = (root / "runs" / "unscaled" / "report" / "report.md").read_text()
    assert "- saturates: relu1: " in report and "## Numerical profile" in report
