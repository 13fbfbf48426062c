"""The throughput-interactivity frontier (``serving.frontier``, ``ia.frontier``): its points are
a Pareto set, each the closed loop of its deployment, over the layouts that fit; its
refusals name the argument."""

import pytest

import inference_arithmetic as ia
from inference_arithmetic.serving import frontier as frontier_module
from inference_arithmetic.serving.frontier import CONCURRENCY, POINT_KEYS, layouts, pareto

H100 = "h100-sxm"
USERS = (1, 8, 64, 512)


@pytest.fixture(scope="module")
def points_70b():
    return ia.frontier("llama-3.1-70b", H100, most_gpus=8, concurrency=USERS)


def _dominates(a, b):
    keys = ("throughput_per_gpu", "tokens_per_s_per_user")
    return all(a[k] >= b[k] for k in keys) and any(a[k] > b[k] for k in keys)


def test_no_point_of_the_frontier_is_dominated(points_70b):
    assert len(points_70b) > 2
    assert all(list(p) == list(POINT_KEYS) for p in points_70b)
    for p in points_70b:
        assert not any(_dominates(q, p) for q in points_70b)
    # The most tokens per user first, then ever more tokens per GPU.
    for a, b in zip(points_70b, points_70b[1:], strict=False):
        assert a["tokens_per_s_per_user"] > b["tokens_per_s_per_user"]
        assert a["throughput_per_gpu"] < b["throughput_per_gpu"]


def test_each_point_is_the_closed_loop_of_its_deployment(points_70b):
    for p in points_70b:
        r = ia.steady_state(
            "llama-3.1-70b",
            H100,
            concurrency=p["concurrency"],
            n_gpus=p["n_gpus"],
            parallel=p["parallel"],
        )
        assert p["throughput"] == r["throughput"] and p["ttft"] == r["ttft"]
        assert p["tpot"] == r["tpot"] and p["tokens_per_s_per_user"] == 1 / r["tpot"]
        assert p["throughput_per_gpu"] == r["throughput"] / p["n_gpus"]


def test_the_frontier_is_the_pareto_set_of_every_point_swept(points_70b):
    # Every layout that fits, every count of users: none of them beats a point kept, and each
    # point dropped is beaten by one kept.
    swept = []
    for n_gpus, parallel in layouts("llama-3.1-70b", 8):
        try:
            for users in USERS:
                r = ia.steady_state(
                    "llama-3.1-70b", H100, concurrency=users, n_gpus=n_gpus, parallel=parallel
                )
                swept.append(
                    {
                        "throughput_per_gpu": r["throughput"] / n_gpus,
                        "tokens_per_s_per_user": 1 / r["tpot"],
                        "n_gpus": n_gpus,
                        "concurrency": users,
                    }
                )
        except ValueError:
            continue  # does not fit on so few GPUs
    assert {p["n_gpus"] for p in swept} == {2, 4, 8}  # 140 GB of weights: not on one H100
    for p in swept:
        kept = any(
            p["n_gpus"] == q["n_gpus"] and p["concurrency"] == q["concurrency"] for q in points_70b
        )
        assert kept or any(_dominates(q, p) for q in points_70b)


def test_pareto_keeps_one_of_equal_points_and_drops_the_beaten():
    def point(per_gpu, per_user, n_gpus=1, users=1):
        return {
            "throughput_per_gpu": per_gpu,
            "tokens_per_s_per_user": per_user,
            "n_gpus": n_gpus,
            "concurrency": users,
        }

    points = [point(10, 5, 2), point(10, 5, 1), point(9, 5), point(20, 1), point(5, 9), point(4, 8)]
    kept = pareto(points)
    assert [(p["throughput_per_gpu"], p["tokens_per_s_per_user"]) for p in kept] == [
        (5, 9),
        (10, 5),
        (20, 1),
    ]
    assert kept[1]["n_gpus"] == 1  # of the two equal, the one of fewer GPUs


def test_the_layouts_are_the_librarys_degrees():
    assert layouts("llama-3.1-8b", 8) == [(n, "tensor") for n in (1, 2, 4, 8)]
    moe = layouts("qwen3-30b-a3b", 4)
    assert (2, "expert-dp") in moe and (4, "expert") in moe and (1, "expert-dp") not in moe
    assert not any(parallel == "pipeline" for _, parallel in moe)
    doubling = zip(CONCURRENCY, CONCURRENCY[1:], strict=False)
    assert CONCURRENCY[0] == 1 and all(b == 2 * a for a, b in doubling)


@pytest.mark.slow  # compiles the expert-parallel steps, which the warm cache does not hold
def test_an_moe_frontier_sweeps_expert_parallelism():
    points = ia.frontier("qwen3-30b-a3b", H100, most_gpus=2, concurrency=(1, 64))
    assert {p["parallel"] for p in points} <= {"tensor", "expert", "expert-dp"}
    assert any(p["parallel"] != "tensor" for p in points)


@pytest.mark.parametrize(
    "keywords, message",
    [
        ({"most_gpus": 0}, "most_gpus must be a whole number from 1 to 512"),
        ({"most_gpus": 10**8}, "most_gpus must be a whole number from 1 to 512, got 100000000"),
        ({"concurrency": 0}, "concurrency must be a whole number from 1 up"),
        ({"concurrency": []}, "concurrency must name at least one count of users"),
        ({"n_gpus": 2}, "frontier sweeps n_gpus itself"),
        ({"parallel": "tensor", "replicas": 2}, "frontier sweeps parallel, replicas itself"),
        ({"output_len": 1}, "output_len must be a whole number from 2 up"),
        ({"prompt_len": 10**6}, "context window"),
    ],
)
def test_refusals_name_the_argument(keywords, message):
    with pytest.raises(ia.ArgumentError) as error:
        ia.frontier("llama-3.1-8b", H100, **{"concurrency": (1,), **keywords})
    assert message in str(error.value)


def test_nothing_that_fits_is_said():
    with pytest.raises(ia.ArgumentError) as error:
        ia.frontier("llama-3.1-70b", H100, most_gpus=1, concurrency=1)
    assert str(error.value) == frontier_module.NO_LAYOUT.format(
        model="llama-3.1-70b", most_gpus=1, gpu=H100, prompt_len=2048, output_len=256
    )
