"""Where a layer's products are built: `Multipliers` in the hls config, per layer (`LayerName`) or for the model
(`Model`).

- "auto" (the default): the HLS tool chooses; fpgaprune's rules put a product in DSPs when one operand is wider
  than 10 bits and the other has at least 6 (`resources/rules.py`).
- "fabric": every product of the layer is built from LUTs, no DSP. The kernel-sparse code binds each product to
  fabric (`vivado/sparse_cpp.py`: Vitis HLS `BIND_OP ... impl=fabric`, Vivado HLS `RESOURCE ... core=Mul_LUT`),
  and the estimate prices it as a LUT multiplier (`rules.fabric_multiplier_luts`). A budget with a DSP limit of 0
  asks for it in every layer (`Budget.dsp_free`, `dsp_free_overrides`). Catapult's export refuses it (its
  technology library chooses each operator); the RTL backend needs none (its products are adders, `rtl/`).
"""

from fpgaprune.errors import HlsConfigError
from fpgaprune.hls.presets import layer_setting

KEY = "Multipliers"
AUTO, FABRIC = "auto", "fabric"
CHOICES = (AUTO, FABRIC)


def multipliers(hls_config: dict, layer: str) -> str:
    """The layer's choice: its own `LayerName` entry, else the `Model` section's, else "auto"."""
    value = layer_setting(hls_config, layer, KEY, AUTO)
    if value not in CHOICES:
        raise HlsConfigError(f"hls config: {KEY} of {layer}: found {value!r}; expected one of {', '.join(CHOICES)}")
    return value


def is_fabric(hls_config: dict, layer: str) -> bool:
    return multipliers(hls_config, layer) == FABRIC


def dsp_free_overrides() -> dict:
    """The hls config overrides that build every product of the model from LUTs."""
    return {"Model": {KEY: FABRIC}}
