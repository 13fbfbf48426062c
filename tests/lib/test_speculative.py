"""Speculative decoding as a serving option (serving.speculative): the methods' sourced
rates, the tokens a step yields, and every refusal naming its argument and range."""

import json
from importlib import resources

import pytest

import inference_arithmetic as ia
from inference_arithmetic.serving import speculative
from inference_arithmetic.serving.engine import engine_of
from inference_arithmetic.serving.speculative import METHODS, Speculative


def test_a_method_takes_its_sourced_defaults():
    mtp = Speculative("mtp")
    assert (mtp.draft_len, mtp.acceptance_rate, mtp.draft) == (1, 0.85, "head")
    assert mtp.tokens_per_step == pytest.approx(1.85, rel=1e-12)  # 1 + a for one draft
    assert Speculative("ngram").draft is None  # the host looks up the prompt: no GPU draft


@pytest.mark.parametrize("rate, draft_len", [(0.3, 1), (0.6, 3), (0.9, 7)])
def test_an_acceptance_length_gives_back_its_rate(rate, draft_len):
    length = Speculative("eagle3", draft_len, rate).tokens_per_step
    assert speculative.acceptance_from_length(length, draft_len) == pytest.approx(rate, abs=1e-9)


def test_each_methods_rate_is_its_sources_length_or_figure():
    # The rates come from a published mean acceptance length (or rate), never from a fit.
    eagle, ngram = METHODS["eagle3"], METHODS["ngram"]
    assert Speculative("eagle3").tokens_per_step == pytest.approx(2.156, abs=2e-3)
    assert Speculative("ngram").tokens_per_step == pytest.approx(4.59, abs=2e-3)
    assert "2.156" in eagle.source and "4.59" in ngram.source
    assert "85%" in METHODS["mtp"].source and "DeepSeek-V3 Technical" in METHODS["mtp"].source
    for method in METHODS.values():
        assert any(cited in method.source for cited in ("pull request", "2024", "Leviathan"))


def test_a_draft_model_is_read_from_the_registry():
    draft = Speculative("draft", draft_len=4, acceptance_rate=0.7, draft_model="llama-3.1-8b")
    assert draft.draft is ia.model("llama-3.1-8b")
    assert draft.describe()["draft_model"] == "llama-3.1-8b"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"method": "eagle3", "draft_len": 0}, "draft_len must be a whole number from 1 to 64"),
        ({"method": "eagle3", "draft_len": 2.5}, "draft_len must be a whole number"),
        ({"method": "eagle3", "acceptance_rate": 1.0}, r"acceptance_rate .* 0 to 1 \(not 1\)"),
        ({"method": "eagle3", "acceptance_rate": -0.1}, r"acceptance_rate .* 0 to 1 \(not 1\)"),
        ({"method": "medusa"}, "method must be one of.*eagle3"),
        ({"method": "draft", "draft_model": "llama-3.1-8b"}, "no default draft_len"),
        ({"method": "draft", "draft_len": 4, "acceptance_rate": 0.7}, "draft_model names"),
        ({"method": "mtp", "draft_model": "llama-3.1-8b"}, "for method='draft' only"),
        ({"method": "eagle3", "hypothetical": True}, "for method='mtp' only"),
        ({"method": "mtp", "hypothetical": "yes"}, "hypothetical must be True or False"),
    ],
)
def test_bad_speculation_is_refused_by_name(arguments, message):
    with pytest.raises(ia.ArgumentError, match=message):
        Speculative(**arguments)


@pytest.mark.slow
def test_mtp_drafts_only_with_a_module_the_model_ships_or_says_hypothetical():
    # DeepSeek-V3's config sets num_nextn_predict_layers 1; Llama's sets none.
    assert speculative.mtp_models() == ("deepseek-v3",)
    assert ia.model("deepseek-v3").mtp_modules == 1 and ia.model("llama-3.1-8b").mtp_modules == 0
    with pytest.raises(ia.ArgumentError) as refused:
        ia.calculate("llama-3.1-8b", "h100-sxm", speculative="mtp")
    for named in ("llama-3.1-8b", "registry models with one: deepseek-v3", "hypothetical=True"):
        assert named in str(refused.value)
    with pytest.raises(ia.ArgumentError, match="ships no multi-token"):
        ia.steady_state(
            "llama-3.1-8b", "h100-sxm", requests_per_s=2.0, speculative={"method": "mtp"}
        )
    # Asked for as hypothetical, the same head is timed: the step of MTP's default drafts.
    plain = ia.calculate("llama-3.1-8b", "h100-sxm")["tpot"]
    what_if = Speculative("mtp", hypothetical=True)
    timed = ia.calculate("llama-3.1-8b", "h100-sxm", speculative=what_if)
    assert timed["tpot"] < plain and timed["speculative"] == Speculative("mtp").describe()
    dict_form = {"method": "mtp", "hypothetical": True}
    assert ia.calculate("llama-3.1-8b", "h100-sxm", speculative=dict_form) == timed
    # A from_hf_config model keeps its config's module, so it drafts with it as the registry's.
    path = resources.files("inference_arithmetic.models.configs").joinpath("deepseek-v3.json")
    config = json.loads(path.read_text())["config"]
    assert ia.ModelConfig.from_hf_config(config).mtp_modules == 1
    assert ia.ModelConfig.from_hf_config({**config, "num_nextn_predict_layers": 0}).mtp_modules == 0


def test_a_draft_of_another_tokenizer_is_refused_and_padding_is_not_another():
    drafting = {"method": "draft", "draft_len": 4, "acceptance_rate": 0.7}
    with pytest.raises(ia.ArgumentError) as refused:
        ia.calculate("llama-3.1-8b", "h100-sxm", speculative={**drafting, "draft_model": "gpt2"})
    for named in ("draft_model gpt2", "50,257", "llama-3.1-8b one of 128,256", "tokenizer"):
        assert named in str(refused.value)
    # One tokenizer, padded apart: Qwen3 8B (151,936) drafting for Qwen2.5 7B (152,064), GPT-2
    # (50,257) for GPT-J (50,400); and the book's pair, Llama 3.1 8B for 70B.
    for draft, target, n_gpus in [("qwen3-8b", "qwen2.5-7b", 1), ("gpt2", "gpt-j-6b", 1),
                                  ("llama-3.1-8b", "llama-3.1-70b", 4)]:  # fmt: skip
        spec = {**drafting, "draft_model": draft}
        assert ia.Scenario(target, "h100-sxm", n_gpus=n_gpus, prompt_len=1024, speculative=spec)


def test_a_scenario_takes_a_name_a_dict_or_an_object_alike():
    made = Speculative("eagle3", draft_len=3)
    for given in ("eagle3", {"method": "eagle3", "draft_len": 3}, made):
        s = ia.Scenario("llama-3.1-8b", "h100-sxm", speculative=given)
        assert s.speculative.method == "eagle3"
    assert ia.Scenario("llama-3.1-8b", "h100-sxm", speculative={"method": "eagle3",
                       "draft_len": 3}).speculative == made  # fmt: skip
    with pytest.raises(ia.ArgumentError, match="speculative must be None, a method"):
        ia.Scenario("llama-3.1-8b", "h100-sxm", speculative=3)


@pytest.mark.parametrize("length", [0.5, 6.0, 7.5])
def test_an_impossible_acceptance_length_is_refused(length):
    # Five drafted tokens yield from 1 up to (not including) 6 tokens a step.
    with pytest.raises(ia.ArgumentError, match="lies from 1 up to"):
        speculative.acceptance_from_length(length, 5)


# --- A draft model's memory: its weights and its own KV cache beside the target's -------------

DRAFT = {"method": "draft", "draft_len": 4, "acceptance_rate": 0.7, "draft_model": "llama-3.1-8b"}
TARGET = ("llama-3.1-70b", "h100-sxm")  # Llama 3.1 8B shares its tokenizer: the usual pair


def _drafts_bytes(n_gpus, batch=0, tokens=1):
    """The draft model's bytes on each of ``n_gpus`` GPUs, from chapter 04's and 06's counts
    of Llama 3.1 8B (its registry config.json, meta-llama/Llama-3.1-8B) in bf16: its weights
    and the cache of ``batch`` requests of ``tokens``, its 8 KV heads split over the GPUs."""
    draft = ia.model("llama-3.1-8b")
    cache = ia.kv_cache_bytes(draft, batch=batch, context_len=tokens, dtype="bf16") if batch else 0
    return (2 * ia.param_count(draft) + cache) / n_gpus


@pytest.mark.slow
def test_a_draft_models_weights_and_cache_count_in_calculates_memory():
    args = dict(batch=8, prompt_len=2048, output_len=256, n_gpus=4)
    plain = ia.calculate(*TARGET, **args, speculative="eagle3")["memory"]
    drafted = ia.calculate(*TARGET, **args, speculative=DRAFT)["memory"]
    assert "draft" not in plain  # a head's few weights are not counted
    assert drafted["draft"] == pytest.approx(_drafts_bytes(4, 8, 2048 + 256), rel=1e-12)
    assert drafted["total"] == pytest.approx(plain["total"] + drafted["draft"], rel=1e-12)


def test_a_draft_model_takes_room_from_the_batch():
    plain = ia.max_batch(*TARGET, context_len=4096, n_gpus=4)
    drafted = ia.max_batch(*TARGET, context_len=4096, n_gpus=4, speculative=DRAFT)
    # The budget less both models' weights and the reserve, over both models' cache a request.
    memory = ia.calculate(*TARGET, batch=1, prompt_len=4094, output_len=2, n_gpus=4)["memory"]
    free = memory["budget"] - memory["weights"] - memory["activations"] - _drafts_bytes(4)
    per_request = memory["kv_cache"] + _drafts_bytes(4, 1, 4096) - _drafts_bytes(4)
    assert drafted == int(free // per_request) < plain
    # The continuous engine admits as many (its capacity is the same formula at T + O).
    spec = ia.Scenario(*TARGET, n_gpus=4, prompt_len=4000, output_len=96, in_waves=True,
                       speculative=DRAFT)  # fmt: skip
    assert engine_of(spec).capacity == drafted


def test_a_target_that_fits_alone_may_not_fit_beside_its_draft():
    args = dict(batch=1, prompt_len=2048, output_len=256, n_gpus=2)
    assert ia.calculate(*TARGET, **args)["memory"]["fits"]
    with pytest.raises(ia.ArgumentError, match="does not fit") as error:
        ia.calculate(*TARGET, **args, speculative=DRAFT)
    assert error.value.check == "fit"
