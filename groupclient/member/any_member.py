"""Either protocol's member, for what works the same with both: commits, the heartbeat thread,
the consumer's poll loop."""

from __future__ import annotations

from .consumer_member import ConsumerGroupMember
from .group_member import GroupMember

AnyMember = GroupMember | ConsumerGroupMember
