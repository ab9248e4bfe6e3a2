"""Every code block of README.md and docs/*.md runs, so a docs example cannot silently break.

RUNS maps each block (by its key: file and first line) to how it is run (tests/docs/runners.py):
executed against real parts, its transcript compared with what the commands print, or mirrored by
named tests that name it.  A block with no entry fails, and so does an entry with no block: adding
or changing an example means saying how it is checked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs import aio_contexts, aio_otel_contexts, contexts, otel_contexts, share_contexts
from tests.docs.blocks import Block, all_blocks
from tests.docs.runners import Command, Mirrored, Python, Runner, Server, Synopsis, Transcript, Watch

pytestmark = pytest.mark.integration

INSTALL = "tests/docs/test_install.py"
SPARK = "tests/spark/test_doc_blocks.py"

RUNS: dict[str, Runner] = {
    # README.md
    "README.md: pip install -e . && groupclient demo": Mirrored(
        (f"{INSTALL}::test_the_readme_install_command_in_a_fresh_environment",),
        "installs into a fresh virtual environment"),
    "README.md: pip install -e '.[test,spark,otel,bench]' && python -m pytest": Mirrored(
        (f"{INSTALL}::test_ci_runs_the_readme_test_command",), "it is the CI's command; this suite is its run"),
    "README.md: from groupclient import GroupConsumer": Python(contexts.consuming("print")),
    "README.md: from groupclient.coordinator import EmbeddedCluster": Python(contexts.nothing),
    "README.md: from groupclient.spark import read_batch": Mirrored(
        (f"{SPARK}::test_read_batch_blocks",), "needs the Spark session of tests/spark"),
    # docs/assignors.md
    "docs/assignors.md: from groupclient.assignors import ClusterView, PartitionAssignor, RebalanceProtocol": Python(
        contexts.own_assignor),
    'docs/assignors.md: [project.entry-points."groupclient.assignors"]': Mirrored(
        (f"{INSTALL}::test_an_assignor_published_with_the_documented_entry_point_is_found_by_name",),
        "needs a package installed with that entry point"),
    "docs/assignors.md: groupclient assignors bench --members 100 --partitions 10000 [--topics 5] \\": Synopsis(),
    "docs/assignors.md: nice -n 10 python benchmarks/assignors.py [--quick] [--out results.json] "
    "[--timeout-s 120] [--seed 0]": Synopsis(),
    "docs/assignors.md: nice -n 5 python benchmarks/rebalance_downtime.py --out results.json "
    "--plot docs/rebalance_timeline.png": Synopsis(),
    "docs/assignors.md: nice -n 5 python benchmarks/kafka_downtime.py --out kafka-downtime.json "
    "--plot docs/kip848_timeline.png": Synopsis(),
    # docs/asyncio.md
    "docs/asyncio.md: # from aiokafka import AIOKafkaConsumer": Python(contexts.nothing),
    "docs/asyncio.md: import asyncio": Python(aio_contexts.aio_printing),
    "docs/asyncio.md: # getmany() in batches, a commit after each": Python(aio_contexts.aio_batches),
    "docs/asyncio.md: # a rebalance listener: commit before partitions go, seek when they come": Python(
        aio_contexts.aio_listener),
    # docs/share-groups.md
    "docs/share-groups.md: from groupclient import ShareConsumer": Python(share_contexts.implicit),
    "docs/share-groups.md: from groupclient import AcknowledgeType, ShareConsumer": Python(share_contexts.explicit),
    "docs/share-groups.md: from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient": Python(
        share_contexts.starting_point),
    "docs/share-groups.md: import asyncio": Python(share_contexts.asyncio_loop),
    # docs/performance.md
    "docs/performance.md: $ groupclient --version": Transcript(),
    "docs/performance.md: python -m build --wheel --outdir dist .": Mirrored(
        ("tests/docs/test_record_path_install.py::test_a_wheel_built_with_a_toolchain_holds_the_compiled_record_path",
         "tests/docs/test_record_path_install.py::test_without_a_toolchain_the_install_is_pure_python_and_says_so"),
        "builds a wheel of a copy of the checkout, with a Rust toolchain and without"),
    "docs/performance.md: nice -n 5 python benchmarks/throughput.py --matrix --out matrix.json --plot "
    "docs/throughput-matrix.png --docs docs/performance.md": Synopsis(),
    "docs/performance.md: python benchmarks/decode.py --sizes 100,1000 --records 300000 --runs 3": Command(
        (("--sizes 100,1000 --records 300000 --runs 3", "--sizes 100 --codecs lz4,gzip --records 5000 --runs 1"),)),
    # docs/cli.md
    "docs/cli.md: groupclient [--version] [--help] COMMAND ...": Synopsis(),
    "docs/cli.md: $ groupclient --version": Transcript(),
    "docs/cli.md: $ groupclient coordinator --port 99999": Transcript(),
    "docs/cli.md: $ groupclient coordinator --topic orders:3 --initial-rebalance-delay-ms 0": Server(),
    "docs/cli.md: $ groupclient demo --records 300 --members 3 --partitions 6": Transcript(),
    "docs/cli.md: $ groupclient groups list --bootstrap-servers 127.0.0.1:9999 --timeout-ms 2000": Transcript(
        contexts.billing_cli),
    "docs/cli.md: $ groupclient groups list": Transcript(contexts.billing_cli),
    "docs/cli.md: $ groupclient groups describe billing": Transcript(contexts.billing_cli),
    "docs/cli.md: $ groupclient groups describe billing --format kafka": Transcript(contexts.billing_cli),
    "docs/cli.md: $ groupclient groups describe billing --json": Transcript(contexts.billing_cli),
    "docs/cli.md: $ groupclient groups watch billing --interval-ms 200 --duration-s 8": Watch(
        contexts.billing_alone, contexts.billing_2_starts, first_look_lines=3),
    "docs/cli.md: $ groupclient groups watch billing --interval-ms 200 --count 2": Watch(
        contexts.billing, contexts.billing_2_stops, first_look_lines=5),
    "docs/cli.md: $ groupclient groups describe billing --lag-seconds": Transcript(
        contexts.billing_cli, numbers=True),
    "docs/cli.md: $ groupclient groups watch billing --lag-seconds --interval-ms 1000 --duration-s 3": Mirrored(
        ("tests/integration/test_cli_time_lag.py::test_watch_prints_the_time_lag_at_each_look",),
        "its time lags and the number of looks in 3 s depend on timing: the test checks each line's values"),
    "docs/cli.md: $ groupclient groups describe shipping": Transcript(contexts.shipping_cli),
    "docs/cli.md: $ groupclient groups watch shipping --interval-ms 200 --duration-s 8": Mirrored(
        ("tests/integration/test_cli_consumer_groups.py::test_describe_and_watch_show_a_member_reconciling",),
        "which look sees which step of a consumer-protocol rebalance depends on timing: the test checks the lines"),
    "docs/cli.md: $ groupclient assignors bench --members 3 --partitions 12 --topics 2": Transcript(numbers=True),
    "docs/cli.md: $ groupclient spark pipeline --events 2000 --output /tmp/docrun/pipeline-out": Mirrored(
        ("tests/spark/test_consume_and_pipeline.py::test_the_pipeline_command_runs_end_to_end",),
        "a Spark job: run by the Spark tests"),
    # docs/consumer.md
    "docs/consumer.md: # from kafka import KafkaConsumer": Python(contexts.consuming("handle")),
    "docs/consumer.md: consumer = GroupConsumer(": Python(contexts.sasl_ssl),
    "docs/consumer.md: from groupclient import CallTimeoutError, GroupConsumer, TopicPartition": Python(
        contexts.nothing),
    "docs/consumer.md: from groupclient import GroupConsumer": Mirrored(
        ("tests/integration/test_kafka_consumer_protocol.py::test_the_docs_example_runs_on_kafka",),
        "the consumer protocol needs Kafka 4.1: run there"),
    # docs/exactly-once.md
    "docs/exactly-once.md: from kafka import KafkaProducer": Mirrored(
        ("tests/eos/test_exactly_once.py::test_every_input_is_written_exactly_once_through_worker_and_broker_kills",),
        "needs a transaction coordinator (Apache Kafka): tests/eos/worker.py is this loop"),
    # docs/coordinator.md
    "docs/coordinator.md: from groupclient.coordinator import EmbeddedCluster": Python(contexts.nothing),
    "docs/coordinator.md: groupclient coordinator --port 9092 --nodes 1 --data-dir DIR "
    "--initial-rebalance-delay-ms 0 --topic orders:6": Server(),
    "docs/coordinator.md: from groupclient.coordinator import FaultKind, FaultRule": Python(contexts.a_cluster),
    "docs/coordinator.md: from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient": Python(
        contexts.nothing),
    "docs/coordinator.md: from groupclient.coordinator import EmbeddedCluster (2)": Python(contexts.server_pem),
    # docs/migration.md
    "docs/migration.md: # from kafka import KafkaConsumer": Python(contexts.nothing),
    # docs/observability.md
    "docs/observability.md: from opentelemetry.sdk.metrics import MeterProvider": Python(
        otel_contexts.console_exporters),
    "docs/observability.md: from opentelemetry.exporter.prometheus import PrometheusMetricReader": Python(
        otel_contexts.prometheus),
    "docs/observability.md: python benchmarks/trace_picture.py --out docs/trace.png": Command(
        (("--out docs/trace.png", "--out {tmp}/trace.png"),)),  # needs the bench extra: the test command has it
    "docs/observability.md: nice -n 5 python benchmarks/throughput.py --brokers embedded --sizes 100 --codecs none "
    "--partitions 6 \\": Synopsis(),
    "docs/observability.md: # the embedded coordinator's metrics, read in a test": Python(contexts.nothing),
    "docs/observability.md: # AsyncGroupConsumer with OpenTelemetry: your spans inside each record's process span": Python(
        aio_otel_contexts.aio_traced),
    "docs/observability.md: # myjob/telemetry.py, importable on the executors (--py-files, or installed in their Python)":
        Mirrored(("tests/spark/test_spark_telemetry.py::"
                  "test_members_report_their_task_and_a_span_each_to_the_providers_otel_setup_sets",),
                 "it sets global providers, so it runs in the executors' Python workers, as "
                 "tests/spark/otel_setup.py (this function with file exporters)"),
    # docs/pytest-plugin.md
    "docs/pytest-plugin.md: pip install groupclient pytest": Mirrored(
        (f"{INSTALL}::test_the_readme_install_command_in_a_fresh_environment",),
        "installs into a fresh virtual environment"),
    "docs/pytest-plugin.md: @pytest.mark.groupclient_cluster(nodes=3, topics={\"orders\": 6}, "
    "initial_rebalance_delay_ms=0)": Mirrored(
        (f"{INSTALL}::test_the_readme_install_command_in_a_fresh_environment",),
        "run by pytest with the plugin loaded from its entry point"),
    "docs/pytest-plugin.md: cluster.fail(\"Heartbeat\", \"NOT_COORDINATOR\", count=2)   "
    "# the member looks its coordinator up again": Python(contexts.plugin_faults),
    "docs/pytest-plugin.md: import time": Mirrored(
        ("tests/docs/test_install.py::test_the_plugin_example_is_an_excerpt_of_the_file_the_suite_runs",
         "tests/integration/test_pytest_plugin.py::test_example_suite_passes_with_the_plugin_loaded_from_its_entry_point"),
        "an excerpt of examples/pytest_plugin/test_consumer_app.py, which the suite runs"),
    # docs/spark.md
    "docs/spark.md: pip install 'groupclient[spark]'": Mirrored(
        ("tests/test_dependency_floors.py::test_the_environment_has_exactly_the_declared_floors",),
        "the floor run installs the spark extra"),
    "docs/spark.md: from pyspark.sql.functions import col, from_json": Mirrored(
        (f"{SPARK}::test_read_batch_blocks",), "needs the Spark session of tests/spark"),
    "docs/spark.md: from groupclient.spark import read_batch, run_batch_read": Mirrored(
        (f"{SPARK}::test_read_batch_blocks",), "needs the Spark session of tests/spark"),
    "docs/spark.md: from groupclient.spark import StopWhen, consume": Mirrored(
        (f"{SPARK}::test_consume_block",), "needs the Spark session of tests/spark"),
    "docs/spark.md: from groupclient.spark import StopWhen, consume_share": Mirrored(
        (f"{SPARK}::test_consume_share_block",), "needs the Spark session of tests/spark"),
    "docs/spark.md: import groupclient.spark": Mirrored(
        (f"{SPARK}::test_data_source_blocks",), "needs the Spark session of tests/spark"),
    "docs/spark.md: query = (spark.readStream.format(\"groupclient\").option(\"kafka.bootstrap.servers\", "
    "\"broker:9092\")": Mirrored((f"{SPARK}::test_data_source_blocks",), "needs the Spark session of tests/spark"),
    "docs/spark.md: pip wheel --no-deps . -w dist": Mirrored(
        (f"{SPARK}::test_the_wheel_ships_to_executors",), "spark-submit: run by the Spark tests"),
    "docs/spark.md: pip install -e '.[spark]' && groupclient spark pipeline --events 100000 --output pipeline-out":
        Mirrored(("tests/spark/test_consume_and_pipeline.py::test_the_pipeline_command_runs_end_to_end",),
                 "a Spark job: run by the Spark tests, with fewer events"),
    # docs/testing.md
    "docs/testing.md: pip install -e '.[test,spark,otel,bench]' && python -m pytest": Mirrored(
        (f"{INSTALL}::test_ci_runs_the_readme_test_command",), "it is the CI's command; this suite is its run"),
    "docs/testing.md: from groupclient.testing import GroupSimulation": Python(contexts.simulated_test),
    "docs/testing.md: python -m groupclient.testing.schedules --first 10000 --count 5000 --faults 8 "
    "--span-ms 60000": Command((("--count 5000", "--count 3"),)),
    "docs/testing.md: python -m groupclient.testing.share_schedules --first 1000 --count 2000 --faults 8":
        Command((("--count 2000", "--count 3"),)),
    "docs/testing.md: python -m tests.chaos --seconds 600 [--seed N] [--faults kill_member,pause_member,...] "
    "[--logs DIR]": Synopsis(),
    "docs/testing.md: flock /tmp/groupclient-kafka-cluster.lock python -m tests.chaos --kafka --seconds 3600 "
    "[--seed N]": Synopsis(),
    "docs/testing.md: FUZZ_SCALE=20 python -m pytest tests/fuzz": Mirrored(
        ("tests/fuzz/test_budget.py::test_fuzz_scale_runs_n_times_as_many_fresh_examples",),
        "the full run takes 20 times the fuzz budget"),
    "docs/testing.md: python benchmarks/consumer_bench.py [--records 200000] [--runs 5] "
    "[--broker groupclient|tansu]": Synopsis(),
}

BLOCKS = all_blocks()


def test_every_block_has_a_way_to_run_and_every_way_a_block() -> None:
    keys = [block.key for block in BLOCKS]
    assert len(keys) == len(set(keys)), "two blocks share a key"
    assert sorted(set(keys) - set(RUNS)) == [], "blocks nobody runs: add them to RUNS"
    assert sorted(set(RUNS) - set(keys)) == [], "RUNS names blocks the docs no longer have"


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.key in RUNS], ids=lambda b: b.key[:90])
def test_the_block_runs(block: Block, tmp_path: Path) -> None:
    RUNS[block.key].run(block, tmp_path)
