"""Message schemas kafka-python 3.0 does not ship, in its JSON format (loaded by
:mod:`groupclient.protocol.consumer_group_heartbeat`, :mod:`groupclient.protocol.consumer_group_describe`
and :mod:`groupclient.protocol.share_group`)."""
