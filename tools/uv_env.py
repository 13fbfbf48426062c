"""Print, as shell `export` lines, the settings that make uv fetch from where pip does.

    eval "$(python tools/uv_env.py)"

uv reads neither pip's configuration files nor its PIP_* variables. This reads what pip is set
to use (``pip config list``: its PIP_* variables first, then the [install] and [global]
sections of its files) and hands the package indexes, the find-links locations, the CA bundle
and the timeout to uv as its own variables. A variable already set is left as it is.
"""

import os
import shlex
import subprocess
import sys

# pip's option: uv's variable, and how uv separates a list (None: one value).
UV = {
    "index-url": ("UV_INDEX_URL", None),
    "extra-index-url": ("UV_EXTRA_INDEX_URL", " "),
    "find-links": ("UV_FIND_LINKS", ","),
    "cert": ("SSL_CERT_FILE", None),
    "default-timeout": ("UV_HTTP_TIMEOUT", None),
}
RANK = {":env:": 0, "install": 1, "global": 2}  # which of pip's settings wins


def pip_settings() -> dict[str, str]:
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True
    ).stdout
    found = {}
    for line in listed.splitlines():  # section.option='value'
        key, _, value = line.partition("=")
        section, _, option = key.partition(".")
        if section in RANK and (option not in found or RANK[section] < found[option][0]):
            found[option] = (RANK[section], value.strip().strip("'\""))
    return {option: value for option, (_, value) in found.items()}


def uv_settings() -> dict[str, str]:
    """uv's variables for pip's settings, less those already set."""
    found = {}
    for option, value in pip_settings().items():
        if option not in UV or UV[option][0] in os.environ:
            continue
        name, separator = UV[option]
        found[name] = separator.join(value.split()) if separator else value
    return found


def main() -> None:
    for name, value in uv_settings().items():
        print(f"export {name}={shlex.quote(value)}")


if __name__ == "__main__":
    main()
