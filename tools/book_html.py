"""A Sphinx extension with two fixes to the HTML that the theme stack emits, so that the
browser test can demand a console free of errors.

- sphinx-thebe adds its inline configuration script once per read of the environment, and
  Jupyter Book reads it twice: the second ``const THEBE_JS_URL`` is a SyntaxError.
- pydata-sphinx-theme starts from an empty colour mode unless one is configured, and says so
  on the console; the book starts from "auto" (light or dark, as the reader's system is).
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
    # Late (priority 900): other extensions add their page scripts in this event too.
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
