"""A Sphinx extension with two fixes to the HTML that the theme stack emits, so that the
browser test can demand a console free of errors.

- sphinx-thebe adds its inline configuration script once per read of the environment, and
  Jupyter Book reads it twice: the second ``const THEBE_JS_URL`` is a SyntaxError.
- pydata-sphinx-theme starts from an empty colour mode unless one is configured, and says so
  on the console; the book starts from "auto" (light or dark, as the reader's system is).

It also typesets the math of the boxes marked ``ia-lazy-math`` (the formula reference's
collapsed per-architecture forms) when a reader first opens one, not while the page loads:
MathJax blocks the page while it typesets, and there are over a hundred such forms.
"""

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


def setup(app):
    # After the MathJax configuration that sphinx.ext.mathjax writes (which replaces
    # window.MathJax), before MathJax itself runs (deferred).
    app.add_js_file(None, body=LAZY_MATH, priority=999)
    # Late (priority 900): other extensions add their page scripts in this event too.
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
