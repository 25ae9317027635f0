"""fpgaprune's own record of a model (`model_record.py`): made once by its front end, read by every stage after."""

from fpgaprune.record.model_record import ActivationRecord, BatchNormRecord, LayerRecord, ModelRecord, WeightRecord

__all__ = ["ActivationRecord", "BatchNormRecord", "LayerRecord", "ModelRecord", "WeightRecord"]
