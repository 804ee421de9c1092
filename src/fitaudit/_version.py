"""The package version (read by the root package and the audit's environment record)."""

__version__ = "0.1.0"
