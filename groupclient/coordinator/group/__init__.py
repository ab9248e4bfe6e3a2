"""The group coordinator: what composes both kinds of group, above them (classic groups in
:mod:`..classic_group`, consumer-protocol groups in :mod:`..consumer_group`): requests routed to
the kind an id names, offsets commits and fetches, retention and DeleteGroups over both, and
groups changing protocol (sans-IO, takes ``now``)."""
