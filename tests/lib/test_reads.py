"""What a build reads of a model (core/reads.py): models share a build only where they agree on
everything it read."""

import dataclasses
import functools

import pytest

import inference_arithmetic as ia
from inference_arithmetic.core.reads import Reads, shared


@dataclasses.dataclass(frozen=True)
class Shape:
    name: str
    layers: int
    width: int
    gated: bool = False

    @property
    def wide(self) -> bool:
        return self.width > 1000

    def size(self) -> int:
        return self.layers * self.width


def by_gate(shape):
    return ["gate" if shape.gated else "plain"]


def test_models_that_agree_on_what_was_read_share_the_build():
    small, large = Shape("small", 2, 64), Shape("large", 80, 8192)
    assert Reads(by_gate, small).values == {"gated": False}
    assert shared(by_gate, small) is shared(by_gate, large)  # built once
    gated = Shape("gated", 2, 64, gated=True)
    assert shared(by_gate, gated) == ["gate"]  # a value read differs: built again
    assert shared(by_gate, gated) is not shared(by_gate, small)


def by_width(shape):
    return [shape.wide]


def test_a_property_is_read_by_its_value_and_a_method_by_what_it_reads():
    # The build sees whether the shape is wide, not its width: a property's value is read.
    assert Reads(by_width, Shape("a", 2, 64)).values == {"wide": False}
    assert shared(by_width, Shape("a", 2, 64)) is shared(by_width, Shape("b", 2, 128))
    assert shared(by_width, Shape("c", 2, 4096)) == [True]
    # A method's reads of the instance are the build's.
    assert Reads(lambda s: s.size(), Shape("a", 2, 64)).values == {"layers": 2, "width": 64}


@pytest.mark.parametrize(
    "whole", [repr, vars, dataclasses.asdict, lambda s: dataclasses.replace(s)]
)
def test_reading_the_whole_model_reads_every_field(whole):
    shape = Shape("a", 2, 64)
    read = Reads(whole, shape).values
    assert {k: read[k] for k in ("name", "layers", "width", "gated")} == dataclasses.asdict(shape)


@functools.lru_cache
def cached_layers(shape):
    return shape.layers


def test_a_cache_keyed_on_the_model_works_inside_a_build_and_records_nothing_of_its_own():
    shape = Shape("a", 2, 64)
    assert cached_layers(shape) == 2  # the model's own entry, built outside
    reads = Reads(lambda s: (cached_layers(s), cached_layers(s), hash(s), s == shape), shape)
    assert reads.built == (2, 2, hash(shape), False)  # the copy is not the model
    assert reads.values == {"layers": 2}  # read by the build, not by the cache's hash


def test_a_second_build_of_a_model_records_what_a_cache_inside_it_reads():
    # Each build reads its own copy, which equals no other: a cache keyed on the model, filled
    # by the first build, would otherwise answer the second with nothing recorded, and the
    # second build would be shared with a model that differs in what the cache read.
    shape = Shape("a", 2, 64)
    first = Reads(lambda s: cached_layers(s), shape)
    second = Reads(lambda s: (cached_layers(s), s.width), shape)
    assert first.values == {"layers": 2}
    assert second.values == {"layers": 2, "width": 64}
    other = Shape("a", 5, 64)  # another layer count: not the second build's model
    assert not second.match(other)


def test_a_build_inside_another_reads_for_both():
    def outer(shape):
        inner = Reads(by_gate, shape)
        return inner.values, inner.built, shape.width

    reads = Reads(outer, Shape("a", 2, 64))
    assert reads.built == ({"gated": False}, ["plain"], 64)
    assert reads.values == {"gated": False, "width": 64}  # the outer result holds the inner's
    # A shared build inside another: found again or built, what it read is the outer's too.
    again = Reads(lambda s: (shared(by_gate, s), s.layers), Shape("b", 3, 64))
    assert again.values == {"gated": False, "layers": 3}


def test_a_registry_model_is_read_as_the_library_reads_it():
    llama = ia.model("llama-3.1-8b")
    reads = Reads(lambda m: (m.is_moe, m.n_window_layers), llama)
    assert reads.values == {"is_moe": False, "n_window_layers": 0}  # not is_moe's n_experts
    assert Reads(lambda m: m.sizes(), llama).values.items() >= llama.sizes().items()
    assert shared(lambda m: m.is_moe, llama) is False
