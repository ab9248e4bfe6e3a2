"""The request memory budget (queued_max_request_bytes), on its own: driven on an asyncio loop
with no clock at all, since nothing in it waits on time."""

from __future__ import annotations

import asyncio

import pytest

from groupclient.coordinator.memory_pool import Grant, RequestMemoryPool


async def _settle() -> None:
    for _ in range(5):  # let woken tasks run
        await asyncio.sleep(0)


def test_requests_wait_once_the_budget_is_used_up_and_get_in_first_come_first_served() -> None:
    async def run() -> None:
        pool = RequestMemoryPool(100)
        first = await pool.acquire(60)
        second = await pool.acquire(60)  # not strict: 40 bytes were left, so 60 get in
        assert pool.stats().in_use == 120 and pool.stats().peak == 120
        order: list[str] = []

        async def want(name: str, size: int) -> Grant:
            grant = await pool.acquire(size)
            order.append(name)
            return grant

        big = asyncio.ensure_future(want("big", 500))
        small = asyncio.ensure_future(want("small", 1))
        await _settle()
        assert pool.stats().waiting == 2 and order == []
        first.release()  # 60 of 100 in use: there is room, so the first waiter gets in
        await _settle()
        # the big one came first and gets in although it is bigger than the whole budget;
        # the small one waits behind it rather than overtaking it
        assert order == ["big"] and pool.stats().waiting == 1
        second.release()  # 500 in use: still no room
        await _settle()
        assert order == ["big"]
        (await big).release()
        await _settle()
        assert order == ["big", "small"]
        (await small).release()
        stats = pool.stats()
        assert (stats.in_use, stats.waiting, stats.waits, stats.peak) == (0, 0, 2, 560)

    asyncio.run(run())


def test_room_lets_in_a_waiter_only_while_any_budget_is_left() -> None:
    async def run() -> None:
        pool = RequestMemoryPool(100)
        held = await pool.acquire(99)
        one = await pool.acquire(50)  # 1 byte left: let in (in use 149)
        waiter = asyncio.ensure_future(pool.acquire(10))
        await _settle()
        one.release()  # 99 in use: 1 byte of room, so the waiter gets in
        await _settle()
        assert waiter.done() and pool.stats().in_use == 109
        held.release()
        waiter.result().release()
        assert pool.stats().in_use == 0

    asyncio.run(run())


def test_a_release_twice_gives_back_once_and_a_cancelled_waiter_leaves_the_queue() -> None:
    async def run() -> None:
        pool = RequestMemoryPool(10)
        held = await pool.acquire(10)
        gone = asyncio.ensure_future(pool.acquire(5))
        after = asyncio.ensure_future(pool.acquire(5))
        await _settle()
        gone.cancel()
        await _settle()
        assert pool.stats().waiting == 1
        held.release()
        held.release()
        await _settle()
        assert after.done() and pool.stats().in_use == 5
        after.result().release()
        assert pool.stats().in_use == 0

        # cancelled in the very turn its bytes were granted: they are given back
        held = await pool.acquire(10)
        late = asyncio.ensure_future(pool.acquire(7))
        await _settle()
        held.release()  # grants 7 to `late` ...
        late.cancel()  # ... which is cancelled before it runs
        await _settle()
        assert late.cancelled() and pool.stats().in_use == 0

    asyncio.run(run())


def test_a_budget_below_one_byte_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1 byte"):
        RequestMemoryPool(0)
