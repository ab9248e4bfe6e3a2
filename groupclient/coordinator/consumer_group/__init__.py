"""The consumer group protocol (KIP-848) on the coordinator's side."""
