"""Every third-party module the suite imports is declared where the README's test command
installs it, and every one only the benchmarks import is declared in the bench extra
(tests/declared.py); and the check itself names what it should, on made-up trees."""

from __future__ import annotations

from pathlib import Path

from tests.declared import (
    BASE,
    BENCH,
    Check,
    Finding,
    Import,
    declared,
    findings,
    imports_of_file,
    imports_of_what_blocks_run,
    installed_index,
    providers,
    readme_test_extras,
    third_party,
)
from tests.docs.blocks import ROOT, Block, all_blocks

PYPROJECT = {"project": {
    "name": "groupclient",
    "dependencies": ["kafka-python>=3.0.12,<3.1", "lz4>=4.0"],
    "optional-dependencies": {
        "test": ["pytest>=8.2", "hypothesis>=6.100", "groupclient[otel]"],
        "otel": ["opentelemetry-api>=1.30.0"],
        "bench": ["matplotlib>=3.8"],
        "spark": ["pyspark>=4.2.0,<4.2.1"],
    },
}}
GROUPS = declared(PYPROJECT)
INDEX = {  # as installed_index() builds it from the distributions' RECORD files
    "kafka": frozenset({"kafka-python"}), "kafka.errors": frozenset({"kafka-python"}),
    "attr": frozenset({"attrs"}),  # installed because hypothesis depends on it
    "hypothesis": frozenset({"hypothesis"}), "matplotlib": frozenset({"matplotlib"}),
    "opentelemetry": frozenset({"opentelemetry-api", "opentelemetry-sdk"}),
    "opentelemetry.trace": frozenset({"opentelemetry-api"}),
    "opentelemetry.sdk": frozenset({"opentelemetry-sdk"}),
}
IN_THE_TEST_COMMAND = (BASE, "test")


def test_the_suite_imports_only_what_the_readme_test_command_installs() -> None:
    check = Check.of_repository()
    assert check.test_extras == ("test", "spark", "otel", "bench")
    problems = check.undeclared_in_the_test_command()
    assert not problems, "\n".join(map(str, problems))


def test_what_only_the_benchmarks_import_is_declared_in_bench() -> None:
    problems = Check.of_repository().undeclared_in_bench()
    assert not problems, "\n".join(map(str, problems))


def test_the_check_sees_the_imports_that_matter_here() -> None:
    """Not vacuous: the repository's own imports resolve to the distributions that hold them."""
    check = Check.of_repository()
    suite = {name for found in check.suite for name in providers(found.module, check.index)}
    assert {"kafka-python", "confluent-kafka", "aiokafka", "pyspark", "opentelemetry-api",
            "opentelemetry-sdk", "hypothesis", "pytest"} <= suite
    docs_run = {name for found in check.run_by_docs for name in providers(found.module, check.index)}
    assert "matplotlib" in docs_run  # docs/observability.md runs benchmarks/trace_picture.py


def test_a_module_no_installed_distribution_provides_is_named_with_where_it_is_imported(tmp_path: Path) -> None:
    source = tmp_path / "consumer_app.py"
    source.write_text("import os\nimport kafka.errors\n\n\ndef f():\n    import yaml\n")
    [finding] = findings(imports_of_file(source), IN_THE_TEST_COMMAND, GROUPS, INDEX)
    assert finding.modules == ("yaml",) and finding.providers == frozenset()
    assert str(finding).startswith("yaml is imported but no installed distribution provides it: declare the "
                                   "distribution that provides it in pyproject.toml's [project] dependencies or "
                                   "the 'test' extra")
    assert str(finding).endswith(f"Imported at: {source}:6")


def test_a_module_installed_only_as_another_packages_dependency_is_named(tmp_path: Path) -> None:
    source = tmp_path / "test_thing.py"
    source.write_text("import attr\nimport hypothesis\n")
    [finding] = findings(imports_of_file(source), IN_THE_TEST_COMMAND, GROUPS, INDEX)
    assert finding.providers == frozenset({"attrs"})
    assert "attrs is not declared in pyproject.toml's [project] dependencies or the 'test' extra" in str(finding)
    assert "only by hand or as another package's dependency" in str(finding)


def test_a_module_declared_in_an_extra_the_test_command_does_not_install_says_which(tmp_path: Path) -> None:
    source = tmp_path / "picture.py"
    source.write_text("import matplotlib.pyplot as plt\n")
    [finding] = findings(imports_of_file(source), IN_THE_TEST_COMMAND, GROUPS, INDEX)
    assert finding.declared_in == (BENCH,)
    assert "matplotlib is declared only in the 'bench' extra" in str(finding)
    assert findings(imports_of_file(source), (BASE, BENCH), GROUPS, INDEX) == []


def test_a_namespace_package_resolves_to_the_distribution_of_the_name_imported(tmp_path: Path) -> None:
    """opentelemetry is shared: ``from opentelemetry import trace`` is opentelemetry-api's, which a
    project that declares only the SDK does not declare."""
    source = tmp_path / "telemetry.py"
    source.write_text("from opentelemetry import trace\nfrom opentelemetry.sdk import trace as sdk_trace\n")
    groups = {BASE: frozenset({"opentelemetry-sdk"})}
    [finding] = findings(imports_of_file(source), (BASE,), groups, INDEX)
    assert finding.providers == frozenset({"opentelemetry-api"}) and finding.modules == ("opentelemetry.trace",)
    assert [found.where for found in finding.places] == [f"{source}:1"]


def test_an_extra_that_names_the_projects_own_extras_declares_theirs() -> None:
    assert GROUPS["test"] == frozenset({"pytest", "hypothesis", "opentelemetry-api"})
    assert GROUPS[BASE] == frozenset({"kafka-python", "lz4"})


def test_what_a_docs_block_runs_is_imported_by_the_docs() -> None:
    block = Block("docs/observability.md", 51, "", "python benchmarks/trace_picture.py --out docs/trace.png\n",
                  "docs/observability.md: python benchmarks/trace_picture.py --out docs/trace.png")
    imported = imports_of_what_blocks_run([block])
    matplotlib = [found for found in imported if found.module == "matplotlib"]
    assert matplotlib == [Import("matplotlib", "docs/observability.md:51 (a code block), which runs "
                                               "benchmarks/trace_picture.py:19")]
    found = findings(imported, IN_THE_TEST_COMMAND, GROUPS, INDEX)
    assert all(isinstance(finding, Finding) for finding in found)
    assert ("matplotlib",) in [finding.modules for finding in found]


def test_local_modules_and_the_standard_library_are_not_third_party() -> None:
    benchmark = ROOT / "benchmarks" / "kafka_downtime.py"
    assert not third_party("brokers", benchmark)  # benchmarks/brokers.py, beside the script
    assert not third_party("groupclient.consumer", None) and not third_party("tests.docs", None)
    assert not third_party("asyncio", None) and not third_party("tomllib", None)
    assert third_party("kafka.errors", benchmark)


def test_the_index_comes_from_the_installed_distributions_files() -> None:
    index = installed_index()
    assert providers("kafka.protocol.consumer.group", index) == frozenset({"kafka-python"})
    assert providers("opentelemetry.sdk.trace", index) == frozenset({"opentelemetry-sdk"})
    assert providers("opentelemetry.trace", index) == frozenset({"opentelemetry-api"})
    assert {"opentelemetry-api", "opentelemetry-sdk"} <= providers("opentelemetry", index)
    assert providers("no_such_module_anywhere", index) == frozenset()


def test_the_readme_test_command_is_the_one_read() -> None:
    readme = [block for block in all_blocks() if block.path == "README.md"]
    assert readme_test_extras(readme) == ("test", "spark", "otel", "bench")
