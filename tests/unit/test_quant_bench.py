"""The quantization bench's arithmetic (app/bench/quant.py, app/bench/quant_answers.py)."""

from __future__ import annotations

import math
from pathlib import Path

from app.bench.quant import compare, derived_path, differences, ratios, table
from app.bench.quant_answers import cut


def test_a_derived_file_is_named_for_its_quantization_beside_no_source() -> None:
    source = Path("/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
    assert derived_path(source, Path("/tmp/q"), "q8_0") == \
        Path("/tmp/q/qwen2.5-coder-0.5b-instruct-q8_0.gguf")


def test_ratios_are_to_the_base_and_nan_without_one() -> None:
    assert ratios({"a": 2.0, "b": 3.0}, "a") == {"a": 1.0, "b": 1.5}
    assert all(math.isnan(v) for v in ratios({"a": 0.0, "b": 3.0}, "a").values())


def test_answers_that_differ_from_the_base_are_counted_per_turn() -> None:
    def answer(where: str, text: str, right: bool | None) -> dict[str, object]:
        return {"where": where, "llm_text": text, "reply": text, "right": right}

    found = compare({"base": [answer("c:1", "Paris.", True), answer("q:1", "Hi.", None)],
                     "other": [answer("c:1", "Lyon.", False), answer("q:1", "Hi.", None),
                               answer("c:2", "Rome.", True)]}, "base")
    assert found["base"] == {"answers": 2, "written_differs": 0, "said_differs": 0,
                             "not_in_base": 0, "scored": 1, "right": 1}
    assert found["other"] == {"answers": 3, "written_differs": 1, "said_differs": 1,
                              "not_in_base": 1, "scored": 2, "right": 1}


def test_only_answers_written_otherwise_are_listed_with_both_scores() -> None:
    def answer(where: str, text: str, right: bool | None) -> dict[str, object]:
        return {"where": where, "question": "Q?", "llm_text": text, "reply": text, "right": right}

    listed = differences({"base": [answer("c:1", "Paris.", True), answer("q:1", "Hi.", None)],
                          "other": [answer("c:1", "Lyon.", False), answer("q:1", "Hi.", None)]},
                         "base")
    assert listed == "- other c:1 'Q?'\n  base (right): 'Paris.'\n  other (wrong): 'Lyon.'"


def test_the_table_gives_each_variant_its_ratio_to_the_base() -> None:
    text = table({"q4_k_m": {"decode_ms_per_token": 40.0},
                  "q8_0": {"decode_ms_per_token": 30.0}}, "q4_k_m")
    assert text.splitlines()[2] == "| q4_k_m | 40 |"
    assert text.splitlines()[3] == "| q8_0 | 30 (0.75x) |"


def test_a_reply_is_cut_after_its_sentence_budget() -> None:
    assert cut("Paris is the capital. It is in France. It has a tower.", 2) == \
        "Paris is the capital. It is in France."
    assert cut("It is 3.5 km away", 1) == "It is 3.5 km away"
