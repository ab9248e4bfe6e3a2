"""Durable state: checksummed append-only journals, the group/offset store and topic logs."""
