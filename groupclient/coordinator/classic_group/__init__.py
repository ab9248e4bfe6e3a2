"""The classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) on the coordinator's
side: the group state machine, its members, and one node's classic groups (sans-IO, takes ``now``)."""
