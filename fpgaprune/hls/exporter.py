"""`export()`: a complete hls4ml project for a (pruned, quantized, optionally stripped) model, written atomically.

The config is merged in this order, later winning: hls4ml's own defaults for the model, the preset
(`hls_configs/`), the precisions derived from the quantizers and the data, then the user's overrides.
"""

import json
import shutil
import tempfile
import uuid
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from fpgaprune.errors import ExportError
from fpgaprune.hls.adapter import convert_model
from fpgaprune.hls.attribute_keys import PLAN
from fpgaprune.hls.backend import DEFAULT_BACKEND, known_backend
from fpgaprune.hls.boards import Board, load_board
from fpgaprune.hls.buildable import build_problems, ir_nodes
from fpgaprune.hls.config import derived_hls_config
from fpgaprune.hls.csim import hardware_input
from fpgaprune.hls.manifest import FORMAT, SPARSE, build_manifest
from fpgaprune.hls.names import cpp_names, map_keys
from fpgaprune.hls.node_record import record_from_json
from fpgaprune.hls.presets import load_preset
from fpgaprune.quantize.fixed_types import FixedType, input_type
from fpgaprune.record import resolved
from fpgaprune.support.atomic import replace_directory
from fpgaprune.support.text_table import format_rows
from fpgaprune.training.guards import check_finite_array, check_finite_weights

MANIFEST = "fpgaprune_manifest.json"


@dataclass
class Export:
    """An exported project: its directory, the backend's model of it in memory (`hls_model`: hls4ml's ModelGraph,
    the RTL backend's design; None when reloaded), the manifest and notes."""

    path: Path
    hls_model: object
    manifest: dict
    config: dict
    input_type: FixedType
    board: Board
    notes: list = field(default_factory=list)

    @cached_property
    def nodes(self) -> dict:
        """{hls4ml node: NodeRecord} of every kernel-sparse node, read from the manifest (fresh or reloaded alike)."""
        return {
            name: record_from_json(name, entry["hardware"])
            for name, entry in self.manifest["hls_nodes"].items()
            if "hardware" in entry
        }

    def summary(self, shown_path=None) -> str:
        """Per hls4ml node with weights (by the user's layer names): the code it got, weights, live weights,
        multiplication sites. `shown_path`: the project's final place, where it is written elsewhere first."""
        rows = []
        for name, node in map_keys(self.manifest["hls_nodes"], self.manifest.get("names", {})).items():
            sparse = node["code"] == SPARSE
            rows.append(
                (
                    name,
                    node["class"],
                    node.get("weights", "-"),
                    node.get("live_weights", "-"),
                    node.get("multiplication_sites", "-"),
                    "kernel-sparse" if sparse else node["code"],
                )
            )
        header = ("node", "class", "weights", "live", "mult. sites", "code")
        lines = [f"hls4ml project {shown_path or self.path} for {self.board.name} ({self.board.part})"]
        return "\n".join(lines + format_rows(header, rows) + [f"note: {n}" for n in self.notes])


def export_config(
    model, preset, x, overrides=None, index_map=None, kernel_sparse=True, origins=None
) -> tuple[dict, str, list]:
    """(HLSConfig, io_type, notes) of a model (bound or bare): hls4ml defaults < preset < derived precisions <
    overrides. `index_map`: a strip's {layer: {"in", "out"}}; `origins`: {layer: the user's name} where the
    export renamed it."""
    bound = resolved(model)
    preset = load_preset(preset)
    hls = preset.get("HLSConfig", {})
    reuse = int(hls.get("Model", {}).get("ReuseFactor", 1))
    config, notes = derived_hls_config(bound, x, overrides, preset=hls, default_reuse_factor=reuse)
    config["Model"].setdefault("KernelSparse", kernel_sparse)
    layouts = {name: layer.layout for name, layer in bound.record.layers.items()}
    for name, layer_config in config["LayerName"].items():
        layer_config["Trace"] = True  # C-sim only (`#ifndef __SYNTHESIS__`): per-layer outputs from the shipped code
        if name in (index_map or {}) or name in (origins or {}) or layouts.get(name) is not None:
            maps = (index_map or {}).get(name, {})
            layer_config["KernelOrigin"] = {
                "layer": (origins or {}).get(name, name),
                **{k: [int(i) for i in maps[k]] for k in ("in", "out") if k in maps},
                **({"layout": list(layouts[name])} if layouts.get(name) is not None else {}),
            }
    return config, preset.get("IOType", "io_parallel"), notes


def traced_outputs(hls_model) -> dict:
    """{layer: output size} of the layers whose outputs the written code traces (what `hls_model.trace` reads)."""
    return {
        layer.name: int(np.prod(layer.get_output_variable().shape))
        for layer in hls_model.get_layers()
        if layer.get_attr("function_cpp", None) and layer.get_attr("trace", False)
    }


def _testbench_files(model, front, x, fixed: FixedType, workdir: Path, samples: int) -> tuple[str, str]:
    x_tb = hardware_input(np.asarray(x[:samples]), fixed)
    y_tb = np.asarray(front.predict(model, x_tb)).reshape(len(x_tb), -1)
    np.save(workdir / "tb_input.npy", np.asarray(front.hardware_layout(model, x_tb)).reshape(len(x_tb), -1))
    np.save(workdir / "tb_output.npy", y_tb)
    return str(workdir / "tb_input.npy"), str(workdir / "tb_output.npy")


def _move_into_place(tmp: Path, output_dir: Path, overwrite: bool) -> None:
    if output_dir.exists() and not overwrite:
        raise ExportError(f"{output_dir}: already exists; pass overwrite=True to replace it")
    replace_directory(tmp, output_dir)


def export(
    model,
    hls_config="latency_parallel",
    board="pynq-z2",
    output_dir="hls_project",
    *,
    x,
    overrides=None,
    strip=None,
    backend=DEFAULT_BACKEND,
    project_name="myproject",
    kernel_sparse=True,
    overwrite=False,
    tb_samples=100,
    input_fixed: FixedType | None = None,
) -> Export:
    """Write the complete project of `backend` (an hls4ml project for the built-in ones) for the quantized `model`
    into `output_dir`, atomically.

    `hls_config`: a preset name, a YAML path or a dict in hls4ml's format. `x`: held-out inputs, for the
    input type (unless `input_fixed` is given) and the test-bench vectors in `tb_data/`. `strip`: the
    StripResult (or its index map), so that the manifest and the code name kernels by original index. Layer
    names that are not C++ identifiers are written as identifiers (`hls/names.py`); the manifest keeps the map.
    hls4ml's Keras-2 converter takes the model: a tf_keras/QKeras model as it is, a Keras 3 model as its tf_keras
    twin (`frontends/keras3/twin.py`). The backend writes it (`Backend.export`; hls4ml's: `write_project`).
    """
    options = dict(
        overrides=overrides,
        strip=strip,
        project_name=project_name,
        kernel_sparse=kernel_sparse,
        overwrite=overwrite,
        tb_samples=tb_samples,
        input_fixed=input_fixed,
    )
    bound, found = resolved(model), known_backend(backend)
    if found is None:  # an hls4ml backend registered with the codegen seam alone: its project, unchecked
        return write_project(bound, hls_config, board, output_dir, x=x, backend=backend, **options)
    return found.export(bound, hls_config, board, output_dir, x=x, **options)


def write_project(
    bound,
    hls_config,
    board,
    output_dir,
    *,
    x,
    backend: str,
    checked=None,
    overrides=None,
    strip=None,
    project_name="myproject",
    kernel_sparse=True,
    overwrite=False,
    tb_samples=100,
    input_fixed: FixedType | None = None,
) -> Export:
    """hls4ml's project of a bound model for its `backend` (its name; `checked`: fpgaprune's `Backend` of it, which
    checks the activations and the board, None for one registered with the codegen seam alone), as `export`
    describes it: the hls4ml backends' `Backend.export`."""
    bound = bound.exported(tuple(np.shape(x)[1:]))  # a Keras 3 model: its tf_keras twin's
    model, front, record = bound.model, bound.front, bound.record
    if checked is not None:
        checked.check_activations(record)
    check_finite_weights(bound, "export")
    check_finite_array(np.asarray(x), "export: x")
    output_dir = Path(output_dir)
    if output_dir.exists() and not overwrite:
        raise ExportError(f"{output_dir}: already exists; pass overwrite=True to replace it")
    board = load_board(board)
    if checked is not None:
        checked.check_board(board)
    index_map = getattr(strip, "index_map", strip) or {}
    fixed = input_fixed or input_type(x)
    names = cpp_names(list(record.layers), record.name)  # {user's name: C++ identifier}, where not identifiers
    named, layer_overrides = bound.renamed(names), dict(overrides or {})
    if names and "LayerName" in layer_overrides:
        layer_overrides["LayerName"] = map_keys(layer_overrides["LayerName"], names)
    config, io_type, notes = export_config(
        named,
        hls_config,
        fixed,
        layer_overrides,
        map_keys(index_map, names),
        kernel_sparse,
        {new: old for old, new in names.items()},
    )
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = output_dir.with_name(f".{output_dir.name}.tmp-{uuid.uuid4().hex[:8]}")
    try:
        (tmp / "tb_data").mkdir(parents=True)
        tb_in, tb_out = _testbench_files(model, front, x, fixed, tmp / "tb_data", tb_samples)
        hls_model = convert_model(
            named,
            config,
            tmp,
            io_type=io_type,
            backend=backend,
            part=board.part,
            clock_period=board.clock_period_ns,
            project_name=project_name,
            input_data_tb=tb_in,
            output_data_tb=tb_out,
        )
        problems = build_problems(ir_nodes(hls_model), io_type, backend, {new: old for old, new in names.items()})
        if problems:
            raise ExportError(problems[0])
        hls_model.config.trace_output = True  # hls4ml's trace calls in the shipped code, under #ifndef __SYNTHESIS__
        hls_model.write()
        notes += [n for node in hls_model.get_layers() for n in getattr(node.get_attr(PLAN), "notes", [])]
        notes = [_named_note(note, {new: old for old, new in names.items()}) for note in notes]
        extra = {
            "board": board.key,
            "board_spec": asdict(board),
            "part": board.part,
            "backend": backend,
            "io_type": io_type,
            "project_name": project_name,
            "input_type": fixed.hls(),
            "hls_config": config,
            "traced_outputs": traced_outputs(hls_model),
            "notes": notes,
            "names": {new: old for old, new in names.items()},
        }
        manifest = build_manifest(record, hls_model, tmp, index_map, extra)
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1, default=str))
        _retarget(hls_model, tmp, output_dir)
        _move_into_place(tmp, output_dir, overwrite)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Export(output_dir, hls_model, manifest, config, fixed, board, notes)


def preset_problems(bound, hls_config, x, *, overrides=None, backend=DEFAULT_BACKEND) -> list:
    """What hls4ml cannot build of a bound model at the preset `hls_config` (`buildable.build_problems`),
    from its IR converted in a scratch directory and never written: `fpgaprune validate` asks it of the starting
    model."""
    bound = bound.exported(tuple(np.shape(x)[1:]))
    config, io_type, _ = export_config(bound, hls_config, input_type(x), overrides)
    with tempfile.TemporaryDirectory(prefix="fpgaprune-validate-") as scratch:
        hls_model = convert_model(bound, config, scratch, io_type=io_type, backend=backend)
        return build_problems(ir_nodes(hls_model), io_type, backend)


def _named_note(note: str, names: dict) -> str:
    """A note "<node>: ..." with the node named by the user's layer name."""
    node, colon, rest = note.partition(":")
    return f"{next(iter(map_keys({node: 0}, names)))}{colon}{rest}" if colon and names else note


def load_export(project) -> Export:
    """The export in `project` as its manifest records it, with no conversion: what later stages read, so that
    nothing is converted twice."""
    project = Path(project)
    path = project / MANIFEST
    try:
        manifest = json.loads(path.read_text())
        if manifest.get("format") != FORMAT:
            raise ValueError(f"format {manifest.get('format')!r}, expected {FORMAT!r}")
        board, fixed = Board(**manifest["board_spec"]), FixedType.parse(manifest["input_type"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ExportError(
            f"{path}: not a readable fpgaprune export manifest ({error}); export the model again"
        ) from None
    return Export(project, None, manifest, manifest["hls_config"], fixed, board, list(manifest.get("notes", [])))


def _retarget(hls_model, tmp: Path, output_dir: Path) -> None:
    """Point the hls4ml model (and its written config) at the final directory."""
    for key in ("OutputDir", "InputData", "OutputPredictions"):
        value = hls_model.config.config.get(key)
        if isinstance(value, str):
            hls_model.config.config[key] = value.replace(str(tmp), str(output_dir))
    written = tmp / "hls4ml_config.yml"
    if written.exists():
        written.write_text(written.read_text().replace(str(tmp), str(output_dir)))
