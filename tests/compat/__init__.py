"""Differential compatibility suite: kafka-python 3.0.12's ``KafkaConsumer`` vs ``GroupConsumer``.

Every test in this package runs the same scenario against both clients (the ``lib`` fixture,
params ``kafka-python`` and ``groupclient``) on the same embedded cluster, so a behaviour that
differs is a failing test.  See ``tests/compat/conftest.py`` for the fixtures and the list of
deliberate differences.
"""
