"""The seam between the extension and hls4ml's backends: a second backend, registered through it, gets its own
templates in the exported code, and the Vivado family keeps its own. Registered as a `Backend` too, the toy is
built, C-simulated, checked as shipped and judged through that object alone (its flags, test bench, tools and
the rules)."""

import pytest
from hls_helpers import X8, digits_cnn, trained

import fpgaprune as fp
from fpgaprune.hls import backend as backends
from fpgaprune.hls import csynth, shipped
from fpgaprune.hls.extension import BackendExtension, register_backend_extension
from fpgaprune.hls.extension.vivado import VIVADO
from fpgaprune.hls.extension.vivado.templates import SparseDenseFunctionTemplate
from fpgaprune.hls.hls4ml_backends import Hls4mlBackend
from fpgaprune.resources.fit_verdict import FITS

X = X8[:20]
MARK = "// written by the dummy backend's template"


class DummyDenseCall(SparseDenseFunctionTemplate):
    """The Vivado family's Dense call, marked, under its own name."""

    def __init__(self):
        super().__init__()
        self.name = "fpgaprune_dummy_dense_function_template"

    def format(self, node):
        return f"{MARK}\n    {super().format(node)}"


@pytest.fixture(scope="module")
def dummy_backend():
    """An hls4ml backend derived from Vitis under another name, with fpgaprune's seam pointing at it."""
    from hls4ml.backends import VitisBackend, VivadoBackend
    from hls4ml.backends.backend import backend_map, register_backend
    from hls4ml.writer import VitisWriter, register_writer
    from hls4ml.writer.writers import writer_map

    class DummyBackend(VitisBackend):
        def __init__(self):
            from hls4ml.model.flow import get_flow

            super(VivadoBackend, self).__init__(name="FpgapruneDummy")
            self._register_layer_attributes()
            self._register_flows()
            get_flow("fpgaprunedummy:write").requires[:] = ["fpgaprunedummy:ip"]  # Vitis' names 'vitis:ip'

    if "FpgapruneDummy" not in writer_map:
        register_writer("FpgapruneDummy", VitisWriter)
    if "fpgaprunedummy" not in backend_map:
        register_backend("FpgapruneDummy", DummyBackend)
    register_backend_extension(
        BackendExtension(
            backend="FpgapruneDummy",
            templates=(DummyDenseCall,),
            headers=VIVADO.headers,  # the Vivado family's kernel-sparse header, in the toy's projects too
            templates_after="vivado:apply_templates",
        )
    )
    backends.register_backend(Hls4mlBackend("FpgapruneDummy", ("fpgaprune_dummy_hls",), None, kernel_sparse=True))
    yield "FpgapruneDummy"
    backends._BACKENDS.pop("fpgaprunedummy")  # the built-in list stays as other tests read it


@pytest.fixture(scope="module")
def model():
    return trained(digits_cnn(), ["conv2[:, :, 1, :]", "fc[:5, 3]"], None, epochs=0)


def test_a_second_backend_gets_its_templates_through_the_seam(dummy_backend, model, tmp_path):
    exported = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "dummy", x=X, backend=dummy_backend)
    code = (tmp_path / "dummy" / "firmware" / "myproject.cpp").read_text()
    assert code.count(MARK) == 1 and "nnet::fpgaprune_sparse_dense" in code.split(MARK, 1)[1].splitlines()[1]
    assert exported.manifest["backend"] == dummy_backend and exported.nodes["fc"].plan.n_live <= 216 * 10 - 5
    stock = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "vitis", x=X, backend="Vitis")
    vitis_code = (tmp_path / "vitis" / "firmware" / "myproject.cpp").read_text()
    assert MARK not in vitis_code and "nnet::fpgaprune_sparse_dense" in vitis_code
    assert stock.nodes["fc"].plan.n_live == exported.nodes["fc"].plan.n_live


def test_a_backend_refuses_a_board_of_a_family_it_does_not_know(model, tmp_path):
    """The board families are the backend's: one that knows none of the board's refuses it in one line."""
    from fpgaprune.errors import HlsConfigError

    backends.register_backend(Hls4mlBackend("FpgapruneAsic", ("asic_hls",), None, True, families=("asic",)))
    try:
        with pytest.raises(HlsConfigError) as raised:
            fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "asic", x=X, backend="FpgapruneAsic")
    finally:
        backends._BACKENDS.pop("fpgapruneasic")
    assert str(raised.value) == "board 'pynq-z2' has a 7-series part; FpgapruneAsic designs are judged on asic boards"
    assert not (tmp_path / "asic").exists()


@pytest.mark.csim
def test_the_toy_backend_builds_simulates_and_is_judged_through_its_backend_object(dummy_backend, model, tmp_path):
    exported = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "dummy", x=X, backend=dummy_backend)
    check = fp.csim(exported, model, X)
    assert check.bit_exact and check.samples == len(X), check.format()
    build = shipped.build_shipped(exported.path, tmp_path / "scratch")
    assert build.backend.name == dummy_backend and build.compiler[-1] == "-Ifirmware"  # its flags: ap_types
    assert shipped.run_testbench(build).argmax_agreement == 1.0
    shipped.check_synthesis_branch(build)
    assert csynth(exported).reason == "skipped: fpgaprune_dummy_hls not found on PATH"
    for verdict in fp.estimate(exported).fit_verdicts():
        assert verdict.verdict == FITS and verdict.source.endswith(
            "no vendor-checked C-synthesis model for FpgapruneDummy"
        )
