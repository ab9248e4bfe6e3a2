"""RequestFuture (groupclient/network/future.py) when an adapter raises and across threads: what
``compose`` does with an adapter's exception, and listeners added while another thread completes
the future (each runs exactly once).  Kept apart from test_network_robustness.py, whose client
runs over an in-memory IOBackend: these need no client."""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

from groupclient.error_codes import ErrorCode
from groupclient.errors import FatalError, FatalGroupError, InternalError
from groupclient.network import future as future_module
from groupclient.network.future import RequestFuture


# -- 4. compose with an adapter that raises -------------------------------------------------------------
def test_compose_fails_the_composed_future_when_the_adapter_raises(caplog: pytest.LogCaptureFixture) -> None:
    source: RequestFuture[int] = RequestFuture()
    boom = KeyError("no such field")

    def adapter(value: int, out: RequestFuture[str]) -> None:
        raise boom

    composed = source.compose(adapter)
    with caplog.at_level(logging.ERROR, logger="groupclient.network"):
        source.success(1)
    # an adapter's own bug is fatal, never retried: InternalError, the bug its cause, logged
    assert composed.failed() and isinstance(composed.exception, InternalError) and not composed.retriable()
    assert isinstance(composed.exception, FatalError) and composed.exception.__cause__ is boom
    assert "no such field" in str(composed.exception)
    assert any(r.exc_info and r.exc_info[1] is boom for r in caplog.records)


def test_compose_passes_a_groupclient_error_from_the_adapter_as_it_is() -> None:
    source: RequestFuture[int] = RequestFuture()
    refused = FatalGroupError(ErrorCode.GROUP_AUTHORIZATION_FAILED, "test")

    def adapter(value: int, out: RequestFuture[str]) -> None:
        raise refused

    composed = source.compose(adapter)
    source.success(1)
    assert composed.exception is refused


def test_compose_keeps_the_adapters_answer_when_it_raises_after_answering() -> None:
    source: RequestFuture[int] = RequestFuture()

    def adapter(value: int, out: RequestFuture[int]) -> None:
        out.success(value)
        raise RuntimeError("after the answer")

    composed = source.compose(adapter)
    source.success(5)
    assert composed.value == 5


# -- 5. RequestFuture across threads --------------------------------------------------------------
def _switch_on_every_line(frame: FrameType, event: str, arg: Any) -> Any:
    """A tracer for RequestFuture's frames: each line event runs Python code, where the
    interpreter may switch threads.  CPython 3.11 happens to have no switch point between a check
    of ``_done`` and the list append after it; 3.10 and free-threaded builds do."""
    return _switch_on_every_line if frame.f_code.co_filename == future_module.__file__ else None


def test_listeners_added_while_another_thread_completes_run_exactly_once() -> None:
    # 400: without the lock in add_callback/add_errback, 200 fail every time on 3.10 and 3.11
    # (3 runs of each); 2000 took 24 s idle on 3.10 and over the two joins' 120 s on a loaded
    # machine, as the switch interval below makes every switch wait for the OS to run the other thread
    iterations = 400
    futures: list[RequestFuture[int]] = [RequestFuture() for _ in range(iterations)]
    adding = [threading.Event() for _ in range(iterations)]
    runs: list[list[int]] = [[] for _ in range(iterations)]  # per future: how often each listener ran

    def counter(i: int, k: int) -> Callable[[Any], None]:
        def count(_: Any) -> None:
            runs[i][k] += 1
        return count

    def complete() -> None:
        for i, future in enumerate(futures):
            assert adding[i].wait(10)  # complete while the other thread is adding listeners
            if i % 2:
                future.success(i)
            else:
                future.failure(ValueError(i))

    def listen() -> None:
        for i, future in enumerate(futures):
            adding[i].set()
            after_done = 3  # and a few once it is done, which must run at once
            for k in range(10_000):
                runs[i].append(0)
                future.add_both(counter(i, k))
                if future.is_done():
                    after_done -= 1
                    if not after_done:
                        break

    old_interval, old_trace = sys.getswitchinterval(), threading.gettrace()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible, to hit the race
    threading.settrace(_switch_on_every_line)
    try:
        threads = [threading.Thread(target=complete, daemon=True), threading.Thread(target=listen, daemon=True)]
        for t in threads:
            t.start()
    finally:
        threading.settrace(old_trace)
    try:
        for t in threads:
            t.join(60)
    finally:
        sys.setswitchinterval(old_interval)
    assert not any(t.is_alive() for t in threads)
    wrong = [i for i, r in enumerate(runs) if set(r) != {1}]
    assert not wrong, f"{len(wrong)} of {iterations} futures ran a listener other than once, e.g. {runs[wrong[0]]}"
