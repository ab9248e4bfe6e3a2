"""groupclient: Kafka's classic consumer-group protocol in pure Python."""

from __future__ import annotations

__version__ = "0.1.0.dev0"

__all__ = ["__version__"]
