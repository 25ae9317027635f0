"""`fpgaprune`: the command line, a thin layer over the Python API.

Exit codes: 0 ok, 1 a stage or an external tool failed, 2 bad input (config, model file, data). Every failure
is one line on stderr; `--debug` (anywhere on the line) adds the traceback, `--verbose` keeps the libraries' logs.
"""

import sys
import time
import traceback
from pathlib import Path

import click

import fpgaprune as fp
from fpgaprune import data
from fpgaprune.errors import first_line
from fpgaprune.hls.csim import CsimResult
from fpgaprune.model.task import METRICS
from fpgaprune.pipeline.checks import check_against_model, check_config
from fpgaprune.pipeline.records import STAGE_NAMES, stage_score
from fpgaprune.pipeline.runner import StageFailed
from fpgaprune.pipeline.runner import run as run_stages
from fpgaprune.pipeline.schema import RunConfig, load_config
from fpgaprune.pipeline.training import build_model, dataset_of
from fpgaprune.pruning import Pruner
from fpgaprune.report.inspection import format_table, kernel_heatmaps, sparsity_table
from fpgaprune.support.extras import require_extra
from fpgaprune.support.quiet import quiet_console, show_notes
from fpgaprune.support.text_table import format_rows
from fpgaprune.sweep import parse_grid, run_sweep

GLOBAL_FLAGS = ("--debug", "--verbose")
DEFAULT_CONFIG = Path(__file__).parent / "pipeline" / "default.yaml"


def _config(path, trust_model_code: bool = False):
    """The validated config: schema, files, boards, quantizers, then selections and layers against the model."""
    config, located = load_config(path)
    config.model._trust_code = trust_model_code
    check_config(config, located)  # files first: the model and data are loaded next
    dataset = dataset_of(config)
    check_against_model(config, located, build_model(config, dataset), x=dataset.x_test[:64])
    return config


@click.group()
def main():
    """Remove exactly the kernels you choose, retrain around them, and carry the zeros into hardware."""


def _summary(records: dict, seconds: float) -> str:
    """The stage table, then the headline block: what the user asked the run to answer."""
    metrics = {stage: record["metrics"] for stage, record in records.items()}
    rows = [(stage, f"{records[stage]['seconds']:.1f}", _describe(stage, metrics[stage])) for stage in records]
    return "\n".join(
        format_rows(("stage", "seconds", "result"), rows) + [f"total {seconds:.1f} s", ""] + _headline(metrics)
    )


def _headline(metrics: dict) -> list:
    """What the run answers, one line each: the metric by stage, what pruning removed, the resources against the
    board, what was measured, C-sim, and any layer that saturates."""
    report, csim = metrics.get("report"), metrics.get("csim")
    if not report:
        return []
    scores = {
        label: stage_score(metrics[stage])
        for label, stage in (("dense", "train"), ("pruned", "finetune"), ("quantized", "quantize"))
        if stage in metrics
    }
    if "headline" in report:  # an RTL run: the measurement is its headline
        lines = [f"report:    {report['report']}", _score_line(scores), f"hardware:  {report['headline']}"]
        lines += _measured_lines(metrics.get("synth", {}), None)
        return lines + _csim_lines(csim)
    (p0, p1), (l0, l1), (d0, d1) = report["products"], report["lut"], report["dsp"]
    weights = report.get("live_weights", [p0, p1])
    lines = [
        f"report:    {report['report']}",
        _score_line(scores),
        f"products:  {p0} -> {p1} per inference (live weights x output positions); live weights {weights[0]} -> "
        f"{weights[1]}",
        f"resources: LUT {l0} -> {l1}, DSP {d0} -> {d1} (estimate, fpgaprune rules); "
        f"{report.get('verdict') or ('fits' if report.get('fits') else 'does NOT fit')} on the board",
    ]
    lines += [f"fit:       {line}" for line in report.get("fit_checked", [])]  # by a vendor-checked model
    zeros = (metrics.get("prune") or {}).get("input_zeros", {}).get("line")
    lines += [f"zeros:     {zeros}"] if zeros else []
    for row in report.get("budget", []):
        lines.append(
            f"budget:    {row['describe']}: estimate {row['pruning']:.1%} at pruning -> "
            f"{row['after_qat']:.1%} "
            f"after QAT -> {row['final']:.1%} after repair; exported {row['achieved']:.1%} (estimate): "
            f"{'fits' if row['fits'] else 'does NOT fit'}"
        )
    lines += _measured_lines(metrics.get("synth", {}), report.get("layers"))
    return lines + _csim_lines(csim)


def _csim_lines(csim: dict | None) -> list:
    """C-sim's verdict against the quantized model, and each layer that saturates."""
    lines = []
    if csim:
        result = CsimResult.from_metrics(csim)
        agreement = f" ({result.agreement_text()})" if result.argmax_agreement is not None else ""
        lines.append(
            f"C-sim:     {result.verdict()} against {result.reference} at the logits{agreement}, over {result.scope()}"
        )
    return lines + [f"saturates: {line}" for line in (csim or {}).get("saturation", [])]


def _measured_lines(synth: dict, layers: int | None) -> list:
    """What yosys measured (a sample's kernel removal, or every layer; an RTL run: each design, placed and routed),
    and each circuit a budget stopped."""
    if "designs" in synth:
        lines = [f"measured:  {label}: {line}" for label, line in synth["designs"].items()]
        return lines + [f"not measured: {label}: {why}" for label, why in synth["unmeasured"].items()]
    if not synth.get("yosys"):
        return []
    lines = []
    if synth.get("removal"):
        removal = synth["removal"]
        lines.append(
            f"measured:  removing {removal['kernel']}: {removal['luts']:+d} LUT in {removal['where']}, by "
            f"{synth['yosys']}; the other DA figures are calibrated estimates (see the report)"
        )
    elif synth.get("samples"):
        circuits = ", ".join(f"{name}: {luts} LUT" for name, luts in synth["samples"].items())
        lines.append(
            f"measured:  the DA circuit of {circuits.removeprefix('column ')}, by {synth['yosys']}; the "
            "other DA figures are calibrated estimates (see the report)"
        )
    elif synth.get("measured_layers"):
        measured = synth["measured_layers"]
        which = "every layer" if measured == layers else f"{measured} of {layers} layers"
        lines.append(f"measured:  the DA circuit of {which} by {synth['yosys']}: see the report")
    return lines + [f"not measured: {name}: {why}" for name, why in (synth.get("unmeasured") or {}).items()]


def _score_line(scores: dict) -> str:
    """ "accuracy:  dense 96.67% -> ...", or for regression "RMSE:      dense 0.1234 -> ... (lower is better)"."""
    metric = next(iter(scores.values()))[0] if scores else "accuracy"
    shown = (lambda v: f"{v:.2%}") if "accuracy" in metric else (lambda v: f"{v:.4g}")
    values = " -> ".join(f"{label} {shown(value)}" for label, (_, value) in scores.items())
    label = f"{METRICS.get(metric, metric)}:"
    return f"{label:<10} {values}" + (" (lower is better)" if metric in ("rmse", "mae") else "")


def _describe(stage: str, m: dict) -> str:
    if "metric" in m or "accuracy" in m:
        metric, value = stage_score(m)
        parts = [f"{metric.replace('_', ' ')} {value:.2%}" if "accuracy" in metric else f"{metric} {value:.4g}"]
        if "weights_pruned" in m:
            parts.append(f"{m['weights_pruned']:.0%} of weights pruned")
        if "conv_kernels_pruned" in m:
            parts.append(f"{m['conv_kernels_pruned']:.0%} of conv kernels removed whole")
        return ", ".join(parts)
    if stage == "hls":
        return f"{m['live_weights']} live of {m['weights']} weights"
    if stage == "csim":
        result = CsimResult.from_metrics(m)
        agreement = f", {result.agreement_text().split(' after ')[0]}" if result.argmax_agreement is not None else ""
        return f"{result.verdict(brief=True)} logits{agreement}"
    if stage == "synth":
        return f"ran: {m['ran']}" + (f", {m['yosys']}" if m.get("yosys") else "")
    return ""


TRUST_HELP = "allow Lambda layers and other code in model files (only for a file you trust)"


@main.command()
@click.argument("config", required=False, type=click.Path(dir_okay=False))
@click.option("--from", "from_stage", type=click.Choice(STAGE_NAMES), help="re-run from this stage on")
@click.option("--out", type=click.Path(file_okay=False), help="run directory (default: outputs.dir)")
@click.option("--trust-model-code", is_flag=True, help=TRUST_HELP)
def run(config, from_stage, out, trust_model_code):
    """Run prune -> retrain -> quantize -> export -> C-sim -> synth -> report (the digits default without CONFIG)."""
    parsed = _config(config or DEFAULT_CONFIG, trust_model_code)
    run_dir = Path(out or parsed.outputs.dir)
    click.echo(f"fpgaprune run {config or '(default: digits)'} -> {run_dir}")
    started = time.perf_counter()
    records = run_stages(parsed, run_dir, from_stage, echo=click.echo)
    click.echo(_summary(records, time.perf_counter() - started))


@main.command()
@click.argument("config", required=False, type=click.Path(dir_okay=False))
@click.option(
    "--grid",
    multiple=True,
    metavar="AXIS=V1,V2",
    help="an axis and its values: sparsity, bits, structure, budget_lut, budget_dsp or a dotted config key; "
    "repeat for more axes (default: the config's sweep.grid)",
)
@click.option("--out", type=click.Path(file_okay=False), help="sweep directory (default: outputs.dir + '-sweep')")
@click.option(
    "--address", help="an existing Ray cluster, e.g. ray://head:10001 (default: sweep.ray.address, else a local Ray)"
)
@click.option("--cpus", type=click.IntRange(min=1), help="CPUs of the local Ray: one point runs per CPU")
@click.option("--trust-model-code", is_flag=True, help=TRUST_HELP)
def sweep(config, grid, out, address, cpus, trust_model_code):
    """Run every point of a grid as an ordinary run (on Ray), resumable; write results.csv/.md, pareto.png and
    sweep.html."""
    require_extra("ray", "fpgaprune sweep")  # before the config's model is built or anything trains
    parsed = _config(config or DEFAULT_CONFIG, trust_model_code)
    axes = parse_grid(list(grid) if grid else parsed.sweep.grid)
    sweep_dir = Path(out or f"{parsed.outputs.dir}-sweep")
    click.echo(f"fpgaprune sweep {config or '(default: digits)'} -> {sweep_dir}")
    outcome = run_sweep(
        parsed, axes, sweep_dir, address or parsed.sweep.ray.address, cpus or parsed.sweep.ray.cpus, echo=click.echo
    )
    click.echo(
        f"results:   {sweep_dir / 'results.csv'}, {sweep_dir / 'results.md'}\n"
        f"plot:      {sweep_dir / 'pareto.png'} (and {sweep_dir / 'sweep.html'})"
    )
    if outcome.failed:
        click.echo(
            f"failed:    {len(outcome.failed)} of {len(outcome.results)} points (see results.md); a re-run "
            "retries them and skips the finished ones",
            err=True,
        )
        raise click.exceptions.Exit(1)


@main.command()
@click.argument("config", type=click.Path(dir_okay=False))
@click.option("--trust-model-code", is_flag=True, help=TRUST_HELP)
def validate(config, trust_model_code):
    """Check CONFIG against the schema and fpgaprune (files, boards, data and model, selections, quantizers)."""
    _config(config, trust_model_code)
    click.echo(f"{config}: ok")


@main.command()
def boards():
    """The FPGA boards fpgaprune knows."""
    rows = [
        (b.key, b.name, b.part, b.family, b.dsp_type, ", ".join(f"{n} {c}" for n, c in b.resources.items()))
        for b in fp.boards()
    ]
    click.echo("\n".join(format_rows(("board", "name", "part", "family", "DSP type", "resources"), rows)))


def model_source(command):
    """MODEL (a .keras/.h5 file), or --json with --weights (an architecture and its HDF5 weights), and
    --trust-model-code: the options of every command that reads a model."""
    command = click.option("--trust-model-code", is_flag=True, help=TRUST_HELP)(command)
    command = click.option(
        "--weights", type=click.Path(exists=True, dir_okay=False), help="the HDF5 weights of --json"
    )(command)
    command = click.option(
        "--json",
        "json_file",
        type=click.Path(exists=True, dir_okay=False),
        help="a JSON architecture (model.to_json()) instead of MODEL, with --weights",
    )(command)
    return click.argument("model", required=False, type=click.Path(exists=True, dir_okay=False))(command)


def _load_model(model, json_file, weights, trust_model_code):
    """The model a command reads: MODEL, or --json with --weights (one line when neither or both are given)."""
    if model and (json_file or weights):
        raise click.UsageError("give MODEL, or --json with --weights, not both")
    if not model and not (json_file and weights):
        raise click.UsageError("give MODEL (a .keras/.h5 file), or --json ARCH.json with --weights WEIGHTS.h5")
    return fp.load_model(model, trust_code=trust_model_code, json=json_file, weights=weights)


@main.command()
@model_source
@click.option("--out", type=click.Path(file_okay=False), default="inspect", help="directory for the heatmaps")
def inspect(model, json_file, weights, trust_model_code, out):
    """Kernel-norm table and heatmaps of MODEL (.keras/.h5, or --json with --weights)."""
    loaded = _load_model(model, json_file, weights, trust_model_code)
    click.echo(format_table(sparsity_table(loaded)))
    for path in kernel_heatmaps(loaded, out):
        click.echo(f"wrote {path}")


@main.command()
@model_source
@click.option("--select", "selections", multiple=True, help='exact kernels, e.g. "conv2[:, :, 29, 13]"')
@click.option("--sparsity", type=float, help="also prune this fraction of kernels by L1 in --layer")
@click.option("--layer", "layers", multiple=True, help="layers for --sparsity")
@click.option("--out", type=click.Path(dir_okay=False), required=True, help="the pruned (held) model file")
def prune(model, json_file, weights, trust_model_code, selections, sparsity, layers, out):
    """Hold the selected kernels of MODEL at 0 (and prune by score), writing a new model file."""
    held = fp.hold(_load_model(model, json_file, weights, trust_model_code), prune=list(selections))
    if sparsity:
        held = Pruner(structure="kernel", layers=list(layers) or None).prune(held, sparsity=sparsity)
    fp.save_model(held, out)
    click.echo(f"wrote {out}")


@main.command()
@model_source
@click.option(
    "--data", "dataset", default="digits", help="digits, fashion_mnist or an .npz (x_test) for the input type"
)
@click.option("--preset", default="latency_parallel")
@click.option("--board", default="pynq-z2")
@click.option("--out", type=click.Path(file_okay=False), required=True)
@click.option("--overwrite", is_flag=True)
def export(model, json_file, weights, trust_model_code, dataset, preset, board, out, overwrite):
    """Export a QKeras MODEL (or --json with --weights) as a kernel-sparse hls4ml project."""
    x = (
        data.digits().x_test
        if dataset == "digits"
        else data.fashion_mnist().x_test
        if dataset == "fashion_mnist"
        else data.read_npz(dataset, ("x_test",))["x_test"]
    )
    loaded = _load_model(model, json_file, weights, trust_model_code)
    exported = fp.export(loaded, preset, board, out, x=x, overwrite=overwrite)
    click.echo(exported.summary())


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
def report(run_dir):
    """Re-render the report of RUN_DIR (from its saved config and stages)."""
    config = RunConfig.model_validate_json((Path(run_dir) / "config.json").read_text())
    run_stages(config, run_dir, "report", echo=click.echo)
    click.echo(f"report: {Path(run_dir) / 'report' / 'report.html'}")


def _fail(message: str, code: int, debug: bool) -> int:
    if debug:
        traceback.print_exc()
    click.echo(f"error: {message}", err=True)
    return code


def entry(argv=None) -> int:
    """The console script: global flags, a quiet TensorFlow import, and one line (exit 1 or 2) per failure."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug, verbose = "--debug" in argv, "--verbose" in argv or "--debug" in argv
    argv = [arg for arg in argv if arg not in GLOBAL_FLAGS]
    quiet_console(verbose)
    show_notes()

    try:
        main.main(args=argv, prog_name="fpgaprune", standalone_mode=False)
    except click.exceptions.Exit as done:
        return done.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt):
        return _fail("interrupted", 1, debug)
    except click.ClickException as error:
        return _fail(f"{first_line(error.format_message())} (see fpgaprune --help)", 2, debug)
    except StageFailed as error:
        return _fail(str(error), 1, debug)
    except fp.FpgapruneError as error:  # bad input: config, model file, data, selections
        return _fail(first_line(error), 2, debug)
    except Exception as error:  # noqa: BLE001 - the user gets one line; --debug shows the rest
        return _fail(f"{type(error).__name__}: {first_line(error)} (--debug shows the traceback)", 1, debug)
    return 0


if __name__ == "__main__":
    sys.exit(entry())
