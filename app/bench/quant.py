"""`python -m app.bench.quant`: is the default LLM faster in another llama.cpp quantization?

Derives Q8_0 and Q4_0 from the pulled Q4_K_M GGUF (llama.cpp's own quantizer, allowed to
requantize; into --out, never the model folder) and measures each with the product's llama
settings (LlmOptions: n_ctx 2048, 2 threads for prompt and decode, n_batch 512, no flash
attention, as models/load.py and models/shared_llm.py open it):

- prefill of the product's whole first prompt (system prompt, tools, a 12-word question), and
  of the question's tokens alone after the prompt start in the KV (what a turn reads);
- decode ms/token, one token per step, 40 steps;
- load time and resident memory, each in a fresh process;
- the greedy answers to the bench's LLM questions (app.bench.quant_answers), each compared
  with the Q4_K_M's and judged by the bench's scorer.

The variants take turns (A B C A B C …) so that the other work on a shared machine falls on
all of them alike; the figures are medians, ratios to Q4_K_M from the same run.
Results: docs/quantization.md.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

from pipeline.answer.llm import LlmOptions

SOURCE_NAME = "qwen2.5-coder-0.5b"
DERIVED = ("q8_0", "q4_0")
QUESTION = "What is the difference between a crocodile and an alligator exactly?"
"""A 12-word question: its tokens are what a turn reads after the cached prompt start."""
REPLY = ("Crocodiles have a V-shaped snout and show their lower teeth when their mouth is "
         "closed, while alligators have a wider U-shaped snout and live mostly in fresh water.")
"""Fed one token at a time for the decode figure (40 of its tokens)."""
DECODE_STEPS = 40
OPTIONS = LlmOptions()


def derived_path(source: Path, out: Path, kind: str) -> Path:
    """Where the `kind` variant of `source` goes: its name with the quantization replaced."""
    stem = source.stem
    for suffix in ("-q4_k_m", "-Q4_K_M", ".Q4_K_M"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
    return out / f"{stem}-{kind}.gguf"


def derive(source: Path, target: Path, kind: str, threads: int) -> float:
    """Requantize `source` to `kind` at `target` unless it is there; seconds taken."""
    import llama_cpp

    if target.exists():
        return 0.0
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{kind.upper()}")
    params.allow_requantize = True
    params.nthread = threads
    started = time.perf_counter()
    partial = target.with_suffix(".partial")
    if llama_cpp.llama_model_quantize(str(source).encode(), str(partial).encode(),
                                      ctypes.byref(params)) != 0:
        raise RuntimeError(f"llama.cpp could not quantize {source} to {kind}")
    partial.rename(target)
    return time.perf_counter() - started


def open_llama(path: Path, threads: int = OPTIONS.threads) -> object:
    from llama_cpp import Llama

    return Llama(str(path), n_ctx=OPTIONS.n_ctx, n_threads=threads,
                 n_threads_batch=threads, n_batch=512, n_ubatch=512,
                 flash_attn=False, verbose=False)


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def ratios(figures: Mapping[str, float], base: str) -> dict[str, float]:
    """Each figure over `base`'s (1.0 for the base; nan where the base is 0 or missing)."""
    ref = figures.get(base, 0.0)
    return {k: v / ref if ref else float("nan") for k, v in figures.items()}


def prompts(llama: object) -> tuple[list[int], list[int], list[int]]:
    """(the whole first prompt, the prompt start the KV holds between turns, the reply)."""
    from models.llama_responder import LlamaResponder

    responder = LlamaResponder(llama, "bench", OPTIONS)  # type: ignore[arg-type]
    whole = llama.tokenize(responder.prompt([], QUESTION).encode(),  # type: ignore[attr-defined]
                           add_bos=True, special=True)  # as LlamaResponder tokenizes a prompt
    start = responder.next_prompt_start([])
    reply = llama.tokenize(REPLY.encode(), add_bos=False)  # type: ignore[attr-defined]
    return whole, start, reply[:DECODE_STEPS]


def time_once(llama: object, whole: list[int], start: list[int],
              reply: list[int], cold: bool = True) -> dict[str, float]:
    """One measurement of each figure on `llama` (seconds, ms per token for decode);
    `cold`: the whole first prompt too (the slowest figure, and the least asked)."""
    eval_ = llama.eval  # type: ignore[attr-defined]
    figures = {}
    if cold:
        llama.reset()  # type: ignore[attr-defined]
        t = time.perf_counter()
        eval_(whole)
        figures["prefill_cold_s"] = time.perf_counter() - t
    llama.reset()  # type: ignore[attr-defined]
    eval_(start)
    t = time.perf_counter()
    eval_(whole[len(start):])
    new = time.perf_counter() - t
    steps = []
    for token in reply:
        t = time.perf_counter()
        eval_([token])
        steps.append(time.perf_counter() - t)
    return figures | {"prefill_new_s": new, "decode_ms_per_token": 1000 * median(steps)}


def speed(paths: Mapping[str, Path], rounds: int, cold: bool = True) -> dict[str, dict[str, float]]:
    """Every variant loaded at once, measured in turns, `rounds` times: medians."""
    models = {name: open_llama(path) for name, path in paths.items()}
    tokens = {name: prompts(llama) for name, llama in models.items()}
    for name, llama in models.items():  # warm: first touches of the weights, repacking
        time_once(llama, *tokens[name], cold=False)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in models}
    for _ in range(rounds):
        for name, llama in models.items():
            runs[name].append(time_once(llama, *tokens[name], cold=cold))
            print(f"  {name}: {json.dumps(runs[name][-1])}", flush=True)
    out = {}
    for name, found in runs.items():
        whole, start, _ = tokens[name]
        out[name] = {key: median([r[key] for r in found]) for key in found[0]}
        out[name] |= {"prompt_tokens": len(whole), "new_tokens": len(whole) - len(start)}
    for llama in models.values():
        llama.close()  # type: ignore[attr-defined]
    return out


def load_probe(path: Path) -> dict[str, float]:
    """In a fresh process: seconds to open the model, and its resident memory after
    reading a prompt (RSS in MiB: mapped weights touched, repacked copies, KV, buffers)."""
    t = time.perf_counter()
    llama = open_llama(path)
    load = time.perf_counter() - t
    whole, _, _ = prompts(llama)
    llama.eval(whole)  # type: ignore[attr-defined]
    rss = next(int(line.split()[1]) for line in Path("/proc/self/status").read_text().splitlines()
               if line.startswith("VmRSS:"))
    return {"load_s": load, "rss_mib": rss / 1024}


def cpu_probe(path: Path) -> dict[str, float]:
    """In a fresh process, on one thread: the CPU seconds (not wall time) the prompt and
    a decode step cost. One thread has no partner to wait for at a barrier, so this is the
    work itself, whatever else runs on the machine: the figure a busy box cannot blur."""
    llama = open_llama(path, threads=1)
    whole, start, reply = prompts(llama)
    eval_ = llama.eval  # type: ignore[attr-defined]
    t = time.process_time()
    eval_(start)
    cold = time.process_time() - t
    t = time.process_time()
    eval_(whole[len(start):])
    new = time.process_time() - t
    steps = []
    for token in reply[:20]:
        t = time.process_time()
        eval_([token])
        steps.append(time.process_time() - t)
    return {"cpu_prefill_start_s": cold, "cpu_prefill_new_s": new,
            "cpu_decode_ms_per_token": 1000 * median(steps)}


def probes(flag: str, paths: Mapping[str, Path], rounds: int) -> dict[str, dict[str, float]]:
    """`--load-probe` or `--cpu-probe` of each variant in a fresh process, in turns."""
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in paths}
    for _ in range(rounds):
        for name, path in paths.items():
            done = subprocess.run([sys.executable, "-m", "app.bench.quant", flag, str(path)],
                                  capture_output=True, text=True, check=True)
            runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {name: {key: median([r[key] for r in found]) for key in found[0]}
            for name, found in runs.items() if found}


def compare(answers: Mapping[str, Sequence[Mapping[str, object]]], base: str) -> dict[str, dict[str, int]]:
    """Per variant: LLM answers, how many differ from `base`'s (what the LLM wrote, and
    what would be said), and how many the scorer judged right of those it has a rule for."""
    ref = {a["where"]: a for a in answers[base]}
    out = {}
    for name, found in answers.items():
        same_turns = [a for a in found if a["where"] in ref]
        out[name] = {
            "answers": len(found),
            "written_differs": sum(a["llm_text"] != ref[a["where"]]["llm_text"] for a in same_turns),
            "said_differs": sum(a["reply"] != ref[a["where"]]["reply"] for a in same_turns),
            "not_in_base": len(found) - len(same_turns),
            "scored": sum(a["right"] is not None for a in found),
            "right": sum(a["right"] is True for a in found),
        }
    return out


def differences(answers: Mapping[str, Sequence[Mapping[str, object]]], base: str) -> str:
    """Every answer a variant wrote otherwise than `base`, with what was asked and both
    scores (right / wrong / - for a question with no rule)."""
    def mark(answer: Mapping[str, object] | None) -> str:
        right = answer["right"] if answer else None
        return "-" if right is None else "right" if right else "wrong"

    ref = {a["where"]: a for a in answers[base]}
    lines = []
    for name, found in answers.items():
        for a in found:
            b = ref.get(str(a["where"]))
            if name != base and (b is None or a["llm_text"] != b["llm_text"]):
                lines.append(f"- {name} {a['where']} {a['question']!r}\n"
                             f"  {base} ({mark(b)}): "
                             f"{b['llm_text'] if b else '(a skill answered)'!r}\n"
                             f"  {name} ({mark(a)}): {a['llm_text']!r}")
    return "\n".join(lines)


def table(speeds: Mapping[str, Mapping[str, float]], base: str) -> str:
    """A Markdown table of every figure, each with its ratio to `base`."""
    keys = sorted({k for figures in speeds.values() for k in figures})
    head = ["variant", *keys]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    per_key = {k: ratios({n: f.get(k, 0.0) for n, f in speeds.items()}, base) for k in keys}
    for name, figures in speeds.items():
        cells = [name]
        for k in keys:
            value = figures.get(k)
            cells.append("-" if value is None else
                         f"{value:.3g} ({per_key[k][name]:.2f}x)" if name != base else f"{value:.3g}")
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def sha256(path: Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.bench.quant", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "quant")
    parser.add_argument("--rounds", type=int, default=7, help="speed rounds (each variant once)")
    parser.add_argument("--load-rounds", type=int, default=3)
    parser.add_argument("--no-answers", action="store_true", help="speed only")
    parser.add_argument("--no-speed", action="store_true", help="answers only")
    parser.add_argument("--no-cold", action="store_true",
                        help="skip the whole first prompt's timing (~1,000 tokens a round)")
    parser.add_argument("--variants", nargs="+", default=["q4_k_m", *DERIVED],
                        help="which to measure (answers: each written to --out as "
                             "answers-NAME.json; the comparison takes every such file there)")
    parser.add_argument("--cpu-rounds", type=int, default=2,
                        help="one-thread CPU-time rounds (0: none)")
    parser.add_argument("--report", action="store_true",
                        help="only compare the answers-*.json files already in --out")
    parser.add_argument("--load-probe", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--cpu-probe", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.load_probe is not None or args.cpu_probe is not None:
        probe = load_probe(args.load_probe) if args.load_probe else cpu_probe(args.cpu_probe)
        print(json.dumps(probe))
        return 0
    if args.report:
        answers = {p.stem.removeprefix("answers-"): json.loads(p.read_text())
                   for p in sorted(args.out.glob("answers-*.json"))}
        print(json.dumps(compare(answers, "q4_k_m"), indent=1))
        print(differences(answers, "q4_k_m"))
        return 0
    from models.locate import locate

    source = locate("llm", SOURCE_NAME).path
    args.out.mkdir(parents=True, exist_ok=True)
    paths = {"q4_k_m": source}
    for kind in [k for k in DERIVED if k in args.variants]:
        paths[kind] = derived_path(source, args.out, kind)
        took = derive(source, paths[kind], kind, OPTIONS.threads)
        print(f"{kind}: {paths[kind]}" + (f" (derived in {took:.1f} s)" if took else ""), flush=True)
    paths = {name: path for name, path in paths.items() if name in args.variants}
    results: dict[str, object] = {
        "files": {n: {"path": str(p), "bytes": p.stat().st_size, "sha256": sha256(p)}
                  for n, p in paths.items()},
        "cpu_count": os.cpu_count()}
    if not args.no_speed:
        speeds = speed(paths, args.rounds, not args.no_cold) if args.rounds else {name: {} for name in paths}
        for name, figures in probes("--load-probe", paths, args.load_rounds).items():
            speeds[name] |= figures
        if args.cpu_rounds:
            for name, figures in probes("--cpu-probe", paths, args.cpu_rounds).items():
                speeds[name] |= figures
        for name, path in paths.items():
            speeds[name]["file_mib"] = path.stat().st_size / 2**20
        results["speed"] = speeds
        print(table(speeds, "q4_k_m"), flush=True)
    if not args.no_answers:
        from app.bench.quant_answers import all_answers

        for name, path in paths.items():
            found = [asdict(a) for a in all_answers(path, OPTIONS, args.out)]
            (args.out / f"answers-{name}.json").write_text(json.dumps(found, indent=1))
        answers = {p.stem.removeprefix("answers-"): json.loads(p.read_text())
                   for p in sorted(args.out.glob("answers-*.json"))}
        results["answers"] = answers
        if "q4_k_m" in answers:
            results["quality"] = compare(answers, "q4_k_m")
        print(json.dumps(results.get("quality"), indent=1))
    parts = "-".join(p for p, off in (("speed", args.no_speed), ("answers", args.no_answers))
                     if not off)
    written = args.out / f"quant-{parts or 'files'}.json"
    written.write_text(json.dumps(results, indent=1))
    print(f"wrote {written}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
