"""The error every start-up check raises. A leaf module: it imports nothing of the package, so
any check can import it."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration value that cannot work; the message names the key."""


def need(condition: bool, key: str, message: str) -> None:
    """ConfigError("config key 'KEY': MESSAGE") unless `condition` holds."""
    if not condition:
        raise ConfigError(f"config key '{key}': {message}")
