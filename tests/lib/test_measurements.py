"""The published serving runs, and the library's predictions held against them (chapter 13)."""

import dataclasses
import functools
import statistics

import numpy as np
import pytest

import inference_arithmetic as ia
from inference_arithmetic.serving import timing
from inference_arithmetic.validation import measurements

RUNS = measurements.serving_runs()


def _errors(**options):
    return [
        measurements.predict(run, **options)["throughput"] / run.output_tokens_per_s - 1
        for run in RUNS
    ]


def test_the_runs_are_the_twenty_published_rows_and_add_up():
    assert len(RUNS) == 20
    assert {(r.model, r.n_gpus) for r in RUNS} == {("llama-3.3-70b", 4), ("llama-3.1-8b", 1)}
    for run in RUNS:
        ia.model(run.model), ia.gpu(run.gpu)  # every row names a registry model and GPU
        # The published throughput is batch x output tokens / elapsed seconds, each a mean
        # over the runs (a mean of ratios, so within a percent of the ratio of the means).
        expected = run.batch * run.output_tokens / run.elapsed_s
        assert run.output_tokens_per_s == pytest.approx(expected, rel=1e-2)


def test_the_default_efficiencies_meet_the_books_goal_on_every_row():
    errors = [abs(e) for e in _errors()]
    assert statistics.median(errors) < 0.25
    assert max(errors) < 0.5


def test_the_ideal_roofline_misses_the_goal():
    # Without efficiencies the model is far too optimistic at large batch: the calibration
    # is doing real work, and this test would notice if it stopped mattering.
    errors = [abs(e) for e in _errors(**timing.IDEAL)]
    assert max(errors) > 0.5


def test_large_batches_run_in_waves_and_small_ones_do_not():
    small = [measurements.predict(r) for r in RUNS if r.batch <= 64]
    large = [measurements.predict(r) for r in RUNS if r.batch >= 256]
    assert all(p["waves"] == 1 for p in small)
    assert all(p["waves"] >= 2 for p in large)


def test_unknown_measurements_name_the_files_there_are():
    with pytest.raises(KeyError, match="vllm_llama_h100"):
        measurements.serving_runs("no-such-file")


def test_the_defaults_are_the_fit_over_all_runs_to_a_grid_step():
    # The defaults were chosen by measurements.calibrate on all 20 runs; a change to the serving
    # formulas that moved the fit by more than one step of the grid would need a refit.
    fit = measurements.calibrate(RUNS)
    defaults = {
        "compute_efficiency": timing.DEFAULT_COMPUTE_EFFICIENCY,
        "bandwidth_efficiency": timing.DEFAULT_BANDWIDTH_EFFICIENCY,
        "link_latency": timing.DEFAULT_LINK_LATENCY,
    }
    for name, value in defaults.items():
        steps = np.diff(measurements.GRID[name])
        assert abs(fit[name] - value) <= steps.max() + 1e-12, (name, fit, defaults)


def test_log_errors_score_a_grid_at_once_and_match_one_point():
    run = RUNS[3]
    grid = np.array([0.3, 0.4, 0.5])
    many = measurements.log_errors(run, compute_efficiency=grid)
    one = measurements.log_errors(run, compute_efficiency=0.4)
    assert many.shape == (3,) and many[1] == pytest.approx(one)
    # Lower efficiency, slower predicted run: the log error falls as the efficiency falls.
    assert many[0] < many[1] < many[2]


def test_calibrate_finds_the_point_a_synthetic_run_was_made_at():
    # Runs whose "measured" throughput is the library's own prediction at known efficiencies:
    # the fit must return those efficiencies (they lie on the grid).
    truth = dict(compute_efficiency=0.55, bandwidth_efficiency=0.8, link_latency=5e-6)
    synthetic = [
        dataclasses.replace(
            run,
            output_tokens_per_s=run.output_tokens_per_s
            * np.exp(measurements.log_errors(run, **truth)),
        )
        for run in RUNS
    ]
    assert measurements.calibrate(synthetic) == pytest.approx(truth)


def test_cross_model_hold_out_predicts_each_model_from_the_other():
    held = measurements.hold_out(RUNS)
    assert set(held) == {"llama-3.3-70b", "llama-3.1-8b"}
    assert held["llama-3.3-70b"]["trained_on"] == ["llama-3.1-8b"]
    # The 8B runs use one GPU: nothing in them constrains the message latency, so the fit
    # keeps the grid's first value.
    assert (
        held["llama-3.3-70b"]["efficiencies"]["link_latency"]
        == measurements.GRID["link_latency"][0]
    )
    for name, result in held.items():
        errors = np.abs(result["errors"])
        assert len(errors) == sum(r.model == name for r in RUNS)
        # Out of sample, worse than in sample but far better than the ideal roofline (which
        # misses by more than 50%, test above): every held-out run within 30%.
        assert errors.max() < 0.3, (name, result)


# --- The fit set and the engines fitted on it --------------------------------------------------


def test_the_fit_set_is_the_three_shared_tables():
    rows = measurements.fit_set()
    assert len(rows) == 20 + 48 + 120
    assert {m.engine for m in rows} == {"vllm@0.7", "tensorrt-llm@0.9", "tensorrt-llm@0.21"}
    assert all(m.split == "fit" for m in rows)
    assert all(m.model in ia.model_names() and m.gpu in ia.gpu_names() for m in rows)


@pytest.mark.parametrize("engine", ["vllm@0.7", "tensorrt-llm@0.9", "tensorrt-llm@0.21"])
@pytest.mark.slow
def test_the_shipped_engines_are_their_fit(engine):
    # Each fitted property is the fit's choice: a refit that moved would need the JSON changed.
    fit = measurements.fit(engine)
    e = ia.engine(engine)
    assert set(fit) == set(e.fitted)
    for name, value in fit.items():
        assert getattr(e, name) == pytest.approx(value), name


@pytest.mark.slow
def test_the_vllm_runs_each_stay_within_a_quarter_and_trtllm_has_a_median_under_15_percent():
    rows = measurements.fit_set()
    vllm = measurements.errors([m for m in rows if m.engine == "vllm@0.7"])
    trt = measurements.errors([m for m in rows if m.engine == "tensorrt-llm@0.9"])
    assert np.max(np.abs(vllm)) < 0.25
    assert np.median(np.abs(trt)) <= 0.15


# --- TensorRT-LLM 0.21's maximum-load tables --------------------------------------------------

TRT21 = [m for m in measurements.fit_set() if m.engine == "tensorrt-llm@0.21"]


@functools.cache
def _trt21_errors():
    return measurements.errors(TRT21)


def test_the_021_rows_are_the_csv_in_the_registry_names_and_units():
    rows, left = measurements.trtllm_021_rows()
    assert len(rows) + len(left) == 131
    # Llama 4 Maverick has no registry model: its 11 rows are set aside, saying so.
    assert {row["model"] for row, _ in left} == {"Llama 4 Maverick"} and len(left) == 11
    assert all("no registry model" in why for _, why in left)
    assert {m.gpu for m in rows} == {"b200", "gb200", "h100-sxm", "h200", "gh200"}
    assert {(m.gpu, m.dtype) for m in rows if m.dtype == "nvfp4"} == {
        ("b200", "nvfp4"),
        ("gb200", "nvfp4"),
    }
    assert all(m.cache_dtype == "fp8" and m.mode == "waves" for m in rows)
    # The table's number is the whole engine's ("Total Output Throughput"): 405B over 8 H200s,
    # 128/128, 3,705.18 tokens a second of all 8 GPUs together, of 30,000 requests sent at once.
    m = next(
        m
        for m in rows
        if (m.model, m.gpu, m.input_tokens, m.output_tokens) == ("llama-3.1-405b", "h200", 128, 128)
    )
    assert (m.n_gpus, m.metric, m.value, m.batch) == (8, "output_tokens_per_s", 3705.18, 30000)
    assert m.dtype == "fp8" and m.memory_utilization == 0.95


def test_trtllm_bench_chooses_the_batch_and_budget_as_its_tuning_code():
    # tuning.py by hand, Llama 3.3 70B in NVFP4 on one B200 (183,359 MiB as the driver reports),
    # 128/128: weights 70,553,706,496 x 0.5 B = 32.85 GiB; the cache 0.95 x (179.06 - 32.85)
    # = 138.90 GiB; a token's FP8 cache 2 x 80 x 8 x 128 B = 160 KiB, a request's 256 tokens
    # 40 MiB: 3,556 requests, rounded up to 256s: 3,584; tokens 3,556 x 2 = 7,112, to 512s: 7,168.
    settings = measurements.trtllm_bench_settings(
        ia.model("llama-3.3-70b"), ia.gpu("b200"), 1, 128, 128, "nvfp4"
    )
    assert settings == {"max_num_seqs": 3584, "token_budget": 7168}
    # At least 64 requests and 2,048 tokens; at most 4,096 requests.
    small = measurements.trtllm_bench_settings(
        ia.model("llama-3.3-70b"), ia.gpu("h100-sxm"), 2, 20000, 2000, "fp8"
    )
    assert small == {"max_num_seqs": 64, "token_budget": 2048}
    row = next(
        m for m in TRT21 if (m.model, m.gpu, m.input_tokens) == ("llama-3.3-70b", "h100-sxm", 20000)
    )
    assert row.token_budget == 20000  # chunked context off: a step holds a whole prompt


@pytest.mark.slow
def test_the_021_rows_are_the_engine_s_whole_output_not_one_gpu_s():
    # The modelling choice the rows need: the number is of the whole tensor-parallel engine.
    # Read per GPU, the rows over 2 to 8 GPUs would be predicted 2 to 8 times too fast.
    errors = _trt21_errors()
    shared = np.array([m.n_gpus > 1 for m in TRT21])
    assert np.median(np.abs(errors[shared])) < 0.12
    # Held to one GPU's share (value / n), the same predictions would miss by (1 + e) n - 1.
    tp = np.array([m.n_gpus for m in TRT21])[shared]
    assert np.median((1 + errors[shared]) * tp - 1) > 1
    # And as one GPU's output (the per-GPU metric), the engine's would be n times too slow.
    m = next(m for m in TRT21 if m.n_gpus == 8)
    as_gpu = dataclasses.replace(m, metric="output_tokens_per_s_per_gpu")
    assert measurements.predicted(as_gpu) == pytest.approx(measurements.predicted(m) / 8)


@pytest.mark.slow
def test_the_fit_set_with_the_021_rows_is_within_12_percent():
    rows = measurements.fit_set()
    others = measurements.errors([m for m in rows if m.engine != "tensorrt-llm@0.21"])
    errors = np.concatenate([others, _trt21_errors()])
    assert np.median(np.abs(errors)) <= 0.12
    assert np.median(np.abs(_trt21_errors())) <= 0.12


@pytest.mark.slow
def test_one_blackwell_gpu_in_nvfp4_is_timed_at_its_own_fp4_rate():
    # Llama 3.3 70B on one B200 or GB200 in NVFP4 is compute-bound even in decode: at the
    # workstation cards' FP4 fraction (0.80, the B200's stand-in before its own 0.43) it was
    # predicted 35% and 23% too fast, and the fit bought some of it back with a 2.75 ms step;
    # at its own, each GPU's rows are within the fit set's 12% (a median of 7% and 9%).
    errors = _trt21_errors()
    for gpu_name in ("b200", "gb200"):
        mine = np.array([m.gpu == gpu_name and m.n_gpus == 1 for m in TRT21])
        assert mine.sum() == 11 and {m.dtype for m in np.array(TRT21)[mine]} == {"nvfp4"}
        assert np.median(np.abs(errors[mine])) < 0.12, gpu_name
    assert ia.engine("tensorrt-llm@0.21").step_overhead < 0.001


MADE_AT = {
    "vllm@0.7": {"token_budget": 2048},
    "tensorrt-llm@0.9": {"kv_shared": True},
    "tensorrt-llm@0.21": {},
}


@pytest.mark.parametrize("engine", sorted(MADE_AT))
def test_a_fit_finds_the_fixed_costs_it_was_made_from(engine):
    # Synthetic measurements made by the model itself at known fixed costs, each timed point by
    # point (``predicted``): the fit, which times a run at a few points of its grid and puts the
    # rest together (a run's time is affine in the fixed costs), recovers them exactly.
    truth = dict(step_overhead=0.0025, request_overhead=4e-5)
    structural = MADE_AT[engine]
    rows = [m for m in measurements.fit_set() if m.engine == engine]
    rows = rows[:: max(1, len(rows) // 8)]
    made = []
    for m in rows:
        options = {k: v for k, v in structural.items() if k != "kv_shared"}
        made.append(dataclasses.replace(m, value=measurements.predicted(m, **options, **truth)))
    assert measurements.fit(engine, made) == {**structural, **truth}


# --- The validation set ------------------------------------------------------------------------


def test_every_published_row_is_timed_or_set_aside_with_a_reason():
    from inference_arithmetic.validation import published

    rows, left = published.validation_set()
    assert len(rows) + len(left) == len(published.published_rows()) >= 400
    assert all(m.split == "validation" for m in rows)
    assert all(reason for _, reason in left)
    assert {m.source for m in rows} <= set(published.sources())
    # Never the fit set's sources, and never TensorRT-LLM's performance pages (held out).
    assert not {m.source for m in rows} & {m.source for m in measurements.fit_set()}
    for row in published.published_rows():
        text = " ".join(row.values()).lower()
        assert "performance.md" not in text and "perf-overview" not in text
        assert "tokenomics" not in text


def test_the_validation_set_covers_several_gpus_engines_and_long_prompts():
    from inference_arithmetic.validation import published

    rows, _ = published.validation_set()
    assert len({m.gpu for m in rows}) >= 5
    assert len({m.engine for m in rows}) >= 4
    assert sum(m.input_tokens >= 8192 for m in rows) >= 20


def test_llama_cpp_rows_are_timed_as_llama_cpp_runs_them():
    """Every llama-bench row is timed: its weights in their own format (4-bit files at the
    registry's 4.84 bits), the products and the cache in fp16, up to the whole memory the driver
    reports (llama.cpp reserves no share). The 70B 4-bit file on two RTX 4090s needs that: at
    the library's default share it is refused."""
    from inference_arithmetic.validation import published

    rows, left = published.validation_set()
    assert not [row for row, _ in left if row["engine"] == "llama.cpp"]
    cpp = [m for m in rows if m.engine == "llama.cpp@b2795"]
    assert len(cpp) == sum(r["engine"] == "llama.cpp" for r in published.published_rows())
    assert {m.dtype for m in cpp} == {"fp16", "q4_k_m"}
    for m in cpp:
        s = m.scenario()
        assert (s.compute_dtype, s.cache_dtype, s.memory_utilization) == ("fp16", "fp16", 1.0)
    big = [m for m in cpp if m.gpu == "rtx-4090" and m.n_gpus == 2 and m.input_tokens == 8192]
    assert big and big[0].dtype == "q4_k_m" and big[0].parallel == "pipeline"
    with pytest.raises(ValueError, match="does not fit"):
        big[0].scenario(memory_utilization=0.9)


def test_a_row_is_read_in_its_stated_formats_or_set_aside_naming_the_format():
    from inference_arithmetic.validation import published

    rows, left = published.validation_set()
    # What is left aside is what no registry can fix: a batch or lengths the source leaves out,
    # or a layout the library does not time (disaggregated, data-parallel attention), and
    # then every row of that layout and only those.
    layout = "the library times no "
    assert {reason.split(" (")[0] for _, reason in left if not reason.startswith(layout)} <= {
        "the source does not state the batch",
        "the source does not state the batch or the lengths",
    }
    untimed = [r for r in published.published_rows() if r["layout"] not in published.LAYOUTS]
    assert untimed and [r for r, why in left if why.startswith(layout)] == untimed
    qwen_fp8 = [m for m in rows if m.model == "qwen3-14b" and m.dtype != "bf16"]
    assert qwen_fp8 and {(m.dtype, m.cache_dtype) for m in qwen_fp8} == {("fp8-block", "bf16")}
    # The same row with a format the registry lacks is set aside, the reason naming it.
    row = next(r for r in published.published_rows() if r["weights_dtype"] == "GGUF Q4_K_M")
    with pytest.raises(ValueError, match="no registry format for the weights' 'GGUF Q3_K_S'"):
        published._measurement({**row, "weights_dtype": "GGUF Q3_K_S"})


def test_a_vllm_0_19_run_is_timed_with_the_v1_batch_its_release_kept():
    """vLLM 0.19 kept 0.10-0.11's batch defaults (``published.VLLM_V1``): its rows are timed
    with vllm@0.11, whose ``vllm serve`` steps 8,192 tokens on an H100, not V0's fitted 512. A
    20,000-token prompt then takes 3 steps beside the closed loop's decodes, not 40, and its
    first token comes far sooner."""
    from inference_arithmetic.validation import published

    rows = [m for m in published.validation_set()[0] if m.source == "VLLM_FP8KV"]
    assert len(rows) == 6 and {m.engine for m in rows} == {"vllm@0.11"}
    assert {m.engine_version.split()[0] for m in rows} == {"v0.19.1"}
    s = rows[0].scenario()
    assert (s.token_budget, s.engine.max_num_seqs) == (8192, 1024)
    first = next(m for m in rows if m.metric == "ttft_s")
    v0 = dataclasses.replace(first, engine="vllm@0.7")
    assert measurements.predicted(v0) > 1.4 * measurements.predicted(first)


def test_a_vllm_run_is_timed_with_its_versions_profile_or_its_stated_budget():
    """A vLLM 0.10-0.11 row is timed with the profile vllm@0.11, whose ``vllm serve`` batch
    steps 8,192 tokens and 1,024 requests on a GPU of 70 GiB or more that is not an A100, 2,048
    and 256 elsewhere; a serve command's own ``--max-num-batched-tokens`` wins (the bridge
    ``batch_settings`` keeps only it); a run of another version keeps vllm@0.7. An MoE prefill
    feels it most: a 512-token step gives each of 128 experts 16 rows (top-4), 8,192 gives 256."""
    from inference_arithmetic.validation import published

    def row(gpu, version="v0.11.0", notes="vllm serve openai/gpt-oss-120b"):
        found = next(
            r
            for r in published.published_rows()
            if r["source_id"] == "GPUSTACK_MOE" and r["model"] == "openai/gpt-oss-120b"
        )
        return {**found, "gpu": gpu, "engine_version": version, "notes": notes}

    h100, a100 = "H100-SXM5-80GB", "A100-SXM4-80GB"
    assert published._engine(row(h100)) == "vllm@0.11"
    assert published._engine(row(h100, version="v0.10.2")) == "vllm@0.11"
    assert published._engine(row(h100, version="not stated")) == "vllm@0.7"
    assert published._engine(row(h100, version="0.6.3.post2")) == "vllm@0.7"
    assert published._engine(row("MI300X-192GB", version="0.6.1")) == "vllm-rocm@0.6"
    assert published.batch_settings(row(h100)) == {}  # the profile's, by the GPU
    stated = row(a100, notes="vllm serve x --max-num-batched-tokens 4096")
    assert published.batch_settings(stated) == {"token_budget": 4096}
    for gpu, batch in ((h100, (8192, 1024)), (a100, (2048, 256))):
        s = published._measurement(row(gpu)).scenario()
        assert (s.token_budget, s.engine.max_num_seqs) == batch, gpu
    s = published._measurement(stated).scenario()
    assert (s.token_budget, s.engine.max_num_seqs) == (4096, 256)
    on_h100 = published._measurement(row(h100))
    # Timed at the 2025 profile's 512 tokens a step, the same run is predicted far slower.
    plain = dataclasses.replace(on_h100, engine="vllm@0.7")
    assert measurements.predicted(on_h100) > 1.5 * measurements.predicted(plain)
