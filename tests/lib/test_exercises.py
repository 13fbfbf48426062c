"""Self-checking exercises: feedback that can be wrong in each way it claims to catch, every
registered exercise answered by the library, blank answers that never stop a notebook."""

import math

import pytest
import sympy

import inference_arithmetic as ia
from inference_arithmetic import exercises
from inference_arithmetic.exercises import Part, _judge

ALL = exercises.labels()


@pytest.mark.slow
def test_every_exercise_has_answers_the_library_computes():
    assert len(ALL) >= 2
    for label in ALL:
        for name, value in exercises.answers(label).items():
            assert value is not None, (label, name)
            part = exercises.EXERCISES[label].part(name)
            if part.kind == "number":
                assert math.isfinite(float(value)), (label, name, value)


@pytest.mark.parametrize("label", ALL)
def test_the_right_answer_passes_and_a_blank_one_is_not_answered_yet(label):
    right = exercises.answers(label)
    assert exercises.check(label, **right).correct
    blank = exercises.check(label)
    assert not blank.correct and "not answered yet" in str(blank)
    assert "not answered yet" in str(exercises.check(label, **{n: None for n in right}))
    code = exercises.student_cell(label)
    compile(code, label, "exec")  # the student's cell is Python
    namespace = {"ia": ia}
    exec(code, namespace)  # and runs with every answer blank


NUMBER = Part("x", lambda: 1000.0, unit="bytes", hints={0.5: "did you count both K and V?"})


@pytest.mark.parametrize(
    "answer, right, says",
    [
        (1000, True, "right"),
        (1005, True, "right"),  # within the 1% tolerance
        (1020, False, "2% high"),
        (500, False, "(yours is half the answer): did you count both K and V?"),
        (2000, False, "twice the answer"),
        (1e6, False, "off by 10^3: check the prefix"),
        (1000 * 2**30 / 1e9, False, "GB where GiB"),
        (37, False, "off by a factor of 27"),
        (1000.2, True, "right"),
        (1003, True, "right"),
        (-1000, False, "sign"),
        ("a lot", False, "give a number"),
        (math.inf, False, "finite"),
    ],
)
def test_numbers_get_feedback_that_teaches(answer, right, says):
    ok, text = _judge(NUMBER, answer, NUMBER.expected())
    assert ok is right and says in text, text


def test_formulas_are_compared_by_sympy_and_yes_no_as_bools():
    x, y = sympy.symbols("x y")
    formula = Part("f", lambda: x * (y + 1), kind="symbolic")
    assert _judge(formula, x * y + x, formula.expected())[0]
    positive = sympy.Symbol("x", positive=True)  # typed as text, x is the formula's own x
    assert _judge(Part("g", lambda: sympy.sqrt(positive**2), kind="symbolic"), "x", positive)[0]
    ok, text = _judge(formula, x * y, formula.expected())
    assert not ok and "yours lacks x" in text
    assert not _judge(formula, object(), formula.expected())[0]
    fits = Part("fits", lambda: True, kind="yes/no")
    assert _judge(fits, True, True)[0] and not _judge(fits, False, True)[0]
    assert "True or False" in _judge(fits, "yes", True)[1]


def test_a_wrong_label_or_part_is_a_clear_error():
    with pytest.raises(KeyError, match="no exercise 'ex-nothing'"):
        exercises.check("ex-nothing", x=1)
    with pytest.raises(KeyError, match="has no part 'speed'"):
        exercises.check(ALL[0], speed=1)
    with pytest.raises(ValueError, match="kind must be one of"):
        Part("x", lambda: 1, kind="maybe")


def test_feedback_shows_in_a_notebook():
    label = ALL[0]
    html = exercises.check(label, **exercises.answers(label))._repr_html_()
    assert "&#10004;" in html and label in html
    assert repr(exercises.check(label)) == str(exercises.check(label))


def _number_parts():
    """Every number part of every exercise, by label and name: what each part asks is known
    without computing its answer (pytest collects this in each of its processes)."""
    return [
        (label, part.name)
        for label in ALL
        for part in exercises.EXERCISES[label].parts
        if part.kind == "number"
    ]


@pytest.mark.parametrize("label, name", _number_parts())
@pytest.mark.slow
def test_a_number_passes_within_its_tolerance_and_a_whole_count_passes_no_neighbour(label, name):
    right = exercises.answers(label)
    value = right[name]
    if isinstance(value, int | sympy.Integer) and 0 < value < 10_000:
        # A count of whole things (requests, GPUs, conversations): one more or one fewer is a
        # different answer, not a rounding.
        value = int(value)
        assert exercises.check(label, **{**right, name: value}).correct
        for neighbour in (value - 1, value + 1):
            assert not exercises.check(label, **{**right, name: neighbour}).correct, neighbour
        return
    # A measure: within the part's tolerance it passes, twice the tolerance off it does not
    # (and its feedback is computed, never raised: a student's wrong answer gets hints).
    tolerance, value = exercises.EXERCISES[label].part(name).tolerance, float(value)
    inside = value * (1 + tolerance / 2)
    outside = value * (1 + 2 * tolerance) if tolerance else math.nextafter(value, math.inf)
    if value == 0:  # nothing is within a tolerance of 0 but 0
        outside = 1e-12
    assert exercises.check(label, **{**right, name: inside}).correct, inside
    assert not exercises.check(label, **{**right, name: outside}).correct, outside


def test_one_request_short_of_the_balance_point_is_told_so():
    feedback = str(
        exercises.check("ex-q-batch", requests=exercises.answers("ex-q-batch")["requests"] - 1)
    )
    assert "one fewer leaves the step memory-bound" in feedback


@pytest.mark.parametrize(
    "unit, expected, answer, says",
    [
        ("bytes", 2.82e9, 2.82, "off by 10^-9: it looks like GB; the question asks for bytes"),
        ("bytes", 2**33, 8, "it looks like GiB; the question asks for bytes"),
        ("bytes per second", 3e12, 3, "it looks like TB per second; the question asks for bytes"),
        ("GiB (2^30 bytes)", 74.5, 74.5 * 2**30, "it looks like bytes; the question asks for GiB"),
        ("fraction of the paid time", 0.25, 25, "it looks like a percentage; the question asks "),
        (
            "percent",
            25,
            0.25,
            "off by 10^-2: it looks like a fraction; the question asks for percent",
        ),
        ("seconds", 0.02, 20, "it looks like milliseconds; the question asks for seconds"),
        ("FLOPs", 3e15, 3, "it looks like PFLOPs"),
        ("dollars per million tokens", 2.5, 2.5e-6, "it looks like dollars per token"),
    ],
)
def test_an_answer_in_another_unit_is_named(unit, expected, answer, says):
    part = Part("x", lambda: expected, unit=unit)
    ok, text = _judge(part, answer, expected)
    assert not ok and says in text, text
    assert "factor of" not in text or "looks like" in text


def test_a_power_of_ten_that_is_no_unit_is_not_called_a_percentage():
    gpus = Part("n", lambda: 8, unit="GPUs")
    ok, text = _judge(gpus, 800, 8)
    assert not ok and "percent" not in text and "800" not in text, text
    assert "off by a factor of 100, too high" in text
