"""The bottom layer: the event type, the trust declaration, config base, logging, metrics,
HTTP helpers. Imports nothing else of wakeful.
"""
