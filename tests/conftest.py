"""Shared pytest set-up: the fake GitHub server fixture is available to every test."""

pytest_plugins = ["tests.fakegithub.plugin"]
