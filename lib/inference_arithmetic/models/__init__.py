"""Models: ``ModelConfig`` (``config``) and the reader of Hugging Face configs
(``huggingface``, with what a config says of its checkpoint in ``checkpoint``), the registry
of real models (``configs/``, each with its source), what the reference implementation
measured of them (``reference/``), and their exact counts (``counts``).

>>> from inference_arithmetic.models import model
>>> model("llama-3.1-8b").n_layers
32
"""

# Re-exported, with the one list of names, those modules' __all__.
from inference_arithmetic.models import checkpoint, config, huggingface
from inference_arithmetic.models.checkpoint import *  # noqa: F403
from inference_arithmetic.models.config import *  # noqa: F403
from inference_arithmetic.models.huggingface import *  # noqa: F403

__all__ = [*config.__all__, *huggingface.__all__, *checkpoint.__all__]
