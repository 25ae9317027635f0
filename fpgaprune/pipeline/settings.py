"""What a run's config means for the library: the quantization spec, the hls preset with the config's
settings written over it, and the budget on the run's board."""

from fpgaprune.budget import parse_budget
from fpgaprune.hls import load_board, load_preset
from fpgaprune.hls.multipliers import dsp_free_overrides


def quantization_spec(config) -> dict:
    """The run's quantizers as `quantized_twin` takes them: QKeras texts, the library, HGQ2's settings."""
    section = config.quantization
    spec = {"default": section.effective_default(), "layers": section.layers}
    if section.library != "auto" or section.hgq2 != type(section.hgq2)():
        spec.update(library=section.library, hgq2=section.hgq2.model_dump())
    return spec


def hls_preset(config) -> dict:
    """The preset with the config's io_type, strategy and reuse factor written over it; with a budget of 0 DSP,
    every product built from LUTs (`Multipliers: fabric`)."""
    preset = load_preset(config.hls.preset)
    model = preset.setdefault("HLSConfig", {}).setdefault("Model", {})
    if config.pruning.budget and budget_of(config).dsp_free:
        model.update(dsp_free_overrides()["Model"])
    if config.hls.io_type:
        preset["IOType"] = config.hls.io_type
    if config.hls.strategy:
        model["Strategy"] = config.hls.strategy.capitalize()
    if config.hls.reuse_factor:
        model["ReuseFactor"] = config.hls.reuse_factor
    return preset


def budget_of(config):
    """The run's `pruning.budget` on its board."""
    return parse_budget(config.pruning.budget, load_board(config.board))
