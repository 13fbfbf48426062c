"""The published serving runs, and the library's predictions held against them (chapter 11)."""

import statistics

import pytest

import inference_arithmetic as ia
from inference_arithmetic import measurements, timing

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
