"""repdist: reproduce 'When Does Closeness in Distribution Imply Representational Similarity?'."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("repdist")
except PackageNotFoundError:  # running from a source tree that is on sys.path but not installed
    __version__ = "0.1.0+source"
