"""Ground truth for the library: parameters, FLOPs and KV-cache bytes of the registry models.

Every model in lib/inference_arithmetic/models/configs/ is built from its Hugging Face config with
`transformers` on PyTorch's meta device (shapes only: no weights, no memory, no arithmetic), in
bfloat16, with eager attention, and measured:

- params: unique parameter tensors (tied embeddings once), split into embeddings, lm_head, the
  routed experts, and one decoder layer of each kind;
- flops: what torch.utils.flop_counter.FlopCounterMode counts for a prefill (B=1) with logits at
  every position and at the last one only, and for one decode step with 2048 tokens in the cache;
- kv_cache: the bytes of every tensor the returned cache holds after a prefill (B=1).

The result is written to lib/inference_arithmetic/models/reference/measured.json. The
library's tests compare their formulas to that file without needing torch. Run it with
`make reference`.
"""

from __future__ import annotations

import argparse
import inspect
import json
import logging
import platform
import sys
import time
import warnings
from pathlib import Path

import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoConfig, AutoModelForCausalLM

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CONFIG_DIR = REPO / "lib" / "inference_arithmetic" / "models" / "configs"
# Shipped with the library, so that chapters and readers can compare with it too.
OUTPUT = HERE.parents[1] / "lib" / "inference_arithmetic" / "models" / "reference" / "measured.json"

BATCH = 1
DTYPE = torch.bfloat16
PREFILL_LENS = (128, 2048)
DECODE_CONTEXT = 2048
KV_LENS = (128, 2048, 8192)
ATTN_IMPLEMENTATION = "eager"
EXPERTS_IMPLEMENTATION = "batched_mm"
# Describes how the released checkpoint is stored (DeepSeek-V3: FP8 blocks), not the architecture.
# The meta model is built in bf16, so the key is dropped before building.
DROPPED_CONFIG_KEYS = ("quantization_config",)

NOTES = {
    "method": (
        "Each model is built with AutoConfig.for_model(**config) and "
        "AutoModelForCausalLM.from_config(config, dtype=bfloat16, "
        "attn_implementation='eager'[, experts_implementation='batched_mm' for MoE models]) "
        "inside `with torch.device('meta')`, in eval mode under torch.no_grad(). Inputs are "
        "token ids of shape (1, T) on the meta device. FLOPs are FlopCounterMode totals "
        "(2 per multiply-add; only matmul-like aten ops are counted: mm, addmm, bmm, baddbmm, "
        "convolution, scaled-dot-product attention; norms, softmax, activations, RoPE, "
        "routing top-k and elementwise ops count 0)."
    ),
    "attention": (
        "Eager attention computes Q K^T and P V as full matmuls (aten.bmm) over all key "
        "positions: the causal and sliding-window masks are applied to the scores and do not "
        "reduce the count. Prefill of T tokens counts 2 * 2 * T * T * H * d_h per layer for "
        "the two matmuls (MLA: qk_head_dim for Q K^T, v_head_dim for P V)."
    ),
    "logits": (
        "flops.prefill[T].all_logits computes the lm_head at every position (a training-style "
        "forward); last_logit passes logits_to_keep=1 (the keyword of this transformers "
        "version), which is what generation computes."
    ),
    "decode": (
        "A prefill of S tokens (uncounted) builds the cache; then the forward of 1 new token "
        "with that cache and use_cache=True is counted. Its attention runs over S + 1 keys "
        "(sliding-window layers: the cache keeps window - 1 past tokens, so at most window "
        "keys). Logits for the one new token."
    ),
    "moe": (
        "MoE experts are 3-D parameter tensors (gate_up_proj: E x 2F x D, down_proj: "
        "E x D x F). With experts_implementation='batched_mm' each token is repeated k times, "
        "the weights of its k selected experts are gathered (W[expert_ids]) and multiplied "
        "with torch.bmm: the counter sees exactly k experts per token, 2 * T * k * 3 * D * F "
        "per MoE layer, never all E experts (moe.experts_counted_per_token is measured from "
        "the experts module's FLOPs). The router (a D x E linear) and shared experts are "
        "ordinary matmuls. The default 'eager' experts loop calls torch.nonzero, which the "
        "meta device cannot run; 'grouped_mm' runs on meta but FlopCounterMode does not "
        "count grouped matmuls (its expert FLOPs would read 0)."
    ),
    "params": (
        "total = sum of p.numel() over model.parameters() (unique tensors: a tied lm_head "
        "counts once, in embed_tokens). active = total minus (E - k)/E of the routed experts' "
        "parameters in every MoE layer; shared experts, router, attention, embeddings and "
        "lm_head are all active. The input embedding table is counted in full in both (it "
        "is a lookup, not a matmul)."
    ),
    "kv_cache": (
        "bytes = sum of numel * element_size over every layer's keys and values tensors of "
        "the cache returned by a prefill of T tokens (DynamicCache in this version). "
        "Sliding-window layers (DynamicSlidingWindowLayer) keep only the last window - 1 "
        "tokens. For DeepSeek-V3 (MLA) this transformers version caches the compressed "
        "latent: the 'keys' slot holds the normalized kv_lora_rank latent and the 'values' "
        "slot the shared RoPE key (qk_rope_head_dim), one head each; per-head keys and values "
        "are re-expanded with kv_b_proj from the whole cache at every forward (that matmul "
        "is in the decode FLOPs)."
    ),
    "lengths": (
        "Sequence lengths above a model's max_position_embeddings are not run (GPT-2 has "
        "learned position embeddings for 1024 positions only); max_position_embeddings itself "
        "is used instead, and the decode context becomes max_position_embeddings - 1."
    ),
}


def log(message: str) -> None:
    print(message, flush=True)


def load_configs(names: list[str] | None) -> list[dict]:
    docs = []
    for path in sorted(CONFIG_DIR.glob("*.json")):
        doc = json.loads(path.read_text())
        if names and doc["name"] not in names:
            continue
        docs.append(doc)
    if names:
        missing = set(names) - {d["name"] for d in docs}
        if missing:
            raise SystemExit(f"unknown model(s): {sorted(missing)}")
    return docs


def is_moe(config) -> bool:
    return bool(
        getattr(config, "num_local_experts", None)
        or getattr(config, "n_routed_experts", None)
        or getattr(config, "num_experts", None)
    )


# Multimodal wrappers: the language model is built from their text_config (the vision tower,
# which the library does not count, is left out).
TEXT_MODELS = {"gemma3": "gemma3_text", "llama4": "llama4_text", "mistral3": "mistral"}


def text_config(hf_config: dict) -> dict:
    if hf_config.get("model_type") in TEXT_MODELS and "text_config" in hf_config:
        return {"model_type": TEXT_MODELS[hf_config["model_type"]], **hf_config["text_config"]}
    return hf_config


def build(hf_config: dict):
    hf_config = text_config(hf_config)
    config_dict = {k: v for k, v in hf_config.items() if k not in DROPPED_CONFIG_KEYS}
    config = AutoConfig.for_model(**config_dict)
    kwargs = {"dtype": DTYPE, "attn_implementation": ATTN_IMPLEMENTATION}
    if is_moe(config):
        kwargs["experts_implementation"] = EXPERTS_IMPLEMENTATION
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, **kwargs)
    model.eval()
    return model


def window(config) -> int | None:
    """The window of a model's windowed layers: a sliding window, or Llama 4's chunk."""
    return getattr(config, "sliding_window", None) or getattr(config, "attention_chunk_size", None)


def max_positions(config) -> int | None:
    return getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)


def lengths(wanted: tuple[int, ...], limit: int | None) -> list[int]:
    if limit is None or all(t <= limit for t in wanted):
        return list(wanted)
    return sorted({t for t in wanted if t <= limit} | {limit})


def ranges(indices: list[int]) -> str:
    parts, start = [], indices[0]
    for prev, cur in zip(indices, indices[1:] + [None], strict=True):
        if cur != prev + 1:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
            start = cur
    return ",".join(parts)


def decoder_layers(model) -> tuple[str, torch.nn.ModuleList]:
    n = model.config.num_hidden_layers
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == n:
            return name, module
    raise RuntimeError("no ModuleList of decoder layers found")


def experts_modules(model) -> list[tuple[str, torch.nn.Module]]:
    """Modules holding the routed experts as tensors with one slice per expert (E, ...): 3-D
    weights, and 2-D biases where the experts have them (gpt-oss)."""
    found = []
    for name, module in model.named_modules():
        params = dict(module.named_parameters(recurse=False))
        experts = getattr(module, "num_experts", None)
        if (
            params
            and experts
            and all(p.dim() >= 2 and p.shape[0] == experts for p in params.values())
        ):
            if any(p.dim() == 3 for p in params.values()):
                found.append((name, module))
    return found


def count_params(model) -> dict:
    config = model.config
    total = sum(p.numel() for p in model.parameters())
    embed = model.get_input_embeddings()
    embed_tokens = embed.weight.numel()
    head = model.get_output_embeddings()
    tied = head is not None and head.weight is embed.weight
    lm_head = 0 if tied else sum(p.numel() for p in head.parameters())
    embed_positions = sum(
        m.weight.numel()
        for m in model.modules()
        if isinstance(m, torch.nn.Embedding) and m is not embed
    )

    experts = experts_modules(model)
    k = getattr(config, "num_experts_per_tok", None)
    routed_total = routed_inactive = 0
    for _, module in experts:
        n = sum(p.numel() for p in module.parameters(recurse=False))
        e = module.num_experts
        assert n % e == 0
        routed_total += n
        routed_inactive += n // e * (e - k)
    active = total - routed_inactive

    layers_name, layers = decoder_layers(model)
    kinds: dict[tuple, dict] = {}
    for i, layer in enumerate(layers):
        named = [(name, tuple(p.shape)) for name, p in layer.named_parameters()]
        signature = tuple(named)
        if signature not in kinds:
            groups: dict[str, int] = {}
            for name, p in layer.named_parameters():
                module_path = name.rsplit(".", 1)[0] if "." in name else name
                groups[module_path] = groups.get(module_path, 0) + p.numel()
            kinds[signature] = {
                "layer_class": type(layer).__name__,
                "first_layer": f"{layers_name}.{i}",
                "indices": [],
                "params_per_layer": sum(p.numel() for p in layer.parameters()),
                "by_module": groups,
                "tensors": {name: list(shape) for name, shape in named},
            }
        kinds[signature]["indices"].append(i)
    layer_kinds = []
    for kind in kinds.values():
        kind["count"] = len(kind["indices"])
        kind["indices"] = ranges(kind["indices"])
        layer_kinds.append(kind)
    in_layers = sum(k["params_per_layer"] * k["count"] for k in layer_kinds)

    result = {
        "total": total,
        "active": active,
        "embed_tokens": embed_tokens,
        "embed_positions": embed_positions,
        "lm_head": lm_head,
        "tied_embeddings": tied,
        "non_embedding": total - embed_tokens - embed_positions - lm_head,
        "decoder_layers": in_layers,
        "other": total - in_layers - embed_tokens - embed_positions - lm_head,
        "layer_kinds": layer_kinds,
    }
    if experts:
        result["routed_experts"] = {
            "total": routed_total,
            "active": routed_total - routed_inactive,
            "moe_layers": len(experts),
            "num_experts": experts[0][1].num_experts,
            "experts_per_token": k,
        }
    return result


def forward_kwargs(model) -> tuple[str, str]:
    params = inspect.signature(model.forward).parameters
    cache_kw = "cache" if "cache" in params else "past_key_values"
    logits_kw = "logits_to_keep" if "logits_to_keep" in params else "num_logits_to_keep"
    return cache_kw, logits_kw


def output_cache(out):
    cache = out.get("cache", None)
    return cache if cache is not None else out.get("past_key_values", None)


def ids(t: int) -> torch.Tensor:
    return torch.zeros(BATCH, t, dtype=torch.long, device="meta")


def counted(fn) -> tuple[FlopCounterMode, object]:
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        out = fn()
    return counter, out


def flop_record(counter: FlopCounterMode, model_prefix: str, layer_paths: list[str]) -> dict:
    counts = counter.get_flop_counts()
    by_op = {str(op): int(n) for op, n in counts["Global"].items()}
    by_module = {}
    for path in ["lm_head", *layer_paths]:
        key = f"{model_prefix}.{path}"
        if key in counts:
            by_module[path] = sum(int(n) for n in counts[key].values())
            # the layer's submodules (attention and its projections, MLP/MoE, experts, ...);
            # attention's score and value matmuls belong to no submodule of self_attn
            for child, ops in counts.items():
                if child.startswith(key + "."):
                    by_module[child[len(model_prefix) + 1 :]] = sum(int(n) for n in ops.values())
    return {"total": int(counter.get_total_flops()), "by_op": by_op, "by_module": by_module}


def cache_record(cache) -> dict:
    total = 0
    kinds: dict[tuple, dict] = {}
    for i, layer in enumerate(cache.layers):
        keys, values = layer.keys, layer.values
        nbytes = sum(t.numel() * t.element_size() for t in (keys, values) if t is not None)
        total += nbytes
        signature = (type(layer).__name__, tuple(keys.shape), tuple(values.shape))
        if signature not in kinds:
            kinds[signature] = {
                "layer_class": signature[0],
                "key_shape": list(signature[1]),
                "value_shape": list(signature[2]),
                "dtype": str(keys.dtype).replace("torch.", ""),
                "bytes_per_layer": nbytes,
                "indices": [],
            }
        kinds[signature]["indices"].append(i)
    layers = []
    for kind in kinds.values():
        kind["count"] = len(kind["indices"])
        kind["indices"] = ranges(kind["indices"])
        layers.append(kind)
    return {"bytes": total, "cache_class": type(cache).__name__, "layers": layers}


def measure(doc: dict) -> dict:
    name = doc["name"]
    started = time.perf_counter()
    model = build(doc["config"])
    config = model.config
    cache_kw, logits_kw = forward_kwargs(model)
    prefix = type(model).__name__
    layers_name, _ = decoder_layers(model)
    limit = max_positions(config)

    params = count_params(model)
    layer_paths = [kind["first_layer"] for kind in params["layer_kinds"]]

    def run(t: int, **kwargs):
        return model(input_ids=ids(t), use_cache=True, **kwargs)

    # Each counted all-logits prefill also returns the cache that a prefill of T tokens builds:
    # it is measured for kv_cache and reused (last, since a forward extends it in place) for decode.
    prefill, caches, moe = {}, {}, None
    for t in lengths(PREFILL_LENS, limit):
        counter_all, out = counted(lambda t=t: run(t))
        counter_last, _ = counted(lambda t=t: run(t, **{logits_kw: 1}))
        prefill[str(t)] = {
            "all_logits": flop_record(counter_all, prefix, layer_paths),
            "last_logit": flop_record(counter_last, prefix, layer_paths),
        }
        caches[t] = output_cache(out)
        if params.get("routed_experts") and moe is None:
            moe = measured_experts(model, counter_all, prefix, t)

    kv = {}
    for t in lengths(KV_LENS, limit):
        if t not in caches:
            with torch.no_grad():
                caches[t] = output_cache(run(t))
        kv[str(t)] = cache_record(caches[t])

    context = min(DECODE_CONTEXT, limit - 1) if limit else DECODE_CONTEXT
    cache = caches.get(context)
    if cache is None:
        with torch.no_grad():
            cache = output_cache(run(context))
    counter, _ = counted(lambda: model(input_ids=ids(1), use_cache=True, **{cache_kw: cache}))
    decode = {"context_len": context, "new_tokens": 1, **flop_record(counter, prefix, layer_paths)}

    record = {
        "published_params": doc["published_params"]["text"],
        "hf_repo": doc["hf_repo"],
        "model_class": prefix,
        "config_class": type(config).__name__,
        "decoder_layers": layers_name,
        "params": params,
        "flops": {"batch": BATCH, "prefill": prefill, "decode": decode},
        "kv_cache": {"batch": BATCH, "dtype": "bfloat16", "after_prefill": kv},
        "forward_keywords": {"cache": cache_kw, "logits": logits_kw},
    }
    if moe:
        record["moe"] = moe
    record["notes"] = model_notes(config, record)
    dropped = [k for k in DROPPED_CONFIG_KEYS if k in doc["config"]]
    if dropped:
        record["dropped_config_keys"] = dropped
    log(f"  {name}: {time.perf_counter() - started:.1f} s")
    return record


def model_notes(config, record: dict) -> list[str]:
    """Observations worth knowing, computed from this model's record."""
    notes = []
    params = record["params"]
    billions = params["total"] / 1e9
    notes.append(
        f"total {params['total']:,} parameters ({billions:.2f}B); published: "
        f"{record['published_params']}."
    )
    if params["tied_embeddings"]:
        notes.append("lm_head is tied to embed_tokens: counted once, in embed_tokens.")
    if params["embed_positions"]:
        notes.append(f"learned position embeddings: {params['embed_positions']:,} parameters.")
    if "routed_experts" in params:
        ex = params["routed_experts"]
        notes.append(
            f"{ex['moe_layers']} MoE layers of {ex['num_experts']} routed experts, "
            f"{ex['experts_per_token']} per token: routed experts hold {ex['total']:,} "
            f"parameters, {ex['active']:,} active. active without the input embedding "
            f"(a lookup): {params['active'] - params['embed_tokens']:,}."
        )
    if len(params["layer_kinds"]) > 1:
        kinds = "; ".join(
            f"layers {k['indices']}: {k['params_per_layer']:,} each" for k in params["layer_kinds"]
        )
        notes.append(f"decoder layers differ: {kinds}.")
    for t, kv in record["kv_cache"]["after_prefill"].items():
        capped = [k for k in kv["layers"] if k["key_shape"][-2] < int(t)]
        for k in capped:
            notes.append(
                f"after a prefill of {t} tokens, {k['count']} {k['layer_class']} layers "
                f"(indices {k['indices']}) hold {k['key_shape'][-2]} tokens "
                f"(window {window(config)} - 1)."
            )
    if getattr(config, "new_decoder_architecture", False):
        heads, kv_heads = config.num_attention_heads, config.num_kv_heads
        cached = {
            str(layer["key_shape"][1])
            for kv in record["kv_cache"]["after_prefill"].values()
            for layer in kv["layers"]
        }
        notes.append(
            f"the cache holds keys and values for {', '.join(sorted(cached))} heads, not the "
            f"{kv_heads} key/value heads query_key_value computes: FalconAttention._split_heads "
            f"repeats each for the {heads // kv_heads} query heads of its group "
            f"(torch.broadcast_to) before the cache update, {heads // kv_heads}x the bytes of the "
            "heads themselves."
        )
    if getattr(config, "kv_lora_rank", None):
        per_token = (config.kv_lora_rank + config.qk_rope_head_dim) * 2
        decode = record["flops"]["decode"]
        s = decode["context_len"] + 1
        heads = config.num_attention_heads
        expand = 2 * s * config.kv_lora_rank * heads * (config.qk_nope_head_dim + config.v_head_dim)
        layer = params["layer_kinds"][0]["first_layer"]
        measured = decode["by_module"].get(f"{layer}.self_attn.kv_b_proj")
        notes.append(
            f"MLA cache: the compressed latent, (kv_lora_rank {config.kv_lora_rank} + "
            f"qk_rope_head_dim {config.qk_rope_head_dim}) * 2 bytes = {per_token} bytes per "
            f"token per layer, not per-head keys and values."
        )
        notes.append(
            f"decode re-expands the whole latent cache with kv_b_proj in every layer: "
            f"2 * {s} * {config.kv_lora_rank} * {heads} * "
            f"({config.qk_nope_head_dim} + {config.v_head_dim}) = {expand:,} FLOPs per layer "
            f"(measured {measured:,}), {expand * config.num_hidden_layers / decode['total']:.0%} "
            f"of the decode step's {decode['total']:,}."
        )
    if any(
        "addmm" in op
        for op in record["flops"]["prefill"][next(iter(record["flops"]["prefill"]))]["all_logits"][
            "by_op"
        ]
    ):
        notes.append("linear layers with a bias run as aten.addmm (counted like mm).")
    return notes


def whole(x: float) -> int | float:
    return int(x) if float(x).is_integer() else x


def measured_experts(model, counter: FlopCounterMode, prefix: str, t: int) -> dict:
    """How many experts per token the FLOP counter saw, from the first experts module."""
    counts = counter.get_flop_counts()
    name, module = experts_modules(model)[0]
    flops = sum(int(n) for n in counts[f"{prefix}.{name}"].values())
    per_expert = sum(p.numel() for p in module.parameters(recurse=False)) // module.num_experts
    return {
        "experts_implementation": EXPERTS_IMPLEMENTATION,
        "experts_module": name,
        "experts_module_class": type(module).__name__,
        "tokens": t,
        "experts_flops_per_layer": flops,
        "params_per_expert": per_expert,
        # flops = 2 * tokens * (experts counted per token) * params_per_expert
        "experts_counted_per_token": whole(flops / (2 * t * per_expert)),
        "experts_per_token_config": model.config.num_experts_per_tok,
        "num_experts": module.num_experts,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help="names to run (default: all)")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    if args.models and args.output is None:
        parser.error("a subset of models needs --output (measured.json holds all models)")
    output = args.output or OUTPUT

    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    logging.getLogger("transformers").setLevel(logging.ERROR)
    torch.set_num_threads(1)

    started = time.perf_counter()
    docs = load_configs(args.models or None)
    models = {}
    for doc in docs:
        log(f"{doc['name']} ...")
        models[doc["name"]] = measure(doc)

    result = {
        "generated_by": "tests/reference/make_reference.py",
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
        },
        "settings": {
            "batch": BATCH,
            "dtype": "bfloat16",
            "device": "meta",
            "attn_implementation": ATTN_IMPLEMENTATION,
            "experts_implementation": EXPERTS_IMPLEMENTATION,
            "prefill_lens": list(PREFILL_LENS),
            "decode_context_len": DECODE_CONTEXT,
            "kv_cache_lens": list(KV_LENS),
            "dropped_config_keys": list(DROPPED_CONFIG_KEYS),
        },
        "notes": NOTES,
        "models": models,
    }
    output.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    log(f"{len(models)} models in {time.perf_counter() - started:.1f} s, written to {output}")


if __name__ == "__main__":
    sys.exit(main())
