"""The language-model study: small GPTs by seed, and named models layer by layer."""
