"""PySpark executors consuming with group semantics.  Needs ``pip install 'groupclient[spark]'``.

- :func:`read_batch` / :func:`run_batch_read`: a DataFrame of what the group has not consumed yet,
  read by executor tasks that are members of the group, committed once it is staged durably.
- :func:`consume`: long-running members on the executors handing batches to your function and
  committing after it returns, until a :class:`StopWhen` condition.
- :func:`consume_share`: executor tasks as members of a share group (KIP-932), each batch accepted
  when your function returns and released when it raises.
- :func:`register`: ``spark.read.format("groupclient")`` and ``spark.readStream.format("groupclient")``.

Consumers are created inside the executors from a plain configuration dict; see docs/spark.md.
"""

from __future__ import annotations

from typing import Any

try:
    import pyarrow  # noqa: F401  (the tasks build Arrow tables)
except ImportError as exc:  # pragma: no cover - the spark extra installs it
    raise ImportError("groupclient.spark needs pyarrow and pyspark: pip install 'groupclient[spark]'") from exc

from .batch import BatchRead, ReadTimeoutError, read_batch, run_batch_read
from .consume import consume
from .member_loop import MemberReport, TaskInfo
from .share import ShareMemberReport, consume_share
from .stop import StopWhen


def register(spark: Any) -> None:
    """Make ``format("groupclient")`` known to the session's readers (imports pyspark)."""
    from .datasource import register as register_source
    register_source(spark)


__all__ = ["BatchRead", "MemberReport", "ReadTimeoutError", "ShareMemberReport", "StopWhen", "TaskInfo", "consume",
           "consume_share", "read_batch", "register", "run_batch_read"]
