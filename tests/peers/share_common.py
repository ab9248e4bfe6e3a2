"""Shared by the share-group peer scripts (gc_share_consumer.py, ck_share_consumer.py; the Java one,
tests/kafka/JavaSharePeer.java, reports the same lines): each poll's records are reported
(``delivered``: partition, offset, value, delivery count), processed for ``--work-ms`` each,
accepted one by one (explicit acknowledgement) and committed; what the broker took is reported
(``accepted``: partition, offset), what it refused too (``refused``, with the error)."""

from __future__ import annotations

import argparse


def share_arguments(default_client_id: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--client-id", default=default_client_id)
    parser.add_argument("--max-records", type=int, default=10)
    parser.add_argument("--work-ms", type=float, default=0.0)
    return parser.parse_args()
