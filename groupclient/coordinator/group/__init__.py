"""Broker-side group logic: state machine, members, the coordinator core (sans-IO, takes ``now``)."""
