"""`python -m app.bench.knowledge --llm TIER [--llm TIER ...]`: what an LLM knows, and how fast.

Two figures for each GGUF (a tier name or a file; the first one named is the baseline):

- knowledge: 60 short general-knowledge questions (science, animals, the body, geography
  that is not capitals or populations, history, literature, everyday maths facts, colours,
  food, sports), each asked alone as the product asks it: apace's system prompt and the
  model's own chat template with the tools where it takes them (models.llama_responder),
  greedy; a reply that is a tool call is asked again in words, as the server does. What
  would be said (the reply cut to its sentence budget) is right when it matches the
  question's pattern: a lenient check (the answer's word anywhere, any case, plurals
  allowed), so a reply that names the answer among others still counts.
- speed: with the prompt start in the KV (system prompt and tools: what every turn finds
  there), the ms to read a 31-word user message and the assistant header, and the median
  ms of one decode step (a fixed reply fed a token at a time, 40 steps, so every model
  decodes the same text whatever it would write). The models take turns (A B A B ...),
  so the other work on a shared box falls on all of them alike; medians of --rounds.

`--lend-template FILE` gives a model whose GGUF carries no chat template this one instead
of the product's fallback (ChatML): what the model could do with its own turn format
(app/bench/gemma_turns.jinja: Gemma's). `--no-tools` offers no tools even where the
template takes them: what the tools' schemas in the prompt cost an answer.
Results: docs/llm-choice.md.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from app.bench.quant import median, open_llama
from app.bench.quant_answers import cut
from models import llama_internals
from models.llama_responder import LlamaResponder
from pipeline.answer.integrity import IntegrityOptions, sentence_budget
from pipeline.answer.llm import LlmOptions
from pipeline.answer.tools import may_be_call, may_call, without_markers

OPTIONS = LlmOptions()
USER = ("We are driving to the coast with two small children on Saturday morning, so what "
        "are some easy games we could play together in the car on the way?")
"""31 words (~30 tokens): what a turn reads after the prompt start."""
REPLY = ("You could play I spy with colours, count red cars or cows along the road, sing "
         "songs with silly new words, or take turns telling a story one sentence at a time, "
         "and the children will love guessing animals from clues.")
"""Fed one token at a time for the decode figure."""
DECODE_STEPS = 40

QUESTIONS: tuple[tuple[str, str], ...] = (
    # science
    ("What gas do plants take in from the air to make their food?", r"carbon dioxide|co2|co₂"),
    ("What is the chemical symbol for gold?", r"au\b"),
    ("Which planet is known as the Red Planet?", r"mars"),
    ("What is the hardest natural substance on Earth?", r"diamond"),
    ("What force pulls things down towards the ground?", r"gravit"),
    ("What do we call water when it is frozen solid?", r"ice\b"),
    ("At how many degrees Celsius does water freeze?", r"(zero|0)(?![\d.,])"),
    ("What is the centre of an atom called?", r"nucle"),
    # animals
    ("What is the largest animal that has ever lived?", r"blue whale"),
    ("What is the fastest land animal?", r"cheetah"),
    ("How many arms does an octopus have?", r"(eight|8)(?!\d)"),
    ("What does a caterpillar turn into?", r"butterfl|moth"),
    ("What is a baby kangaroo called?", r"joey"),
    ("Which bird is a symbol of peace?", r"dove"),
    ("Which mammal can really fly?", r"bats?\b"),
    ("What sweet food do bees make?", r"honey"),
    # the body
    ("How many bones are there in an adult human body?", r"206(?!\d)|two hundred (and )?six"),
    ("Which organ pumps blood around the body?", r"heart"),
    ("What is the largest organ of the human body?", r"skin"),
    ("Which organs do we breathe with?", r"lung"),
    ("The retina is part of which organ?", r"eye"),
    ("Which blood cells fight infections?", r"white"),
    ("How many teeth does an adult usually have?", r"(32|thirty[- ]two)(?!\d)"),
    # geography: oceans, rivers, deserts, mountains, places
    ("What is the largest ocean on Earth?", r"pacific"),
    ("What is the longest river in Africa?", r"nile"),
    ("What is the largest hot desert in the world?", r"sahara"),
    ("On which continent is the Amazon rainforest?", r"south america"),
    ("In which mountain range is Mount Everest?", r"himala"),
    ("Which river flows through London?", r"thames"),
    ("What is the largest island in the world?", r"greenland"),
    ("Which ocean lies between Africa and Australia?", r"indian"),
    ("In which country are the pyramids of Giza?", r"egypt"),
    # history
    ("Who was the first President of the United States?", r"washington"),
    ("In what year did the Second World War end?", r"1945"),
    ("Who was the first person to walk on the Moon?", r"armstrong"),
    ("Which ship sank in 1912 after hitting an iceberg?", r"titanic"),
    ("Who painted the ceiling of the Sistine Chapel?", r"michelangelo"),
    ("Which ancient people built the Colosseum?", r"roman"),
    ("In which year did Columbus first sail to the Americas?", r"1492"),
    # literature
    ("Who wrote the Harry Potter books?", r"rowling"),
    ("Who wrote Pride and Prejudice?", r"austen"),
    ("What is the name of Sherlock Holmes's friend and helper?", r"watson"),
    ("Who wrote the Odyssey?", r"homer"),
    ("Who wrote the novel Nineteen Eighty-Four?", r"orwell"),
    ("What kind of animal is Winnie-the-Pooh?", r"bears?\b"),
    # everyday maths facts
    ("How many sides does a hexagon have?", r"(six|6)(?!\d)"),
    ("How many degrees are there in a right angle?", r"(ninety|90)(?!\d)"),
    ("How many minutes are there in an hour?", r"(sixty|60)(?!\d)"),
    ("How many days are there in a leap year?", r"366|three hundred (and )?sixty[- ]six"),
    ("How many sides does a triangle have?", r"(three|3)(?!\d)"),
    ("What is pi rounded to two decimal places?", r"3\.14(?!\d)"),
    ("How many hours are there in a day?", r"(24|twenty[- ]four)(?!\d)"),
    # colours, food, sports
    ("What colour do you get when you mix red and white paint?", r"pink"),
    ("What colour is a ripe banana?", r"yellow"),
    ("What fruit is the main ingredient of guacamole?", r"avocado"),
    ("What are dried grapes called?", r"raisin"),
    ("How many players does a soccer team have on the field?", r"(eleven|11)(?!\d)"),
    ("In which sport do players hit a shuttlecock?", r"badminton"),
    ("How many rings are on the Olympic flag?", r"(five|5)(?!\d)"),
    ("What colour are emeralds?", r"green"),
)
"""(question, the pattern of a right answer: matched from the start of a word, any case)."""


def right(said: str, pattern: str) -> bool:
    """`pattern` from the start of a word of `said`, any case; JSON escapes read as their
    characters first (the coder model writes quotes as `\\u0027`)."""
    said = _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), said)
    return re.search(rf"(?<!\w){pattern}", said, re.IGNORECASE) is not None


_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


@dataclass(frozen=True, kw_only=True)
class Answer:
    question: str
    written: str
    """What the model wrote (a tool call too, before it was asked again in words)."""
    said: str
    right: bool


def open_responder(path: Path, lend_template: str | None = None,
                   threads: int = OPTIONS.threads, tools: bool = True) -> LlamaResponder:
    """The product's responder on `path` (its prompt, template, tools and stops), opened with
    the product's llama settings; `lend_template` for a file that carries no template;
    `tools` False: the skills are not offered (`LlmOptions.tools`)."""
    from llama_cpp import Llama

    llama = open_llama(path, threads)
    assert isinstance(llama, Llama)
    if lend_template and not llama_internals.template_source(llama):
        llama.metadata["tokenizer.chat_template"] = lend_template
    return LlamaResponder(llama, path.name, replace(OPTIONS, tools=tools))


def ask(responder: LlamaResponder, question: str, pattern: str) -> Answer:
    """One question in a new conversation, routed as quant_answers routes an LLM turn."""
    plain = responder.tools and not may_call(question)
    written = "".join(responder.reply([], question, plain=plain))
    text = written
    if responder.tools and may_be_call(written) and not plain:
        text = "".join(responder.reply([], question, plain=True))
    said = cut(without_markers(text), sentence_budget(question, IntegrityOptions()))
    return Answer(question=question, written=written, said=said,
                  right=right(said, pattern))


def knowledge(path: Path, lend_template: str | None = None,
              threads: int = OPTIONS.threads, tools: bool = True) -> list[Answer]:
    responder = open_responder(path, lend_template, threads, tools)
    try:
        responder.warm([])
        return [ask(responder, question, pattern) for question, pattern in QUESTIONS]
    finally:
        responder.close()


def time_once(responder: LlamaResponder) -> dict[str, float]:
    """One turn's reading of USER after the prompt start, then DECODE_STEPS decode steps."""
    llama = responder.llama
    start = responder.next_prompt_start([])
    whole = llama.tokenize(responder.prompt([], USER).encode(), add_bos=True, special=True)
    reply = llama.tokenize(REPLY.encode(), add_bos=False)[:DECODE_STEPS]
    llama_internals.extend(llama, start)
    llama_internals.truncate(llama, len(start))  # drop what the last round read after it
    t = time.perf_counter()
    llama.eval(whole[len(start):])
    prompt = time.perf_counter() - t
    steps = []
    for token in reply:
        t = time.perf_counter()
        llama.eval([token])
        steps.append(time.perf_counter() - t)
    return {"prompt_ms": 1000 * prompt, "decode_ms_per_token": 1000 * median(steps),
            "user_tokens": float(len(whole) - len(start)), "start_tokens": float(len(start))}


def speed(paths: dict[str, Path], rounds: int, lend_template: str | None = None,
          tools: bool = True) -> dict[str, dict[str, float]]:
    """Every model loaded at once, measured in turns, `rounds` times: medians."""
    responders = {name: open_responder(path, lend_template, tools=tools)
                  for name, path in paths.items()}
    try:
        for responder in responders.values():  # first touches of the weights, repacking
            time_once(responder)
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in responders}
        for _ in range(rounds):
            for name, responder in responders.items():
                runs[name].append(time_once(responder))
                print(f"  {name}: {json.dumps(runs[name][-1])}", flush=True)
    finally:
        for responder in responders.values():
            responder.close()
    return {name: {key: median([r[key] for r in found]) for key in found[0]}
            for name, found in runs.items()}


def table(rights: dict[str, int], speeds: dict[str, dict[str, float]], base: str) -> str:
    rows = ["| model | right of 60 | decode ms/token | ratio | prompt ms (user tokens) | ratio |",
            "|---|---|---|---|---|---|"]
    for name in rights or speeds:
        s = speeds.get(name, {})
        b = speeds.get(base, {})

        def ratio(key: str, s: dict[str, float] = s, b: dict[str, float] = b) -> str:
            return f"{s[key] / b[key]:.2f}x" if key in s and b.get(key) else "-"

        decode = f"{s['decode_ms_per_token']:.1f}" if s else "-"
        prompt = f"{s['prompt_ms']:.0f} ({s['user_tokens']:.0f})" if s else "-"
        rows.append(f"| {name} | {rights.get(name, '-')} | {decode} | "
                    f"{ratio('decode_ms_per_token')} | {prompt} | {ratio('prompt_ms')} |")
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.bench.knowledge", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--llm", action="append", required=True,
                        help="a tier name or GGUF file (repeat; the first is the baseline)")
    parser.add_argument("--rounds", type=int, default=10, help="speed rounds (0: none)")
    parser.add_argument("--no-knowledge", action="store_true", help="speed only")
    parser.add_argument("--knowledge-threads", type=int, default=OPTIONS.threads,
                        help="threads for the answers (greedy: the same words on any count; "
                             "1 keeps a busy box from stalling two threads at every step)")
    parser.add_argument("--no-tools", action="store_true",
                        help="offer no tools, even where the chat template takes them")
    parser.add_argument("--lend-template", type=Path,
                        help="a Jinja chat template for a GGUF that carries none")
    parser.add_argument("--out", type=Path, help="write every answer and figure here (JSON)")
    args = parser.parse_args(argv)
    from models.locate import locate

    paths = {name: locate("llm", name).path for name in args.llm}
    lend = args.lend_template.read_text() if args.lend_template else None
    rights: dict[str, int] = {}
    answers: dict[str, list[Answer]] = {}
    if not args.no_knowledge:
        for name, path in paths.items():
            answers[name] = knowledge(path, lend, args.knowledge_threads, not args.no_tools)
            rights[name] = sum(a.right for a in answers[name])
            for a in answers[name]:
                print(f"{name} {'RIGHT' if a.right else 'wrong'} {a.question!r} -> {a.said!r}")
            print(f"{name}: {rights[name]} of {len(QUESTIONS)} right", flush=True)
    speeds = speed(paths, args.rounds, lend, not args.no_tools) if args.rounds else {}
    print(table(rights, speeds, args.llm[0]))
    if args.out:
        args.out.write_text(json.dumps({
            "paths": {n: str(p) for n, p in paths.items()}, "rights": rights, "speed": speeds,
            "answers": {n: [asdict(a) for a in found] for n, found in answers.items()},
        }, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
