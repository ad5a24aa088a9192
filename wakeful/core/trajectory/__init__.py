"""The trajectory: its five rules, the normalizer and how events are shown."""
