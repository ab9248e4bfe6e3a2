"""Message schemas kafka-python 3.0 does not ship, in its JSON format (loaded by
:mod:`groupclient.protocol.consumer_group_heartbeat`)."""
