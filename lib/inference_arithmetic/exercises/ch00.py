"""Chapter 00 (introduction): the ceiling of one conversation's tokens per second.

The inputs are the chapter's example: a 70-billion-parameter model on a GPU that reads
3 TB/s. A token of one conversation reads every weight once: N b / beta seconds.
"""

from inference_arithmetic.core.numeric import numeric
from inference_arithmetic.exercises import Part, register
from inference_arithmetic.formulas.basics import memory_time, weight_bytes

N_PARAMS, BANDWIDTH = 70e9, 3e12
_time = numeric(memory_time(weight_bytes()))
weights = numeric(weight_bytes())

register(
    "00-intro",
    "ex-intro-int4",
    Part(
        "tokens_per_second",
        lambda: 1 / _time(n_params=N_PARAMS, bytes_per_number=0.5, bandwidth=BANDWIDTH),
        unit="tokens per second",
        hints={0.25: "did you keep 2 bytes per number? int4 is half a byte"},
    ),
)

register(
    "00-intro",
    "ex-intro-bandwidth",
    Part(
        "bandwidth",
        lambda: 100 * weights(n_params=N_PARAMS, bytes_per_number=2),  # 100 reads a second
        unit="bytes per second",
        hints={0.5: "did you count 2 bytes per bf16 number?"},
    ),
)
