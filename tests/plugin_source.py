"""A third-party candidate source's implementation, as a plugin package would ship it (tests/test_registries.py)."""

FROZEN = []


def freeze_greeting(snapshot, config):
    """Records what it was given: the test needs no real freeze."""
    FROZEN.append((snapshot, config.greeting))
    return "frozen"
