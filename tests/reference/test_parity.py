"""The parity command: the book's model vs transformers' LlamaForCausalLM."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from backend.reference import llama_compare
from backend.reference.config import ModelConfig
from backend.reference.llama_compare import ParityReport, compare
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
    assert result["max_abs_padded_logit_diff"] <= 1e-5
    assert result["max_abs_attention_diff"] <= 1e-6
    assert result["n_params"] == result["hf_n_params"]


def test_comparison_is_a_function_returning_a_report():
    """What a widget calls: no argparse, no printing; a dataclass whose dict ends in max_abs_logit_diff."""
    config = ModelConfig(vocab_size=61, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=48, max_seq_len=8)
    report = compare(config, seed=2, seq_len=8, batch=3)
    assert isinstance(report, ParityReport) and report.ok
    d = report.to_dict()
    assert list(d)[-1] == "max_abs_logit_diff" and d["config"] == config.to_dict()
    assert max(report.max_abs_logit_diff, report.max_abs_cached_logit_diff, report.max_abs_padded_logit_diff) <= 1e-5


def test_attention_difference_alone_fails_the_check(capsys, monkeypatch):
    """ok also covers the attention weights: with every logit within tolerance, an attention
    difference above its tolerance (forced here by a negative tolerance) turns ok off and exits 1."""
    monkeypatch.setattr(llama_compare, "ATTENTION_TOLERANCE", -1.0)
    code, result = run_main(capsys, TINY)
    assert code == 1 and not result["ok"]
    assert result["max_abs_logit_diff"] <= result["tolerance"] and result["abs_loss_diff"] <= 1e-5


def test_a_real_mismatch_exits_1(capsys, monkeypatch):
    """Give transformers a different RoPE base than the book's model: the logits part and exit 1 follows."""
    original = llama_compare.hf_config

    def wrong_theta(config):
        return original(config.replace(rope_theta=config.rope_theta * 2))

    monkeypatch.setattr(llama_compare, "hf_config", wrong_theta)
    code, result = run_main(capsys, TINY)
    assert code == 1 and not result["ok"]
    assert result["max_abs_logit_diff"] > result["tolerance"]
    assert result["max_abs_attention_diff"] > result["attention_tolerance"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--layers", "1", "--d-model", "30", "--heads", "4", "--d-ff", "8", "--vocab", "9"], "divisible by n_heads"),
        (["--layers", "1", "--d-model", "32", "--heads", "4", "--kv-heads", "3", "--d-ff", "8",
          "--vocab", "9"], "multiple"),
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
