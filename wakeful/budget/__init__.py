"""Spending caps that hold: every model call reserves its worst case before it is made."""
