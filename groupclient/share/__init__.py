"""Share groups (KIP-932) from the consumer's side: :class:`~groupclient.share.consumer.ShareConsumer`.

- ``consumer.py``: the API (Java's ``KafkaShareConsumer`` in the style of ``GroupConsumer``), its
  checks and the thread-ownership lock;
- ``engine.py``: each call's steps on the application thread, the acknowledgements going out and
  their outcomes coming back;
- ``in_flight.py``: the records the last poll handed out and the rules for acknowledging them;
- ``session.py``: one share session with one broker (epochs, what each request names);
- ``fetcher.py``: ShareFetch and ShareAcknowledge, and the answers they bring;
- ``acquired.py``: the records an answer acquired, its gaps and what cannot be read;
- ``records.py``: ``ShareRecord``, a ``ConsumerRecord`` with its ``delivery_count``;
- ``settings.py``: the settings, declared once.

The member's side (ShareGroupHeartbeat) is ``groupclient/member/share_member.py``.
"""
