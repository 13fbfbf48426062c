"""Predict the 20 measured vLLM runs with two peer estimators, llm-analysis and GenZ.

Run it through ``tools/peers/run.sh``, which builds the peers' own virtual environment
(``tools/peers/.venv``, from ``requirements.txt``) and writes ``tools/peers/peers.csv``; the
README says how it was made. Neither peer is a dependency of the book: the imports of
``llm_analysis`` and ``GenZ`` are inside the functions that use them, so the main environment
can lint this file without them.

Every peer gets the same inputs: the rows of
``lib/inference_arithmetic/validation/data/vllm_llama_h100.csv`` (batch B, prompt T and
output O tokens, GPUs), the model's Hugging Face ``config.json`` from
``lib/inference_arithmetic/models/configs/`` and the H100 SXM figures of
``lib/inference_arithmetic/hardware/specs/h100-sxm.json``, in the units the peer expects. Each
peer predicts a run's seconds; the predicted throughput is B * O over them, as for the measurement.
"""

from __future__ import annotations

import csv
import functools
import json
import logging
import sys
import warnings
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "lib" / "inference_arithmetic"
OUT = Path(__file__).with_name("peers.csv")
PINS = {"llm-analysis": "0.2.2", "genz-llm": "0.0.16"}

# Each peer twice: with its own defaults, and with the efficiencies its documentation gives
# (README.md says where each value is written).
SETTINGS = {
    ("llm_analysis", "defaults"): {},  # flops_efficiency = hbm_memory_efficiency = 1
    ("llm_analysis", "documented"): {"flops_efficiency": 0.7, "hbm_memory_efficiency": 0.65},
    ("genz", "defaults"): {},  # system_eff = 1
    ("genz", "documented"): {"system_eff": 0.8},
}


class Refused(Exception):
    """The peer refuses a batch (its memory check fails)."""


def runs() -> list[dict]:
    with open(DATA / "validation" / "data" / "vllm_llama_h100.csv") as f:
        return list(csv.DictReader(f))


def hf_config(name: str) -> dict:
    return json.loads((DATA / "models" / "configs" / f"{name}.json").read_text())["config"]


def h100() -> dict:
    spec = json.loads((DATA / "hardware" / "specs" / "h100-sxm.json").read_text())
    assert spec["name"] == "h100-sxm"
    return {
        "flop_rate": spec["peak_flop_rate"]["bf16"],  # FLOP/s, dense
        "bandwidth": spec["memory_bandwidth"],  # B/s
        "memory": spec["memory_bytes"],  # B
        "link_bandwidth": spec["interconnect_bandwidth"],  # B/s, each way
    }


def llm_analysis_seconds(cfg, gpu, n_gpus, batch, prompt, output, **efficiency) -> float:
    """llm-analysis's end-to-end latency: its prefill plus ``output`` decode steps."""
    from llm_analysis.analysis import LLMAnalysis
    from llm_analysis.config import (
        GPUConfig,
        ModelConfig,
        ParallelismConfig,
        get_dtype_config_by_name,
        get_gpu_config_by_name,
    )

    model = ModelConfig(
        name=cfg["model_type"] + str(cfg["hidden_size"]),
        num_layers=cfg["num_hidden_layers"],
        n_head=cfg["num_attention_heads"],
        hidden_dim=cfg["hidden_size"],
        vocab_size=cfg["vocab_size"],
        max_seq_len=cfg["max_position_embeddings"],
        num_key_value_heads=cfg["num_key_value_heads"],
        ffn_embed_dim=cfg["intermediate_size"],
        # Its ModelConfig asserts an integer ratio unless given one; Llama's is 3.5.
        expansion_ratio=cfg["intermediate_size"] / cfg["hidden_size"],
        model_type=cfg["model_type"],
    )
    own = get_gpu_config_by_name("h100-sxm-80gb")
    h100_figures = GPUConfig(
        name="h100-sxm (the library's figures)",
        mem_per_GPU_in_GB=gpu["memory"] / 1e9,
        hbm_bandwidth_in_GB_per_sec=gpu["bandwidth"] / 1e9,
        intra_node_bandwidth_in_GB_per_sec=gpu["link_bandwidth"] / 1e9,
        intra_node_min_message_latency=own.intra_node_min_message_latency,  # its own, 8 us
        peak_fp16_TFLOPS=gpu["flop_rate"] / 1e12,
    )
    analysis = LLMAnalysis(
        model,
        h100_figures,
        get_dtype_config_by_name("w16a16e16"),
        ParallelismConfig(tp_size=n_gpus),
        **efficiency,
    )
    try:
        summary = analysis.inference(
            batch_size_per_gpu=batch, seq_len=prompt, num_tokens_to_generate=output
        )
    except AssertionError as error:  # its memory checks are asserts
        raise Refused(str(error)) from error
    return summary["total_latency"]


def genz_seconds(cfg, gpu, n_gpus, batch, prompt, output, **efficiency) -> float:
    """GenZ's prefill, plus ``output - 1`` decode steps at the mean context of the steps."""
    from GenZ import decode_moddeling, prefill_moddeling
    from GenZ.Models import ModelConfig

    model = ModelConfig(
        model=cfg["model_type"] + str(cfg["hidden_size"]),
        vocab_size=cfg["vocab_size"],
        max_model_len=cfg["max_position_embeddings"],
        hidden_size=cfg["hidden_size"],
        intermediate_size=cfg["intermediate_size"],
        num_ffi=2,  # SwiGLU: two up projections, as GenZ's own Llama configs say
        num_decoder_layers=cfg["num_hidden_layers"],
        num_attention_heads=cfg["num_attention_heads"],
        num_key_value_heads=cfg["num_key_value_heads"],
        hidden_act=cfg["hidden_act"],
    )

    def system():  # GenZ's units: TFLOP/s, GB, GB/s; a fresh dict each call
        return {
            "Flops": gpu["flop_rate"] / 1e12,
            "Memory_size": gpu["memory"] / 1e9,
            "Memory_BW": gpu["bandwidth"] / 1e9,
            "ICN": gpu["link_bandwidth"] / 1e9,
            "real_values": True,
        }

    # Bb is GenZ's number of beams (default 4); the measured runs sample one sequence each.
    common = dict(model=model, batch_size=batch, bits="bf16", tensor_parallel=n_gpus, **efficiency)
    try:
        # The whole request's cache must fit: GenZ's memory check at the last step's context.
        decode_moddeling(
            **common, Bb=1, input_tokens=prompt, output_tokens=output, system_name=system()
        )
        first = prefill_moddeling(**common, input_tokens=prompt, system_name=system())
        step = decode_moddeling(
            **common,
            Bb=1,
            input_tokens=prompt,
            output_tokens=max(output - 2, 0) // 2,
            system_name=system(),
        )
    except ValueError as error:  # "All params would not fit on chip"
        raise Refused(str(error)) from error
    return (first["Latency"] + (output - 1) * step["Latency"]) / 1e3  # GenZ reports ms


PEERS = {"llm_analysis": llm_analysis_seconds, "genz": genz_seconds}


def _at_batch(peer, cfg, gpu, n_gpus, prompt, output, efficiency, batch) -> float:
    return peer(cfg, gpu, n_gpus, batch, prompt, output, **efficiency)


def in_waves(seconds, batch: int) -> tuple[float, int]:
    """Seconds of a batch the peer refuses whole, run in waves of the largest it accepts
    (found by bisection), as an engine does; and the number of waves."""
    try:
        return seconds(batch), 1
    except Refused:
        pass
    low, high = 0, batch  # accepts low (0: nothing yet), refuses high
    while high - low > 1:
        middle = (low + high) // 2
        try:
            seconds(middle)
            low = middle
        except Refused:
            high = middle
    if low == 0:
        raise Refused(f"not even one request fits ({batch=})")
    full, rest = divmod(batch, low)
    total = full * seconds(low) + (seconds(rest) if rest else 0.0)
    return total, full + (1 if rest else 0)


def main() -> None:
    for package, pinned in PINS.items():
        assert version(package) == pinned, (package, version(package), pinned)
    warnings.filterwarnings("ignore")  # GenZ warns about pandas; neither changes a number
    logging.getLogger("llm_analysis").setLevel(logging.ERROR)
    from llm_analysis.logger import logger

    logger.setLevel(logging.ERROR)

    gpu = h100()
    columns = ["row", "model", "n_gpus", "batch", "input_tokens", "output_tokens", "measured"]
    for peer, setting in SETTINGS:
        columns += [f"{peer}_{setting}", f"{peer}_{setting}_error", f"{peer}_{setting}_waves"]
    rows = []
    for number, run in enumerate(runs(), start=1):
        batch, n_gpus = int(run["batch"]), int(run["n_gpus"])
        prompt, output = round(float(run["input_tokens"])), round(float(run["output_tokens"]))
        measured = float(run["output_tokens_per_s"])
        cfg = hf_config(run["model"])
        row = dict(row=number, model=run["model"], n_gpus=n_gpus, batch=batch)
        row.update(input_tokens=prompt, output_tokens=output, measured=measured)
        for (peer, setting), efficiency in SETTINGS.items():
            seconds = functools.partial(
                _at_batch, PEERS[peer], cfg, gpu, n_gpus, prompt, output, efficiency
            )
            total, waves = in_waves(seconds, batch)
            predicted = batch * output / total
            row[f"{peer}_{setting}"] = f"{predicted:.2f}"
            row[f"{peer}_{setting}_error"] = f"{predicted / measured - 1:.4f}"
            row[f"{peer}_{setting}_waves"] = waves
        rows.append(row)
        print(number, run["model"], batch, {k: v for k, v in row.items() if k.endswith("error")})
    with open(OUT, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {OUT.relative_to(ROOT)} with Python {sys.version.split()[0]}, {PINS}")


if __name__ == "__main__":
    main()
