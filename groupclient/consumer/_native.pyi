"""The compiled record path (native/src/lib.rs): present where a Rust toolchain built it at
install time (record_path.py says which path runs)."""

from typing import Any

from ..structs import ConsumerRecord

VERSION: str
RECORDS: int
END: int
PYTHON: int
DESERIALIZER: int

def decode_batch(buf: bytes, pos: int, fetch_offset: int, topic: str, partition: int, key_deserializer: Any,
                 value_deserializer: Any, check_crcs: bool, aiokafka: bool,
                 record_type: type[ConsumerRecord]) -> tuple[int, int, Any]: ...

class Ahead:
    """A worker thread walking one answer's batches ahead (native/src/ahead.rs)."""

    def decode(self, topic: str, partition: int, key_deserializer: Any, value_deserializer: Any, aiokafka: bool,
               record_type: type[ConsumerRecord]) -> tuple[int, int, Any]: ...

def decode_ahead(buf: bytes, pos: int, fetch_offset: int, check_crcs: bool, workers: int) -> Ahead: ...
