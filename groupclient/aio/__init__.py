"""groupclient for asyncio: :class:`AsyncGroupConsumer`, a drop-in for aiokafka's AIOKafkaConsumer,
and :class:`AsyncShareConsumer`, a share group's member (docs/share-groups.md).

    from groupclient.aio import AsyncGroupConsumer, ConsumerRebalanceListener
    from groupclient.aio.errors import CommitFailedError        # aiokafka.errors' names
    from groupclient.aio.structs import TopicPartition          # aiokafka.structs' names

docs/asyncio.md has the usage and every difference from aiokafka; docs/design.md ("asyncio") the
threads: the event loop never blocks on the library, and the group is kept while it is blocked.
"""

from __future__ import annotations

from . import errors, structs
from .consumer import AsyncGroupConsumer
from .listener import ConsumerRebalanceListener, RebalanceListener
from .share_consumer import AsyncShareConsumer

__all__ = ["AsyncGroupConsumer", "AsyncShareConsumer", "ConsumerRebalanceListener", "RebalanceListener", "errors",
           "structs"]
