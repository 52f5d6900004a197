from setuptools import setup

setup(name="shoebox", version="1.0", packages=["shoebox"])
