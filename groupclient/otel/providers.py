"""The tracer and the meter of one instrumented object, resolved lazily and only when useful.

A provider is *useful* when the application gave one (a setting) or set a global one that is not
OpenTelemetry's default proxy (which records nothing).  Until then :meth:`Instrumentation.tracer`
and :meth:`Instrumentation.meter` return ``None`` and the caller builds nothing: that is the whole
cost of telemetry nobody collects (one dictionary lookup per call, the API's own check of its
environment variable).  A global provider can be set once per process, so once one is found it
is kept.

Thread-safety: resolving is idempotent (two threads may both resolve; both get the same tracer
or meter from the same provider), so there is no lock.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Any

from ..version import __version__
from .semconv import INSTRUMENTATION_SCOPE

if TYPE_CHECKING:
    from opentelemetry.metrics import Meter, MeterProvider
    from opentelemetry.trace import Tracer, TracerProvider

_INSTALLED: bool | None = None


def api_installed() -> bool:
    """Whether ``opentelemetry-api`` can be imported (looked up once per process, not imported)."""
    global _INSTALLED
    if _INSTALLED is None:
        _INSTALLED = importlib.util.find_spec("opentelemetry") is not None and \
            importlib.util.find_spec("opentelemetry.trace") is not None
    return _INSTALLED


class Instrumentation:
    """The OpenTelemetry providers one consumer (or coordinator) reports to.

    ``tracer_provider`` / ``meter_provider``: explicit providers (an SDK's ``TracerProvider`` /
    ``MeterProvider``); ``None`` follows the global ones.  ``scope`` names the instrumentation
    scope (default :data:`INSTRUMENTATION_SCOPE`, ``"groupclient"``).
    """

    def __init__(self, tracer_provider: Any = None, meter_provider: Any = None,
                 scope: str = INSTRUMENTATION_SCOPE) -> None:
        self._tracer_provider = tracer_provider
        self._meter_provider = meter_provider
        self._scope = scope
        self._tracer: Tracer | None = None
        self._meter: Meter | None = None
        if (tracer_provider is not None or meter_provider is not None) and not api_installed():
            raise ImportError("tracer_provider / meter_provider need the OpenTelemetry API: "
                              "pip install 'groupclient[otel]'")

    def tracer(self) -> Tracer | None:
        """The tracer to start spans with, or None when no provider would record them."""
        if self._tracer is None and api_installed():
            provider = self._tracer_provider or _global_tracer_provider()
            if provider is not None:
                self._tracer = provider.get_tracer(self._scope, __version__)
        return self._tracer

    def meter(self) -> Meter | None:
        """The meter to create instruments with, or None when no provider would record them."""
        if self._meter is None and api_installed():
            provider = self._meter_provider or _global_meter_provider()
            if provider is not None:
                self._meter = provider.get_meter(self._scope, __version__)
        return self._meter


def _global_tracer_provider() -> TracerProvider | None:
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    # the default proxy and the explicit no-op provider record nothing
    if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return None
    return provider


def _global_meter_provider() -> MeterProvider | None:
    from opentelemetry import metrics

    provider = metrics.get_meter_provider()
    if isinstance(provider, metrics.NoOpMeterProvider) or type(provider).__name__ == "_ProxyMeterProvider":
        return None
    return provider
