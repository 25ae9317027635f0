"""FPGA boards: part, default clock, family, DSP type and resource totals, from the vendors' data sheets. Each
family counts its own resources: Xilinx' DSP, LUT (LUT6), FF, BRAM_18K and URAM; Lattice ECP5's LUT4, TRELLIS_FF,
MULT18X18D (its 18x18 multipliers) and DP16KD (its 18 kb block RAMs), as nextpnr names them."""

from dataclasses import dataclass
from typing import Literal

from pydantic import NonNegativeInt, PositiveFloat, PositiveInt

from fpgaprune.errors import HlsConfigError
from fpgaprune.hls.yaml_files import data_dir, named_file
from fpgaprune.support.yaml_schema import Strict, load_yaml_file

RESOURCES = ("DSP", "LUT", "FF", "BRAM_18K", "URAM")
ECP5_RESOURCES = ("LUT4", "TRELLIS_FF", "MULT18X18D", "DP16KD")
FAMILY_RESOURCES = {"7-series": RESOURCES, "UltraScale+": RESOURCES, "ECP5": ECP5_RESOURCES}


class DspFile(Strict):
    type: str
    a_bits: PositiveInt
    b_bits: PositiveInt


class ResourcesFile(Strict):
    DSP: NonNegativeInt = 0
    LUT: NonNegativeInt = 0
    FF: NonNegativeInt = 0
    BRAM_18K: NonNegativeInt = 0
    URAM: NonNegativeInt = 0
    LUT4: NonNegativeInt = 0
    TRELLIS_FF: NonNegativeInt = 0
    MULT18X18D: NonNegativeInt = 0
    DP16KD: NonNegativeInt = 0


class BoardFile(Strict):
    """A board's YAML file (`boards/*.yaml`), validated like the run config: one line per error."""

    name: str
    part: str
    family: Literal["7-series", "UltraScale+", "ECP5"]
    clock_period_ns: PositiveFloat
    dsp: DspFile
    resources: ResourcesFile
    source: str


@dataclass(frozen=True)
class Board:
    key: str
    name: str
    part: str
    family: str
    clock_period_ns: float
    dsp_type: str
    dsp_a_bits: int
    dsp_b_bits: int
    resources: dict
    source: str


def load_board(name_or_path) -> Board:
    """A board by name (`boards()` lists them) or from a YAML file of the same form."""
    path = named_file("boards", name_or_path, "board")
    raw, _ = load_yaml_file(path, BoardFile, HlsConfigError, "board")
    counts = raw.resources.model_dump()
    foreign = [name for name, count in counts.items() if count and name not in FAMILY_RESOURCES[raw.family]]
    if foreign:
        own = ", ".join(FAMILY_RESOURCES[raw.family])
        raise HlsConfigError(f"{path}: resources: {', '.join(foreign)} on a {raw.family} board; it counts {own}")
    return Board(
        path.stem,
        raw.name,
        raw.part,
        raw.family,
        raw.clock_period_ns,
        raw.dsp.type,
        raw.dsp.a_bits,
        raw.dsp.b_bits,
        {name: counts[name] for name in FAMILY_RESOURCES[raw.family]},
        raw.source,
    )


def boards() -> list:
    """Every board that fpgaprune ships, by key."""
    return [load_board(path.stem) for path in sorted(data_dir("boards").glob("*.yaml"))]
