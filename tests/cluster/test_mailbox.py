"""The Ray controller's mailbox gives up a fact only once the controller says it has it: a take
whose answer an interrupt cut off is answered again, and nothing is lost or handled twice."""

from __future__ import annotations

import asyncio

from pytest_benchmarks.cluster.ray_pool import Mailbox
from pytest_benchmarks.metrics.events import Event, Notice, TaskEnded


def _named(facts: list[Event]) -> list[str]:
    return [f"{e.kind}{e.line if isinstance(e, Notice) else ''}" for e in facts]


def test_a_fact_leaves_the_mailbox_only_once_the_controller_has_it():
    async def scenario() -> list[list[str]]:
        box = Mailbox()
        for index in range(3):
            await box.put(Notice("toy/walk", str(index)))
        first = await box.take(0, 0.0)
        again = await box.take(0, 0.0)  # the first answer never reached the controller
        after_two = await box.take(2, 0.0)
        await box.put(TaskEnded("toy/walk"))
        rest = await box.take(3, 0.0)
        empty = await box.take(4, 0.01)
        return [_named(facts) for facts in (first, again, after_two, rest, empty)]

    assert asyncio.run(scenario()) == [
        ["notice0", "notice1", "notice2"],
        ["notice0", "notice1", "notice2"],
        ["notice2"],
        ["task_ended"],
        [],
    ]


def test_a_take_waits_for_the_next_fact_and_ends_when_it_arrives():
    async def scenario() -> tuple[bool, list[Event]]:
        box = Mailbox()
        waiting = asyncio.create_task(box.take(0, 3600.0))
        await asyncio.sleep(0)
        await box.put(Notice("toy/walk", "0"))
        for _ in range(10):  # a few turns of the loop, not the hour's wait
            await asyncio.sleep(0)
        done = waiting.done()
        waiting.cancel()
        return done, (waiting.result() if done else [])

    assert asyncio.run(scenario()) == (True, [Notice("toy/walk", "0")])
