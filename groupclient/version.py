"""The package version, in a module of its own that imports nothing: the network client sends it
in ApiVersions and the default ``client_id`` carries it, and neither may import the package root
(which imports ``GroupConsumer``).  pyproject.toml reads it from here too."""

__version__ = "0.1.0.dev0"
