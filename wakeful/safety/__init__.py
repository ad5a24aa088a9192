"""Safety (SPEC §8): what a stranger writes can never act.

The defence is deterministic code around the model, not a better prompt:
every tool call passes one policy chain (:mod:`wakeful.safety.chain`) that
decides from the tool's declared effect, its structured arguments and the
session's taint — never from the model's free text.
"""
