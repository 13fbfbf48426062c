"""A model of your own in the calculator: a Hugging Face ``config.json`` pasted into the form.

>>> rules = reading()["llama"]
>>> rules[0]["sizes"]["d_model"], rules[0]["sizes"]["d_head"]
('hidden_size', 'head_dim')

In Jupyter the form reads it with the library's own parser (``ModelConfig.from_hf_config``),
every family the parser knows. The page has no Python, so it reads what the page's formulas
need and no more, by rules found by running that parser on the registry's configs
(``reading``): for each ``model_type``, which field sets which of the sizes the formulas take
(the field doubled or halved, the size follows), and which other fields the parser reads
(and those it refuses, ``UNMODELED``), which must be as a registry model of that type has them
(or left out where leaving them out reads the same): the page then evaluates that model's
formulas at the pasted sizes. A size the parser derives from others when its field is left
out (the head size, from the width and the heads) is one the page asks for by its field; a
field set otherwise than in any registry model of the type is named as one the page cannot
read (``MESSAGES``), from the registry model the config is closest to (the fewest fields
missing or set otherwise).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.resources
import json
import numbers

from inference_arithmetic.models.config import FIELDS, UNMODELED, ModelConfig, model_names

__all__ = ["OWN", "MESSAGES", "reading", "model_of"]

OWN = "your config.json"
"""The model choice of a pasted config.json; the model is named so in messages."""

MESSAGES = {
    "json": "the text pasted is not a JSON object: paste the whole config.json, from { to }",
    "type": "the page reads a config.json of model_type {types}; this one is {model_type}. "
    "ia.ModelConfig.from_hf_config reads more, in Jupyter",
    "missing": "the page cannot read this config.json: it lacks {fields}, which the page's "
    "formulas need and the page does not derive: add the field, or read the config with "
    "ia.ModelConfig.from_hf_config in Jupyter",
    "size": "config.json's {field} must be a positive whole number, got {value}",
    "other": "the page cannot read this config.json: it sets {field} to {value}, which changes "
    "the formulas in a way no registry model of model_type {model_type} does. Read it with "
    "ia.ModelConfig.from_hf_config in Jupyter",
}
"""The page's messages for a config it cannot read (templates the page fills)."""


def model_of(text: str) -> ModelConfig:
    """The pasted ``text`` read by the library's parser, the model named ``OWN``; the parser's
    error (a ``ValueError``) if it cannot, or ``MESSAGES["json"]`` for text that is no JSON
    object (which the parser would take for a path)."""
    from inference_arithmetic.core.numeric import ArgumentError

    if not isinstance(text, str) or not text.lstrip().startswith("{"):
        raise ArgumentError(MESSAGES["json"])
    return ModelConfig.from_hf_config(text, name=OWN)


def _verbatim(name: str) -> dict:
    files = importlib.resources.files("inference_arithmetic.models.configs")
    return json.loads(files.joinpath(f"{name}.json").read_text())["config"]


def _read(config: dict) -> ModelConfig:
    return ModelConfig.from_hf_config(config, name=OWN)


def _sizes(config: dict) -> dict:
    arch = _read(config)
    return {**arch.sizes(), "context_window": arch.context_window}


def _whole(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value > 0


def _moved(config: dict, key: str, value) -> dict | None:
    """The sizes of ``config`` with ``key`` set to ``value``; None where the parser refuses."""
    try:
        return _sizes({**config, key: value})
    except (ValueError, KeyError):
        return None


def _template(name: str, config: dict) -> dict | None:
    """How the page reads a config like ``name``'s: each size's field, and the fields that
    must be as they are here; None where some size follows from no field of its own."""
    base, fields = _sizes(config), FIELDS[config["model_type"]]
    direct = {}
    for key in fields:  # a field that sets a size: doubled and halved, the size follows
        value = config.get(key)
        if _whole(value):
            tries = [[2 * value, value // 2, 4 * value, 3 * value]]
        else:  # left out here: set at two, three and four times a size it might set
            tries = [[2 * v, 3 * v, 4 * v] for v in base.values() if _whole(v)]
        for values in tries:
            found, seen = None, 0  # the sizes that follow it in two tries or more
            for tried in (v for v in values if v):
                moved = _moved(config, key, tried)
                if moved is None:
                    continue
                hits = {s for s in base if moved[s] == tried != base[s] and s not in direct}
                found, seen = (hits if found is None else found & hits), seen + 1
            if found and seen > 1:
                for size in sorted(found):
                    direct[size] = key
                break
    # A size with no field of its own must follow from the fixed fields alone: no field of a
    # size, moved, may move it (a head size derived from the width, a window from the layers).
    for key in (k for k in set(direct.values()) if _whole(config.get(k))):
        moved = _moved(config, key, 2 * config[key]) or _moved(config, key, config[key] // 2)
        if moved is None or any(moved[s] != base[s] for s in moved if s not in direct):
            return None
    arch = dataclasses.replace(_read(config), name=OWN)
    fixed = {}
    for key in [*fields, *UNMODELED]:
        if key in direct.values():
            continue
        left_out = {k: v for k, v in config.items() if k != key}
        try:  # left out, does the parser read the same model?
            same = _read(left_out) == arch
        except (ValueError, KeyError):
            same = False
        fixed[key] = {"value": config.get(key), "absent": same or key not in config}
    return {"name": name, "sizes": direct, "fixed": fixed}


@functools.cache
def reading() -> dict:
    """The page's reading rules (module docstring): model_type -> the registry models it may
    take the formulas of, each with its fields (size -> field) and its fixed fields (field ->
    its ``value``, and whether it may be ``absent``)."""
    rules = {}
    for name in model_names():
        config = _verbatim(name)
        if config.get("model_type") not in FIELDS:
            continue  # a multimodal wrapper: its text_config is read in Jupyter
        template = _template(name, config)
        if template is not None:
            rules.setdefault(config["model_type"], []).append(template)
    return rules
