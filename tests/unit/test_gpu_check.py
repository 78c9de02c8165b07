"""`make gpu-check DRY_RUN=1` in CI: the plan and every check that needs no GPU and no
download pass here (a second; no network), and the real check's steps are the ones the
issue names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from app.bench import gpu_check

REPO = Path(__file__).resolve().parents[2]


def test_the_dry_run_passes_offline_and_prints_the_plan_and_one_table() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PIP_NO_INDEX": "1"}
    done = subprocess.run([sys.executable, "-m", "app.bench.gpu_check", "--dry-run"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "gpu-check: passed (dry run)" in done.stdout
    assert "FAIL" not in done.stdout
    for line in ("parses: .ci/gpu-recipe", "CUDA pins", "tier whisper-large-v3-turbo",
                 "defaults, faked CUDA device", "this box", "bench --quality --only heldout-"):
        assert line in done.stdout


def test_the_recipe_pins_the_cuda_13_toolkit_and_cuda_12_libraries_for_whisper() -> None:
    names = {pin.partition("==")[0] for pin in gpu_check.recipe_pins()}
    assert {"nvidia-cuda-nvcc", "nvidia-cuda-crt", "nvidia-nvvm", "nvidia-cuda-runtime",
            "nvidia-cublas", "nvidia-cuda-cccl", "nvidia-cublas-cu12",
            "nvidia-cudnn-cu12"} == names


def test_the_real_check_pulls_the_gpu_tiers_then_benches_held_out_quality_latency_and_tokens(
        tmp_path: Path) -> None:
    steps = [name for name, _ in gpu_check.plan_steps(tmp_path)]
    assert steps == ["pull qwen2.5-coder-1.5b", "pull whisper-large-v3-turbo", "pull qwen2.5-7b",
                     "quality (held-out)", "latency", "tokens/s qwen2.5-coder-1.5b",
                     "tokens/s qwen2.5-7b"]
    quality = dict(gpu_check.plan_steps(tmp_path))["quality (held-out)"]
    assert quality.count("--only") == len(gpu_check.held_out_names()) >= 1


def test_a_failed_row_fails_the_check_and_the_table_shows_it() -> None:
    report = gpu_check.Report()
    report.add("device", True, "CUDA")
    assert not report.failed
    report.add("pull qwen2.5-7b", False, "exit 1")
    assert report.failed and "FAIL  pull qwen2.5-7b" in report.table()


def test_the_bench_figures_are_read_from_their_json(tmp_path: Path) -> None:
    (tmp_path / "quality").mkdir()
    (tmp_path / "quality" / "bench_quality.json").write_text(
        '{"summaries": {"default": {"held_out": {"useful_pct": 93.3},'
        ' "ttfa_client": {"p50": 410.0, "p95": 690.0}}}}')
    report = gpu_check.Report()
    gpu_check.measured(report, tmp_path)
    assert [(row.name, row.ok, row.value) for row in report.rows] == [
        ("useful % (held-out)", True, "93.3"),
        ("quality TTFA p50/p95", True, "410.0 / 690.0 ms (client)")]
