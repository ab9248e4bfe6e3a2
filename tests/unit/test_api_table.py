"""The one table of API versions (protocol/apis.py API_TABLE) and the views derived from it: the
server's API_SPECS (and what ApiVersions lists), the client's CLIENT_MAX_VERSIONS."""

from __future__ import annotations

import pytest

from groupclient.coordinator.handlers.api_versions import supported_versions
from groupclient.network import connection
from groupclient.protocol.apis import API_SPECS, API_TABLE, CLIENT_MAX_VERSIONS, CONSUMER_PROTOCOL_APIS, ApiKey, ApiRow

SENT = [row for row in API_TABLE if row.client_max is not None]
SERVED = [row for row in API_TABLE if row.served is not None]


def test_the_table_has_one_row_for_every_api_key_and_each_row_is_used() -> None:
    assert sorted(row.key for row in API_TABLE) == sorted(ApiKey)
    assert all(row.served is not None or row.client_max is not None for row in API_TABLE)


@pytest.mark.parametrize("row", SENT, ids=lambda row: row.key.name)
def test_every_api_the_client_sends_has_classes_whose_schema_knows_its_newest_version(row: ApiRow) -> None:
    newest = row.client_max
    assert newest is not None
    assert row.request.API_KEY == row.response.API_KEY == row.key
    assert 0 <= newest <= row.request.max_version
    assert newest <= row.response.max_version


@pytest.mark.parametrize("row", SERVED, ids=lambda row: row.key.name)
def test_every_served_range_is_one_the_schema_knows(row: ApiRow) -> None:
    assert row.served is not None
    low, high = row.served
    assert row.request.API_KEY == row.response.API_KEY == row.key
    assert 0 <= low <= high <= row.request.max_version
    assert high <= row.response.max_version


def test_the_servers_specs_are_the_served_rows() -> None:
    assert {key: (spec.min_version, spec.max_version) for key, spec in API_SPECS.items()} == {
        row.key: row.served for row in SERVED}
    for row in SERVED:
        spec = API_SPECS[row.key]
        assert spec.key is row.key and spec.response is row.response
        # the request class a server decodes with: the table's, reading strictly
        assert issubclass(spec.request, row.request) and spec.request is not row.request
        assert spec.request.__name__ == row.request.__name__
        assert spec.schema_knows(spec.max_version)
    assert CONSUMER_PROTOCOL_APIS <= set(API_SPECS)


def test_api_versions_lists_the_served_rows() -> None:
    listed = {k.api_key: (k.min_version, k.max_version) for k in supported_versions(3).api_keys}
    assert listed == {int(row.key): row.served for row in SERVED}
    without_kip848 = {k.api_key for k in supported_versions(3, consumer_protocol=False).api_keys}
    assert without_kip848 == {int(row.key) for row in SERVED} - set(CONSUMER_PROTOCOL_APIS)


def test_the_clients_versions_are_the_sent_rows() -> None:
    assert CLIENT_MAX_VERSIONS == {row.key: row.client_max for row in SENT}
    # the name tests and tools import from the connection is the same table
    assert connection.CLIENT_MAX_VERSIONS is CLIENT_MAX_VERSIONS
    # an int key (a response's api_key) finds the ApiKey entry
    assert CLIENT_MAX_VERSIONS[int(ApiKey.FETCH)] == CLIENT_MAX_VERSIONS[ApiKey.FETCH]
