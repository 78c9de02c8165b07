"""The cluster's placement book (app.cluster.placement): least-loaded node with room, a
slot held before the offer is forwarded, dead and drained nodes left out."""

from __future__ import annotations

from app.cluster.placement import DEAD_S, HOLD_S, NodeReport, Placement, Refusal


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def book(*reports: NodeReport) -> tuple[Placement, Clock]:
    clock = Clock()
    placement = Placement(clock=clock)
    for report in reports:
        placement.report(report)
    return placement, clock


def test_the_least_loaded_node_is_chosen_and_holds_count_at_once() -> None:
    placement, _ = book(NodeReport("a", 1, 4), NodeReport("b", 0, 4))
    first = placement.reserve()
    assert not isinstance(first, Refusal) and first[0] == "b"
    # b now holds one (unsettled): a and b are equal, the tie goes by CPU then name
    second = placement.reserve()
    assert not isinstance(second, Refusal) and second[0] == "a"
    third = placement.reserve()  # a: 1 session + 1 held, b: 1 held
    assert not isinstance(third, Refusal) and third[0] == "b"


def test_two_offers_never_take_the_last_slot_together() -> None:
    placement, _ = book(NodeReport("a", 0, 1), NodeReport("b", 0, 1))
    taken = [placement.reserve() for _ in range(3)]
    assert sorted(t[0] for t in taken[:2] if not isinstance(t, Refusal)) == ["a", "b"]
    assert isinstance(taken[2], Refusal) and taken[2].kind == "full"


def test_a_settled_offer_counts_until_the_next_report_and_a_refused_one_frees_its_slot() -> None:
    placement, _ = book(NodeReport("a", 0, 1))
    node, hold = placement.reserve()  # type: ignore[misc]
    placement.settle(node, hold, False)
    node, hold = placement.reserve()  # type: ignore[misc]
    placement.settle(node, hold, True)
    assert isinstance(placement.reserve(), Refusal)  # the session counts
    placement.report(NodeReport("a", 0, 1))  # it ended
    assert not isinstance(placement.reserve(), Refusal)


def test_a_node_whose_load_is_too_high_is_passed_over_with_its_reason() -> None:
    placement, _ = book(NodeReport("a", 1, 4, admits=False, reason="p95 over 800 ms"),
                        NodeReport("b", 2, 4))
    chosen = placement.reserve()
    assert not isinstance(chosen, Refusal) and chosen[0] == "b"
    only, _ = book(NodeReport("a", 1, 4, admits=False, reason="p95 over 800 ms"))
    refused = only.reserve()
    assert isinstance(refused, Refusal) and refused.kind == "load"
    assert "p95 over 800 ms" in refused.reason


def test_silent_nodes_are_forgotten_and_late_holds_released() -> None:
    placement, clock = book(NodeReport("a", 0, 1), NodeReport("b", 0, 1))
    assert placement.reserve()[0] == "a"  # type: ignore[index]
    clock.t += DEAD_S - 0.5
    placement.report(NodeReport("a", 0, 1))  # b falls silent
    clock.t += 1.0
    assert [n["node"] for n in placement.view()] == ["a"]
    assert isinstance(placement.reserve(), Refusal)  # a's slot is still held
    clock.t += HOLD_S - 1.0
    placement.report(NodeReport("a", 0, 1))
    assert placement.reserve()[0] == "a"  # type: ignore[index]
    clock.t += 2 * DEAD_S
    refused = placement.reserve()
    assert isinstance(refused, Refusal) and refused.kind == "none"


def test_drained_and_forgotten_nodes_get_nothing_new() -> None:
    placement, _ = book(NodeReport("a", 0, 2), NodeReport("b", 1, 2))
    assert placement.drain("a")
    assert placement.reserve()[0] == "b"  # type: ignore[index]
    assert not placement.drain("nope")
    placement.forget("b")
    refused = placement.reserve()
    assert isinstance(refused, Refusal) and refused.kind == "draining"
    placement.drain("a", False)
    assert placement.reserve()[0] == "a"  # type: ignore[index]
    draining, _ = book(NodeReport("c", 0, 2, draining=True))
    assert isinstance(draining.reserve(), Refusal)


def test_a_report_that_came_after_the_hold_is_not_counted_twice() -> None:
    placement, clock = book(NodeReport("a", 0, 2))
    node, hold = placement.reserve()  # type: ignore[misc]
    clock.t += 0.1
    placement.report(NodeReport("a", 1, 2))  # the node told of its new session first
    placement.settle(node, hold, True)
    assert placement.view()[0]["sessions"] == 1
    assert not isinstance(placement.reserve(), Refusal)  # one slot is left


def test_nodes_that_already_refused_the_offer_are_left_out() -> None:
    placement, _ = book(NodeReport("a", 0, 2), NodeReport("b", 1, 2))
    assert placement.reserve(["a"])[0] == "b"  # type: ignore[index]
    assert isinstance(placement.reserve(["a", "b"]), Refusal)
