"""Chapter 03 (the transformer's parameters): exact counts of GPT-2, of GQA's saving in
Llama 3.1 70B, and of a model given by its ``config.json``.

The inputs are the sizes each exercise states: GPT-2 small's (with the registry's GPT-2 for
its structure: classic feed-forward, biases, LayerNorm, tied head, learned positions), the
registry's Llama 3.1 70B (the chapter's model), and the Llama-shaped ``CONFIG`` the exercise
prints. Parameter counts are exact: a near miss is a missing block, not rounding.
"""

import dataclasses

import inference_arithmetic as ia
from inference_arithmetic.core.symbols import D, H, H_kv, L, d_h
from inference_arithmetic.exercises import EXACT, Part, register
from inference_arithmetic.formulas import transformer as tf

GPT2 = dataclasses.replace(  # the exercise's sizes, in the registry's GPT-2 structure
    ia.model("gpt2"), vocab_size=50257, max_positions=1024, d_model=768, n_layers=12, d_ff=4 * 768
)
LLAMA = "llama-3.1-70b"
CONFIG = {  # the config.json of exercise ex-params-from-config
    "model_type": "llama",
    "vocab_size": 32000,
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "num_hidden_layers": 22,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
}


def _at(expr, model):
    """``expr`` (a count) at the sizes of ``model``, exactly."""
    names = {symbol.name for symbol in expr.free_symbols}
    return int(ia.evaluate(expr, **{k: v for k, v in model.sizes().items() if k in names}))


def _ratio(wrong, model):
    """A count with a mistake, over the right count of ``model``: the key of a hint."""
    return _at(wrong, model) / ia.param_count(model)


def _untied(model):
    return dataclasses.replace(model, tied_embeddings=not model.tied_embeddings)


register(
    "03-transformer-params",
    "ex-params-gpt2",
    Part(
        "params",
        lambda: ia.param_count(GPT2),
        unit="parameters",
        tolerance=EXACT,
        hints={
            # Each small block (positions, biases, norms) is under 1% of the model, too close
            # together to tell apart: one hint, at the classic approximation, names them all.
            _ratio(tf.classic_approximation(), GPT2): "close: check the blocks that "
            "12 L D^2 + V D leaves out: the position table (P x D), a bias on every linear "
            "layer, and a weight and a bias per LayerNorm (two per layer and a final one)",
            _ratio(tf.params(_untied(GPT2)), GPT2): "GPT-2's output head is tied to the token "
            "embedding: count the V x D table once",
        },
    ),
    written=("Where does your count differ from $12 L D^2 + V D$?",),
)


def _gqa_saving():
    llama = ia.model(LLAMA)
    saved = L * (tf.attention_params(llama).subs(H_kv, H) - tf.attention_params(llama))
    return _at(saved, llama)


_llama = ia.model(LLAMA)
_saved = _gqa_saving()
register(
    "03-transformer-params",
    "ex-params-gqa",
    Part(
        "saved",
        _gqa_saving,
        unit="parameters",
        hints={
            0.5: "did you count both keys and values? Each loses the missing heads: "
            "2 D (H - H_kv) d_h per layer",
            1 / _llama.n_layers: "that is one layer's saving: every one of the L layers saves it",
            _at(2 * L * D * H_kv * d_h, _llama) / _saved: "that is what GQA keeps, "
            "the keys and values of H_kv heads; the saving is those of the H - H_kv heads it "
            "drops",
            _at(2 * L * D * H * d_h, _llama) / _saved: "that is all of multi-head "
            "attention's keys and values; GQA still keeps H_kv of the heads",
        },
    ),
)


def _small():
    return ia.ModelConfig.from_hf_config(CONFIG, name="small-llama")


def _classic(model):
    return dataclasses.replace(model, ffn="classic")


_config = _small()
_tied = _ratio(tf.params(_untied(_config)), _config)
_two_matrices = _ratio(tf.params(_classic(_config)), _config)
_mha = _ratio(tf.params(_config).subs(H_kv, H), _config)
register(
    "03-transformer-params",
    "ex-params-from-config",
    Part(
        "params",
        lambda: ia.param_count(_small()),
        unit="parameters",
        tolerance=EXACT,
        hints={
            _tied: "a Llama config without tie_word_embeddings has a separate output head, V x D",
            _two_matrices: "Llama's feed-forward block is gated: three D x F matrices, not two",
            _mha: "keys and values have num_key_value_heads heads, not num_attention_heads "
            "(grouped-query attention)",
        },
    ),
)
