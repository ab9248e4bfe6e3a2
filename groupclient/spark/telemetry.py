"""OpenTelemetry of the Spark members and readers: the executors' side.

A provider object cannot travel to the executors (options.py refuses ``tracer_provider`` and
``meter_provider``), so a Python worker reports to the global providers, which ``otel_setup``
(``"package.module:function"``) sets: :func:`executor_settings` calls it once per process, for
each distinct value, before the process's first member or reader consumer is built, and returns
the GroupConsumer settings without it.

Each consumer of a task carries the task (:func:`annotate`: partition id, attempt number, stage
id) on every span and measurement.  A member task is a span, ``spark member {group}``
(:func:`member_task`), current while the member runs, so its consumer's spans (and those of the
user's handler) are its children; it ends with the member's report as attributes.

When a task is done, whatever the providers hold is flushed: PySpark ends its worker processes
with ``os._exit``, which skips the SDK's exit handlers, so spans and measurements still buffered
when an idle worker is stopped would be lost.

Runs on the executors (and in the streaming query's process); imports nothing from pyspark and
OpenTelemetry only when its API is installed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError
from ..otel import semconv as names
from ..otel.providers import Instrumentation, api_installed
from .options import OTEL_SETUP, consumer_settings, setup_function

if TYPE_CHECKING:
    from ..consumer.group_consumer import GroupConsumer

log = logging.getLogger("groupclient.spark")

MEMBER_SPAN = "spark member"  # "spark member {group}"
FLUSH_TIMEOUT_MS = 10_000  # the longest a task's end waits for the exporters

_setup_lock = threading.Lock()
_set_up: set[str] = set()  # the otel_setup values this process has called


def executor_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """The GroupConsumer settings of ``config``, once its ``otel_setup`` (if any) has run in this
    process.  The setup's own errors propagate: the task fails, saying why, rather than running
    without the telemetry the application asked for."""
    setup = config.get(OTEL_SETUP)
    if setup is not None:
        run_setup_once(str(setup))
    return consumer_settings(config)


def run_setup_once(value: str) -> None:
    """Call the function ``value`` names, unless this process already has."""
    with _setup_lock:  # a second task thread waits: its consumer must see the providers set
        if value in _set_up:
            return
        try:
            function = setup_function(value)
        except ImportError as exc:
            raise ConfigurationError(f"otel_setup {value!r} cannot be imported on this executor: {exc}") from exc
        function()
        _set_up.add(value)


def task_attributes(partition_id: int, attempt: int, stage_id: int | None) -> dict[str, int]:
    """A task's attributes: a handful of values per job, never the task attempt id Spark gives each
    run (a new metric series per task run)."""
    found = {names.SPARK_PARTITION_ID: partition_id, names.SPARK_ATTEMPT: attempt}
    if stage_id is not None:
        found[names.SPARK_STAGE_ID] = stage_id
    return found


def annotate(consumer: GroupConsumer, attributes: Mapping[str, Any]) -> None:
    """Every span and measurement of ``consumer`` carries ``attributes`` from now on."""
    telemetry = consumer._observers.telemetry  # noqa: SLF001 - the consumer's telemetry, for its tasks' attributes
    if telemetry is not None and attributes:
        telemetry.add_attributes(dict(attributes))


@contextmanager
def member_task(group: str, attributes: Mapping[str, Any], report: Callable[[], Mapping[str, Any]]) -> Iterator[None]:
    """The ``spark member {group}`` span (INTERNAL) around a member's run, on the thread running
    it: started now with ``attributes``, current inside, ended with ``report()``'s attributes and
    ``groupclient.spark.outcome`` ``"error"`` plus the error when the run raises.  Then the
    providers are flushed (the module's doc says why)."""
    tracer = Instrumentation().tracer()
    if tracer is None:
        try:
            yield
        finally:
            flush()
        return
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind, Status, StatusCode

    from ..consumer.telemetry import error_type

    start = {names.MESSAGING_SYSTEM: names.KAFKA, names.MESSAGING_CONSUMER_GROUP_NAME: group, **attributes}
    span = tracer.start_span(f"{MEMBER_SPAN} {group}", kind=SpanKind.INTERNAL, attributes=start)
    token = otel_context.attach(trace.set_span_in_context(span))
    error: BaseException | None = None
    try:
        yield
    except BaseException as exc:
        error = exc
        raise
    finally:
        try:
            span.set_attributes(dict(report()))
            if error is not None:
                span.set_attribute(names.SPARK_OUTCOME, "error")
                span.set_attribute(names.ERROR_TYPE, error_type(error))
                span.record_exception(error)
                span.set_status(Status(StatusCode.ERROR, str(error)))
        finally:
            otel_context.detach(token)
            span.end()
            flush()


@contextmanager
def reader_task() -> Iterator[None]:
    """A reader task's run: the providers are flushed when it ends (the module's doc says why)."""
    try:
        yield
    finally:
        flush()


def flush(timeout_ms: int = FLUSH_TIMEOUT_MS) -> None:
    """Export what the global providers hold (those without ``force_flush``, the API's no-op and
    proxy ones, hold nothing).  An exporter's failure is logged, never the task's."""
    if not api_installed():
        return
    from opentelemetry import metrics, trace

    for provider in (trace.get_tracer_provider(), metrics.get_meter_provider()):
        force_flush = getattr(provider, "force_flush", None)
        if not callable(force_flush):
            continue
        try:
            force_flush(timeout_ms)
        except Exception:  # noqa: BLE001 - telemetry never fails the task it reports on
            log.warning("flushing OpenTelemetry at the end of a task failed", exc_info=True)
