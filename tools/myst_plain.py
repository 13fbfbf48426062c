"""The chapters' MyST Markdown as the plain Markdown a notebook shows (JupyterLab has no MyST
renderer): directives as headings and quotes, roles as their text, each glued value as the
number the book prints.

    >>> glued = {"kv_n": {"text/plain": "'2,048'"}}  # as myst-nb records it
    >>> book = Book([Path("book/06-kv-cache.md")], glue=lambda doc: glued)
    >>> book.render("{glue:text}`kv_n` tokens; see {numref}`fig-kv-steps`.", "book/06-kv-cache")
    '2,048 tokens; see Fig. 6.1.'

What a reference resolves to is read off the chapters' sources, numbered as the book numbers
them (a chapter's number is its file's, the introduction's 0): sections, figures and exercises
in the order they come. tests/book/test_notebooks.py compares them with the built HTML.
"""

from __future__ import annotations

import re
from ast import literal_eval
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import jupytext

ROLE = re.compile(r"\{([a-z][\w:-]*)\}`([^`]*)`")
FENCE = re.compile(  # a colon or backtick directive, closed by the same fence
    r"^(?P<fence>:{3,}|`{3,})\{(?P<name>[\w:-]+)\}[ \t]*(?P<argument>[^\n]*)\n"
    r"(?P<options>(?:[ \t]*:[\w-]+:[^\n]*\n)*)(?P<body>.*?)^(?P=fence)[ \t]*$\n?",
    re.M | re.S,
)
TARGET = re.compile(r"^\(([^()\s]+)\)=[ \t]*\n", re.M)
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*$", re.M)
SUBSTITUTION = re.compile(r"\{\{\s*(\w+)\s*\}\}")
EXPLICIT = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.S)
# Sphinx's default numfig_format: what {numref}`label` reads as.
NUMFIG = {
    "figure": "Fig. %s",
    "table": "Table %s",
    "section": "Section %s",
    "exercise": "Exercise %s",
}
PLAIN_ROLES = {"term", "doc", "download", "abbr", "dfn"}  # shown as their text


@dataclass(frozen=True)
class Target:
    """What a label names: its title (a section's heading) and its number ("6.1", "" if none)."""

    kind: str  # "section", "figure", "exercise"
    title: str
    number: str
    doc: str


def chapter_number(doc: str) -> int | None:
    """A chapter's number is its file's ("book/06-kv-cache" is 6; the introduction is 0);
    the back matter (teaching, appendices) has none."""
    match = re.match(r"(\d\d)-", Path(doc).name)
    return int(match[1]) if match else None


class Book:
    """What the references of a set of chapters resolve to, and their glued values.

    ``glue(doc)`` gives the glued outputs of a chapter, ``{name: {mime: data}}``, as its
    execution left them; ``substitutions`` the values of ``{{ name }}``; ``citations`` each
    bibliography key as the book cites it ("Ainslie and others, 2023")."""

    def __init__(
        self,
        sources,
        glue: Callable[[str], dict],
        substitutions: dict | None = None,
        citations: dict | None = None,
    ):
        self.targets: dict[str, Target] = {}
        self.docs = [str(Path(source).resolve().with_suffix("")) for source in sources]
        for source, doc in zip(sources, self.docs, strict=True):
            self.targets.update(_targets(Path(source), doc))
        self._glue, self._glued = glue, {}
        self.substitutions = substitutions or {}
        self.citations = citations or {}

    def glued(self, doc: str) -> dict:
        if doc not in self._glued:
            self._glued[doc] = self._glue(doc)
        return self._glued[doc]

    def target(self, label: str, doc: str) -> Target:
        try:
            return self.targets[label]
        except KeyError:
            raise ValueError(
                f"{doc}: no section, figure or exercise is labelled {label!r}"
            ) from None

    def render(self, text: str, doc: str, solutions: bool = False) -> str:
        """``text`` (a Markdown cell of chapter ``doc``) as plain Markdown; ``solutions``: the
        text may hold solutions (the instructor's), each then headed "Solution to Exercise
        6.2", else a solution's fence is an error (the student's has none)."""
        text = TARGET.sub("", text)
        text = re.sub(r"^%[^\n]*\n?", "", text, flags=re.M)  # MyST comments
        text = FENCE.sub(lambda match: self._directive(match, doc, solutions), text)
        text = re.sub(r"(\$\$)[ \t]*\([^()\s]+\)", r"\1", text)  # an equation's label
        text = SUBSTITUTION.sub(lambda match: self._substitute(match[1], doc), text)
        return ROLE.sub(lambda match: self._role(match[1], match[2], doc), text)

    def _substitute(self, name: str, doc: str) -> str:
        try:
            return str(self.substitutions[name])
        except KeyError:
            raise ValueError(f"{doc}: no substitution {{{{ {name} }}}}") from None

    def exercise(self, label: str, doc: str) -> str:
        """An exercise as the book names it: "Exercise 6.2"."""
        return NUMFIG["exercise"] % self.target(label, doc).number

    def _directive(self, match, doc: str, solutions: bool = False) -> str:
        name, argument = match["name"], match["argument"].strip()
        options = dict(re.findall(r":([\w-]+):[ \t]*([^\n]*)", match["options"]))
        body = self.render(match["body"], doc, solutions).strip()
        if name == "exercise":
            title = f" ({argument})" if argument else ""
            return f"### {self.exercise(options['label'], doc)}{title}\n\n{body}\n"
        if name == "math":
            return f"$$\n{body}\n$$\n"
        if name in ("solution-start", "solution-end") and not solutions:
            raise ValueError(f"{doc}: a solution's fence is left in the student's text")
        if name == "solution-start":  # as the book heads it; its end needs no mark
            return f"#### Solution to {self.exercise(argument, doc)}\n"
        if name == "solution-end":
            return ""
        title = argument or name.replace("-", " ").capitalize()
        quoted = "\n".join(f"> {line}".rstrip() for line in body.splitlines())
        return f"> **{title}**\n>\n{quoted}\n"

    def _role(self, name: str, content: str, doc: str) -> str:
        if name.startswith("glue"):
            return self._paste(name, content, doc)
        explicit = EXPLICIT.match(content)
        text, label = (explicit["text"], explicit["target"]) if explicit else (None, content)
        if name == "ref":  # an exercise's reads as sphinx-exercise prints it: "Exercise 6.2"
            if text is not None:
                return text
            target = self.target(label, doc)
            return self.exercise(label, doc) if target.kind == "exercise" else target.title
        if name == "numref":
            target = self.target(label, doc)
            shape = text if text is not None else NUMFIG[target.kind]
            return shape.replace("%s", target.number).replace("{number}", target.number)
        if name == "eq":
            return f"({self.target(label, doc).number})"
        if name == "cite" or name.startswith("cite:"):
            return "[" + "; ".join(self._cite(key.strip(), doc) for key in content.split(",")) + "]"
        if name == "math":
            return f"${content}$"
        if name in PLAIN_ROLES:
            return text if text is not None else content
        raise ValueError(f"{doc}: no plain form for the role {{{name}}}`{content}`")

    def _cite(self, key: str, doc: str) -> str:
        try:
            return self.citations[key]
        except KeyError:
            raise ValueError(f"{doc}: no reference {key!r} in the bibliography") from None

    def _paste(self, name: str, content: str, doc: str) -> str:
        """A glued value as myst-nb pastes it (``myst_nb.ext.glue.roles``): ``key:format``,
        the key maybe ``doc::key``."""
        key, spec = content.rsplit(":", 1) if ":" in content else (content, "")
        if "::" in key:
            other, key = key.split("::", 1)
            source = str((Path(doc).parent / other).with_suffix(""))
        else:
            source = doc
        try:
            data = self.glued(source)[key]
        except KeyError:
            raise ValueError(f"{doc}: nothing is glued as {key!r} in {source}") from None
        if name == "glue:md" or (name in ("glue", "glue:any") and "text/markdown" in data):
            return self.render(data["text/markdown"], source).strip()
        return plain_text(data["text/plain"], spec or ("s" if name == "glue:text" else ""))


def plain_text(text: str, spec: str) -> str:
    """A glued text/plain value formatted as myst-nb's ``{glue:text}`` does."""
    try:
        value = literal_eval(text)
    except (SyntaxError, ValueError):
        value = text
    if not spec:
        return str(value)
    kind = spec[-1]
    if kind == "s":
        value = str(value)
    elif kind in "bcdoxX":
        value = int(value)
    elif kind in "eEfFgGn%":
        value = float(value)
    return format(value, spec)


def _targets(source: Path, doc: str) -> dict[str, Target]:
    """The labels of one chapter: its sections (numbered N.k, N.k.m), figures (a code cell's
    ``mystnb.figure.name``) and exercises, each numbered in order after the chapter's number."""
    number = chapter_number(doc)
    prefix = "" if number is None else f"{number}."
    found, counts, sections, pending = {}, {"figure": 0, "exercise": 0}, [], []
    for cell in jupytext.read(source, fmt="md:myst").cells:
        if cell.cell_type == "code":
            name = cell.metadata.get("mystnb", {}).get("figure", {}).get("name")
            if name:
                counts["figure"] += 1
                found[name] = Target("figure", "", prefix + str(counts["figure"]), doc)
            continue
        text = FENCE.sub(_keep_exercise_labels, cell.source)
        for match in re.finditer(rf"{TARGET.pattern}|{HEADING.pattern}|:label: (\S+)", text, re.M):
            label, hashes, heading, exercise = match.groups()
            if label:
                pending.append(label)
            elif exercise:
                counts["exercise"] += 1
                found[exercise] = Target("exercise", "", prefix + str(counts["exercise"]), doc)
            else:
                depth = len(hashes) - 1  # the chapter's title is depth 0
                sections = sections[:depth] + [0] * (depth - len(sections))
                if depth:
                    sections[depth - 1] += 1
                numbered = number is not None and number > 0 and depth
                section = prefix + ".".join(map(str, sections)) if numbered else ""
                for label in pending:
                    found[label] = Target("section", heading, section, doc)
                pending = []
    return found


def _keep_exercise_labels(match) -> str:
    """A directive reduced to what numbers targets: an exercise's label (a code block's
    ``#`` lines are no headings)."""
    label = re.search(r":label:[ \t]*(\S+)", match["options"] or "")
    return f":label: {label[1]}\n" if match["name"] == "exercise" and label else ""


def citations(bib: Path) -> dict[str, str]:
    """Each key of a BibTeX file as the book cites it (sphinxcontrib-bibtex's author_year
    style): "Vaswani and others, 2017", "Pope and Douglas, 2023", "Kwon, 2023"."""
    from pybtex.database import parse_file

    cited = {}
    for key, entry in parse_file(str(bib)).entries.items():
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        # A corporate author is braced in BibTeX ({NVIDIA}) to keep it whole: the braces go.
        names = [" ".join(person.last_names).replace("{", "").replace("}", "") for person in people]
        if len(names) > 2:
            names = [names[0], "others"]
        who = " and ".join(names) or entry.fields.get("organization", key)
        cited[key] = f"{who}, {entry.fields.get('year', 'n.d.')}"
    return cited
