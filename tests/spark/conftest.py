"""A SparkSession (local[2,2]: two cores, a failed task is tried once more) and the brokers the
Spark tests run against: the embedded coordinator and Apache Kafka."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from groupclient.coordinator import EmbeddedCluster

try:
    import pyspark  # noqa: F401
except ImportError:  # the CI command installs the spark extra; elsewhere say what is missing
    if os.environ.get("CI") == "true":
        raise
    pytest.skip("the Spark tests need pip install -e '.[test,spark,otel,bench]'", allow_module_level=True)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    # executors' Python workers must be this interpreter, with groupclient importable
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (SparkSession.builder.master("local[2,2]").appName("groupclient-tests")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    from groupclient.spark import register
    register(session)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="module")
def embedded() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=0) as cluster:
        yield cluster


@pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.kafka)])
def bootstrap(request: pytest.FixtureRequest) -> str:
    if request.param == "embedded":
        return str(request.getfixturevalue("embedded").bootstrap_servers)
    return str(request.getfixturevalue("kafka_broker").bootstrap)
