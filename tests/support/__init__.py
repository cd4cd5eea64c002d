"""Helpers shared by tests: throw-away real services (see :mod:`tests.support.prometheus`)."""
