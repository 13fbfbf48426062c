"""The command line: each subcommand's answer is the library's, in a table, JSON or CSV; bad
arguments exit with status 2 and a message naming them."""

import argparse
import csv
import io
import json
import re
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

import inference_arithmetic as ia
from inference_arithmetic.cli import flagged, main
from inference_arithmetic.cli import parser as cli_parser


def run(capsys, *argv) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def as_json(capsys, *argv):
    return json.loads(run(capsys, *argv, "--json"))


def refused(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as exit:
        main(list(argv))
    assert exit.value.code == 2
    return capsys.readouterr().err


def shell(*argv, command=(sys.executable, "-m", "inference_arithmetic")):
    return subprocess.run([*command, *argv], capture_output=True, text=True, timeout=120)


@pytest.fixture
def config_folder(tmp_path):
    """A user's model folder: llama-3.1-8b's config.json, as downloaded."""
    shipped = resources.files("inference_arithmetic.models.configs") / "llama-3.1-8b.json"
    entry = json.loads(shipped.read_text())
    config = entry.get("config", entry)
    folder = tmp_path / "Meta-Llama-3.1-8B"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return folder


# The tryout's five questions, one line each.


def test_params_and_kv_per_token_of_a_config_json(capsys, config_folder):
    m = ia.model("llama-3.1-8b")
    for given in (config_folder / "config.json", config_folder):
        got = as_json(capsys, "count", str(given))
        assert got["params"] == ia.param_count(m) == 8_030_261_248
        assert (
            got["kv_cache_bytes_per_token"]
            == ia.kv_cache_bytes(m, batch=1, context_len=1)
            == 131_072
        )
        assert got["model"] == "Meta-Llama-3.1-8B"
    text = run(capsys, "count", str(config_folder / "config.json"))
    assert "8,030,261,248" in text and "131 kB" in text


def test_memory_ttft_tokens_per_user_and_cost_at_a_price(capsys):
    argv = ("calculate", "llama-3.1-8b", "h100-sxm", "--batch", "32", "--prompt-len", "3840")
    got = as_json(capsys, *argv, "--output-len", "256", "--price-per-hour", "2.5")
    want = ia.calculate("llama-3.1-8b", "h100-sxm", batch=32, prompt_len=3840, price_per_hour=2.5)
    assert got["memory"]["total"] == want["memory"]["total"]
    assert got["ttft"] == want["ttft"] and got["tokens_per_s_per_user"] == 1 / want["tpot"]
    assert got["cost"]["output"] == want["cost"]["output"] and got["cost"]["price_per_hour"] == 2.5
    assert got["cost"]["blended"] == want["cost"]["blended"]
    assert got["band"]["ttft"] == list(want["band"]["ttft"])
    text = run(capsys, *argv, "--price-per-hour", "2.5")
    assert "memory per GPU" in text and ia.format.nbytes(want["memory"]["total"]) in text
    assert "$2.5" in text and "tokens/s per user" in text


def test_fewest_gpus_for_a_rate_and_two_targets(capsys):
    argv = ("plan", "llama-3.1-70b", "h100-sxm", "--rate", "10", "--ttft", "0.5", "--tpot", "0.05")
    got = as_json(capsys, *argv)
    want = ia.plan(
        "llama-3.1-70b",
        "h100-sxm",
        requests_per_s=10,
        prompt_len=2048,
        output_len=256,
        ttft_target=0.5,
        tpot_target=0.05,
    )
    given = got.pop("inputs")
    assert got == json.loads(json.dumps(want))
    assert got["ttft"] <= 0.5 and got["tpot"] <= 0.05
    assert given["requests_per_s"] == 10 and given["percentile"] == "mean"


# Each subcommand and output.


def test_steady_state_and_kernels_are_the_librarys(capsys):
    got = as_json(capsys, "steady-state", "llama-3.1-8b", "h100-sxm", "--rate", "2")
    assert got["tpot"] == ia.steady_state("llama-3.1-8b", "h100-sxm", requests_per_s=2.0)["tpot"]
    rows = list(csv.DictReader(io.StringIO(run(capsys, "kernels", "llama-3.1-8b", "h100-sxm",
                                                "--batch", "8", "--csv"))))  # fmt: skip
    want = ia.kernels("llama-3.1-8b", "h100-sxm", batch=8)
    assert [r["kernel"] for r in rows] == [w["kernel"] for w in want]
    assert [float(r["time"]) for r in rows] == [w["time"] for w in want]


def test_a_closed_loop_and_the_frontier_are_the_librarys(capsys):
    argv = ("steady", "llama-3.1-8b", "h100-sxm", "--concurrency", "32")
    got = as_json(capsys, *argv)
    want = ia.steady_state("llama-3.1-8b", "h100-sxm", concurrency=32)
    assert got["inputs"]["concurrency"] == 32 and got["inputs"]["requests_per_s"] is None
    assert {k: got[k] for k in want} == json.loads(json.dumps(want))
    assert "first wave's time to first token" in run(capsys, *argv)
    argv = ("frontier", "llama-3.1-8b", "h100-sxm", "--most-gpus", "2", "--concurrency", "1", "64")
    got = as_json(capsys, *argv)
    want = ia.frontier("llama-3.1-8b", "h100-sxm", most_gpus=2, concurrency=[1, 64])
    assert got["rows"] == json.loads(json.dumps(want))
    assert got["inputs"]["most_gpus"] == 2 and got["inputs"]["concurrency"] == [1, 64]
    table = run(capsys, *argv).splitlines()
    assert table[0].split()[:3] == ["GPUs", "parallelism", "users"] and len(table) == len(want) + 1


def test_kernels_takes_a_prefills_prompt_len_and_a_decode_steps_context_len(capsys):
    argv = ("kernels", "llama-3.1-8b", "h100-sxm", "--batch", "2")
    got = as_json(capsys, *argv, "--phase", "prefill", "--prompt-len", "512")
    want = ia.kernels("llama-3.1-8b", "h100-sxm", batch=2, prompt_len=512, phase="prefill")
    assert [r["time"] for r in got["rows"]] == [w["time"] for w in want]
    assert got["inputs"]["prompt_len"] == 512 and got["inputs"]["context_len"] is None
    for wrong, right in (("--context-len", "--prompt-len"), ("--prompt-len", "--context-len")):
        phase = "prefill" if wrong == "--context-len" else "decode"
        with pytest.raises(SystemExit) as exit:
            main([*argv, "--phase", phase, wrong, "512"])
        assert exit.value.code == 2
        assert f"give {right}, not {wrong}" in capsys.readouterr().err


def test_csv_of_one_answer_is_one_row_of_flat_keys(capsys):
    text = run(capsys, "calculate", "llama-3.1-8b", "h100-sxm", "--csv")
    (row,) = csv.DictReader(io.StringIO(text))
    want = ia.calculate("llama-3.1-8b", "h100-sxm")
    assert float(row["memory.weights"]) == want["memory"]["weights"]
    assert float(row["band.tpot_low"]) == want["band"]["tpot"][0]


def test_a_pipeline_and_the_note_past_one_link_domain(capsys):
    argv = ("calculate", "llama-3.1-70b", "h100-sxm", "--batch", "8")
    got = as_json(capsys, *argv, "--n-gpus", "4", "--parallel", "pipeline")
    want = ia.calculate("llama-3.1-70b", "h100-sxm", n_gpus=4, batch=8, parallel="pipeline")
    assert got["parallel"] == "pipeline" and got["throughput"] == want["throughput"]
    text = run(capsys, *argv, "--n-gpus", "16")
    (note,) = ia.calculate("llama-3.1-70b", "h100-sxm", n_gpus=16, batch=8)["notes"]
    assert text.endswith(f"note: {note}\n") and "parallelism  " in text
    (row,) = csv.DictReader(io.StringIO(run(capsys, *argv, "--n-gpus", "16", "--csv")))
    assert row["notes"] == note


def test_the_registries_list(capsys):
    models = as_json(capsys, "models")
    assert [m["model"] for m in models] == ia.model_names()
    assert "h100-sxm" in run(capsys, "gpus")
    # Each GPU's board memory and the memory its budgets are taken from (the driver's, in
    # binary units: 85.5 GB on an "80 GB" H100), which ia.calculate reports as its capacity.
    gpus = {row["gpu"]: row for row in as_json(capsys, "gpus")}
    h100 = gpus["h100-sxm"]
    assert h100["memory_bytes"] == 80e9 < h100["usable_memory_bytes"]
    capacity = ia.calculate("llama-3.1-8b", "h100-sxm")["memory"]["capacity"]
    assert h100["usable_memory_bytes"] == capacity
    assert "usable" in run(capsys, "gpus").splitlines()[0]


def test_your_own_gpu_as_json(capsys, tmp_path):
    figures = {"name": "a6000", "peak_flop_rate": {"bf16": 155e12},
               "memory_bandwidth": 768e9, "memory_bytes": 48e9}  # fmt: skip
    path = tmp_path / "a6000.json"
    path.write_text(json.dumps(figures))
    want = ia.calculate("llama-3.1-8b", ia.GPU(**figures))
    for given in (json.dumps(figures), str(path)):
        assert as_json(capsys, "calc", "llama-3.1-8b", given)["tpot"] == want["tpot"]
    assert "unexpected keyword argument 'bandwidth'" in refused(
        capsys, "calc", "llama-3.1-8b", '{"name": "x", "bandwidth": 1}'
    )


@pytest.mark.parametrize(
    "argv, message",
    [
        (("calculate", "llama-3.1-8b", "h100"), "unknown gpu 'h100'; close matches: .*h100-sxm"),
        (("calculate", "llama-3.1-8b", "h100-sxm", "--batch", "0"), "--batch must be a whole"),
        # The flag typed, not the library's name of the argument.
        (("steady", "llama-3.1-8b", "h100-sxm", "--rate", "0"), "error: --rate must be a positive"),
        (
            ("plan", "llama-3.1-8b", "h100-sxm", "--rate", "1", "--ttft", "500", "--tpot", "0.05"),
            "error: --ttft must be a positive number of seconds up to 60, got 500",
        ),
        (("calc", "llama-3.1-8b", "h100-sxm", "--prompt-len=0"), "error: --prompt-len must be"),
        (("calculate", "llama-3.1-8b", "h100-sxm", "--batch", "x"), "argument --batch: invalid"),
        (("calculate", "llama-3.1-405b", "h100-sxm"), "does not fit: needs"),
        (("calculate", "llama-3.1-8b", "h100-sxm", "--dtype", "bf17"), "dtype must be one of"),
        (("count", "no/such/config.json"), "unknown model 'no/such/config.json'"),
        (("plan", "llama-3.1-8b", "h100-sxm", "--rate", "1", "--ttft", "0.5"), "--tpot"),
        (("calculate", "llama-3.1-8b", "h100-sxm", "--json", "--csv"), "not allowed with"),
        (
            ("steady", "llama-3.1-8b", "h100-sxm", "--rate", "2", "--concurrency", "4"),
            "error: --rate .* or --concurrency must be given, not both",
        ),
        (("steady", "llama-3.1-8b", "h100-sxm", "--concurrency", "0"), "error: --concurrency must"),
        (("frontier", "llama-3.1-8b", "h100-sxm", "--most-gpus", "0"), "error: --most-gpus must"),
        (("frontier", "llama-3.1-8b", "h100-sxm", "--concurrency", "0"), "error: --concurrency"),
    ],
)
def test_a_bad_argument_exits_2_naming_it(capsys, argv, message):

    assert re.search(message, refused(capsys, *argv))


@pytest.mark.slow
def test_the_entry_points_print_the_version_and_help_with_an_example():
    done = shell("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"ia {ia.__version__}"
    done = shell("calculate", "--help")
    assert done.returncode == 0 and "ia calculate llama-3.1-8b h100-sxm --batch 32" in done.stdout
    script = Path(sys.executable).parent / "ia"  # the console scripts, installed by pip
    for name in ("ia", "inference-arithmetic"):
        path = shutil.which(name, path=str(script.parent))
        assert path, f"no console script {name} beside {sys.executable}"
    done = shell("count", "llama-3.1-8b", "--json", command=(str(script),))
    assert done.returncode == 0 and json.loads(done.stdout)["params"] == 8_030_261_248
    done = shell("calculate", "llama-3.1-8b", "h100-sxm", "--batch", "-3")
    assert done.returncode == 2 and "batch must be a whole number from 1 up, got -3" in done.stderr


@pytest.mark.slow
def test_prefix_cache_and_speculation_are_options(capsys):
    got = as_json(capsys, "calculate", "llama-3.1-8b", "h100-sxm", "--prefix-hit-rate", "0.5",
                  "--speculative", "eagle3", "--draft-len", "3")  # fmt: skip
    want = ia.calculate("llama-3.1-8b", "h100-sxm", prefix_hit_rate=0.5,
                        speculative={"method": "eagle3", "draft_len": 3})  # fmt: skip
    assert got["ttft"] == want["ttft"] and got["tpot"] == want["tpot"]
    assert got["speculative"]["draft_len"] == 3


@pytest.mark.slow
def test_the_engine_and_its_token_budget_are_options(capsys):
    # The p99 plan of issue 35 on H100s: today's vLLM (the default, --engine vllm, its newest,
    # vllm@0.11: 8,192 tokens a step on an H100) needs 16; the 2025 profile's 512-token budget
    # (--engine vllm@0.7) 32, and with today's budget that profile's answer is 0.11's too.
    argv = ("plan", "llama-3.1-70b", "h100-sxm", "--rate", "10", "--ttft", "0.5", "--tpot", "0.05")
    asked = dict(requests_per_s=10, prompt_len=2048, output_len=256, ttft_target=0.5,
                 tpot_target=0.05, percentile=99)  # fmt: skip
    argv += ("--percentile", "99")
    today = as_json(capsys, *argv)
    named = as_json(capsys, *argv, "--engine", "vllm")
    old = as_json(capsys, *argv, "--engine", "vllm@0.7")
    assert today["inputs"]["engine"] is None and named["inputs"]["engine"] == "vllm"  # default
    assert named["gpus"] == today["gpus"] and (today["gpus"], old["gpus"]) == (16, 32)
    budget = as_json(capsys, *argv, "--engine", "vllm@0.7", "--token-budget", "8192")
    assert budget.pop("inputs")["token_budget"] == 8192
    want = ia.plan("llama-3.1-70b", "h100-sxm", **asked, engine="vllm@0.7", token_budget=8192)
    assert budget == json.loads(json.dumps(want))
    assert budget["gpus"] < old["gpus"]
    assert "unknown engine" in refused(capsys, *argv, "--engine", "vllm@0.5")
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    assert "vllm@0.11" in capsys.readouterr().out
    got = as_json(capsys, "calculate", "llama-3.1-8b", "h100-sxm", "--token-budget", "4096")
    assert got["memory"] == ia.calculate("llama-3.1-8b", "h100-sxm", token_budget=4096)["memory"]
    assert "--token-budget" in refused(capsys, "calculate", "llama-3.1-8b", "h100-sxm",
                                       "--token-budget", "0")  # fmt: skip


def test_drafting_options_without_speculation_are_refused(capsys):
    err = refused(capsys, "steady-state", "llama-3.1-8b", "h100-sxm", "--rate", "1",
                  "--draft-len", "3")  # fmt: skip
    assert "--draft-len describe speculative decoding: give --speculative too" in err
    err = refused(capsys, "calculate", "llama-3.1-8b", "h100-sxm", "--prefix-hit-rate", "2")
    assert "error: --prefix-hit-rate must be a number from 0 to 1, got 2.0" in err


def test_expert_parallelism_and_its_imbalance(capsys):
    argv = ("calculate", "deepseek-v3", "h200", "--n-gpus", "8", "--parallel", "expert-dp")
    got = as_json(capsys, *argv, "--expert-imbalance", "1.5")
    want = ia.calculate("deepseek-v3", "h200", n_gpus=8, parallel="expert-dp", expert_imbalance=1.5)
    assert got["parallel"] == "expert-dp" and got["tpot"] == want["tpot"]
    assert got["expert_imbalance"] == 1.5 and got["memory"] == want["memory"]
    default = as_json(capsys, *argv)
    assert default["expert_imbalance"] == ia.timing.DEFAULT_EXPERT_IMBALANCE
    assert default["tpot"] < got["tpot"]  # the busiest GPU sets the pace


# Every subcommand that takes inputs: its --json carries them, as it took them (issue 36).
SUBCOMMANDS = {
    "count": ("llama-3.1-8b",),
    "calculate": ("llama-3.1-8b", "h100-sxm", "--batch", "4"),
    "steady-state": ("llama-3.1-8b", "h100-sxm", "--rate", "2"),
    "plan": ("llama-3.1-8b", "h100-sxm", "--rate", "2", "--ttft", "1", "--tpot", "0.05"),
    "goodput": ("llama-3.1-8b", "h100-sxm", "--ttft", "1", "--tpot", "0.05"),
    "kernels": ("llama-3.1-8b", "h100-sxm", "--batch", "4"),
    "frontier": ("llama-3.1-8b", "h100-sxm", "--most-gpus", "1", "--concurrency", "1", "8"),
}


def _subcommands():
    top = cli_parser()
    actions = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    return {name: p for name, p in actions.choices.items() if name in actions._name_parser_map}


def test_every_subcommand_is_probed_below():
    # A new subcommand with arguments joins SUBCOMMANDS; models and gpus take none.
    taking = {
        name
        for name, p in _subcommands().items()
        if any(a.dest not in ("help", "output") for a in p._actions)
    }
    assert taking - {"calc", "steady"} == set(SUBCOMMANDS)


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_every_subcommands_json_carries_its_inputs(capsys, command):
    argv = SUBCOMMANDS[command]
    options = {a.dest for a in _subcommands()[command]._actions} - {"help", "output"}
    lengths = ("--prompt-len", "1024") if "prompt_len" in options else ()
    if command == "kernels":  # a prompt is a prefill's
        lengths += ("--phase", "prefill")
    got = as_json(capsys, command, *argv, *lengths)
    given = got["inputs"]
    assert given["model"] == "llama-3.1-8b"
    names = {"rate": "requests_per_s", "ttft": "ttft_target", "tpot": "tpot_target"}
    assert set(given) == {names.get(o, o) for o in options}
    if lengths:
        assert given["gpu"] == "h100-sxm" and given["prompt_len"] == 1024
        if "output_len" in options:  # kernels times one step: no output
            assert given["output_len"] == 256  # a default is taken too
    if "--rate" in argv:
        assert given["requests_per_s"] == 2.0
    if command == "kernels":  # records: beside the inputs, as rows
        assert got["rows"][-1]["kernel"] == "step"
    if command == "frontier":
        assert given["concurrency"] == [1, 8] and got["rows"][0]["concurrency"] == 1
    for listing in ("models", "gpus"):  # no inputs: the registry, as a list
        assert isinstance(as_json(capsys, listing), list)


def _numbers(command):
    """Each option of ``command`` that takes a number."""
    return [
        a.option_strings[0]
        for a in _subcommands()[command]._actions
        if a.option_strings and a.type in (int, float)
    ]


@pytest.mark.parametrize("command", sorted(set(SUBCOMMANDS) - {"count"}))
def test_every_refusal_names_the_flag_not_the_librarys_argument(capsys, command):
    # --rate 0 said "requests_per_s must be...", --context-len past the window "context_len +
    # 1 tokens": the command line speaks of its flags (issue 36).
    argv = list(SUBCOMMANDS[command])
    library_names = {"requests_per_s", "ttft_target", "tpot_target"}
    library_names |= {f.removeprefix("--").replace("-", "_") for f in _numbers(command)}
    checked = 0
    for flag in _numbers(command):
        if flag in argv:
            at = argv.index(flag)
            rest = argv[:at] + argv[at + 2 :]
        else:
            rest = argv
        for bad in ("0", "-1", "100000000"):
            try:
                main([command, *rest, flag, bad])
            except SystemExit as exit:
                assert exit.code == 2
                message = capsys.readouterr().err
                words = set(re.findall(r"(?<![-\w])[a-z][a-z0-9]*_[a-z0-9_]+", message))
                assert not words & library_names, (flag, bad, message)
                checked += 1
            else:
                capsys.readouterr()
    assert checked >= 3, command


def test_a_name_in_prose_keeps_its_word():
    message = "llama-3.1-8b does not fit: a batch of 8; batch must be a whole number"
    got = flagged(message, ["--batch", "8"], {"batch"})
    assert got == "llama-3.1-8b does not fit: a batch of 8; --batch must be a whole number"
    assert flagged("requests_per_s must be positive", ["--rate", "0"]) == "--rate must be positive"
    assert flagged("n_gpus must divide 32", [], {"n_gpus"}) == "--n-gpus must divide 32"
    assert flagged("n_gpus must divide 32", [], ()) == "n_gpus must divide 32"  # not its flag


def test_every_command_judges_targets_on_the_librarys_default_percentile(capsys):
    got = as_json(capsys, "goodput", "llama-3.1-8b", "h100-sxm", "--ttft", "1", "--tpot", "0.05")
    assert got.pop("inputs")["percentile"] == "mean" and ia.targets.DEFAULT_PERCENTILE is None
    want = ia.goodput("llama-3.1-8b", "h100-sxm", prompt_len=2048, output_len=256,
                      ttft_target=1, tpot_target=0.05)  # fmt: skip
    assert got["requests_per_s"] == want["requests_per_s"]


def test_a_prediction_outside_every_validated_group_says_so_instead_of_a_band(capsys):
    # The Blackwell group has too few rows for a band (serving.bands.VALIDATED): the table
    # shows no bracket and no footer about brackets, and says why in a note; a Hopper
    # prediction keeps its brackets and the footer, and no such note.
    blackwell = run(capsys, "calculate", "llama-3.1-8b", "b200")
    note = ia.calculate("llama-3.1-8b", "b200")["band_note"]
    assert f"note: {note}" in blackwell and "blackwell" in note
    assert "(in brackets" not in blackwell

    def first_token(text):
        return next(line for line in text.splitlines() if line.startswith("time to first token"))

    assert "(" not in first_token(blackwell)
    hopper = run(capsys, "calculate", "llama-3.1-8b", "h100-sxm")
    assert "(in brackets" in hopper and "no band" not in hopper and "(" in first_token(hopper)
