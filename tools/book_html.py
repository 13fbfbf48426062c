"""A Sphinx extension with two fixes to the HTML that the theme stack emits, so that the
browser test can demand a console free of errors.

- sphinx-thebe adds its inline configuration script once per read of the environment, and
  Jupyter Book reads it twice: the second ``const THEBE_JS_URL`` is a SyntaxError.
- pydata-sphinx-theme starts from an empty colour mode unless one is configured, and says so
  on the console; the book starts from "auto" (light or dark, as the reader's system is).

It adds the book's stylesheet (``tools/static/ia-book.css``: glued numbers in the body's
weight, figures that shrink with the column, wide math and code scrolling in their own box).

It numbers the introduction's exercises and figures 0.1, 0.2, ..., apart from chapter 1's.

It reads a page again when tools/execute.py has executed it again (its code is the same, but
the library or a data file it reads changed, and so did its outputs): the page's stamp in
_build/.executed/, touched by each execution, is one of the page's dependencies, which Sphinx
compares with the time it last read the page.

It also typesets the math of the boxes marked ``ia-lazy-math`` (the formula reference's
collapsed per-architecture forms) when a reader first opens one, not while the page loads:
MathJax blocks the page while it typesets, and there are over a hundred such forms.

And it makes the page buttons honest:

- Repository, source, issues and Binder buttons need the repository's public URL, which the
  book does not hard-code (a fork publishes from its own): it comes from ``IA_REPOSITORY_URL``
  (the Pages workflow sets it) or git's ``origin`` when that is a GitHub, GitLab or Bitbucket
  address. Without one (a local clone) the buttons are left out: Jupyter Book's default would
  point them at Jupyter Book's own repository.
- Binder opens a chapter's student edition (``.binder/postBuild`` writes them).
- A chapter's ".ipynb" download is its class notebook, the one ``make notebooks`` writes (no
  outputs), next to the ".md" source.
"""

import os
import re
import subprocess
from pathlib import Path

import notebooks  # tools/notebooks.py: Jupyter Book puts tools/ on the path for this extension

HOSTS = {"github.com", "gitlab.com", "bitbucket.org"}
STATIC = Path(__file__).resolve().parent / "static"  # not a root _static/: see DESIGN.md

# Runs before MathJax (whose script is deferred): on page ready, math inside a lazy box is
# hidden from MathJax (a process class would override the ignore class, so it is
# swapped out), and typeset when its box is first clicked open.
LAZY_MATH = """
window.MathJax = window.MathJax || {};
MathJax.startup = Object.assign(MathJax.startup || {}, {
  pageReady() {
    document.querySelectorAll(".admonition.ia-lazy-math").forEach((box) => {
      const later = box.querySelectorAll(".math");
      if (!later.length) return;
      later.forEach((e) => e.classList.replace("math", "ia-math-later"));
      later.forEach((e) => e.classList.add("tex2jax_ignore"));
      box.addEventListener("click", () => {
        const pending = box.querySelectorAll(".ia-math-later");
        if (!pending.length) return;
        pending.forEach((e) => {
          e.classList.replace("ia-math-later", "math");
          e.classList.remove("tex2jax_ignore");
        });
        MathJax.typesetPromise([box]);
      });
    });
    return MathJax.startup.defaultPageReady();
  },
});
"""


# Marks each box of wide math that scrolls sideways with the side(s) that have more to see
# (ia-more-left, ia-more-right: tools/static/ia-book.css fades that edge). Runs once MathJax
# has typeset the page, after each later typesetting (a formula box opened), on resize and as
# the reader scrolls the box.
SCROLL_CUE = """
(() => {
  const BOXES = "div.math mjx-container, span.math, .cell_output .math";
  // The typeset formula's width: scrollWidth counts MathJax's hidden copy for screen readers.
  const measure = (e) => {
    const inner = e.querySelector("mjx-math");
    const width = inner ? inner.getBoundingClientRect().width : e.scrollWidth;
    return [e, width, e.clientWidth, e.scrollLeft];
  };
  const apply = ([e, width, shown, left]) => {
    if (e.matches("span.math")) e.classList.toggle("ia-wide-math", width > shown + 1);
    const hidden = width - shown;
    e.classList.toggle("ia-more-left", hidden > 1 && left > 1);
    e.classList.toggle("ia-more-right", hidden > 1 && hidden - left > 1);
  };
  const mark = (e) => apply(measure(e));
  // Every box measured, then every class set: measuring after each change would lay the page
  // out again for each box (seconds on the formula reference, at each resize).
  const markAll = () => [...document.querySelectorAll(BOXES)].map(measure).forEach(apply);
  document.addEventListener("scroll", (event) => {
    if (event.target instanceof Element && event.target.matches(BOXES)) mark(event.target);
  }, true);
  window.addEventListener("resize", markAll);
  window.addEventListener("load", () => {
    const mj = window.MathJax;
    if (!(mj && mj.startup && mj.startup.promise)) return markAll();
    mj.startup.promise.then(() => {
      markAll();
      const typeset = mj.typesetPromise;
      mj.typesetPromise = (...args) => typeset(...args).then((result) => {
        markAll();
        return result;
      });
    });
  });
})();
"""

# Inline code (Sphinx's <span class="pre">) may break after an underscore, a dot, a slash or
# an opening bracket followed by a letter or a quote: "bytes_per_number" as "bytes_per_" and
# "number", never mid-word. Not in URLs ("://"), which are copied whole.
_PRE = re.compile(r'(<span class="pre">)([^<]+)(</span>)')
_BREAK = re.compile(r"([_./(\[])(?=[A-Za-z&])")


def breakable_code(html: str) -> str:
    """``html`` with a ``<wbr>`` after each underscore or dot of its inline code's names."""

    def one(match):
        text = match[2]
        return match[0] if "://" in text else match[1] + _BREAK.sub(r"\1<wbr>", text) + match[3]

    return _PRE.sub(one, html)


def _breakable_code(app, pagename, templatename, context, doctree):
    if "body" in context:
        context["body"] = breakable_code(context["body"])


def _dedupe_scripts(app, pagename, templatename, context, doctree):
    seen, unique = set(), []
    for script in context.get("script_files", []):
        attributes = getattr(script, "attributes", {})
        # The same inline script comes once with filename None and once with "".
        filename = getattr(script, "filename", script) or ""
        key = (str(filename), tuple(sorted(attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique
    context["default_mode"] = context.get("default_mode") or "auto"


def public_url(remote: str) -> str | None:
    """The https address of a git remote on a known host, without credentials or ".git";
    None for anything else (a local path, a mirror on another host)."""
    match = re.fullmatch(
        r"(?:https?://(?:[^@/]+@)?|ssh://(?:[^@/]+@)?|[^@/:]+@)([^/:]+)[/:]([^/]+)/([^/]+?)(?:\.git)?/?",
        remote.strip(),
    )
    if not match or match[1].lower() not in HOSTS:
        return None
    return f"https://{match[1].lower()}/{match[2]}/{match[3]}"


def repository_url(srcdir: str | Path, environ=os.environ) -> str | None:
    """The book's public repository: ``IA_REPOSITORY_URL``, else git's origin, else None."""
    given = environ.get("IA_REPOSITORY_URL", "").strip()
    if given:
        url = public_url(given)
        if url is None:
            raise ValueError(
                f"IA_REPOSITORY_URL={given!r} is not a repository on {', '.join(sorted(HOSTS))} "
                "(expected https://github.com/OWNER/REPO or similar)"
            )
        return url
    try:
        remote = subprocess.run(
            ["git", "remote", "get-url", "origin"],
            cwd=srcdir,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None  # no git, not a clone, or no origin
    return public_url(remote)


INSTALL = '`pip install "inference-arithmetic @ git+{url}"` (or `pip install .` in a checkout)'
"""How the intro says to install the library from the book's repository, where it is known."""
INSTALL_LOCAL = "`pip install .` in a checkout of the book's repository"
"""... and where it is not (a local build without a public origin)."""


def substitutions(srcdir, url: str | None = None) -> dict:
    """The book's ``{{ name }}`` values (the student notebooks use them too)."""
    url = url or repository_url(srcdir)
    return {"install": INSTALL.format(url=url) if url else INSTALL_LOCAL}


def _repository_buttons(app, config):
    options = config.html_theme_options
    url = repository_url(app.srcdir)
    given = getattr(config, "myst_substitutions", None) or {}
    config.myst_substitutions = {**given, **substitutions(app.srcdir, url)}
    if url is None:
        options.pop("repository_url", None)
        options["launch_buttons"] = {**options.get("launch_buttons", {}), "binderhub_url": ""}
        return
    options["repository_url"] = url
    options["repository_branch"] = os.environ.get("IA_REPOSITORY_BRANCH") or options.get(
        "repository_branch", "main"
    )
    options.update(use_repository_button=True, use_source_button=True, use_issues_button=True)


def _is_chapter(app, pagename):
    return "kernelspec" in app.env.metadata.get(pagename, {})


def _notebook_download(app, pagename, templatename, context, doctree):
    if _is_chapter(app, pagename):
        context["ipynb_source"] = pagename + ".ipynb"


def _student_binder(app, pagename, templatename, context, doctree):
    """Binder opens the student edition of a chapter, which .binder/postBuild writes to
    notebooks/student/ (the theme's button would open the chapter, solutions and all)."""
    if not _is_chapter(app, pagename):
        return
    page = f"urlpath=lab/tree/{pagename}.md"
    student = f"urlpath=lab/tree/notebooks/student/{Path(pagename).name}.ipynb"

    def rewrite(item):
        if isinstance(item, dict):
            return {key: rewrite(value) for key, value in item.items()}
        if isinstance(item, list):
            return [rewrite(value) for value in item]
        return item.replace(page, student) if isinstance(item, str) else item

    context["header_buttons"] = rewrite(context.get("header_buttons", []))


def _write_notebooks(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    pages = notebooks.book(
        [Path(app.env.doc2path(docname)) for docname in sorted(app.env.found_docs)],
        # The cache this build executed into (myst-nb resolves an empty setting to the build
        # folder's own): a build elsewhere (--path-output) has its own.
        cache=Path(app.env.mystnb_config.execution_cache_path),
        substitutions=app.config.myst_substitutions,
    )
    for docname in sorted(app.env.found_docs):
        if _is_chapter(app, docname):
            target = Path(app.outdir, "_sources", docname + ".ipynb")
            notebooks.write(Path(app.env.doc2path(docname)), target, pages=pages)


def _depend_on_the_execution(app, docname, source):
    cache = Path(app.env.mystnb_config.execution_cache_path or Path(app.outdir).parent)
    stamp = cache.parent / ".executed" / docname
    if stamp.exists():
        app.env.note_dependency(str(stamp.resolve()))


def _number_the_introduction(app, env):
    """Number the introduction's exercises and figures 0.1, 0.2, ... as the chapters number
    theirs 1.1, 6.4: unnumbered, they would read "Exercise 1", which a reader takes for
    chapter 1's. Sphinx counts them after the sections of an unnumbered page (none), so the
    last figure of each number is the count within the page."""
    root = app.config.root_doc
    numbers = env.toc_fignumbers.get(root, {})
    for figures in numbers.values():
        for figure_id, number in figures.items():
            figures[figure_id] = (0, number[-1])
    return [root] if numbers else []


def _static_path(app, config):
    config.html_static_path = [*config.html_static_path, str(STATIC)]


def setup(app):
    app.connect("config-inited", _repository_buttons)
    app.connect("config-inited", _static_path)
    app.add_css_file("ia-book.css", priority=900)  # after the theme's and myst-nb's (500)
    # Before the theme's buttons (priority 501) read it; the files are written at the end, over
    # the executed copy that the theme's launch buttons put in the same place.
    app.connect("html-page-context", _notebook_download, priority=500)
    app.connect("html-page-context", _student_binder, priority=600)  # after the theme's buttons
    app.connect("build-finished", _write_notebooks)
    app.connect("source-read", _depend_on_the_execution)
    # After Sphinx's own numbering (TocTreeCollector, at the default priority 500).
    app.connect("env-get-updated", _number_the_introduction, priority=600)
    # After the MathJax configuration that sphinx.ext.mathjax writes (which replaces
    # window.MathJax), before MathJax itself runs (deferred).
    app.add_js_file(None, body=LAZY_MATH, priority=999)
    app.add_js_file(None, body=SCROLL_CUE, priority=999)
    app.connect("html-page-context", _breakable_code)
    # Late (priority 900): other extensions add their page scripts in this event too.
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
