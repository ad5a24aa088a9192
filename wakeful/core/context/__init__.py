"""A session's context budget: what of a months-long history the model is sent.

The stored trajectory only grows (the full history stays readable); what the
model sees is a *view* of it: old bulky tool results pruned to stubs and,
when that is not enough, everything before a boundary replaced by a summary.
Both are deliberate, rare rewrites — never per turn — so the prompt cache
stays warm between them.
"""
