"""Hardware: the ``GPU`` record and the registry of accelerators (``specs/``, one JSON file each,
every figure with its public source).

>>> from inference_arithmetic.hardware import gpu
>>> gpu("h100-sxm").name
'h100-sxm'
"""

# Re-exported, with the one list of names, that module's __all__.
from inference_arithmetic.hardware.gpus import *  # noqa: F403
from inference_arithmetic.hardware.gpus import __all__  # noqa: F401
