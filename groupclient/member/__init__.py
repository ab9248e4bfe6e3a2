"""Member-side group logic, independent of what is consumed: finding the coordinator, joining,
syncing, heartbeats, leaving (the Java client's AbstractCoordinator and Heartbeat)."""
