"""One question, one number: a named result (``ia.page.named``) that several pages print is
the same value on each, as the pages' executions glued it (read from the execution cache that
`make book` fills)."""

import sys

from inference_arithmetic.page import named
from tests.book.test_chapters import CHAPTERS, ROOT

sys.path.insert(0, str(ROOT / "tools"))
from notebooks import executed_glue  # noqa: E402


def _named_glue() -> dict[str, dict[str, str]]:
    """By chapter: each named result it glued, as its text."""
    glue = executed_glue()
    found = {}
    for doc in CHAPTERS:
        glued = glue(str(ROOT / doc)).items()
        found[doc] = {k: v.get("text/plain") for k, v in glued if k.startswith(named.PREFIX)}
    return found


def test_the_pages_that_print_a_named_result_print_one_value():
    glued = _named_glue()
    assert not named.disagreements(glued)
    # Each named result answers a question more than one page asks, and is glued by them all.
    for name in named.RESULTS:
        pages = [doc for doc, values in glued.items() if named.PREFIX + name in values]
        assert len(pages) >= 2, (name, pages)
        shown = glued[pages[0]][named.PREFIX + name]
        assert float(shown) == named.value(name), (name, shown)


def test_two_pages_printing_different_values_for_one_name_are_caught():
    glued = {
        "book/11-planning": {"named_small_saturation": "8.121576361759198"},
        "book/14-economics": {"named_small_saturation": "11.0", "other": "1"},
        "book/16-calculator": {"named_small_saturation": "8.121576361759198"},
    }
    found = named.disagreements(glued)
    assert list(found) == ["named_small_saturation"]
    assert found["named_small_saturation"]["book/14-economics"] == "11.0"
    del glued["book/14-economics"]
    assert not named.disagreements(glued)
