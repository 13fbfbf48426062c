"""Self-checking exercises: feedback that can be wrong in each way it claims to catch, every
registered exercise answered by the library, blank answers that never stop a notebook."""

import math

import pytest
import sympy

import inference_arithmetic as ia
from inference_arithmetic import exercises
from inference_arithmetic.exercises import Part, _judge

ALL = exercises.labels()


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
