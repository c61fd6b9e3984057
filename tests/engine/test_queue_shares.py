"""A worker's thread shares per queue (``--queues reports:2,default``): a queue's tries never
hold more of the worker's threads than its share."""

from __future__ import annotations

from datetime import timedelta

import pytest

from django_cadence.engine import leases, planner
from django_cadence.engine.loop import Engine
from django_cadence.engine.shares import QueueShares
from django_cadence.schedule.queues import InvalidQueue, parse_queues

pytestmark = pytest.mark.django_db

MINUTE = timedelta(minutes=1)


def test_shares_are_read_from_the_queues_list():
    shares = parse_queues("reports:2,default")
    assert [(s.name, s.threads) for s in shares] == [("reports", 2), ("default", None)]
    assert str(shares[0]) == "reports:2"


@pytest.mark.parametrize("typed", ["reports:0", "reports:x", "reports:", "reports:-1"])
def test_a_share_is_a_whole_number_of_threads(typed):
    with pytest.raises(InvalidQueue, match="number of threads, at least 1"):
        parse_queues(typed)


def test_the_threads_are_the_sum_of_the_shares_when_every_queue_has_one(clock):
    assert QueueShares(parse_queues("reports:2,default:6")).concurrency() == 8
    assert QueueShares(parse_queues("reports:2,default")).concurrency() is None
    assert QueueShares(None).concurrency() is None
    engine = Engine(clock=clock, worker_id="w", queues=parse_queues("reports:2,default:6"))
    assert engine.concurrency == 8
    given = Engine(clock=clock, worker_id="w", concurrency=4, queues=parse_queues("reports:2"))
    assert given.concurrency == 4


def test_a_share_larger_than_the_workers_threads_is_refused(clock):
    with pytest.raises(InvalidQueue, match="gives reports 5 threads, more than the worker's 4"):
        Engine(clock=clock, worker_id="w", concurrency=4, queues=parse_queues("reports:5"))


def _due(schedule_at, clock, count, queue):
    for i in range(count):
        schedule_at(name=f"{queue}-{i}", interval=MINUTE, queue=queue, overlap="allow")


def test_a_claim_takes_no_more_of_a_queue_than_its_free_share(schedule_at, clock):
    _due(schedule_at, clock, 3, "reports")
    _due(schedule_at, clock, 3, "default")
    planner.plan_due(clock.advance(MINUTE))
    shares = QueueShares(parse_queues("reports:2,default"))
    first = shares.open([])
    claims = leases.claim(
        clock.now(), worker="w", slots=4, queues=first.names, queue_limits=first.limits
    )
    taken = sorted(c.queue for c in claims)
    assert taken.count("reports") == 2  # its share, though a third waits and slots are free
    # Holding its share, reports is closed to the next claim; default takes the rest.
    after = shares.open(claims)
    assert after.names == ("default",)
    more = leases.claim(
        clock.now(), worker="w", slots=4, queues=after.names, queue_limits=after.limits
    )
    assert {c.queue for c in more} == {"default"}
    # A reports try done: one more of its attempts may be claimed.
    one_done = [c for c in claims if c.queue == "reports"][:1]
    assert shares.open(one_done).limits["reports"] == 1


def test_every_queue_at_its_share_closes_every_queue():
    shares = QueueShares(parse_queues("reports:1"))

    class Held:
        queue = "reports"

    assert shares.open([Held()]).names == ()  # type: ignore[list-item]
    assert QueueShares(None).open([Held()]).names is None  # type: ignore[list-item]
