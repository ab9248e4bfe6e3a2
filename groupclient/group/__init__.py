"""Member-side group logic: heartbeat timing, member states, the consumer's group coordinator client."""
