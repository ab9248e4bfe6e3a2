"""Child process of ``benchmarks/throughput.py``: one client drains one topic, prints one JSON line.

    python benchmarks/throughput_worker.py CLIENT BOOTSTRAP TOPIC RECORDS [--broker-pid PID]
        [--timeout-s S] [--max-poll-records N] [--confluent-config JSON] [--no-loop-lag] [--gc-freeze]

CLIENT is groupclient (or one of its variants below), kafka-python or confluent-kafka
(synchronous), or aiokafka (aiokafka's AIOKafkaConsumer), groupclient-aio
(groupclient.aio.AsyncGroupConsumer) or confluent-aio (confluent_kafka.aio.AIOConsumer: the
synchronous Consumer's calls on a thread pool), the asyncio clients.

The consumer subscribes with a fresh group id (earliest, no auto commit) and reads until it has
RECORDS records, touching every record's value.  The synchronous clients are driven by a poll loop
(``poll(timeout_ms=1000)``, confluent's ``consume()``); the asyncio ones by a drain coroutine inside
one event loop (run as ``asyncio.run`` does, kept for ``stop()``): ``start()``, ``subscribe()``, then
``await getmany(timeout_ms=1000, max_records=max_poll_records)`` until done (confluent-aio:
``await consume(num_messages=1000, timeout=1.0)``, as the synchronous confluent-kafka).  Both feed the same
:class:`Meter` one (records, value bytes) per call.  It notes the wall time and the process's own
CPU (all threads) at the first record, once a third of the records were received, and at the last
record; the broker's CPU (from /proc) at the same marks when ``--broker-pid`` is given.

groupclient's OpenTelemetry variants (GroupConsumer; see :data:`VARIANTS`):

- ``groupclient``: the OpenTelemetry API as installed, no provider set (the worker checks that no
  global provider is set and that the consumer resolves neither a tracer nor a meter; without the
  API installed it is groupclient-otel-off, reported as such);
- ``groupclient-otel-off``: ``sys.modules["opentelemetry"] = None`` before groupclient is
  imported, so the API cannot be imported: the consumer must run with no telemetry object at all
  (checked);
- ``groupclient-otel-poll``: an SDK ``TracerProvider`` with a ``BatchSpanProcessor`` and an SDK
  ``MeterProvider`` with a ``PeriodicExportingMetricReader`` (every OTEL_METRIC_EXPORT_MS), both
  exporting to exporters that drop what they get (counting it), passed as the consumer's
  ``tracer_provider`` / ``meter_provider``: a ``poll {topic}`` span per poll() with records;
- ``groupclient-iter``, ``groupclient-iter-otel-off`` and ``groupclient-otel-record``:
  ``groupclient``, ``groupclient-otel-off`` and ``groupclient-otel-poll`` draining by iteration
  (``for record in consumer``, consumer_timeout_ms 1000, one Meter call per max_poll_records
  records), so with the SDK one ``process {topic}`` span per record, and without a provider
  whatever iteration's per-record telemetry calls cost.

The SDK variants flush their providers after the last record (outside the measurement) and report
the spans, span links and metric exports the exporters saw (``otel_spans``, ``otel_links``,
``otel_metric_exports``); every groupclient variant reports ``otel`` (``absent``: no API,
``no provider``, ``sdk``).

Event-loop lag (asyncio clients; off with ``--no-loop-lag``): a watchdog coroutine on the same loop,
started before the consumer, repeatedly awaits ``asyncio.sleep(0.001)`` and records how late each
wake-up was: lag = (monotonic time it resumed) - (monotonic time it went to sleep + 1 ms).  It is
how long a ready callback waits for the loop (the client's own work on the loop, plus the
selector's millisecond timeout rounding: ~0.15 ms on an idle loop).  Reported over the wake-ups
whose sleep overlapped the steady span (third to last record: ``loop_lag_p50_ms``, ``_p99_ms``,
``_max_ms``, nearest rank) and over the whole drain, start() included (``loop_lag_all_*``); at the
last record a sleep still pending and already overdue counts as a wake-up then.

``--gc-freeze`` (off by default): ``gc.freeze()`` once, after the imports and the client's
construction (and ``start()``, ``subscribe()``), before the first poll.  Why: the import-time heap
(the client, its codecs, asyncio, aiokafka) is large, and each full (generation 2) garbage collection
walks all of it while holding the GIL, pausing every thread, the event loop and the consumer thread
alike, for 10-35 ms on this machine; ``gc.freeze()`` moves every object that exists then to a
permanent generation that collections skip.  The result says ``gc_freeze`` and the objects frozen
(``gc_frozen``); with or without it, ``steady_gc_collections`` counts the collections per generation
over the steady span.

``--rebalance`` (asyncio clients): the client commits (auto-commit every second) and heartbeats
every 200 ms, and when it has a third of the records another member (kafka-python, a process of
its own, subscribed to a topic of its own so it takes none of these partitions) joins the group
and leaves a second later: the steady span, and its loop lag, include both rebalances (the
result says ``rebalance``).

Every run reports ``peak_rss_mb``: the process's peak resident memory, read after the drain
(VmHWM, /proc/self/status).

The JSON line is printed before ``close()`` (``stop()`` for the asyncio clients, on the same loop);
the worker then waits for its stdin to close so the parent can read this process's CPU before it
exits.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import logging
import subprocess
import sys
import time
import traceback
import uuid
from collections.abc import AsyncGenerator, Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.throughput_meter import Meter, Watchdog  # noqa: E402
from benchmarks.throughput_otel import OtelSdk, block_opentelemetry, otel_state  # noqa: E402

# GroupConsumer's variants: (drain by iteration, OpenTelemetry: "api" as installed with no provider,
# "absent" made unimportable, "sdk" the SDK's providers with dropping exporters)
VARIANTS = {"groupclient": (False, "api"), "groupclient-iter": (True, "api"),
            "groupclient-otel-off": (False, "absent"), "groupclient-iter-otel-off": (True, "absent"),
            "groupclient-otel-poll": (False, "sdk"), "groupclient-otel-record": (True, "sdk")}
SYNC_CLIENTS = (*VARIANTS, "kafka-python", "confluent-kafka")
ASYNC_CLIENTS = ("aiokafka", "groupclient-aio", "confluent-aio")
CLIENTS = SYNC_CLIENTS + ASYNC_CLIENTS
# a client's poll loop, one (records, value bytes) per poll or consume call, and its close()
Batches = Callable[[], Iterator[tuple[int, int]]]


def python_client(kind: str, bootstrap: str, topic: str, group: str, max_poll_records: int,
                  records: int) -> tuple[Batches, Callable[[], None], Callable[[], dict[str, Any]]]:
    """A subscribed consumer's poll loop (iteration for the iterating variants), its close() and
    what to report after the drain (the OpenTelemetry variants' state and exports)."""
    iterate, otel = VARIANTS.get(kind, (False, ""))
    extra: dict[str, Any] = {}
    sdk: OtelSdk | None = None
    if kind in VARIANTS:
        from groupclient import GroupConsumer
        Consumer: Any = GroupConsumer
        if otel == "sdk":
            sdk = OtelSdk()
            extra.update(tracer_provider=sdk.tracer_provider, meter_provider=sdk.meter_provider)
        if iterate:
            extra["consumer_timeout_ms"] = 1000  # the iteration ends after 1 s without records: a Meter call
    else:
        from kafka import KafkaConsumer
        Consumer = KafkaConsumer
    # metadata_max_age_ms: kafka-python's leader may assign before it knows the topic and then
    # waits for the next metadata refresh (default 5 min) to rejoin; same value for both clients
    consumer = Consumer(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                        enable_auto_commit=False, max_poll_records=max_poll_records,
                        metadata_max_age_ms=5000, client_id=f"bench-{kind}", **extra)
    consumer.subscribe([topic])
    state = {"otel": otel_state(consumer, otel, sdk)} if kind in VARIANTS else {}

    def report() -> dict[str, Any]:
        return {**state, **(sdk.flushed() if sdk is not None else {})}

    def close() -> None:
        try:
            consumer.close(autocommit=False)
        finally:
            if sdk is not None:
                sdk.shutdown()

    def iterated() -> Iterator[tuple[int, int]]:
        """Iteration: one (records, value bytes) per max_poll_records records, per last record and
        per second without records (consumer_timeout_ms)."""
        total = 0
        while True:
            got = size = 0
            for record in consumer:
                value = record.value
                size += len(value) if value is not None else 0
                got += 1
                if got == max_poll_records or total + got >= records:
                    break
            total += got
            yield got, size

    def batches() -> Iterator[tuple[int, int]]:
        while True:
            got = size = 0
            for records in consumer.poll(timeout_ms=1000).values():
                got += len(records)
                for record in records:
                    value = record.value
                    size += len(value) if value is not None else 0
            yield got, size

    return (iterated if iterate else batches), close, report


def confluent_client(bootstrap: str, topic: str, group: str, records: int,
                     extra: dict[str, Any]) -> tuple[Batches, Callable[[], None]]:
    from confluent_kafka import Consumer, KafkaException

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "client.id": "bench-confluent-kafka", **extra})
    consumer.subscribe([topic])

    def batches() -> Iterator[tuple[int, int]]:
        total = 0
        while True:
            size = got = 0
            # consume() returns when it has num_messages or after the timeout: asking for no more
            # than the records still to come keeps the last call from waiting out its 1 s timeout
            for msg in consumer.consume(num_messages=max(1, min(1000, records - total)), timeout=1.0):
                if msg.error():
                    if msg.error().fatal():
                        raise KafkaException(msg.error())
                    continue  # e.g. a transient broker-down event: not a record
                value = msg.value()
                size += len(value) if value is not None else 0
                got += 1
            total += got
            yield got, size

    return batches, consumer.close


# --rebalance: the asyncio client commits (so a partition given back goes on where it was) and
# heartbeats often (so it hears of a rebalance at once); another member joins its group at the
# third of the records (the measurement's start) and leaves REBALANCE_STAY_S later: two rebalances
REBALANCE_SETTINGS = {"enable_auto_commit": True, "auto_commit_interval_ms": 1000, "heartbeat_interval_ms": 200}
REBALANCE_STAY_S = 1.0


async def async_client(kind: str, bootstrap: str, topic: str, group: str, max_poll_records: int,
                       rebalance: bool = False, confluent_config: dict[str, Any] | None = None) -> Any:
    """A started asyncio consumer, subscribed: the python clients' settings, aiokafka's names
    (confluent-aio: the synchronous confluent-kafka's settings)."""
    if kind == "confluent-aio":
        from confluent_kafka.aio import AIOConsumer

        extra = {"enable.auto.commit": True, "auto.commit.interval.ms": 1000,
                 "heartbeat.interval.ms": 200} if rebalance else {"enable.auto.commit": False}
        aio = AIOConsumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                           "client.id": f"bench-{kind}", **extra, **(confluent_config or {})})
        await aio.subscribe([topic])
        return aio
    if kind == "aiokafka":
        from aiokafka import AIOKafkaConsumer  # type: ignore[import-untyped, unused-ignore]
        Consumer: Any = AIOKafkaConsumer
    else:
        from groupclient.aio import AsyncGroupConsumer
        Consumer = AsyncGroupConsumer
    settings: dict[str, Any] = {"enable_auto_commit": False, **(REBALANCE_SETTINGS if rebalance else {})}
    consumer = Consumer(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                        max_poll_records=max_poll_records, metadata_max_age_ms=5000, client_id=f"bench-{kind}",
                        **settings)
    await consumer.start()
    consumer.subscribe([topic])
    return consumer


async def async_batches(consumer: Any, max_poll_records: int,
                        records: int) -> AsyncGenerator[tuple[int, int], None]:
    """The asyncio clients' poll loop: one (records, value bytes) per getmany() (per consume()
    for confluent-aio, asking for no more than the records still to come, as confluent_client)."""
    if not hasattr(consumer, "getmany"):
        from confluent_kafka import KafkaException

        total = 0
        while True:
            got = size = 0
            for msg in await consumer.consume(num_messages=max(1, min(1000, records - total)), timeout=1.0):
                if msg.error():
                    if msg.error().fatal():
                        raise KafkaException(msg.error())
                    continue
                value = msg.value()
                size += len(value) if value is not None else 0
                got += 1
            total += got
            yield got, size
    while True:
        got = size = 0
        for batch in (await consumer.getmany(timeout_ms=1000, max_records=max_poll_records)).values():
            got += len(batch)
            for record in batch:
                value = record.value
                size += len(value) if value is not None else 0
        yield got, size


def freeze(args: argparse.Namespace) -> dict[str, Any]:
    """With --gc-freeze: gc.freeze() what exists now (imports, the started client), so full
    collections skip it; called once, before the first poll."""
    if not args.gc_freeze:
        return {"gc_freeze": False}
    gc.freeze()
    return {"gc_freeze": True, "gc_frozen": gc.get_freeze_count()}


def drain(args: argparse.Namespace) -> dict[str, Any]:
    group = f"tp-{args.client}-{uuid.uuid4().hex[:8]}"
    meter = Meter(args.records, args.timeout_s, args.broker_pid)
    if args.client in ASYNC_CLIENTS:
        return drain_async(args, group, meter)
    report: Callable[[], dict[str, Any]] = dict
    if args.client == "confluent-kafka":
        batches, close = confluent_client(args.bootstrap, args.topic, group, args.records,
                                          json.loads(args.confluent_config))
    else:
        batches, close, report = python_client(args.client, args.bootstrap, args.topic, group,
                                               args.max_poll_records, args.records)
    frozen = freeze(args)
    for count, size in batches():
        if meter.add(count, size):
            break
    return {**meter.result(), **frozen, **report(), "close": close}


def finish(loop: asyncio.AbstractEventLoop) -> None:
    """What asyncio.run() does when its coroutine is done: cancel what is left, close the loop."""
    try:
        left = asyncio.all_tasks(loop)
        for task in left:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        asyncio.set_event_loop(None)
        loop.close()


def drain_async(args: argparse.Namespace, group: str, meter: Meter) -> dict[str, Any]:
    """The asyncio clients: the same Meter, fed by a coroutine; the loop stays for stop()."""
    watchdogs: list[Watchdog] = []
    frozen: dict[str, Any] = {}
    disturbers: list[subprocess.Popen[bytes]] = []

    async def run() -> Any:
        if args.loop_lag:
            watchdogs.append(Watchdog())
        consumer = None
        try:
            consumer = await async_client(args.client, args.bootstrap, args.topic, group, args.max_poll_records,
                                          args.rebalance, json.loads(args.confluent_config))
            frozen.update(freeze(args))
            async with contextlib.aclosing(async_batches(consumer, args.max_poll_records, args.records)) as batches:
                async for count, size in batches:
                    if meter.add(count, size):
                        break
                    if args.rebalance and meter.third is not None and not disturbers:
                        disturbers.append(disturb(args.bootstrap, group, f"{args.topic}-rebalance"))
        except BaseException:
            if consumer is not None:
                await stop(consumer)
            raise
        finally:
            for lag in watchdogs:
                lag.stop(meter.end[0] if meter.end else time.monotonic())
            for process in disturbers:
                try:
                    process.wait(timeout=REBALANCE_STAY_S + 30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        return consumer

    loop = asyncio.new_event_loop()  # as asyncio.run() (Python 3.10 has no asyncio.Runner)
    asyncio.set_event_loop(loop)
    try:
        consumer = loop.run_until_complete(run())
    except BaseException:
        finish(loop)
        raise

    def close() -> None:
        try:
            loop.run_until_complete(stop(consumer))
        finally:
            finish(loop)

    result = {**meter.result(), **frozen, "rebalance": bool(disturbers)}
    if watchdogs and result["ok"]:
        result.update(meter.loop_lag(watchdogs[0].samples))
    return {**result, "close": close}


def peak_rss_mb() -> float | None:
    """This process's peak resident memory so far, MB (before close(): imports, the client, its
    buffers and the records of the drain).  VmHWM of /proc/self/status, which starts again at exec;
    getrusage's ru_maxrss would carry the parent's peak over (Linux keeps it across fork and exec)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


async def stop(consumer: Any) -> None:
    """stop() (aiokafka, groupclient.aio) or close() (confluent-aio)."""
    await (consumer.stop() if hasattr(consumer, "stop") else consumer.close())


def disturb(bootstrap: str, group: str, topic: str) -> subprocess.Popen[bytes]:
    """Another member of ``group`` (kafka-python, in a process of its own, subscribed to a topic
    of its own: it takes no partition of the measured one), for REBALANCE_STAY_S."""
    return subprocess.Popen([sys.executable, __file__, "--disturb", bootstrap, group, topic])


def disturber(bootstrap: str, group: str, topic: str) -> int:
    """The other member: join (a rebalance), poll for REBALANCE_STAY_S, leave (another)."""
    from kafka import KafkaConsumer
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                             heartbeat_interval_ms=200, partition_assignment_strategy=[RoundRobinPartitionAssignor])
    deadline = time.monotonic() + REBALANCE_STAY_S
    while time.monotonic() < deadline:
        consumer.poll(timeout_ms=100)
    consumer.close()
    return 0


def main() -> int:
    if sys.argv[1:2] == ["--disturb"]:
        return disturber(*sys.argv[2:5])
    parser = argparse.ArgumentParser()
    parser.add_argument("client", choices=CLIENTS)
    parser.add_argument("bootstrap")
    parser.add_argument("topic")
    parser.add_argument("records", type=int)
    parser.add_argument("--broker-pid", type=int, default=0)
    parser.add_argument("--timeout-s", type=float, default=300)
    parser.add_argument("--max-poll-records", type=int, default=500)
    parser.add_argument("--confluent-config", default="{}", help="JSON: more librdkafka settings")
    parser.add_argument("--no-loop-lag", dest="loop_lag", action="store_false",
                        help="asyncio clients: no event-loop lag watchdog")
    parser.add_argument("--gc-freeze", action="store_true",
                        help="gc.freeze() after the imports and the client's start, before the first poll")
    parser.add_argument("--rebalance", action="store_true",
                        help="asyncio clients: another member joins the group at the third of the records and "
                             f"leaves {REBALANCE_STAY_S:.0f} s later (auto-commit on, heartbeats every 200 ms)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    try:
        if VARIANTS.get(args.client, (False, ""))[1] == "absent":
            block_opentelemetry()
        result = drain(args)
        result["peak_rss_mb"] = peak_rss_mb()
        if args.client.startswith("groupclient"):
            from groupclient.consumer import record_path

            result["record_path"] = record_path.active()
    except Exception as exc:  # reported to the parent as a failed run, with the traceback on stderr
        traceback.print_exc()
        result = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    close = result.pop("close", None)
    print(json.dumps(result), flush=True)
    sys.stdin.read()  # the parent reads our CPU from /proc, then closes our stdin
    if close is not None:
        close()
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
