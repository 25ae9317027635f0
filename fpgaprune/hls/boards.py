"""FPGA boards: part, default clock, family, DSP type and resource totals, from the vendors' data sheets."""

from dataclasses import dataclass

from fpgaprune.errors import HlsConfigError
from fpgaprune.hls.yaml_files import check_keys, data_dir, load_yaml, named_file

FIELDS = {"name", "part", "family", "clock_period_ns", "dsp", "resources", "source"}
RESOURCES = ("DSP", "LUT", "FF", "BRAM_18K", "URAM")
FAMILIES = ("7-series", "UltraScale+")


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
    raw = load_yaml(path)
    check_keys(str(path), raw, FIELDS)
    missing = sorted(FIELDS - set(raw))
    if missing:
        raise HlsConfigError(f"{path}: missing key '{missing[0]}'; a board needs {', '.join(sorted(FIELDS))}")
    if raw["family"] not in FAMILIES:
        raise HlsConfigError(f"{path}: family '{raw['family']}' is not one of {', '.join(FAMILIES)}")
    check_keys(f"{path}: resources", raw["resources"], RESOURCES)
    dsp = raw["dsp"]
    return Board(path.stem, raw["name"], raw["part"], raw["family"], float(raw["clock_period_ns"]), dsp["type"],
                 int(dsp["a_bits"]), int(dsp["b_bits"]), {k: int(raw["resources"].get(k, 0)) for k in RESOURCES},
                 raw["source"])


def boards() -> list:
    """Every board that fpgaprune ships, by key."""
    return [load_board(path.stem) for path in sorted(data_dir("boards").glob("*.yaml"))]
