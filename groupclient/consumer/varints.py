"""Kafka's zigzag varints (the v2 record format's lengths, deltas and counts), read one at a time
where a tight loop does not inline them (records.py, columns.py, transactions.py)."""

from __future__ import annotations


def varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint at ``pos``: (value, next position)."""
    byte = buf[pos]
    pos += 1
    if byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), pos
    value, shift = byte & 0x7F, 7
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7
        if shift >= 70:
            raise ValueError(f"a varint of more than ten bytes at byte {pos - 10}")
