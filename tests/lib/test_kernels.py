"""The kernel-level step model (formulas.kernels, ia.kernels): each of the physical terms
the single roofline leaves out, held to what it must do."""

import dataclasses

import numpy as np
import pytest
import sympy

import inference_arithmetic as ia
from inference_arithmetic.core.numeric import numeric
from inference_arithmetic.formulas import kernels, latency

H100 = ia.gpu("h100-sxm")


def rows(*args, **kwargs):
    return {r["kernel"]: r for r in ia.kernels(*args, **kwargs)}


def test_the_rows_add_up_to_the_step():
    s = ia.Scenario("llama-3.1-8b", H100, batch=16, prompt_len=1024, output_len=1, step="kernels")
    step = s.evaluate(kernels.decode_step_time(s.model), context_len=1024)
    table = ia.kernels("llama-3.1-8b", H100, batch=16, context_len=1024)
    assert sum(r["time"] for r in table) == pytest.approx(step, rel=1e-9)
    assert ia.decode_step_time(
        "llama-3.1-8b", H100, batch=16, context_len=1024, step="kernels"
    ) == pytest.approx(step, rel=1e-9)


def test_each_kernel_has_its_own_bound_and_the_sum_exceeds_one_roofline():
    # At a batch of 256 the products turn compute-bound while attention still reads its cache:
    # the sum of per-kernel maxima is longer than the maximum of the step's sums.
    table = rows("llama-3.1-8b", H100, batch=256, context_len=1024)
    assert table["feed-forward up"]["bound"] == "compute"
    assert table["decode attention"]["bound"] == "bandwidth"
    s = ia.Scenario("llama-3.1-8b", H100, batch=256, prompt_len=1024, output_len=1, step="kernels")
    no_fixed = dict(kernel_overhead=0.0, step_overhead=0.0, request_overhead=0.0)
    no_fixed.update(decode_attention_latency=0.0)
    summed = s.evaluate(kernels.decode_step_time(s.model), context_len=1024, **no_fixed)
    flops = sum(r["flops"] for r in table.values() if r["kind"] != "collective")
    nbytes = sum(r["bytes"] for r in table.values() if r["kind"] != "collective")
    # Every kernel at its own rate: the single roofline at the slowest of them is a floor.
    floor = max(flops / (s.figure("compute_efficiency") * H100.flop_rate("bf16")),
                nbytes / H100.memory_bandwidth)  # fmt: skip
    assert summed > floor


def test_a_row_is_the_longer_of_its_two_sides_plus_its_launches():
    s = ia.Scenario("llama-3.1-8b", H100, batch=256, prompt_len=1024, output_len=1)
    for r in ia.kernels("llama-3.1-8b", H100, batch=256, context_len=1024):
        if r["kind"] in ("collective", "fixed"):
            assert r["compute"] == r["memory"] == 0  # a message or the engine: no roofline
            continue
        fixed = s.figure("decode_attention_latency" if r["kind"] == "attention"
                         else "kernel_overhead")  # fmt: skip
        assert r["time"] == pytest.approx(max(r["compute"], r["memory"]) + r["count"] * fixed)
        assert (r["bound"] == "compute") == (r["compute"] >= r["memory"]), r["kernel"]
        assert isinstance(r["count"], int) and r["count"] in (1, s.model.n_layers)


def test_a_kernel_that_does_not_share_kv_reads_moves_the_group_factor():
    # Llama 3.1 8B: 32 query heads, 8 KV heads, a group of 4.
    sharing = ia.Scenario("llama-3.1-8b", H100, batch=8, step="kernels")
    e = dataclasses.replace(sharing.engine, kv_shared=False)
    repeating = sharing.replace(engine=e)
    attention = next(k for k in kernels.step_kernels(sharing.model) if k.name == "decode attention")
    point = dict(decoding=8, prefill_tokens=0, context_len=2048)
    shared = sharing.evaluate(attention.nbytes, **point)
    # With no L2 to catch the repeats, every query head reads its KV head again: 4 times.
    assert repeating.evaluate(attention.nbytes, **point, kv_reread_hits=0.0) == pytest.approx(
        4 * shared
    )
    assert 0 < repeating.figure("kv_reread_hits") < 1  # measured on the H100 (its source)
    between = repeating.evaluate(attention.nbytes, **point)
    assert shared < between < 4 * shared  # the L2 serves part of the repeats


def test_few_tokens_per_expert_lower_the_grouped_products_rate():
    # Mixtral: 8 experts, 2 a token. The rate a product reaches grows with its rows per matrix.
    rate = numeric(kernels.matmul_rate(sympy.Symbol("rows", positive=True)))
    values = ia.Scenario("mixtral-8x7b", H100, n_gpus=2, step="kernels").values()
    few, many = (float(rate.from_values({**values, "rows": r})) for r in (16, 4096))
    assert few < 0.15 * many
    table = rows("mixtral-8x7b", H100, batch=64, prompt_len=512, n_gpus=2, phase="prefill")
    experts = table["experts up"]
    dense_rate = values["compute_efficiency"] * H100.flop_rate("bf16")
    assert experts["flops"] / experts["time"] < values["grouped_matmul"] * dense_rate


def test_pcie_tensor_parallelism_pays_its_link():
    # The same model split two ways over NVLink and over PCIe: the messages cost far more.
    nvlink = rows("llama-3.1-8b", "h100-sxm", batch=1, context_len=2048, n_gpus=2)
    pcie = rows("llama-3.1-8b", "l40s", batch=1, context_len=2048, n_gpus=2)
    name = "all-reduce (attention)"
    assert pcie[name]["time"] > 3 * nvlink[name]["time"]
    # Over PCIe the engine's one-shot kernel is not used: NCCL's latency sets each message.
    s = ia.Scenario("llama-3.1-8b", "l40s", n_gpus=2, step="kernels")
    assert s.figure("allreduce_latency") == s.values()["ring_latency"]


def test_batch_one_decode_on_eight_gpus_carries_the_fixed_cost_per_layer():
    m = ia.model("llama-3.1-70b")
    table = ia.kernels(m, H100, batch=1, context_len=2048, n_gpus=8)
    fixed = sum(r["time"] for r in table if r["kind"] == "collective")
    streaming = ia.timing.weights_per_gpu(m, n_gpus=8) / H100.memory_bandwidth
    # Two all-reduces a layer at the measured one-shot latency: more than the weights' stream.
    s = ia.Scenario(m, H100, n_gpus=8, step="kernels")
    assert fixed >= 2 * m.n_layers * s.figure("allreduce_latency")
    step = sum(r["time"] for r in table)
    assert step > 1.3 * streaming  # the roofline of the weights alone is far from it
    roofline = ia.decode_step_time(m, H100, batch=1, context_len=2048, n_gpus=8, **ia.timing.IDEAL)
    assert step > 1.3 * roofline


def test_messages_travel_in_the_activations_format():
    # fp8 weights (W8A8): the products run in fp8, the all-reduce carries bf16 activations.
    fp8 = rows("llama-3.1-70b", H100, batch=4, context_len=1024, n_gpus=4, dtype="fp8")
    bf16 = rows("llama-3.1-70b", H100, batch=4, context_len=1024, n_gpus=4)
    name = "all-reduce (feed-forward)"
    assert fp8[name]["bytes"] == bf16[name]["bytes"] == 80 * 2 * 4 * 8192
    assert fp8["feed-forward up"]["bytes"] < 0.6 * bf16["feed-forward up"]["bytes"]
    assert ia.core.dtypes.activation_bytes("fp8") == 2 == ia.core.dtypes.activation_bytes("bf16")


def test_a_prefill_has_no_decode_kernels_and_a_decode_no_prompt_ones():
    prefill = rows("llama-3.1-8b", H100, batch=2, prompt_len=512, phase="prefill")
    decode = rows("llama-3.1-8b", H100, batch=2, context_len=512)
    assert "decode attention" not in prefill and "prompt attention" in prefill
    assert "prompt attention" not in decode and "decode attention" in decode


def test_the_breakdown_refuses_what_it_cannot_time():
    with pytest.raises(ia.ArgumentError, match="phase"):
        ia.kernels("llama-3.1-8b", H100, phase="both")
    with pytest.raises(KeyError, match="unknown engine"):
        ia.kernels("llama-3.1-8b", H100, engine="vlm")


def test_the_kernel_model_and_the_roofline_agree_on_the_bound_they_share():
    # At peak efficiencies and without fixed costs, one kernel alone is its roofline.
    s = ia.Scenario("llama-3.1-8b", H100, step="kernels")
    k = kernels.gemm("one product", sympy.Integer(4096), 4096, 4096)
    ideal = dict(compute_efficiency=1.0, bandwidth_efficiency=1.0, kernel_overhead=0.0)
    ideal["matmul_half_rows"] = 1e-12  # no tile quantization
    seconds = s.evaluate(k.time, **ideal)
    flops, nbytes = 2 * 4096**3, 2 * 4096**2 + 2 * 4096 * 8192
    assert seconds == pytest.approx(max(flops / H100.flop_rate("bf16"), nbytes / 3.35e12))
    assert np.isfinite(s.evaluate(latency.decode_step_time(s.model), context_len=10))


def test_past_the_link_domain_only_the_ring_all_reduces():
    # The engine's one-shot kernel writes into its peers' memory over NVLink: one domain only.
    from inference_arithmetic.core.symbols import alpha_ar, n_gpus, n_link

    reduce = kernels.all_reduce_time(sympy.Symbol("nbytes", positive=True))
    inside, past = (reduce.subs({n_gpus: 16, n_link: domain}) for domain in (16, 8))
    assert alpha_ar in inside.free_symbols and alpha_ar not in past.free_symbols


def _kinds(table, kind, field):
    return sum(r[field] for r in table if r["kind"] == kind)


def test_a_verification_step_puts_gamma_plus_one_rows_through_the_products():
    # Three drafted tokens: each of 8 requests is 4 rows of every product (the FLOPs of a
    # plain step of 32), while its attention reads its cache once (the bytes of a step of 8).
    spec = ia.kernels(
        "llama-3.1-8b",
        H100,
        batch=8,
        context_len=1024,
        speculative={"method": "ngram", "draft_len": 3},
    )
    wide = ia.kernels("llama-3.1-8b", H100, batch=32, context_len=1024)
    plain = {r["kernel"]: r for r in ia.kernels("llama-3.1-8b", H100, batch=8, context_len=1024)}
    assert _kinds(spec, "matmul", "flops") == pytest.approx(_kinds(wide, "matmul", "flops"))
    attention = {r["kernel"]: r for r in spec}["decode attention"]
    assert attention["flops"] == pytest.approx(4 * plain["decode attention"]["flops"])
    assert attention["bytes"] == pytest.approx(plain["decode attention"]["bytes"])
    assert "draft" not in {r["kernel"] for r in spec}  # an n-gram lookup costs the GPU nothing


def test_a_draft_head_is_one_layer_of_the_target():
    # An EAGLE-3 head is timed as the target's kernels with one layer: the same as a draft
    # model made of the target with one layer, timed at its own sizes.
    arch = ia.model("llama-3.1-8b")
    one_layer = dataclasses.replace(arch, n_layers=1, name="one layer")
    s = ia.Scenario(arch, H100, batch=8, prompt_len=1024, output_len=1)
    options = ("speculative",)
    head = kernels.draft_time(arch, options=options, draft="head")
    model = kernels.draft_time(arch, options=options, draft=one_layer)
    at = {"decoding": 8, "context_len": 1024, "prefill_tokens": 512, "draft_len": 3}
    assert s.evaluate(head, **at) == pytest.approx(s.evaluate(model, **at), rel=1e-12)
    # gamma passes, the first also over the prompts: three passes of 8 rows and 512 more.
    one_pass = s.evaluate(kernels.draft_time(arch, options=options), **{**at, "draft_len": 1})
    no_prompt = s.evaluate(head, **{**at, "draft_len": 1, "prefill_tokens": 0})
    assert s.evaluate(head, **at) == pytest.approx(one_pass + 2 * no_prompt, rel=1e-12)


def test_a_prefix_hit_prefills_the_rest_attending_to_the_whole_prompt():
    # Half of 2,048 tokens cached: 1,024 computed, their attention pairs those of the whole
    # prompt less the cached half's own, and the cached keys and values read once.
    half = rows(
        "llama-3.1-8b", H100, batch=1, prompt_len=2048, phase="prefill", prefix_hit_rate=0.5
    )
    whole = rows("llama-3.1-8b", H100, batch=1, prompt_len=2048, phase="prefill")
    pairs = (2048 * 2049 - 1024 * 1025) / (2048 * 2049)
    attention = "prompt attention"
    assert half[attention]["flops"] == pytest.approx(pairs * whole[attention]["flops"])
    assert half["feed-forward up"]["flops"] == pytest.approx(whole["feed-forward up"]["flops"] / 2)
    assert half[attention]["bytes"] > whole[attention]["bytes"] / 2  # the cached prefix read
    # No hit is the plain prefill; a full hit still computes one token, for the first logits.
    none = ia.prefill_time("llama-3.1-8b", H100, batch=1, prompt_len=2048, prefix_hit_rate=0.0)
    assert none == ia.prefill_time("llama-3.1-8b", H100, batch=1, prompt_len=2048)
    full = ia.prefill_time("llama-3.1-8b", H100, batch=1, prompt_len=2048, prefix_hit_rate=1.0)
    alone = ia.prefill_time(
        "llama-3.1-8b", H100, batch=1, prompt_len=1
    )  # the same token, no cache to read
    assert alone < full < none / 5  # one token: about one read of the weights


def test_flashattention_runs_small_heads_slower_as_its_benchmark_measured():
    """FlashAttention-3's causal forward pass on an H100 at 16k tokens: 616 TFLOP/s with heads
    of 128 numbers, 473 with heads of 64 (h100-sxm.json, ``attention_half_head``): a query-key
    pair pays its exponential whatever its head, so half the head is not half the time. A
    prompt of gpt-oss (heads of 64) attends at that share of Llama's rate (heads of 128);
    DeepSeek's expanded latent heads (192 and 128 numbers wide) a little faster."""

    def rate(name, **deployment):
        found = rows(name, H100, batch=1, prompt_len=16384, phase="prefill", **deployment)
        return found["prompt attention"]["flops"] / found["prompt attention"]["compute"]

    llama = rate("llama-3.1-8b")
    assert rate("gpt-oss-20b") / llama == pytest.approx(473 / 616, rel=1e-3)
    head_a = H100.achieved["attention_half_head"]
    mla = (160 / (160 + head_a)) / (128 / (128 + head_a))
    latent = rate("deepseek-v3", n_gpus=32, dtype="bf16")
    assert latent / llama == pytest.approx(mla, rel=1e-9) and mla > 1


def test_step_options_are_checked():
    with pytest.raises(ia.ArgumentError, match="unknown step options medusa; choose from prefix"):
        kernels.step_kernels(ia.model("gpt2"), options=("medusa",))


# --- Expert parallelism -------------------------------------------------------------------------

from inference_arithmetic.formulas import parallel as parallelism  # noqa: E402
from inference_arithmetic.formulas import transformer  # noqa: E402


def _step_at(model, gpu, parallel, n, decoding, prompt_tokens, **values):
    s = ia.Scenario(model, gpu, n_gpus=n, parallel=parallel, prompt_len=1024, output_len=2)
    point = dict(decoding=decoding, prefill_tokens=prompt_tokens, context_len=1024, **values)
    return s.evaluate(kernels.step_time(s.model, parallel), **point)


@pytest.mark.parametrize("parallel", latency.EXPERT_PARALLEL)
@pytest.mark.parametrize("decoding, prompt_tokens", [(1, 0), (64, 0), (8, 2048)])
@pytest.mark.slow
def test_expert_parallelism_on_one_gpu_is_tensor_parallelism(parallel, decoding, prompt_tokens):
    # Every term expert parallelism adds vanishes at a degree of 1, whatever the imbalance:
    # one GPU holds every expert and sends nothing.
    for name in ("qwen3-30b-a3b", "deepseek-v2-lite"):
        tensor = _step_at(name, "h100-sxm", "tensor", 1, decoding, prompt_tokens)
        spread = _step_at(name, "h100-sxm", parallel, 1, decoding, prompt_tokens,
                          expert_imbalance=1.7)  # fmt: skip
        assert spread == pytest.approx(tensor, rel=1e-12)


def test_an_all_to_all_grows_past_the_link_domain_and_not_within_it():
    f = numeric(parallelism.all_to_all_time(sympy.Symbol("nbytes")))
    link = dict(link_bandwidth=450e9, network_bandwidth=50e9, link_latency=1e-6, nbytes=64e6)
    inside = [f(n_gpus=n, link_domain=72, **link) for n in (8, 16, 64)]
    board = [f(n_gpus=n, link_domain=8, **link) for n in (8, 16, 64)]
    # Within one domain (an NVL72 rack): the link alone, (n - 1) / n of the bytes.
    assert inside == pytest.approx([64e6 * (n - 1) / n / 450e9 + 1e-6 for n in (8, 16, 64)])
    # Past an 8-GPU board, the bytes to other boards cross the network, 9 times slower here.
    assert board[0] == inside[0] and board[1] > 4 * inside[1] and board[2] > 7 * inside[2]
    assert f(n_gpus=1, link_domain=8, **link) == 0.0


@pytest.mark.slow
def test_the_busiest_gpu_takes_its_share_of_the_experts_work():
    # A decode step of 256 requests on 8 GPUs: the busiest GPU's grouped products hold 1/8 of
    # the touched experts' weights and take lambda_e / 8 of the token-expert pairs.
    m = ia.model("qwen3-235b-a22b")
    table = {}
    for imbalance in (1.0, 2.0):
        table[imbalance] = rows(m, "h200", batch=256, context_len=1024, n_gpus=8,
                                parallel="expert-dp", expert_imbalance=imbalance)  # fmt: skip
    tensor = rows(m, "h200", batch=256, context_len=1024, n_gpus=8)
    up = table[1.0]["experts up"]
    # Balanced, an eighth of the experts' work: as much as tensor parallelism's eighth of each.
    assert up["flops"] == pytest.approx(tensor["experts up"]["flops"], rel=1e-9)
    assert table[2.0]["experts up"]["flops"] == pytest.approx(2 * up["flops"], rel=1e-9)
    dispatch = [table[x]["all-to-all (dispatch)"]["bytes"] for x in (1.0, 2.0)]
    assert not m.n_dense_layers  # every one of its layers is MoE: a dispatch each
    per_gpu = 256 * m.n_active_experts * m.d_model * 2 / 8 * m.n_layers  # bf16 activations
    assert dispatch == pytest.approx([per_gpu, 2 * per_gpu], rel=1e-9)
    assert "all-reduce (attention)" not in table[1.0] and "all-reduce (attention)" in tensor


def test_expert_parallelism_of_a_dense_model_is_refused_by_name():
    with pytest.raises(ia.ArgumentError, match="needs an MoE model; llama-3.1-8b is dense"):
        kernels.step_kernels(ia.model("llama-3.1-8b"), "expert")
    assert transformer.expert_params(ia.model("llama-3.1-8b")) == 0


@pytest.mark.slow
def test_the_rows_of_a_data_parallel_step_add_up_to_it():
    # Each GPU's host schedules its own requests: the engine's row is the busiest GPU's too.
    work = dict(batch=512, context_len=2048, n_gpus=64, parallel="expert-dp")
    table = ia.kernels("deepseek-v3", "gb200", **work)
    step = ia.decode_step_time("deepseek-v3", "gb200", **work)
    assert sum(r["time"] for r in table) == pytest.approx(step, rel=1e-9)
    gb200 = ia.gpu("gb200")
    engine = ia.engine(ia.scenario.DEFAULT_ENGINE)
    own = 512 / 64
    fixed = engine.step_overhead + engine.request_overhead * own
    assert table[-1]["kernel"] == "step" and table[-1]["time"] == pytest.approx(fixed)
    assert gb200.link_domain == 72


def test_a_prefix_hit_rate_counts_in_a_prefill_and_is_refused_in_a_decode():
    # Half of each prompt in the prefix cache halves what a prefill computes; a decode step
    # reads the whole cache either way, so there the rate would be accepted and ignored.
    def seconds(phase, **options):
        return sum(
            r["time"]
            for r in ia.kernels("llama-3.1-8b", "h100-sxm", batch=8, phase=phase, **options)
        )

    assert seconds("prefill", prefix_hit_rate=0.5) < 0.6 * seconds("prefill")
    with pytest.raises(ia.ArgumentError, match=r"prefix_hit_rate changes only a prefill"):
        ia.kernels("llama-3.1-8b", "h100-sxm", batch=8, prefix_hit_rate=0.5)
    assert seconds("decode", prefix_hit_rate=0) == seconds("decode")


def test_a_prefill_takes_its_prompt_len_and_a_decode_step_its_context_len():
    # One name, one job: context_len was a prefill's prompt too (issue 36). Each phase takes
    # the name every other entry point gives its tokens and refuses the other's by name.
    m, ms = "llama-3.1-8b", "h100-sxm"
    prefill = ia.kernels(m, ms, batch=2, prompt_len=512, phase="prefill")
    assert sum(r["time"] for r in prefill) == pytest.approx(
        ia.prefill_time(m, ms, batch=2, prompt_len=512, step="kernels"), rel=1e-12
    )
    with pytest.raises(ia.ArgumentError, match=r"give prompt_len, not context_len"):
        ia.kernels(m, ms, batch=2, context_len=512, phase="prefill")
    with pytest.raises(ia.ArgumentError, match=r"give context_len, not prompt_len"):
        ia.kernels(m, ms, batch=2, prompt_len=512)
    # Unless given, either phase's tokens are STEP_TOKENS.
    default = ia.kernels(m, ms, phase="prefill")
    assert default == ia.kernels(m, ms, prompt_len=ia.timing.STEP_TOKENS, phase="prefill")
    assert ia.kernels(m, ms) == ia.kernels(m, ms, context_len=ia.timing.STEP_TOKENS)


A100_40 = ia.gpu("a100-40gb")


def test_an_eager_step_lasts_as_long_as_the_hosts_launches_when_they_are_longer():
    # TGI 1.0 runs every step op by op: a decode step of Llama 2 7B over 8 A100s is a few
    # milliseconds of GPU work, and 388 kernels the host launches at 58 us each.
    s = ia.Scenario("llama-2-7b", A100_40, n_gpus=8, engine="tgi@1.0", batch=1, prompt_len=11)
    step = kernels.decode_step_time(s.model)
    values = dict(context_len=11)
    counted = kernels.launches(s.model)
    launches = s.evaluate(counted, decoding=1, prefill_tokens=0, **values)
    assert launches == 388  # 12 a layer (two all-reduces among them) and 4 a step
    fixed = s.evaluate(kernels.fixed_cost(), decoding=1, prefill_tokens=0)
    eager = s.evaluate(step, **values)
    assert eager == pytest.approx(launches * s.figure("host_op_cost") + fixed, rel=1e-9)
    gpu = s.evaluate(step, host_op_cost=0.0, **values)
    assert gpu < eager / 2  # the GPU alone would be done in less than half the time
    # The same step replayed from a CUDA graph (SGLang's decode) does not wait for the host.
    graph = s.replace(engine="sglang@0.5")
    assert graph.evaluate(step, **values) < eager / 2
    # A long prompt's prefill is the GPU's, launched however it is: the longer side counts.
    prefill = kernels.prefill_time(s.model)
    big = s.replace(batch=16, prompt_len=2048)
    assert big.evaluate(prefill) == pytest.approx(big.evaluate(prefill, host_op_cost=0.0))


def test_the_breakdown_shows_the_hosts_wait_and_still_adds_up():
    table = rows("llama-2-7b", A100_40, n_gpus=8, engine="tgi@1.0", batch=1, context_len=11)
    wait = table["host launches"]
    assert wait["kind"] == "fixed" and wait["bound"] == "host" and wait["time"] > 0
    s = ia.Scenario("llama-2-7b", A100_40, n_gpus=8, engine="tgi@1.0", batch=1, prompt_len=11)
    step = s.evaluate(kernels.decode_step_time(s.model), context_len=11)
    assert sum(r["time"] for r in table.values()) == pytest.approx(step, rel=1e-9)
    # A step from a CUDA graph has no such row.
    assert "host launches" not in rows("llama-2-7b", A100_40, n_gpus=8, batch=1, context_len=11)
