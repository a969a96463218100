"""The parity command: the book's model vs transformers' LlamaForCausalLM."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from backend.reference.parity import main

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--layers", "2", "--d-model", "32", "--heads", "4", "--d-ff", "48", "--vocab", "61", "--seq-len", "8"]


def run_main(capsys, argv):
    code = main(argv)
    return code, json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_command_line_subprocess():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "backend.reference.parity", *TINY, "--kv-heads", "2", "--seed", "3"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["ok"] and result["max_abs_logit_diff"] <= 1e-5


@pytest.mark.parametrize(
    "extra",
    [[], ["--kv-heads", "1"], ["--kv-heads", "2", "--tie-embeddings"], ["--rope-theta", "500000", "--seed", "9"]],
)
def test_main_within_tolerance(capsys, extra):
    code, result = run_main(capsys, TINY + extra)
    assert code == 0 and result["ok"]
    assert result["max_abs_logit_diff"] <= 1e-5
    assert result["abs_loss_diff"] <= 1e-5
    assert result["max_abs_cached_logit_diff"] <= 1e-5
    assert result["n_params"] == result["hf_n_params"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--layers", "1", "--d-model", "30", "--heads", "4", "--d-ff", "8", "--vocab", "9"], "divisible by n_heads"),
        (["--layers", "1", "--d-model", "32", "--heads", "4", "--kv-heads", "3", "--d-ff", "8", "--vocab", "9"], "multiple"),
        (["--layers", "0", "--d-model", "32", "--heads", "4", "--d-ff", "8", "--vocab", "9"], "n_layers"),
        (["--d-model", "32", "--heads", "4", "--d-ff", "8", "--vocab", "9"], "missing --layers"),
        (TINY[:-1] + ["1"], "seq-len"),
        (["--preset", "llama-2-7b"], "count-only"),
        (["--layers", "32", "--d-model", "4096", "--heads", "32", "--d-ff", "11008", "--vocab", "32000"], "max-params"),
    ],
)
def test_invalid_arguments_exit_2_with_a_message(capsys, argv, message):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("preset, n", [("llama-2-7b", 6_738_415_616), ("llama-3-8b", 8_030_261_248)])
def test_count_only(capsys, preset, n):
    code, result = run_main(capsys, ["--preset", preset, "--count-only"])
    assert code == 0 and result["n_params"] == n
