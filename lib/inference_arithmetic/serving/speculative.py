"""Speculative decoding as a serving option: what drafts, how many tokens, how often accepted.

>>> s = Speculative("mtp")  # DeepSeek-V3's multi-token prediction module
>>> s.draft_len, s.acceptance_rate, s.draft
(1, 0.85, 'head')
>>> round(s.tokens_per_step, 2)  # (1 - 0.85**2) / (1 - 0.85)
1.85

A scenario that speculates (``Scenario(..., speculative="eagle3")``) verifies gamma drafted
tokens of each decoding request in every step, gamma + 1 rows where plain decoding has one
(``formulas.kernels`` with the ``speculative`` option), pays the draft's own passes
(``kernels.draft_time``), and yields (1 - a^(gamma+1)) / (1 - a) tokens a step
(``techniques.expected_tokens``). Each method's acceptance rate is what its source
published, never fitted to the book's measurements (``METHODS``). Chapter 15 derives it.

Only a model that ships an MTP module (``ModelConfig.mtp_modules``, as DeepSeek-V3 does) drafts
with ``"mtp"`` (``check_target``). To ask what such a module would buy a model without one,
say so: ``Speculative("mtp", hypothetical=True)`` times a head of the module's shape on any
model (chapter 15's comparison on Llama 3.1 70B does).

A separate draft model (``method="draft"``) also takes memory: its weights, of the size its
registry config.json gives (each config names its source), and its own KV cache, both split
over the target's GPUs (``latency.draft_bytes_per_gpu``). They count wherever a scenario's
memory does: ``calculate``'s ``memory["draft"]`` and total, the fit check, ``max_batch`` and a
continuous engine's capacity. A head (EAGLE-3, MTP) is one layer; its memory is not counted.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from inference_arithmetic.core import cache, checks
from inference_arithmetic.core.errors import ArgumentError
from inference_arithmetic.models.config import ModelConfig, model_names
from inference_arithmetic.models.config import model as registry_model

__all__ = ["Method", "METHODS", "Speculative", "speculation", "acceptance_from_length"]
__all__ += ["check_target", "NO_MTP", "mtp_models", "OTHER_TOKENIZER", "PADDING"]


@dataclass(frozen=True)
class Method:
    """A way of drafting: what drafts (``kernels.DRAFTS``, or None for a lookup on the host),
    its draft length by default, the figure its source published (an acceptance rate per
    token, or with ``length`` a mean acceptance length, which ``acceptance_rate`` turns into
    one), and where they come from."""

    draft: str | None
    draft_len: int | None
    published: float | None
    source: str
    length: bool = False

    @property
    def acceptance_rate(self) -> float | None:
        """The default acceptance rate per drafted token (``acceptance_from_length`` of a
        published length: worked out on first use, so that importing the library compiles no
        formula)."""
        if self.published is None or not self.length:
            return self.published
        return _from_length(self.published, self.draft_len)


@functools.cache
def _expected():
    """``techniques.expected_tokens`` compiled, kept in the disk cache (``core.cache``)."""
    return cache.formula(_expected_tokens)


def _expected_tokens():
    from inference_arithmetic.formulas import techniques

    return techniques.expected_tokens()


def acceptance_from_length(length: float, draft_len: int) -> float:
    """The acceptance rate per token a at which a draft of ``draft_len`` tokens yields
    ``length`` tokens a step on average, (1 - a^(gamma+1)) / (1 - a) = length: how a
    published mean acceptance length becomes the book's a (the sum rises with a, so one root
    lies in (0, 1)).

    >>> round(acceptance_from_length(1.85, 1), 2)
    0.85
    """
    draft_len = checks.count("draft_len", draft_len, high=64)
    if not 1 <= length < draft_len + 1:
        raise ArgumentError(
            f"a mean acceptance length of {draft_len} drafted tokens lies from 1 up to (not "
            f"including) {draft_len + 1}, got {length!r}"
        )
    low, high = 0.0, 1.0
    for _ in range(60):  # bisection, to below a billionth
        middle = (low + high) / 2
        tokens = _expected()(draft_len=draft_len, acceptance_rate=middle)
        low, high = (middle, high) if tokens < length else (low, middle)
    return low


_from_length = functools.cache(acceptance_from_length)

METHODS = {
    "mtp": Method(
        "head",
        1,
        0.85,
        "DeepSeek-V3 Technical Report (DeepSeek-AI 2024), section 5.4.3: with one multi-token "
        "prediction module drafting the second token, 'the acceptance rate of the second token "
        "prediction ranges between 85% and 90%', giving 1.8 times the tokens per second; the "
        "lower end.",
    ),
    "eagle3": Method(
        "head",
        5,
        2.156,
        "EAGLE-3 (Li et al. 2025) drafts with one decoder layer fed by the "
        "target's low, middle and high features. The paper's own acceptance lengths are of "
        "draft trees, which a chain's formula does not describe; the chain figure used is "
        "vLLM's: an EAGLE-3 drafter for Qwen3-30B-A3B, 5 drafted tokens, mean acceptance "
        "length 2.156 over the 9 subsets of RedHatAI/speculator_benchmarks at temperature 0.6 "
        "(vllm-project/speculators pull request 610, 2026-06-26), turned into a per-token rate "
        "by acceptance_from_length.",
        length=True,
    ),
    "ngram": Method(
        None,
        5,
        4.59,
        "n-gram (prompt lookup) drafting in vLLM, 5 drafted tokens, prompt_lookup_min 2 and "
        "max 5, on code edits (vdaita/edit_5k_char): mean acceptance length 4.59 where a match "
        "was found (vllm-project/vllm pull request 24344), turned into a per-token rate by "
        "acceptance_from_length. Output that copies its prompt; most chat does not.",
        length=True,
    ),
    "draft": Method(
        "model",
        None,
        None,
        "a smaller model of the same tokenizer drafts (Leviathan et al. 2023); its acceptance "
        "rate depends on the pair and the text: give acceptance_rate.",
    ),
}
"""The ways of drafting a scenario may name, with their sourced defaults."""


@dataclass(frozen=True)
class Speculative:
    """Speculative decoding: ``method`` (``METHODS``), ``draft_len`` tokens drafted a step
    (gamma, from 1), ``acceptance_rate`` per drafted token (a, from 0 up to, not including,
    1), each by default the method's; ``draft_model`` (a registry name or ``ModelConfig``)
    for ``method="draft"``; ``hypothetical=True`` (``method="mtp"`` only) times an MTP module
    on a target that ships none (``check_target``). Checked when made; errors name the argument
    and its range."""

    method: str
    draft_len: int | None = None
    acceptance_rate: float | None = None
    draft_model: ModelConfig | str | None = None
    # What a scenario accepts, not what it computes: no formula, so no cache key, reads it.
    hypothetical: bool = field(default=False, metadata={"key": False})

    def __post_init__(self):
        method = METHODS[checks.choice("method", self.method, tuple(METHODS))]
        draft_len = self.draft_len if self.draft_len is not None else method.draft_len
        rate = self.acceptance_rate if self.acceptance_rate is not None else method.acceptance_rate
        if draft_len is None or rate is None:
            missing = "draft_len" if draft_len is None else "acceptance_rate"
            raise ArgumentError(
                f"speculative method {self.method!r} has no default {missing}: "
                f"give one ({method.source})"
            )
        model = self.draft_model
        if (model is None) != (method.draft != "model"):
            raise ArgumentError(
                "draft_model names the model that drafts, for method='draft' only; got "
                f"method={self.method!r}, draft_model={model!r}"
            )
        if not isinstance(self.hypothetical, bool):
            raise ArgumentError(f"hypothetical must be True or False, got {self.hypothetical!r}")
        if self.hypothetical and self.method != "mtp":
            raise ArgumentError(
                "hypothetical=True times an MTP module on a model that ships none, for "
                f"method='mtp' only; got method={self.method!r}"
            )
        object.__setattr__(self, "draft_len", checks.count("draft_len", draft_len, high=64))
        object.__setattr__(self, "acceptance_rate", checks.share("acceptance_rate", rate, True))
        if model is not None:
            object.__setattr__(self, "draft_model", registry_model(model))

    @property
    def draft(self):
        """What the step formulas take as the draft (``kernels.draft_time``)."""
        kind = METHODS[self.method].draft
        return self.draft_model if kind == "model" else kind

    def describe(self) -> dict:
        """Its settings as plain data (the draft model by name), and the tokens a step
        yields: what ``calculate`` reports and the command line prints."""
        model = self.draft_model.name if self.draft_model is not None else None
        return {
            "method": self.method,
            "draft_len": self.draft_len,
            "draft_model": model,
            "acceptance_rate": self.acceptance_rate,
            "tokens_per_step": self.tokens_per_step,
        }

    def values(self) -> dict:
        """The values of the formulas' draft_len and acceptance_rate."""
        return {"draft_len": self.draft_len, "acceptance_rate": self.acceptance_rate}

    @property
    def tokens_per_step(self) -> float:
        """Tokens a verification step yields on average (``techniques.expected_tokens``)."""
        return _expected().from_values(self.values())


NO_MTP = (
    "{model} ships no multi-token prediction module for speculative='mtp' to draft with (its "
    "config's num_nextn_predict_layers; registry models with one: {models}). Draft another "
    "way ({methods}), or time a module of MTP's shape it does not have: "
    "Speculative('mtp', hypothetical=True)"
)
"""The refusal of ``"mtp"`` on a model without the module (``check_target``)."""


@functools.cache
def mtp_models() -> tuple[str, ...]:
    """The registry's models that ship an MTP module (``ModelConfig.mtp_modules``)."""
    return tuple(name for name in model_names() if registry_model(name).mtp_modules)


PADDING = 256
"""How far apart two vocabulary sizes of one tokenizer may lie (``OTHER_TOKENIZER``)."""
OTHER_TOKENIZER = (
    "draft_model {draft} has a vocabulary of {draft_vocab:,} tokens and {model} one of "
    "{vocab:,}: a draft proposes tokens of its target's tokenizer, so their vocabularies "
    "differ by padding only (fewer than {padding} rows). Draft with a model of {model}'s "
    "family"
)
"""The refusal of a draft model of another tokenizer (``check_target``)."""


def check_target(speculative: Speculative | None, target: ModelConfig) -> None:
    """Refuse ``"mtp"`` drafting for a ``target`` that ships no MTP module, unless the
    speculation says it is ``hypothetical`` (``NO_MTP``), and a draft model whose vocabulary
    is not its target's (``OTHER_TOKENIZER``)."""
    if speculative is None:
        return
    draft = speculative.draft_model
    # One tokenizer's checkpoints pad their embedding to a multiple of 64 to 256 rows (Qwen2.5's
    # 0.5B has 151,936, its 7B 152,064; GPT-J pads GPT-2's 50,257 to 50,400), so vocabularies
    # within PADDING rows are taken as one. A size cannot tell two tokenizers of the same size
    # apart (Llama 2's and Mistral's 32,000): the rule refuses only what cannot be shared.
    if draft is not None and abs(draft.vocab_size - target.vocab_size) >= PADDING:
        raise ArgumentError(
            OTHER_TOKENIZER.format(
                draft=draft.name,
                draft_vocab=draft.vocab_size,
                model=target.name,
                vocab=target.vocab_size,
                padding=PADDING,
            )
        )
    if speculative.method != "mtp" or speculative.hypothetical:
        return
    if not target.mtp_modules:
        others = ", ".join(m for m in METHODS if m != "mtp")
        models = ", ".join(mtp_models()) or "none"
        raise ArgumentError(NO_MTP.format(model=target.name, models=models, methods=others))


def speculation(value) -> Speculative | None:
    """A scenario's ``speculative`` argument as a ``Speculative``: None (no speculation), a
    method's name (its defaults), a mapping of ``Speculative``'s arguments, or one made."""
    if value is None or isinstance(value, Speculative):
        return value
    if isinstance(value, str):
        return Speculative(value)
    if isinstance(value, dict):
        return Speculative(**value)
    raise ArgumentError(
        f"speculative must be None, a method ({', '.join(METHODS)}), a dict of Speculative's "
        f"arguments or an ia.Speculative, got {value!r}"
    )
