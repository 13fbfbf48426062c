"""The validation set scored (validation.residuals): the headline error, the shipped bands,
and each term of the kernel model switched off."""

import itertools
import json

import numpy as np
import pytest

import inference_arithmetic as ia
from inference_arithmetic.serving import bands
from inference_arithmetic.validation import measurements, published, residuals


@pytest.mark.slow
def test_the_held_out_median_error_beats_the_roofline_and_the_older_runs_meet_the_bar():
    rows, errors = residuals.validation_errors()
    assert len(rows) >= 390
    # The bar (15% on the median) held for the runs timed before the registries learned
    # llama.cpp's 4-bit files, Llama 2 13B and Qwen3 14B, and still does; the whole set, those
    # runs joined unfitted, is reported by chapter 13, not held to it. So are the 2026 sources
    # of issue 35 (Blackwell, FP4 and MoE runs), reported group by group (residuals.bands).
    newer = np.array([published.joined_late(m) for m in rows])
    assert newer.sum() >= 90
    assert np.median(np.abs(errors[~newer])) <= 0.15
    # Chapter 08's single roofline, fitted on the vLLM runs, misses these rows by more: the runs
    # gathered before issue 35 and the 2026 ones, each. (Pooled, the medians of two sets of
    # such different sizes of error sit closer than either pair: 27% against 31%.)
    roofline = measurements.errors(rows, step="roofline")
    late = np.array([m.source in published.SOURCES_2026 for m in rows])
    assert late.sum() >= 50
    for part in (~late, late):
        assert np.median(np.abs(roofline[part])) > np.median(np.abs(errors[part])) + 0.05


@pytest.mark.slow
def test_the_shipped_bands_are_the_validation_sets_residuals():
    # Regenerate with `make bands` when the predictions change.
    shipped = bands.bands()
    computed = residuals.bands()
    assert json.loads(json.dumps(computed)).keys() <= shipped.keys()
    for kind in bands.KINDS:
        band = computed[kind]
        assert shipped[kind]["rows"] == band["rows"], kind
        for side in ("low", "high"):
            assert shipped[kind][side] == pytest.approx(band[side], rel=1e-9), (kind, side)
    assert tuple(shipped["quantiles"]) == residuals.QUANTILES
    # Each group's report and bands, as its rows give them; the core's are the file's own.
    assert computed["groups"].keys() == shipped["groups"].keys() == {bands.CORE, *bands.GROUPS}
    for name, entry in computed["groups"].items():
        for key, value in entry.items():
            if isinstance(value, dict):
                assert shipped["groups"][name][key].keys() == value.keys(), (name, key)
                for k, v in value.items():
                    assert shipped["groups"][name][key][k] == pytest.approx(v, rel=1e-9)
            else:
                expected = value if value is None else pytest.approx(value, rel=1e-9)
                assert shipped["groups"][name][key] == expected, (name, key)
    for kind in bands.KINDS:
        assert shipped["groups"][bands.CORE][kind]["rows"] == shipped[kind]["rows"]


@pytest.mark.slow
def test_a_group_makes_a_band_only_from_enough_rows_of_enough_sources():
    rows, errors = residuals.validation_errors()
    table = residuals.bands()["groups"]
    member = [residuals.row_groups(m) for m in rows]
    for name, entry in table.items():
        mine = [
            m
            for m, g in zip(rows, member, strict=True)
            if (name in g or (name == bands.CORE and not g))
        ]
        assert entry["rows"] == len(mine) and entry["sources"] == len({m.source for m in mine})
        for kind in bands.KINDS:
            of_kind = [m for m in mine if residuals.KIND[m.metric] == kind]
            enough = len(of_kind) >= 30 and len({m.source for m in of_kind}) >= 2
            assert ("low" in entry.get(kind, {})) == enough, (name, kind)
    # The rows of the new groups are there: Blackwell GPUs, FP4 weights, MoE models.
    for name in ("blackwell", "fp4", "moe"):
        assert table[name]["rows"] >= 8 and table[name]["sources"] >= 2, name


def test_a_residual_is_measured_time_over_predicted_time():
    rows, _ = published.validation_set()
    time = next(m for m in rows if m.metric == "tpot_s")
    speed = next(m for m in rows if m.metric == "generation_tokens_per_s")
    # Predicting half the measured time, or twice the measured speed, is a residual of 2.
    assert residuals.ratio(time, time.value / 2) == pytest.approx(2)
    assert residuals.ratio(speed, speed.value * 2) == pytest.approx(2)
    assert residuals.KIND[time.metric] == residuals.KIND[speed.metric] == "tpot"


@pytest.mark.parametrize("term", [t.name for t in residuals.TERMS])
@pytest.mark.slow
def test_each_term_changes_some_prediction(term):
    # A term that changes nothing would be a stub: each moves at least one row by 0.5%.
    rows, errors = residuals.validation_errors()
    # The fit set's rows only where no validation row moves (each predicted as it is reached).
    fit_rows = ((m, measurements.predicted(m) / m.value - 1) for m in measurements.fit_set())
    for m, error in itertools.chain(zip(rows, errors, strict=True), fit_rows):
        try:
            if abs(residuals.predicted(m, (term,)) / m.value - 1 - error) > 0.005:
                return
        except ia.ArgumentError as refused:  # it no longer fits without the term: changed
            assert refused.check == "fit", (term, m, refused)
            return
    pytest.fail(f"switching off {term!r} changes no prediction")


@pytest.mark.parametrize("term", [t.name for t in residuals.TERMS])
def test_a_term_switches_off_for_a_checkpoint_of_several_formats(term):
    # gpt-oss ships its experts in mxfp4 and the rest in bf16 (dtype "auto"): without a term it
    # is predicted, or refused only because it no longer fits, never refused for its format.
    rows, _ = published.validation_set()
    mixed = [m for m in rows if m.dtype == "auto" and m.model.startswith("gpt-oss")][:3]
    assert mixed
    for m in mixed:
        try:
            assert residuals.predicted(m, (term,)) > 0
        except ia.ArgumentError as refused:
            assert refused.check == "fit", (term, m, refused)


def test_an_unknown_term_names_the_terms():
    rows, _ = published.validation_set()
    with pytest.raises(KeyError, match="a fixed cost per kernel"):
        residuals.predicted(rows[0], ("launches",))


HOST = "the host's launches of a step run op by op"


@pytest.mark.slow
def test_the_hosts_launches_explain_the_eager_engines_misses():
    # TGI 1.0.3 on SageMaker runs every step op by op and SGLang its prefills: the host's
    # launches, at a cost taken from SGLang's own eager prefill (never from these rows), bring
    # TGI's rows nearly twice as close and each short prompt's first token of one user closer.
    rows, errors = residuals.validation_errors()
    tgi = [i for i, m in enumerate(rows) if m.source == "HF_SM"]
    sglang = [
        i
        for i, m in enumerate(rows)
        if m.source == "SGLANG_COOKBOOK"
        and m.metric == "ttft_s"
        and m.batch == 1
        and m.input_tokens < 1000  # a short prompt: a longer one's prefill is the GPU's
    ]
    chosen = [rows[i] for i in tgi + sglang]
    without = dict(zip(tgi + sglang, residuals.errors(chosen, (HOST,)), strict=True))
    with_term = np.median(np.abs(errors[tgi]))
    assert with_term < 0.6 * np.median(np.abs([without[i] for i in tgi]))
    assert len(sglang) >= 5
    for i in sglang:  # predicted too fast without the host's launches, less so with them
        assert without[i] < errors[i] < 0.1
