"""Scheduling the shared LLM's steps (pipeline.compute.batching), with fake jobs: urgency and
deadlines decide who goes first, speculation waits under load, background work only runs
alone, a reply whose reader is behind sits out, long prompts are read in chunks."""

from __future__ import annotations

import numpy as np

from pipeline.compute.batching import (
    MAX_AHEAD,
    PREFILL_CHUNK,
    READER_GRACE_S,
    SPECULATION_LIMIT,
    Job,
    choose,
    plan,
    reader_due,
)
from pipeline.compute.workers import Gate, Priority


def decoding(key: int, priority: Priority = Priority.CONFIRMED, deadline: float = 10.0) -> Job:
    job = Job(key=key, prompt=[1, 2], priority=priority, generate=True, deadline=deadline)
    job.admitted, job.next_token = True, 7
    return job


def reading(key: int, n: int, priority: Priority = Priority.CONFIRMED,
            deadline: float = 10.0, generate: bool = True) -> Job:
    job = Job(key=key, prompt=list(range(n)), priority=priority, generate=generate,
              deadline=deadline)
    job.admitted, job.pending = True, list(range(n))
    return job


def keys(jobs: list[Job]) -> list[int]:
    return [pick.job.key for pick in plan(jobs, budget=512)]


def test_every_decoding_reply_brings_one_token_to_the_same_step() -> None:
    jobs = [decoding(1), decoding(2), decoding(3)]
    picks = plan(jobs, budget=512)
    assert [len(p.tokens) for p in picks] == [1, 1, 1]


def test_the_earliest_deadline_goes_first_within_a_class_and_class_before_deadline() -> None:
    late, soon = reading(1, 600, deadline=9.0), reading(2, 600, deadline=5.0)
    spec = reading(3, 10, Priority.SPECULATIVE, deadline=1.0)
    assert keys([late, spec, soon])[0] == 2
    picks = plan([late, soon], budget=512)
    assert picks[0].job is soon and len(picks[0].tokens) == 512  # alone in the budget


def test_under_load_speculation_waits_and_background_runs_only_alone() -> None:
    confirmed = [decoding(k) for k in range(SPECULATION_LIMIT)]
    spec = decoding(9, Priority.SPECULATIVE)
    background = reading(8, 20, Priority.BACKGROUND, generate=False)
    assert keys([*confirmed, spec, background]) == list(range(SPECULATION_LIMIT))
    assert keys([confirmed[0], spec, background]) == [0, 9]
    assert keys([background]) == [8]


def test_a_reply_whose_reader_is_behind_sits_out() -> None:
    slow, other = decoding(1), decoding(2)
    for token in range(MAX_AHEAD):
        slow.out.put(token)
    assert keys([slow, other]) == [2]
    slow.out.get()
    assert keys([slow, other]) == [1, 2]


def test_a_reply_whose_first_clause_is_being_spoken_sits_out_till_its_gate_opens() -> None:
    """Reply closes its LLM gate once clause 1 is written, till clause 1's first audio:
    meanwhile the shared engine must not decode ahead for it (MAX_AHEAD tokens, ~40 ms
    each on 2 cores, taken from the speech's first audio)."""
    gate = Gate(timeout_s=60)
    spoken, other = decoding(1), decoding(2)
    spoken.gate = gate
    assert keys([spoken, other]) == [1, 2]
    gate.close()
    assert keys([spoken, other]) == [2]
    gate.open()
    assert keys([spoken, other]) == [1, 2]


def test_a_reply_in_lockstep_sits_out_till_its_reader_has_its_last_token() -> None:
    """Before its first clause a reply is never a step ahead of its reader: the step that
    would be under way when clause 1 is written (and its audio asked for) is not taken."""
    gate = Gate(timeout_s=60, lockstep=True, reader_timeout_s=60)
    spoken, other = decoding(1), decoding(2)
    spoken.gate = gate
    gate.handed()
    assert keys([spoken, other]) == [2]
    assert 0 < reader_due([spoken, other]) <= READER_GRACE_S  # the step waits for it, briefly
    gate.seen()
    assert keys([spoken, other]) == [1, 2]
    assert reader_due([spoken, other]) == 0
    gate.end_lockstep()
    gate.handed()  # past the first clause: it may run ahead
    assert keys([spoken, other]) == [1, 2]


def test_a_reader_that_is_slow_to_come_back_is_not_waited_for_by_the_others() -> None:
    gate = Gate(lockstep=True, reader_timeout_s=60)
    slow, other = decoding(1), decoding(2)
    slow.gate = gate
    gate.handed()
    assert reader_due([slow, other], grace_s=0.0) == 0
    assert keys([slow, other]) == [2]


def test_a_gate_left_closed_lets_its_reply_go_on_after_the_timeout() -> None:
    gate = Gate(timeout_s=0.0)
    gate.close()
    assert gate.is_open
    job = decoding(1)
    job.gate = gate
    assert keys([job]) == [1]


def test_a_long_prompt_is_read_in_chunks_beside_replies_being_decoded() -> None:
    reply, prompt = decoding(1), reading(2, 300)
    picks = plan([reply, prompt], budget=512)
    assert [len(p.tokens) for p in picks] == [1, PREFILL_CHUNK]
    assert picks[1].reads_prompt and not picks[0].reads_prompt


def test_a_draft_rides_with_its_replys_next_token_within_the_budget() -> None:
    job = decoding(1)
    job.proposal = [4, 5, 6]
    assert plan([job], budget=512)[0].tokens == [7, 4, 5, 6]
    assert plan([job], budget=2)[0].tokens == [7, 4]


def test_finished_and_cancelled_jobs_take_no_part() -> None:
    done, cancelled, live = decoding(1), decoding(2), decoding(3)
    done.done.set()
    cancelled.cancelled.set()
    assert keys([done, cancelled, live]) == [3]


def test_choose_is_greedy_after_llama_cpps_repeat_penalty_and_the_bias() -> None:
    logits = np.array([1.0, 1.05, -0.5, 0.2], np.float32)
    assert choose(logits, [], 1.1) == 1
    assert choose(logits, [1], 1.1) == 0  # 1.05 / 1.1 < 1.0
    assert choose(logits, [1, 0], 1.1) == 1  # both penalized: 0.955 > 0.909
    assert choose(logits, [], 1.0, bias={1: -100.0, 0: -100.0}) == 3
    assert logits[1] == np.float32(1.05)  # the logits themselves are left alone


def test_a_speculative_reply_committed_while_it_runs_becomes_a_confirmed_turns() -> None:
    confirmed = [decoding(k) for k in range(SPECULATION_LIMIT)]
    spec = decoding(9, Priority.SPECULATIVE, deadline=1e12)
    assert 9 not in keys([*confirmed, spec])  # under load, speculation waits
    spec.promote()
    assert spec.priority == Priority.CONFIRMED and spec.deadline < 1e12
    assert 9 in keys([*confirmed, spec])
    spec.promote()  # (twice is once)
    assert spec.priority == Priority.CONFIRMED
