"""OpenTelemetry for groupclient, when the application has it (``pip install 'groupclient[otel]'``).

groupclient depends on the OpenTelemetry *API* only, and only through this package: without
``opentelemetry-api`` installed, or with no SDK provider set, every instrument is skipped before
any span, attribute or measurement is built.  The application picks the SDK, the exporters and the
providers (globally with ``opentelemetry.trace.set_tracer_provider`` / ``metrics.set_meter_provider``,
or per consumer with the ``tracer_provider`` / ``meter_provider`` settings).

What groupclient emits, with every name and attribute: docs/observability.md.
"""

from __future__ import annotations

from .providers import Instrumentation, api_installed
from .semconv import INSTRUMENTATION_SCOPE

__all__ = ["INSTRUMENTATION_SCOPE", "Instrumentation", "api_installed"]
