"""The wheel holds a compiled extension and tools, so it is tagged for this
Python and platform (cp311-cp311-linux_x86_64), not as pure Python; the
rest of the metadata is pyproject.toml's."""

from setuptools import setup
from setuptools.dist import Distribution


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


setup(distclass=BinaryDistribution)
