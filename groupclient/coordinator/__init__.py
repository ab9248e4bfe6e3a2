"""groupclient.coordinator: a small Kafka-wire server with the broker-side group coordinator.

``EmbeddedCluster`` runs one or several nodes in this process on 127.0.0.1; ``python -m
groupclient.coordinator`` (or ``groupclient coordinator``) runs it from the command line.
"""

from __future__ import annotations

from .cluster import EmbeddedCluster
from .config import CoordinatorConfig
from .faults import FaultKind, FaultRule

__all__ = ["CoordinatorConfig", "EmbeddedCluster", "FaultKind", "FaultRule"]
